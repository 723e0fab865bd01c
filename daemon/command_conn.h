/*
 * The commands of the connection and of Redis-client compatibility: PING,
 * ECHO, QUIT, AUTH, SELECT, COMMAND, HELLO, CLIENT, RESET (INFO: info.h).
 */
#ifndef CSQD_COMMAND_CONN_H
#define CSQD_COMMAND_CONN_H

struct client;
struct resp_request;

void cmd_ping(struct client *, const struct resp_request *);
void cmd_echo(struct client *, const struct resp_request *);
void cmd_quit(struct client *, const struct resp_request *);
void cmd_auth(struct client *, const struct resp_request *);
void cmd_select(struct client *, const struct resp_request *);
void cmd_command(struct client *, const struct resp_request *);
void cmd_hello(struct client *, const struct resp_request *);
void cmd_client(struct client *, const struct resp_request *);
void cmd_reset(struct client *, const struct resp_request *);

#endif
