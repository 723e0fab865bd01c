/*
 * The CLIENT subcommands of introspection: LIST, INFO, KILL and HELP
 * (command_conn.c answers ID, GETNAME, SETNAME and SETINFO).
 */
#ifndef CSQD_COMMAND_CLIENT_H
#define CSQD_COMMAND_CLIENT_H

struct client;
struct resp_request;

void cmd_client_list(struct client *, const struct resp_request *);
void cmd_client_info(struct client *, const struct resp_request *);
void cmd_client_kill(struct client *, const struct resp_request *);
void cmd_client_help(struct client *, const struct resp_request *);
void cmd_monitor(struct client *, const struct resp_request *);

#endif
