/* Blocking helpers for the setup and the checks around a measurement. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define SYNC_BATCH     1000 /* commands in flight while preloading */
#define SYNC_TIMEOUT_S 60   /* longest wait for one reply */

redisContext *
bench_sync_connect(const struct bench_opts *o)
{
	struct timeval tv = {SYNC_TIMEOUT_S, 0};
	redisContext *c;

	c = redisConnectWithTimeout(o->host, o->port, tv);
	if (c == NULL || c->err)
		bench_fatalx("cannot connect to %s:%d: %s", o->host, o->port,
		             c != NULL ? c->errstr : "?");
	redisSetTimeout(c, tv);
	return c;
}

/*
 * Sends commands from to to-1 of gen, SYNC_BATCH at a time, and reads every
 * reply. Returns how many were error replies; dies if the connection does.
 */
long
bench_sync_pipeline(redisContext *c, long from, long to, bench_gen_fn gen,
                    void *arg)
{
	struct bench_cmd cmd;
	redisReply *r;
	long i, j, end, errors = 0;

	for (i = from; i < to; i = end) {
		end = i + SYNC_BATCH < to ? i + SYNC_BATCH : to;
		for (j = i; j < end; j++) {
			gen(j, &cmd, arg);
			redisAppendCommandArgv(c, cmd.argc, cmd.argv,
			                       cmd.argvlen);
		}
		for (j = i; j < end; j++) {
			if (redisGetReply(c, (void **)&r) != REDIS_OK)
				bench_fatalx("connection lost: %s", c->errstr);
			if (r->type == REDIS_REPLY_ERROR && errors++ == 0)
				bench_say("error reply: %s", r->str);
			freeReplyObject(r);
		}
	}
	return errors;
}

/* Sends "cmd arg" and returns its integer reply, or -1. */
long long
bench_sync_int(redisContext *c, const char *cmd, const char *arg)
{
	redisReply *r;
	long long v = -1;

	r = redisCommand(c, "%s %s", cmd, arg);
	if (r == NULL)
		bench_fatalx("connection lost: %s", c->errstr);
	if (r->type == REDIS_REPLY_INTEGER)
		v = r->integer;
	freeReplyObject(r);
	return v;
}

/* One counter of STATS, or -1 when it is missing. */
long long
bench_sync_stat(redisContext *c, const char *field)
{
	redisReply *r;
	long long v = -1;
	size_t i;

	if ((r = redisCommand(c, "STATS")) == NULL)
		bench_fatalx("connection lost: %s", c->errstr);
	if (r->type == REDIS_REPLY_ARRAY) {
		for (i = 0; i + 1 < r->elements; i += 2) {
			if (r->element[i]->type == REDIS_REPLY_STRING &&
			    strcmp(r->element[i]->str, field) == 0 &&
			    r->element[i + 1]->type == REDIS_REPLY_INTEGER) {
				v = r->element[i + 1]->integer;
				break;
			}
		}
	}
	freeReplyObject(r);
	return v;
}

/* Resident memory of a process in KiB, from /proc; -1 if unreadable. */
long
bench_vmrss_kb(pid_t pid)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;

	if (pid <= 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, "VmRSS:", 6) == 0) {
			kb = strtol(line + 6, NULL, 10);
			break;
		}
	}
	fclose(f);
	return kb;
}
