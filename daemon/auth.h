/*
 * Who a connection is: whether it must still authenticate.
 */
#ifndef CSQD_AUTH_H
#define CSQD_AUTH_H

struct client;

/* 1 while c must authenticate before anything but AUTH, HELLO and QUIT:
 * a password is configured and c has not given it. */
int auth_required(const struct client *);

#endif
