/*
 * The asynchronous drivers: C connections over hiredis + libevent, each
 * sending its commands in batches of P and the next batch when the whole
 * batch is answered, as redis-benchmark -P does, so that the figures of both
 * tools mean the same thing. The rate driver counts replies per second; the
 * latency driver times each round trip with one command in flight.
 */
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <hiredis/async.h>

#include "bench.h"
#include "redis_engine.h"
#include "redis_event.h"

/* The RESP of a generated command: its words and their headers. */
#define DRIVE_CMD_MAX (BENCH_ARGV_MAX * (BENCH_WORD_MAX + 32) + 32)

struct drive;

struct drive_client {
	struct drive *d;
	redisAsyncContext *ac;
	int inflight;
	uint64_t sent_ns; /* latency mode: when the command went out */
};

struct drive {
	struct event_base *base;
	struct event *watchdog;
	struct drive_client *cl;
	int nclients;
	int ready; /* clients that answered their first PING */
	int pipeline;
	long total; /* commands to send, or -1: until the deadline */
	long issued;
	long done;
	uint64_t deadline_ns;
	int latency;
	struct bench_samples *samples;
	bench_gen_fn gen;
	void *arg;
	struct bench_run *run;
	uint64_t t0;
	uint64_t t1;
	int over; /* set once the loop is left: late callbacks do nothing */
	int failed;
};

static void drive_reply_cb(redisAsyncContext *, void *, void *);

static void
drive_fail(struct drive *d, const char *why)
{
	if (d->over)
		return;
	bench_say("run failed: %s", why);
	d->failed = 1;
	d->over = 1;
	event_base_loopbreak(d->base);
}

static int
drive_more(struct drive *d)
{
	if (d->latency && d->deadline_ns != 0 &&
	    bench_now_ns() >= d->deadline_ns)
		return 0;
	return d->total < 0 || d->issued < d->total;
}

/* Sends the client's next batch, if the run is not over. */
static void
drive_send(struct drive_client *c)
{
	struct drive *d = c->d;
	struct bench_cmd cmd;
	char buf[DRIVE_CMD_MAX];
	size_t len;
	int n;

	if (d->latency)
		c->sent_ns = bench_now_ns();
	for (n = 0; n < d->pipeline && drive_more(d); n++) {
		d->gen(d->issued++, &cmd, d->arg);
		len = bench_resp_cmd(buf, sizeof(buf), cmd.argc, cmd.argv,
		                     cmd.argvlen);
		if (len == 0 ||
		    redisAsyncFormattedCommand(c->ac, drive_reply_cb, c, buf,
		                               len) != REDIS_OK) {
			drive_fail(d, "cannot queue a command");
			return;
		}
		c->inflight++;
	}
}

static void
drive_finish(struct drive *d)
{
	int i;

	for (i = 0; i < d->nclients; i++)
		if (d->cl[i].inflight > 0)
			return;
	d->t1 = bench_now_ns();
	d->over = 1;
	event_base_loopbreak(d->base);
}

static void
drive_reply_cb(redisAsyncContext *ac, void *r, void *priv)
{
	struct drive_client *c = priv;
	struct drive *d = c->d;
	redisReply *reply = r;
	int i;

	if (d->over)
		return;
	if (reply == NULL) {
		drive_fail(d, ac->errstr[0] != '\0' ? ac->errstr
		                                    : "connection lost");
		return;
	}
	c->inflight--;
	if (d->ready < d->nclients) {
		/* The PING that proves the connection; start when all have. */
		if (++d->ready == d->nclients) {
			d->t0 = bench_now_ns();
			if (d->latency && d->deadline_ns != 0)
				d->deadline_ns += d->t0;
			for (i = 0; i < d->nclients; i++)
				drive_send(&d->cl[i]);
			drive_finish(d);
		}
		return;
	}
	d->done++;
	if (reply->type == REDIS_REPLY_ERROR) {
		if (d->run->errors++ == 0)
			snprintf(d->run->first_error,
			         sizeof(d->run->first_error), "%s", reply->str);
	}
	if (d->latency)
		bench_samples_add(d->samples, bench_now_ns() - c->sent_ns);
	if (c->inflight > 0)
		return;
	drive_send(c);
	if (c->inflight == 0)
		drive_finish(d);
}

/* hiredis frees a context whose connection failed or closed: forget it. */
static void
drive_connect_cb(const redisAsyncContext *ac, int status)
{
	struct drive_client *c = ac->data;

	if (status != REDIS_OK) {
		c->ac = NULL;
		drive_fail(c->d, ac->errstr);
	}
}

static void
drive_disconnect_cb(const redisAsyncContext *ac, int status)
{
	struct drive_client *c = ac->data;

	(void)status;
	c->ac = NULL;
	drive_fail(c->d,
	           ac->errstr[0] != '\0' ? ac->errstr : "connection closed");
}

static void
drive_watchdog_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	drive_fail(arg, "timed out");
}

static int
drive(struct drive *d, const struct bench_opts *o)
{
	struct timeval tv;
	int i, rc;

	memset(d->run, 0, sizeof(*d->run));
	if ((d->base = event_base_new()) == NULL)
		bench_fatalx("event_base_new failed");
	if ((d->cl = calloc((size_t)d->nclients, sizeof(*d->cl))) == NULL)
		bench_fatalx("out of memory");
	for (i = 0; i < d->nclients; i++) {
		struct drive_client *c = &d->cl[i];

		c->d = d;
		c->ac = redisAsyncConnect(o->host, o->port);
		if (c->ac == NULL || c->ac->err)
			bench_fatalx("cannot connect to %s:%d: %s", o->host,
			             o->port,
			             c->ac != NULL ? c->ac->errstr : "?");
		c->ac->data = c;
		redis_reply_objects(c->ac);
		redis_event_attach(c->ac, d->base);
		redisAsyncSetConnectCallback(c->ac, drive_connect_cb);
		redisAsyncSetDisconnectCallback(c->ac, drive_disconnect_cb);
		redisAsyncCommand(c->ac, drive_reply_cb, c, "PING");
		c->inflight = 1;
	}
	d->watchdog = evtimer_new(d->base, drive_watchdog_cb, d);
	tv.tv_sec = (time_t)o->timeout;
	tv.tv_usec = 0;
	evtimer_add(d->watchdog, &tv);

	event_base_dispatch(d->base);
	d->over = 1;

	d->run->ops = d->done;
	d->run->seconds = (double)(d->t1 - d->t0) / (double)BENCH_NS_PER_S;
	if (d->run->seconds > 0)
		d->run->ops_per_sec = (double)d->done / d->run->seconds;
	rc = d->failed ? -1 : 0;
	for (i = 0; i < d->nclients; i++)
		if (d->cl[i].ac != NULL)
			redisAsyncFree(d->cl[i].ac);
	event_free(d->watchdog);
	event_base_free(d->base);
	free(d->cl);
	if (rc == 0 && d->run->errors > 0)
		bench_say("%ld error replies, the first: %s", d->run->errors,
		          d->run->first_error);
	return rc;
}

/* Sends total commands over clients connections in batches of pipeline. */
int
bench_drive_rate(const struct bench_opts *o, int clients, int pipeline,
                 long total, bench_gen_fn gen, void *arg, struct bench_run *run)
{
	struct drive d;

	memset(&d, 0, sizeof(d));
	d.nclients = clients;
	d.pipeline = pipeline;
	d.total = total;
	d.gen = gen;
	d.arg = arg;
	d.run = run;
	return drive(&d, o);
}

/*
 * Times round trips, one command in flight on each of clients connections,
 * for seconds (when > 0) or until total commands (when > 0) are answered.
 */
int
bench_drive_latency(const struct bench_opts *o, int clients, double seconds,
                    long total, bench_gen_fn gen, void *arg,
                    struct bench_samples *samples, struct bench_run *run)
{
	struct drive d;

	memset(&d, 0, sizeof(d));
	d.nclients = clients;
	d.pipeline = 1;
	d.total = total > 0 ? total : -1;
	d.latency = 1;
	d.deadline_ns =
	    seconds > 0 ? (uint64_t)(seconds * (double)BENCH_NS_PER_S) : 0;
	d.samples = samples;
	d.gen = gen;
	d.arg = arg;
	d.run = run;
	return drive(&d, o);
}
