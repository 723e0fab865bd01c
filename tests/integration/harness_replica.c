/*
 * What the tests of csq.so's replication share (test_module.c,
 * test_import.c, test_module_text.c): a replica set up and waited for,
 * the master's writes waited for on it, a state's digest, and a message
 * on a subscription. Each waits for a state, within WAIT_MS.
 */
#include <stdio.h>
#include <string.h>

#include "harness.h"

#define WAIT_MS 8000

void
redisd_replica_of(struct redisd *replica, struct redisd *master)
{
	redisContext *c = redisd_connect(replica);
	int64_t deadline = now_ms() + WAIT_MS;
	redisReply *rep;
	int up = 0;

	freeReplyObject(CMD(c, "REPLICAOF 127.0.0.1 %d", master->port));
	while (!up && now_ms() < deadline) {
		rep = CMD(c, "INFO replication");
		up = strstr(rep->str, "master_link_status:up") != NULL;
		freeReplyObject(rep);
		if (!up)
			sleep_ms(20);
	}
	assert_true(up);
	redisFree(c);
}

/*
 * WAIT counts the replicas that have this connection's last write; a
 * connection that has written nothing has nothing to wait for, and WAIT
 * answers at once with every replica connected, whatever it has yet
 * (the replica's digest then read "0:0" now and then in CI). A PUBLISH
 * is propagated to replicas (outside a cluster): it makes the
 * connection's last write the master's offset now, every write of every
 * other connection before it included.
 */
void
redisd_replicated(struct redisd *master)
{
	redisContext *c = redisd_connect(master);
	redisReply *rep = CMD(c, "PUBLISH csq-test-replicated 1");

	freeReplyObject(rep);
	rep = CMD(c, "WAIT 1 %d", WAIT_MS);

	assert_int_equal(rep->type, REDIS_REPLY_INTEGER);
	assert_int_equal(rep->integer, 1);
	freeReplyObject(rep);
	redisFree(c);
}

void
redisd_digest(struct redisd *r, const char *key, char *out, size_t cap)
{
	redisContext *c = redisd_connect(r);
	redisReply *rep = CMD(c, "CSQ.DIGEST %s", key);

	assert_int_equal(rep->type, REDIS_REPLY_STATUS);
	snprintf(out, cap, "%s", rep->str);
	freeReplyObject(rep);
	redisFree(c);
}

int
redis_wait_message(redisContext *sub, const char *a, const char *b)
{
	int64_t deadline = now_ms() + WAIT_MS;
	struct timeval tv = {0, 200000};
	redisReply *rep;
	int found = 0;

	redisSetTimeout(sub, tv);
	while (!found && now_ms() < deadline) {
		if (redisGetReply(sub, (void **)&rep) != REDIS_OK) {
			/* A read timeout: the connection goes on. */
			sub->err = 0;
			continue;
		}
		if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 3 &&
		    rep->element[2]->type == REDIS_REPLY_STRING)
			found = memmem(rep->element[2]->str,
			               rep->element[2]->len, a, strlen(a)) &&
			        memmem(rep->element[2]->str,
			               rep->element[2]->len, b, strlen(b));
		freeReplyObject(rep);
	}
	return found;
}
