/*
 * The pub/sub commands: SUBSCRIBE, PSUBSCRIBE, UNSUBSCRIBE, PUNSUBSCRIBE
 * (pubsub.c keeps the subscriptions).
 */
#ifndef CSQD_COMMAND_PUBSUB_H
#define CSQD_COMMAND_PUBSUB_H

struct client;
struct resp_request;

void cmd_subscribe(struct client *, const struct resp_request *);
void cmd_psubscribe(struct client *, const struct resp_request *);
void cmd_unsubscribe(struct client *, const struct resp_request *);
void cmd_punsubscribe(struct client *, const struct resp_request *);

#endif
