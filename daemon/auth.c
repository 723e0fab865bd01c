/*
 * Authentication and roles. A connection keeps the role it logged in
 * with until it authenticates again or RESETs: a reload that changes
 * users, or a password, does not change what a connection already is.
 */
#include "auth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "client.h"
#include "glob.h"
#include "server.h"
#include "util.h"

/* The channels each role may subscribe to, by prefix (section 9). */
static const char *const auth_frontend_channels[] = {"user:", "queue:", NULL};
static const char *const auth_servicer_channels[] = {
    "servicer:", "queue:", NULL};

/* The roles column's bits (lib/op.h) are csqd's roles as bits. */
_Static_assert(CSQ_ROLE_FRONTEND == 1 << CONFIG_ROLE_FRONTEND &&
                   CSQ_ROLE_SERVICER == 1 << CONFIG_ROLE_SERVICER,
               "CSQ_ROLE_<role> is 1 << CONFIG_ROLE_<role>");

/* 1 when c is bound and id (len bytes) matches one of its globs. */
static int
auth_id_bound(const struct client *c, const char *id, size_t len)
{
	int i;

	for (i = 0; i < c->nids; i++)
		if (csq_glob(c->ids[i], strlen(c->ids[i]), id, len))
			return 1;
	return 0;
}

int
auth_may_act(const struct client *c, enum csq_id_of of, const char *arg,
             size_t len)
{
	enum config_role role = auth_role(c);
	const char *slash;

	if (c->nids == 0 || role == CONFIG_ROLE_ADMIN)
		return 1;
	/* A user's ids are of its role's kind (config.h): a frontend's
	 * users, a servicer's servicers. */
	if (role == CONFIG_ROLE_FRONTEND)
		return of != CSQ_ID_OF_USER || auth_id_bound(c, arg, len);
	if (of != CSQ_ID_OF_SERVICER && of != CSQ_ID_OF_ROOM)
		return 1;
	/* A room acts for its servicer: the part before its '/'. */
	if (of == CSQ_ID_OF_ROOM && (slash = memchr(arg, '/', len)) != NULL)
		len = (size_t)(slash - arg);
	return auth_id_bound(c, arg, len);
}

/* A bound user's channel of its own kind ("user:" for a frontend,
 * "servicer:" for a servicer): the id after it must be one it may act
 * for, and a pattern must be one of its globs whole. Else 1. */
static int
auth_may_hear(const struct client *c, const char *name, size_t len, int pattern)
{
	const char *kind =
	    auth_role(c) == CONFIG_ROLE_FRONTEND ? "user:" : "servicer:";
	size_t klen = strlen(kind);
	int i;

	if (c->nids == 0 || len < klen || memcmp(name, kind, klen) != 0)
		return 1;
	name += klen;
	len -= klen;
	if (!pattern)
		return auth_id_bound(c, name, len);
	for (i = 0; i < c->nids; i++)
		if (strlen(c->ids[i]) == len &&
		    memcmp(c->ids[i], name, len) == 0)
			return 1;
	return 0;
}

/* As Redis: a connection opened while a password was required and never
 * authenticated needs none once a reload removes it. */
int
auth_required(const struct client *c)
{
	const struct config *cfg = &c->server->cfg;

	return !c->authed && (cfg->requirepass[0] != '\0' || cfg->nusers > 0);
}

enum config_role
auth_role(const struct client *c)
{
	return c->authed ? c->role : CONFIG_ROLE_ADMIN;
}

int
auth_may_run(const struct client *c, int roles)
{
	enum config_role role = auth_role(c);

	return role == CONFIG_ROLE_ADMIN || (roles & (1 << role)) != 0;
}

int
auth_may_subscribe(const struct client *c, const char *name, size_t len,
                   int pattern)
{
	const char *const *prefixes;
	size_t i, lit = len, plen;

	switch (auth_role(c)) {
	case CONFIG_ROLE_FRONTEND:
		prefixes = auth_frontend_channels;
		break;
	case CONFIG_ROLE_SERVICER:
		prefixes = auth_servicer_channels;
		break;
	default:
		return 1;
	}
	/* A pattern's literal prefix ends at its first wildcard; an escape
	 * ends it too, which can only make it shorter. */
	if (pattern)
		for (i = 0; i < len; i++)
			if (strchr("*?[\\", name[i]) != NULL) {
				lit = i;
				break;
			}
	for (i = 0; prefixes[i] != NULL; i++) {
		plen = strlen(prefixes[i]);
		if (lit >= plen && memcmp(name, prefixes[i], plen) == 0)
			return auth_may_hear(c, name, len, pattern);
	}
	return 0;
}

/*
 * Whether the len bytes at given are the secret want. The time depends
 * on len only: every byte is compared, whatever differs first, and
 * want's length is folded in rather than tested first.
 */
static int
auth_secret_equal(const char *given, size_t len, const char *want)
{
	size_t wlen = strlen(want), i;
	unsigned char diff = len != wlen;

	for (i = 0; i < len; i++)
		diff |= (unsigned char)given[i] ^
		        (unsigned char)want[wlen > 0 ? i % wlen : 0];
	return diff == 0;
}

static int
auth_is(const char *s, size_t len, const char *word)
{
	return strlen(word) == len && memcmp(s, word, len) == 0;
}

/* The ids of the user of that name in cfg, or none. */
static const struct config_user *
auth_user(const struct config *cfg, const char *name)
{
	int i;

	for (i = 0; i < cfg->nusers; i++)
		if (strcmp(cfg->users[i].name, name) == 0)
			return &cfg->users[i];
	return NULL;
}

int
auth_check(const struct config *cfg, const char *user, size_t userlen,
           const char *password, size_t passlen, enum config_role *role,
           const char **name)
{
	const struct config_user *found = NULL;
	int ok, i;

	/* "default" in any case, as csqd took it before users existed;
	 * the names of users are case-sensitive, as ids are. */
	if (user == NULL || (userlen == strlen("default") &&
	                     strncasecmp(user, "default", userlen) == 0)) {
		/* Without requirepass the default user takes any password
		 * (Redis's nopass), unless users are set: then there is no
		 * anonymous user. */
		ok = auth_secret_equal(password, passlen, cfg->requirepass);
		if (cfg->requirepass[0] == '\0')
			ok = cfg->nusers == 0;
		if (!ok)
			return -1;
		*role = CONFIG_ROLE_ADMIN;
		*name = "default";
		return 0;
	}
	for (i = 0; i < cfg->nusers; i++)
		if (auth_is(user, userlen, cfg->users[i].name))
			found = &cfg->users[i];
	/* An unknown name costs a comparison too: the time of a wrong
	 * pair does not tell whether the name exists. */
	ok = auth_secret_equal(password, passlen,
	                       found != NULL ? found->password
	                                     : cfg->requirepass) &&
	     found != NULL;
	if (!ok)
		return -1;
	*role = found->role;
	*name = found->name;
	return 0;
}

/* c is now the user of that name and role, with its ids. */
static void
auth_become(struct client *c, enum config_role role, const char *name)
{
	const struct config_user *u;

	c->authed = 1;
	c->role = role;
	snprintf(c->user, sizeof(c->user), "%s", name);
	/* The ids are the connection's, as its role is: a reload does not
	 * change them until it authenticates again. */
	free(c->ids);
	c->ids = NULL;
	c->nids = 0;
	if ((u = auth_user(&c->server->cfg, c->user)) != NULL && u->nids > 0) {
		c->ids = csq_xcalloc((size_t)u->nids, sizeof(*c->ids));
		memcpy(c->ids, u->ids, (size_t)u->nids * sizeof(*c->ids));
		c->nids = u->nids;
	}
}

int
auth_login(struct client *c, const char *user, size_t userlen,
           const char *password, size_t passlen)
{
	enum config_role role;
	const char *name;

	if (auth_check(&c->server->cfg, user, userlen, password, passlen, &role,
	               &name) != 0)
		return -1;
	auth_become(c, role, name);
	return 0;
}

int
auth_login_token(struct client *c, const char *token, size_t len)
{
	const struct config *cfg = &c->server->cfg;
	const struct config_user *found = NULL;
	int i;

	/* Every user's token is compared, whichever matches: the time
	 * does not tell which user, nor how many have one. */
	for (i = 0; i < cfg->nusers; i++)
		if (auth_secret_equal(token, len, cfg->users[i].token) &&
		    cfg->users[i].token[0] != '\0')
			found = &cfg->users[i];
	if (found == NULL)
		return -1;
	auth_become(c, found->role, found->name);
	return 0;
}

void
auth_reset(struct client *c)
{
	const struct config *cfg = &c->server->cfg;

	c->authed = cfg->requirepass[0] == '\0' && cfg->nusers == 0;
	c->role = CONFIG_ROLE_ADMIN;
	free(c->ids);
	c->ids = NULL;
	c->nids = 0;
	snprintf(c->user, sizeof(c->user), "default");
}
