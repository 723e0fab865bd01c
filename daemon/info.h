/*
 * INFO [section ...]: csqd's state as Redis's INFO text (info.c).
 */
#ifndef CSQD_INFO_H
#define CSQD_INFO_H

/* The Redis whose commands csqd answers like, for clients that look
 * (INFO's redis_version, HELLO's version). */
#define CSQ_REDIS_VERSION "7.0.0"

struct client;
struct resp_request;

void cmd_info(struct client *, const struct resp_request *);

#endif
