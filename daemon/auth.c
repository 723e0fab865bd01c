/* Authentication state of a connection. */
#include "auth.h"

#include "client.h"
#include "server.h"

/* As Redis: a connection opened while a password was required and never
 * authenticated needs none once a reload removes it. */
int
auth_required(const struct client *c)
{
	return !c->authed && c->server->cfg.requirepass[0] != '\0';
}
