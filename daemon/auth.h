/*
 * Who a connection is (protocol-v2 section 9): whether it must still
 * authenticate, which user and role it has, and the checks of AUTH's and
 * HELLO's credentials against requirepass (the user "default", role
 * admin) and the users of the configuration.
 */
#ifndef CSQD_AUTH_H
#define CSQD_AUTH_H

#include <stddef.h>

#include "config.h"
#include "op.h"

struct client;

/* 1 while c must authenticate before anything but AUTH, HELLO and QUIT:
 * a password or users are configured and c has not authenticated. */
int auth_required(const struct client *);

/* c's role now: the role it authenticated with, or admin when it needs
 * no authentication. */
enum config_role auth_role(const struct client *);

/* 1 when c's role may run a command of these roles: the bits of the
 * table of operations' roles column (CSQ_ROLE_*, lib/op.h), which csqd's
 * own commands use too. admin may run everything and has no bit. */
int auth_may_run(const struct client *, int roles);

/* 1 when c's role may subscribe to the channel, or (pattern) to the
 * pattern whose literal prefix, up to its first wildcard, is checked.
 * A user bound to ids hears its own only: a channel user:<id> (frontend)
 * or servicer:<id> (servicer) of an id it may act for, and a pattern of
 * those channels only when it is one of its globs, whole. */
int auth_may_subscribe(const struct client *, const char *name, size_t len,
                       int pattern);

/*
 * 1 when c may act for arg (argv[1]), an id of what the command's first
 * argument names (the table of operations' id column, lib/op.h): a user
 * bound to ids (the users' ids key) acts only for those, by glob: a
 * frontend for the users it names (ENQUEUE, TOUCH, LEAVE, WHERE), a
 * servicer for its servicers (HEARTBEAT, PAUSE, RESUME, LOGOUT, ROOMS)
 * and their rooms, whose ids are "<servicer>/<index>" (ACCEPT, DECLINE,
 * READY, RELEASE, TRANSFER). Any other id (a queue's, a user's named by
 * a servicer), a command that names none, and an unbound user: any id.
 */
int auth_may_act(const struct client *, enum csq_id_of of, const char *arg,
                 size_t len);

/*
 * Whether user (NULL: "default") and password are a pair that AUTH takes:
 * 0 with the user's role and name (static, or the configuration's), -1
 * when they are not. Passwords are compared in constant time.
 */
int auth_check(const struct config *, const char *user, size_t userlen,
               const char *password, size_t passlen, enum config_role *role,
               const char **name);

/*
 * Logs c in as user (NULL: "default") with password: 0 and c has the
 * user's role, or -1 when the pair is wrong (c is left as it was, as in
 * Redis). Passwords are compared in constant time and never logged.
 */
int auth_login(struct client *, const char *user, size_t userlen,
               const char *password, size_t passlen);

/* The same with a user's token (the users' token key: the HTTP API's
 * bearer token, http_api.h), compared in constant time with every
 * user's: 0, or -1 when no user has it. */
int auth_login_token(struct client *, const char *token, size_t len);

/* c as a new connection is (RESET): authenticated only when nothing is
 * required. */
void auth_reset(struct client *);

#endif
