/*
 * Authentication and roles. A connection keeps the role it logged in
 * with until it authenticates again or RESETs: a reload that changes
 * users, or a password, does not change what a connection already is.
 */
#include "auth.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "client.h"
#include "server.h"

/* The channels each role may subscribe to, by prefix (section 9). */
static const char *const auth_frontend_channels[] = {"user:", "queue:", NULL};
static const char *const auth_servicer_channels[] = {
    "servicer:", "queue:", NULL};

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
			return 1;
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

int
auth_login(struct client *c, const char *user, size_t userlen,
           const char *password, size_t passlen)
{
	enum config_role role;
	const char *name;

	if (auth_check(&c->server->cfg, user, userlen, password, passlen, &role,
	               &name) != 0)
		return -1;
	c->authed = 1;
	c->role = role;
	snprintf(c->user, sizeof(c->user), "%s", name);
	return 0;
}

void
auth_reset(struct client *c)
{
	const struct config *cfg = &c->server->cfg;

	c->authed = cfg->requirepass[0] == '\0' && cfg->nusers == 0;
	c->role = CONFIG_ROLE_ADMIN;
	snprintf(c->user, sizeof(c->user), "default");
}
