/*
 * The Redis engine with several daemons: two csqd on one redis-server and
 * one key prefix under concurrent load; kill -9 of a daemon; redis-server
 * stopped and started again under load; AUTH, redis.db and Unix sockets;
 * the key namespace; csq's key broken; Redis out of memory; storms of
 * deadlines, which csq.so reaps in one pass. The program
 * starts its own redis-servers and daemons with engine "redis" whatever
 * CSQ_TEST_ENGINE says, and exits 77 when there is no redis-server.
 *
 * Workers run in threads with their own connections; they never call the
 * cmocka asserts (those jump to the main thread's test), they record the
 * first error and the main thread fails with it.
 */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "record.h"

#define PREFIX "p"

/* The cluster run: enqueuers and servicers on both daemons at once. */
#define ENQ_THREADS  4
#define ENQ_USERS    750 /* per enqueuer thread */
#define ENQ_BATCH    30  /* one pipeline, then its replies */
#define SVC_THREADS  2
#define SVC_PER      3 /* servicers per servicer thread */
#define SVC_CAPACITY 2
#define SVC_ROOMS    (SVC_THREADS * SVC_PER * SVC_CAPACITY)
#define SVC_TAIL     3 /* rounds after the enqueuers are done */
#define N_USERS      (ENQ_THREADS * ENQ_USERS)
#define MARKER       "zz-marker" /* its servicer_up ends an event feed */

/* kill -9 under load. */
#define K9_SENT  2000 /* pipelined through the daemon that is killed */
#define K9_ACKED 700  /* users acknowledged before the kill */
#define K9_OTHER 1000 /* pipelined through the other one meanwhile */
#define K9_AFTER 100  /* enqueued through the restarted daemon */
#define K9_ROOMS 3

/* redis-server stopped under load. */
#define OUT_BEFORE 200
#define OUT_LOAD   2000

#define RECOVER_MS     20000 /* csqd is back after Redis returned */
#define TRYAGAIN_MS    5000  /* csqd noticed that Redis went away */
#define ANSWER_SLOW_MS 2000  /* "at once": TRYAGAIN, not a hang */
#define POLL_MS        20

struct rfx {
	struct redisd *r;
	struct csqd *d[4];
};

static int
setup(void **state)
{
	struct rfx *fx = calloc(1, sizeof(*fx));

	if (fx == NULL)
		abort();
	fx->r = redisd_start(0);
	*state = fx;
	return 0;
}

static int
teardown(void **state)
{
	struct rfx *fx = *state;
	size_t i;
	int rc = 0;

	for (i = 0; i < sizeof(fx->d) / sizeof(fx->d[0]); i++) {
		if (fx->d[i] == NULL)
			continue;
		if (csqd_stop(fx->d[i]) != 0) {
			fprintf(stderr, "csqd %zu did not exit with 0\n", i);
			rc = -1;
		}
	}
	if (rc != 0)
		redisd_dump_log(fx->r);
	redisd_free(fx->r);
	free(fx);
	*state = NULL;
	return rc;
}

/* TRYAGAIN's two texts: a command that certainly changed nothing, and
 * one that Redis may have run (a call lost in flight). */
#define UNSURE_TEXT                                                            \
	"-TRYAGAIN engine unavailable, the command may have been applied; "    \
	"it is safe to send again"
#define NOTHING_TEXT "-TRYAGAIN engine unavailable, nothing was changed"

static int
is_tryagain(const redisReply *r)
{
	return r != NULL && r->type == REDIS_REPLY_ERROR &&
	       strncmp(r->str, "TRYAGAIN", 8) == 0;
}

/* A daemon on the fixture's redis-server (the harness waits until its
 * engine is up). */
static struct csqd *
fx_daemon(struct rfx *fx, int i, const char *extra_conf)
{
	fx->d[i] = csqd_start_redis(fx->r, PREFIX, extra_conf);
	return fx->d[i];
}

/* Writes out everything appended to c without reading any reply. */
static void
flush_pipeline(redisContext *c)
{
	int done = 0;

	while (!done)
		if (redisBufferWrite(c, &done) != REDIS_OK)
			fail_msg("writing a pipeline: %s", c->errstr);
}

/* Strips the quotes json_value leaves on a string. */
static int
json_str(const char *json, const char *key, char *out, size_t len)
{
	char v[256];
	size_t n;

	if (json_value(json, key, v, sizeof(v)) != 0 || v[0] != '"')
		return -1;
	n = strlen(v);
	if (n < 2 || n - 2 >= len)
		return -1;
	memcpy(out, v + 1, n - 2);
	out[n - 2] = '\0';
	return 0;
}

/* ENQUEUE's reply: waiting or assigned, nothing else. */
static int
enqueue_ok(const redisReply *r)
{
	const redisReply *s = reply_field(r, "state");

	return s != NULL && s->type == REDIS_REPLY_STRING &&
	       (strcmp(s->str, "waiting") == 0 ||
	        strcmp(s->str, "assigned") == 0);
}

/* "none", "waiting" or "assigned" (room into room) from WHERE. */
static const char *
where_state(redisContext *c, const char *user, char *room, size_t len)
{
	static char state[32];
	redisReply *r, *v;

	r = CMD(c, "WHERE %s", user);
	snprintf(state, sizeof(state), "%s", FIELD_STR(r, "state"));
	room[0] = '\0';
	v = reply_field(r, "room");
	if (v != NULL && v->type == REDIS_REPLY_STRING)
		snprintf(room, len, "%s", v->str);
	freeReplyObject(r);
	return state;
}

/* Event feeds: a thread per subscriber, until MARKER logs in. */

struct feed {
	redisContext *c;
	char **ev;
	size_t n, cap;
	char err[1024];
	pthread_t th;
};

static int
is_marker(const char *json)
{
	char ev[64], sv[128];

	return json_str(json, "event", ev, sizeof(ev)) == 0 &&
	       strcmp(ev, "servicer_up") == 0 &&
	       json_str(json, "servicer", sv, sizeof(sv)) == 0 &&
	       strcmp(sv, MARKER) == 0;
}

static void *
feed_main(void *arg)
{
	struct feed *f = arg;
	redisReply *r;
	char got[512];
	void *v;

	for (;;) {
		if (redisGetReply(f->c, &v) != REDIS_OK || v == NULL) {
			snprintf(f->err, sizeof(f->err),
			         "feed: no message after %zu: %s", f->n,
			         f->c->errstr);
			return NULL;
		}
		r = v;
		if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
		    r->element[0]->type != REDIS_REPLY_STRING ||
		    r->element[1]->type != REDIS_REPLY_STRING ||
		    r->element[2]->type != REDIS_REPLY_STRING ||
		    strcmp(r->element[0]->str, "message") != 0 ||
		    strcmp(r->element[1]->str, "events") != 0) {
			reply_repr(r, got, sizeof(got));
			snprintf(f->err, sizeof(f->err), "feed: unexpected %s",
			         got);
			freeReplyObject(r);
			return NULL;
		}
		if (f->n == f->cap) {
			f->cap = f->cap ? 2 * f->cap : 1024;
			f->ev = realloc(f->ev, f->cap * sizeof(*f->ev));
			if (f->ev == NULL)
				abort();
		}
		f->ev[f->n++] = strdup(r->element[2]->str);
		freeReplyObject(r);
		if (is_marker(f->ev[f->n - 1]))
			return NULL;
	}
}

static void
feed_start(struct feed *f, struct csqd *d)
{
	const char *ch[] = {"events"};

	memset(f, 0, sizeof(*f));
	f->c = csqd_connect(d);
	SUBSCRIBE(f->c, 1, ch);
	if (pthread_create(&f->th, NULL, feed_main, f) != 0)
		fail_msg("pthread_create");
}

static void
feed_join(struct feed *f)
{
	pthread_join(f->th, NULL);
	if (f->err[0] != '\0')
		fail_msg("%s", f->err);
}

static void
feed_free(struct feed *f)
{
	size_t i;

	for (i = 0; i < f->n; i++)
		free(f->ev[i]);
	free(f->ev);
	redisFree(f->c);
}

static int
str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Workers of the cluster run. */

struct enqueuer {
	int id;
	redisContext *c[2]; /* one per daemon: batches alternate */
	char err[1024];
	pthread_t th;
};

static void *
enqueuer_main(void *arg)
{
	struct enqueuer *e = arg;
	redisContext *c;
	redisReply *r;
	char got[512];
	void *v;
	int j, k, b;

	for (j = 0, b = 0; j < ENQ_USERS; j += ENQ_BATCH, b++) {
		c = e->c[(b + e->id) % 2];
		for (k = j; k < j + ENQ_BATCH && k < ENQ_USERS; k++)
			redisAppendCommand(c, "ENQUEUE e%d-%d TTL 0", e->id, k);
		for (k = j; k < j + ENQ_BATCH && k < ENQ_USERS; k++) {
			if (redisGetReply(c, &v) != REDIS_OK || v == NULL) {
				snprintf(e->err, sizeof(e->err),
				         "ENQUEUE e%d-%d: %s", e->id, k,
				         c->errstr);
				return NULL;
			}
			r = v;
			if (!enqueue_ok(r)) {
				reply_repr(r, got, sizeof(got));
				snprintf(e->err, sizeof(e->err),
				         "ENQUEUE e%d-%d: %s", e->id, k, got);
				freeReplyObject(r);
				return NULL;
			}
			freeReplyObject(r);
		}
	}
	return NULL;
}

struct servicer {
	int id;
	redisContext *c[2];
	volatile int *stop;
	int rounds;
	char err[1024];
	pthread_t th;
};

/* Reads n replies, each of which must be of type want; 0 or -1. */
static int
servicer_replies(struct servicer *s, redisContext *c, int n, int want,
                 const char *what)
{
	redisReply *r;
	char got[512];
	void *v;
	int i, bad = 0;

	for (i = 0; i < n; i++) {
		if (redisGetReply(c, &v) != REDIS_OK || v == NULL) {
			snprintf(s->err, sizeof(s->err), "%s: %s", what,
			         c->errstr);
			return -1;
		}
		r = v;
		if (!bad && r->type != want) {
			reply_repr(r, got, sizeof(got));
			snprintf(s->err, sizeof(s->err), "%s: %s", what, got);
			bad = 1;
		}
		freeReplyObject(r);
	}
	return bad ? -1 : 0;
}

/* Heartbeats through one daemon, releases every room through the other. */
static void *
servicer_main(void *arg)
{
	struct servicer *s = arg;
	redisContext *hb, *rel;
	int m, i, tail;

	/* Rounds go on after the last ENQUEUE: rooms fill and free again. */
	for (s->rounds = 0, tail = 0; tail < SVC_TAIL; s->rounds++) {
		if (*s->stop)
			tail++;
		hb = s->c[s->rounds % 2];
		rel = s->c[(s->rounds + 1) % 2];
		for (m = 0; m < SVC_PER; m++)
			redisAppendCommand(
			    hb, "HEARTBEAT s%d-%d CAPACITY %d TTL 120", s->id,
			    m, SVC_CAPACITY);
		if (servicer_replies(s, hb, SVC_PER, REDIS_REPLY_ARRAY,
		                     "HEARTBEAT") != 0)
			return NULL;
		for (m = 0; m < SVC_PER; m++)
			for (i = 0; i < SVC_CAPACITY; i++)
				redisAppendCommand(rel, "RELEASE s%d-%d/%d",
				                   s->id, m, i);
		if (servicer_replies(s, rel, SVC_PER * SVC_CAPACITY,
		                     REDIS_REPLY_INTEGER, "RELEASE") != 0)
			return NULL;
	}
	return NULL;
}

/* Index of a user e<t>-<j> or a room s<t>-<m>/<i>, or -1. */
static int
user_index(const char *u)
{
	int t, j, n = 0;

	if (sscanf(u, "e%d-%d%n", &t, &j, &n) != 2 || u[n] != '\0' || t < 0 ||
	    t >= ENQ_THREADS || j < 0 || j >= ENQ_USERS)
		return -1;
	return t * ENQ_USERS + j;
}

static int
room_index(const char *room)
{
	int t, m, i, n = 0;

	if (sscanf(room, "s%d-%d/%d%n", &t, &m, &i, &n) != 3 ||
	    room[n] != '\0' || t < 0 || t >= SVC_THREADS || m < 0 ||
	    m >= SVC_PER || i < 0 || i >= SVC_CAPACITY)
		return -1;
	return (t * SVC_PER + m) * SVC_CAPACITY + i;
}

/* What the event stream says about every user and room. */
struct history {
	int matched[N_USERS];
	int released[N_USERS];
	int queued[N_USERS];
	char room_of[N_USERS][64];
	int room_user[SVC_ROOMS]; /* -1 free */
	int nmatched, nreleased;
};

static void
history_build(struct history *h, const struct feed *f)
{
	char ev[64], user[128], room[64];
	size_t k;
	int u = -1, x = -1; /* fail_msg() does not return */

	memset(h, 0, sizeof(*h));
	for (x = 0; x < SVC_ROOMS; x++)
		h->room_user[x] = -1;
	for (k = 0; k < f->n; k++) {
		const char *j = f->ev[k];

		if (json_str(j, "event", ev, sizeof(ev)) != 0)
			fail_msg("event %zu without event: %s", k, j);
		if (strcmp(ev, "servicer_up") == 0)
			continue;
		if (strcmp(ev, "queued") != 0 && strcmp(ev, "matched") != 0 &&
		    strcmp(ev, "released") != 0)
			fail_msg("event %zu unexpected in this run: %s", k, j);
		if (json_str(j, "user", user, sizeof(user)) != 0 ||
		    (u = user_index(user)) < 0)
			fail_msg("event %zu: bad user in %s", k, j);
		if (strcmp(ev, "queued") == 0) {
			if (h->queued[u]++ != 0 || h->matched[u] != 0)
				fail_msg("event %zu: %s queued again: %s", k,
				         user, j);
			continue;
		}
		if (json_str(j, "room", room, sizeof(room)) != 0 ||
		    (x = room_index(room)) < 0)
			fail_msg("event %zu: bad room in %s", k, j);
		if (strcmp(ev, "matched") == 0) {
			if (h->matched[u]++ != 0)
				fail_msg("event %zu: %s matched twice: %s", k,
				         user, j);
			if (h->room_user[x] != -1)
				fail_msg("event %zu: room %s already holds "
				         "user #%d: %s",
				         k, room, h->room_user[x], j);
			h->room_user[x] = u;
			snprintf(h->room_of[u], sizeof(h->room_of[u]), "%s",
			         room);
			h->nmatched++;
		} else {
			if (h->room_user[x] != u)
				fail_msg("event %zu: %s released from %s, "
				         "which holds user #%d: %s",
				         k, user, room, h->room_user[x], j);
			if (h->released[u]++ != 0)
				fail_msg("event %zu: %s released twice", k,
				         user);
			h->room_user[x] = -1;
			h->nreleased++;
		}
	}
}

/*
 * Two daemons, one prefix: enqueuers and servicers through both at once.
 * No user matched twice or lost, no room holding two users, STATS alike,
 * and both daemons' subscribers saw the same events in the same order.
 */
static void
cluster_under_load(void **state)
{
	static struct history h;
	struct rfx *fx = *state;
	struct enqueuer enq[ENQ_THREADS];
	struct servicer svc[SVC_THREADS];
	struct feed fa, fb;
	volatile int stop = 0;
	redisContext *ca, *cb;
	redisReply *r, *ra, *rb;
	char user[64], room[64], reprA[2048], reprB[2048];
	const char *st;
	char **sorted;
	size_t k;
	int i, u, nwaiting = 0, nassigned = 0;
	int64_t t0 = now_ms();

	fx_daemon(fx, 0, "");
	fx_daemon(fx, 1, "");
	feed_start(&fa, fx->d[0]);
	feed_start(&fb, fx->d[1]);

	for (i = 0; i < SVC_THREADS; i++) {
		memset(&svc[i], 0, sizeof(svc[i]));
		svc[i].id = i;
		svc[i].stop = &stop;
		svc[i].c[0] = csqd_connect(fx->d[i % 2]);
		svc[i].c[1] = csqd_connect(fx->d[(i + 1) % 2]);
		pthread_create(&svc[i].th, NULL, servicer_main, &svc[i]);
	}
	for (i = 0; i < ENQ_THREADS; i++) {
		memset(&enq[i], 0, sizeof(enq[i]));
		enq[i].id = i;
		enq[i].c[0] = csqd_connect(fx->d[0]);
		enq[i].c[1] = csqd_connect(fx->d[1]);
		pthread_create(&enq[i].th, NULL, enqueuer_main, &enq[i]);
	}
	for (i = 0; i < ENQ_THREADS; i++)
		pthread_join(enq[i].th, NULL);
	stop = 1;
	for (i = 0; i < SVC_THREADS; i++)
		pthread_join(svc[i].th, NULL);
	for (i = 0; i < ENQ_THREADS; i++) {
		redisFree(enq[i].c[0]);
		redisFree(enq[i].c[1]);
		if (enq[i].err[0] != '\0')
			fail_msg("enqueuer %d: %s", i, enq[i].err);
	}
	for (i = 0; i < SVC_THREADS; i++) {
		redisFree(svc[i].c[0]);
		redisFree(svc[i].c[1]);
		if (svc[i].err[0] != '\0')
			fail_msg("servicer %d: %s", i, svc[i].err);
	}

	/* Every change is published; the marker's event comes after all. */
	ca = csqd_connect(fx->d[0]);
	cb = csqd_connect(fx->d[1]);
	r = CMD(ca, "HEARTBEAT %s QUEUES zz-none TTL 120", MARKER);
	freeReplyObject(r);
	feed_join(&fa);
	feed_join(&fb);
	print_message("cluster: %d users, %d+%d servicer rounds, %zu events, "
	              "%lld ms\n",
	              N_USERS, svc[0].rounds, svc[1].rounds, fa.n,
	              (long long)(now_ms() - t0));

	/* The same events, in the same order, on both daemons. */
	if (fa.n != fb.n)
		fail_msg("daemon A's subscriber saw %zu events, B's %zu", fa.n,
		         fb.n);
	for (k = 0; k < fa.n; k++)
		if (strcmp(fa.ev[k], fb.ev[k]) != 0)
			fail_msg("event %zu differs:\n  A: %s\n  B: %s", k,
			         fa.ev[k], fb.ev[k]);
	/* No event twice. */
	sorted = malloc(fa.n * sizeof(*sorted));
	memcpy(sorted, fa.ev, fa.n * sizeof(*sorted));
	qsort(sorted, fa.n, sizeof(*sorted), str_cmp);
	for (k = 1; k < fa.n; k++)
		if (strcmp(sorted[k - 1], sorted[k]) == 0)
			fail_msg("event seen twice: %s", sorted[k]);
	free(sorted);

	/* The stream: one match per user, one user per room at a time. */
	history_build(&h, &fa);
	assert_true(h.nmatched > 0);
	assert_true(h.nreleased > 0);

	/* Nobody lost: the state agrees with the stream, on both daemons. */
	for (u = 0; u < N_USERS; u++) {
		snprintf(user, sizeof(user), "e%d-%d", u / ENQ_USERS,
		         u % ENQ_USERS);
		st = where_state(ca, user, room, sizeof(room));
		if (h.released[u]) {
			if (strcmp(st, "none") != 0)
				fail_msg("%s released but WHERE says %s", user,
				         st);
		} else if (h.matched[u]) {
			if (strcmp(st, "assigned") != 0 ||
			    strcmp(room, h.room_of[u]) != 0)
				fail_msg("%s matched to %s but WHERE says "
				         "%s %s",
				         user, h.room_of[u], st, room);
			nassigned++;
		} else {
			if (!h.queued[u])
				fail_msg("%s: no event at all", user);
			if (strcmp(st, "waiting") != 0)
				fail_msg("%s queued but WHERE says %s", user,
				         st);
			nwaiting++;
		}
		st = where_state(cb, user, reprB, sizeof(reprB));
		if (strcmp(room, reprB) != 0)
			fail_msg("%s: WHERE through B gives room '%s', through "
			         "A '%s'",
			         user, reprB, room);
	}
	r = CMD(ca, "QLEN default");
	assert_reply_integer(r, nwaiting);
	freeReplyObject(r);

	/* STATS from the one state: the same through both. */
	ra = CMD(ca, "STATS");
	rb = CMD(cb, "STATS");
	reply_repr(ra, reprA, sizeof(reprA));
	reply_repr(rb, reprB, sizeof(reprB));
	assert_string_equal(reprA, reprB);
	assert_int_equal(FIELD_INT(ra, "waiting"), nwaiting);
	assert_int_equal(FIELD_INT(ra, "rooms_busy"), nassigned);
	assert_int_equal(FIELD_INT(ra, "matched_total"), h.nmatched);
	assert_int_equal(FIELD_INT(ra, "servicers"), SVC_THREADS * SVC_PER + 1);
	/* The marker's one room is free too. */
	assert_int_equal(FIELD_INT(ra, "rooms_free"),
	                 SVC_ROOMS + 1 - nassigned);
	freeReplyObject(ra);
	freeReplyObject(rb);

	redisFree(ca);
	redisFree(cb);
	feed_free(&fa);
	feed_free(&fb);
}

/* Reads pushes until a message whose event is ev arrives; its payload. */
static char *
wait_event_at(const char *file, int line, redisContext *c, const char *ev)
{
	int64_t deadline = now_ms() + RECOVER_MS;
	char got[1024], e[64];
	redisReply *r;
	char *p;

	for (;;) {
		r = get_reply_at(file, line, c);
		if (r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
		    r->element[0]->type == REDIS_REPLY_STRING &&
		    r->element[2]->type == REDIS_REPLY_STRING &&
		    strcmp(r->element[0]->str, "message") == 0 &&
		    json_str(r->element[2]->str, "event", e, sizeof(e)) == 0) {
			if (strcmp(e, ev) == 0) {
				p = strdup(r->element[2]->str);
				freeReplyObject(r);
				return p;
			}
			freeReplyObject(r);
		} else {
			reply_repr(r, got, sizeof(got));
			freeReplyObject(r);
			fail_at(file, line, "unexpected push %s", got);
		}
		if (now_ms() > deadline)
			fail_at(file, line, "no %s event within %d ms", ev,
			        RECOVER_MS);
	}
}
#define WAIT_EVENT(c, ev) wait_event_at(__FILE__, __LINE__, (c), (ev))

/* A user waiting through A hears on A of the room freed through B. */
static void
matched_across_daemons(void **state)
{
	struct rfx *fx = *state;
	const char *ch[] = {"user:ub1"};
	redisContext *sub, *ca, *cb;
	char *j;

	fx_daemon(fx, 0, "");
	fx_daemon(fx, 1, "");
	sub = csqd_connect(fx->d[0]);
	SUBSCRIBE(sub, 1, ch);
	ca = csqd_connect(fx->d[0]);
	cb = csqd_connect(fx->d[1]);
	CHECK(
	    ca,
	    "['state','waiting','queue','default','position',:1,'eta_ms',:-1]",
	    "ENQUEUE ub1");
	j = WAIT_EVENT(sub, "queued");
	assert_json_str(j, "user", "ub1");
	free(j);
	CHECK(cb,
	      "['servicer','sb','status','ready','capacity',:1,'active',:1,"
	      "'ttl',:30]",
	      "HEARTBEAT sb");
	j = WAIT_EVENT(sub, "matched");
	assert_json_str(j, "user", "ub1");
	assert_json_str(j, "servicer", "sb");
	assert_json_str(j, "room", "sb/0");
	assert_json_str(j, "queue", "default");
	free(j);
	/* And the release through B, heard on A as well. */
	CHECK(cb, ":1", "RELEASE sb/0");
	j = WAIT_EVENT(sub, "released");
	assert_json_str(j, "user", "ub1");
	assert_json_str(j, "by", "servicer");
	free(j);
	CHECK(ca, "['state','none']", "WHERE ub1");
	redisFree(sub);
	redisFree(ca);
	redisFree(cb);
}

/*
 * kill -9 of daemon A while a client pipelines ENQUEUEs through it and
 * another through B: B keeps serving, every acknowledged user is still
 * there, and clients of A started again carry on.
 */
static void
kill9_one_daemon(void **state)
{
	struct rfx *fx = *state;
	static int present[K9_SENT];
	redisContext *ca, *cb, *c;
	redisReply *r;
	char user[32], room[64], got[512];
	const char *st;
	long long qlen;
	int i, gap;

	fx_daemon(fx, 0, "");
	fx_daemon(fx, 1, "");
	cb = csqd_connect(fx->d[1]);
	CHECK(cb,
	      "['servicer','s1','status','ready','capacity',:3,'active',:0,"
	      "'ttl',:600]",
	      "HEARTBEAT s1 CAPACITY 3 TTL 600");

	/* The rooms full and a member first in line, then the load. */
	ca = csqd_connect(fx->d[0]);
	for (i = 0; i < K9_ROOMS; i++) {
		r = CMD(ca, "ENQUEUE a%d TTL 0", i);
		assert_string_equal(FIELD_STR(r, "state"), "assigned");
		freeReplyObject(r);
	}
	CHECK(
	    ca,
	    "['state','waiting','queue','default','position',:1,'eta_ms',:-1]",
	    "ENQUEUE w1 TIER 5 TTL 0");
	for (i = K9_ROOMS; i < K9_SENT; i++)
		redisAppendCommand(ca, "ENQUEUE a%d TTL 0", i);
	flush_pipeline(ca);
	for (i = 0; i < K9_OTHER; i++)
		redisAppendCommand(cb, "ENQUEUE b%d TTL 0", i);
	flush_pipeline(cb);
	for (i = K9_ROOMS; i < K9_ACKED; i++) {
		r = GET_REPLY(ca);
		if (!enqueue_ok(r)) {
			reply_repr(r, got, sizeof(got));
			fail_msg("ENQUEUE a%d through A: %s", i, got);
		}
		freeReplyObject(r);
	}
	csqd_kill9(fx->d[0]);
	fx->d[0] = NULL;
	redisFree(ca);

	/* B never stopped: its pipeline and what follows all succeed. */
	for (i = 0; i < K9_OTHER; i++) {
		r = GET_REPLY(cb);
		if (!enqueue_ok(r)) {
			reply_repr(r, got, sizeof(got));
			fail_msg("ENQUEUE b%d through B: %s", i, got);
		}
		freeReplyObject(r);
	}
	for (i = K9_OTHER; i < K9_OTHER + K9_AFTER; i++) {
		r = CMD(cb, "ENQUEUE b%d TTL 0", i);
		assert_true(enqueue_ok(r));
		freeReplyObject(r);
	}

	/* A again, on the same prefix. */
	fx_daemon(fx, 0, "");
	c = csqd_connect(fx->d[0]);
	for (i = 0; i < K9_SENT; i++) {
		snprintf(user, sizeof(user), "a%d", i);
		st = where_state(c, user, room, sizeof(room));
		present[i] = strcmp(st, "none") != 0;
		if (i < K9_ACKED && !present[i])
			fail_msg("acknowledged %s lost", user);
		if (i < K9_ROOMS && strcmp(st, "assigned") != 0)
			fail_msg("%s should sit in a room, WHERE says %s", user,
			         st);
	}
	/*
	 * A sent its scripts in order on one connection and each one is
	 * atomic: of the unacknowledged users, a run right after the
	 * acknowledged ones was done, then nothing.
	 */
	gap = 0;
	for (i = K9_ACKED; i < K9_SENT; i++) {
		if (!present[i])
			gap = 1;
		else if (gap)
			fail_msg("a%d present after a gap", i);
	}
	for (i = 0; i < K9_OTHER + K9_AFTER; i++) {
		snprintf(user, sizeof(user), "b%d", i);
		st = where_state(c, user, room, sizeof(room));
		if (strcmp(st, "waiting") != 0 && strcmp(st, "assigned") != 0)
			fail_msg("%s (through B) lost: %s", user, st);
	}

	/* New clients of A carry on: the line grows, rooms fill. */
	r = CMD(c, "QLEN default");
	qlen = r->integer;
	freeReplyObject(r);
	for (i = 0; i < K9_AFTER; i++) {
		r = CMD(c, "ENQUEUE c%d TTL 0", i);
		assert_string_equal(FIELD_STR(r, "state"), "waiting");
		assert_int_equal(FIELD_INT(r, "position"), qlen + i + 1);
		freeReplyObject(r);
	}
	CHECK(c, ":1", "RELEASE s1/0");
	/* The best waiting user is still the member. */
	r = CMD(cb, "WHERE w1");
	assert_string_equal(FIELD_STR(r, "state"), "assigned");
	assert_string_equal(FIELD_STR(r, "room"), "s1/0");
	freeReplyObject(r);
	CHECK(cb, "['state','none']", "WHERE a0");
	redisFree(c);
	redisFree(cb);
}

/*
 * redis-server stopped (SIGTERM, append-only file) under load: TRYAGAIN,
 * csqd up and PINGable; redis-server started again: csqd serves again by
 * itself, the state is intact, an old subscription still gets events.
 */
static void
redis_outage(void **state)
{
	struct rfx *fx = *state;
	static int acked[OUT_LOAD];
	const char *ch[] = {"events"};
	const char *cmds[] = {"ENQUEUE zz1",   "WHERE d0",     "STATS",
	                      "HEARTBEAT zs1", "QLEN default", "LEAVE d1",
	                      "QUEUE default", "SERVICERS"};
	redisContext *c, *sub, *c2;
	redisReply *r;
	char user[32], room[64], got[512];
	const char *st;
	int64_t t, deadline;
	size_t k;
	int i, ntry = 0;
	char *j;

	fx_daemon(fx, 0, "");
	sub = csqd_connect(fx->d[0]);
	SUBSCRIBE(sub, 1, ch);
	c = csqd_connect(fx->d[0]);
	for (i = 0; i < OUT_BEFORE; i++)
		redisAppendCommand(c, "ENQUEUE d%d TTL 0", i);
	for (i = 0; i < OUT_BEFORE; i++) {
		r = GET_REPLY(c);
		assert_true(enqueue_ok(r));
		freeReplyObject(r);
	}

	/* Under load: each reply a success or TRYAGAIN, nothing else. */
	for (i = 0; i < OUT_LOAD; i++)
		redisAppendCommand(c, "ENQUEUE x%d TTL 0", i);
	flush_pipeline(c);
	assert_int_equal(redisd_stop(fx->r), 0);
	for (i = 0; i < OUT_LOAD; i++) {
		r = GET_REPLY(c);
		if (is_tryagain(r))
			ntry++;
		else if (enqueue_ok(r))
			acked[i] = 1;
		else {
			reply_repr(r, got, sizeof(got));
			fail_msg("ENQUEUE x%d while Redis stops: %s", i, got);
		}
		freeReplyObject(r);
	}
	print_message("outage: %d of %d pipelined ENQUEUEs got TRYAGAIN\n",
	              ntry, OUT_LOAD);

	/* csqd notices at once that Redis is gone. */
	deadline = now_ms() + TRYAGAIN_MS;
	for (;;) {
		r = CMD(c, "QLEN default");
		if (is_tryagain(r)) {
			freeReplyObject(r);
			break;
		}
		freeReplyObject(r);
		if (now_ms() > deadline)
			fail_msg("no TRYAGAIN within %d ms of Redis stopping",
			         TRYAGAIN_MS);
		sleep_ms(POLL_MS);
	}
	for (k = 0; k < sizeof(cmds) / sizeof(cmds[0]); k++) {
		t = now_ms();
		r = CMD(c, cmds[k]);
		if (!is_tryagain(r)) {
			reply_repr(r, got, sizeof(got));
			fail_msg("%s while Redis is down: %s", cmds[k], got);
		}
		freeReplyObject(r);
		if (now_ms() - t > ANSWER_SLOW_MS)
			fail_msg("%s took %lld ms to say TRYAGAIN", cmds[k],
			         (long long)(now_ms() - t));
	}
	CHECK(c, "+PONG", "PING");
	c2 = csqd_connect(fx->d[0]);
	CHECK(c2, "+PONG", "PING");
	CHECK(c2, "'hi'", "PING hi");
	redisFree(c2);
	assert_true(csqd_alive(fx->d[0]));

	/* Redis back, same port and directory: csqd resumes by itself. */
	redisd_restart(fx->r);
	deadline = now_ms() + RECOVER_MS;
	for (;;) {
		r = CMD(c, "QLEN default");
		if (r->type == REDIS_REPLY_INTEGER) {
			freeReplyObject(r);
			break;
		}
		if (!is_tryagain(r)) {
			reply_repr(r, got, sizeof(got));
			fail_msg("QLEN while Redis comes back: %s", got);
		}
		freeReplyObject(r);
		if (now_ms() > deadline) {
			csqd_dump_log(fx->d[0]);
			fail_msg("csqd still says TRYAGAIN %d ms after Redis "
			         "returned",
			         RECOVER_MS);
		}
		sleep_ms(POLL_MS);
	}
	assert_true(csqd_alive(fx->d[0]));
	for (i = 0; i < OUT_BEFORE; i++) {
		snprintf(user, sizeof(user), "d%d", i);
		st = where_state(c, user, room, sizeof(room));
		if (strcmp(st, "waiting") != 0)
			fail_msg("%s (before the outage) lost: %s", user, st);
	}
	for (i = 0; i < OUT_LOAD; i++) {
		if (!acked[i])
			continue;
		snprintf(user, sizeof(user), "x%d", i);
		st = where_state(c, user, room, sizeof(room));
		if (strcmp(st, "waiting") != 0)
			fail_msg("acknowledged %s lost in the outage: %s", user,
			         st);
	}
	/* d0 is first in line: its place survived too. */
	r = CMD(c, "WHERE d0");
	assert_int_equal(FIELD_INT(r, "position"), 1);
	freeReplyObject(r);

	/* The subscription from before the outage still hears events. */
	CHECK(c,
	      "['servicer','s-after','status','ready','capacity',:1,"
	      "'active',:1,'ttl',:30]",
	      "HEARTBEAT s-after");
	for (;;) {
		j = WAIT_EVENT(sub, "matched");
		if (strstr(j, "\"s-after\"") != NULL)
			break;
		free(j);
	}
	assert_json_str(j, "user", "d0");
	assert_json_str(j, "room", "s-after/0");
	free(j);
	redisFree(sub);
	redisFree(c);
}

/* A daemon that cannot get past Redis's AUTH: TRYAGAIN, and says why. */
static void
refused_daemon(struct redisd *rp, const char *password, const char *why)
{
	char conf[512];
	struct csqd *d;
	redisContext *c;
	redisReply *r;
	int i;

	snprintf(conf, sizeof(conf),
	         "redis: { host = \"127.0.0.1\"; port = %d; password = \"%s\"; "
	         "prefix = \"pw\"; };",
	         rp->port, password);
	d = csqd_start_redis_conf(conf, "");
	c = csqd_connect(d);
	for (i = 0; i < 3; i++) {
		r = CMD(c, "ENQUEUE u1");
		assert_reply_error_prefix(r, "TRYAGAIN");
		freeReplyObject(r);
		/* Pacing: still refused 300 ms on, not only at first. */
		sleep_ms(100);
	}
	CHECK(c, "+PONG", "PING");
	csqd_wait_log(d, why);
	redisFree(c);
	assert_int_equal(csqd_stop(d), 0);
}

/* KEYS pattern in db on r: how many. */
static long long
count_keys(struct redisd *r, int db, const char *pattern)
{
	redisContext *c = redisd_connect(r);
	redisReply *rep;
	long long n;

	rep = CMD(c, "SELECT %d", db);
	assert_reply_status(rep, "OK");
	freeReplyObject(rep);
	rep = CMD(c, "KEYS %s", pattern);
	assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
	n = (long long)rep->elements;
	freeReplyObject(rep);
	redisFree(c);
	return n;
}

/* redis.password, redis.db, and a Unix socket as redis.host. */
static void
auth_db_unix(void **state)
{
	struct rfx *fx = *state;
	struct redisd *rp, *ru;
	struct csqd *d;
	redisContext *c;
	redisReply *r;
	char conf[1024];

	(void)fx;
	/* The right password. */
	rp = redisd_start(REDISD_PASS);
	d = csqd_start_redis(rp, PREFIX, "");
	c = csqd_connect(d);
	CHECK(
	    c,
	    "['state','waiting','queue','default','position',:1,'eta_ms',:-1]",
	    "ENQUEUE u1");
	redisFree(c);
	assert_int_equal(csqd_stop(d), 0);
	assert_true(count_keys(rp, 0, "{" PREFIX "}:*") > 0);

	/* A wrong one, or none: TRYAGAIN, and the log says why. */
	refused_daemon(rp, "wrong", "WRONGPASS");
	refused_daemon(rp, "", "NOAUTH");

	/* db 3: the keys are there and not in db 0. */
	snprintf(conf, sizeof(conf),
	         "redis: { host = \"127.0.0.1\"; port = %d; password = \"%s\"; "
	         "db = 3; prefix = \"pdb\"; };",
	         rp->port, rp->password);
	d = csqd_start_redis_conf(conf, "");
	csqd_wait_engine(d);
	c = csqd_connect(d);
	CHECK(
	    c,
	    "['state','waiting','queue','default','position',:1,'eta_ms',:-1]",
	    "ENQUEUE u1");
	r = CMD(c, "HEARTBEAT s1");
	freeReplyObject(r);
	r = CMD(c, "WHERE u1");
	assert_string_equal(FIELD_STR(r, "room"), "s1/0");
	freeReplyObject(r);
	redisFree(c);
	assert_int_equal(csqd_stop(d), 0);
	assert_true(count_keys(rp, 3, "{pdb}:*") > 0);
	assert_int_equal(count_keys(rp, 0, "{pdb}:*"), 0);
	redisd_free(rp);

	/* A Unix socket path as the host. */
	ru = redisd_start(REDISD_UNIX);
	snprintf(conf, sizeof(conf),
	         "redis: { host = \"%s\"; prefix = \"pu\"; };", ru->unix_path);
	d = csqd_start_redis_conf(conf, "");
	csqd_wait_engine(d);
	c = csqd_connect(d);
	CHECK(
	    c,
	    "['state','waiting','queue','default','position',:1,'eta_ms',:-1]",
	    "ENQUEUE u1");
	CHECK(c, ":1", "QLEN default");
	redisFree(c);
	assert_int_equal(csqd_stop(d), 0);
	assert_true(count_keys(ru, 0, "{pu}:*") > 0);
	redisd_free(ru);
}

/*
 * Every kind of change, a user timeout, two daemons: every key in Redis
 * and every channel csqd subscribes to there is under "{p}:".
 */
static void
keys_under_prefix(void **state)
{
	struct rfx *fx = *state;
	const char *ch[] = {"events"};
	redisContext *ca, *cb, *sub, *rc;
	redisReply *r;
	size_t k;
	char *j;

	fx_daemon(fx, 0, "");
	fx_daemon(fx, 1, "");
	sub = csqd_connect(fx->d[1]);
	SUBSCRIBE(sub, 1, ch);
	ca = csqd_connect(fx->d[0]);
	cb = csqd_connect(fx->d[1]);
	freeReplyObject(CMD(ca, "HEARTBEAT s1 CAPACITY 2 QUEUES default,vip"));
	freeReplyObject(CMD(cb, "HEARTBEAT s2 TTL 60"));
	freeReplyObject(CMD(ca, "ENQUEUE u1"));
	freeReplyObject(CMD(cb, "ENQUEUE u2 QUEUE vip TIER 3"));
	freeReplyObject(CMD(ca, "ENQUEUE u3 QUEUE other"));
	freeReplyObject(CMD(cb, "ENQUEUE u4 QUEUE other TIER 1"));
	freeReplyObject(CMD(ca, "ENQUEUE u5"));
	freeReplyObject(CMD(cb, "ENQUEUE u6"));
	freeReplyObject(CMD(ca, "ENQUEUE u3 QUEUE vip TIER 2"));
	freeReplyObject(CMD(cb, "TOUCH u6 TTL 600"));
	freeReplyObject(CMD(ca, "PAUSE s2"));
	freeReplyObject(CMD(cb, "RELEASE s1/0"));
	freeReplyObject(CMD(ca, "LEAVE u5"));
	freeReplyObject(CMD(cb, "RESUME s2"));
	freeReplyObject(CMD(ca, "LOGOUT s1"));
	freeReplyObject(CMD(cb, "ENQUEUE u7 TTL 1"));
	freeReplyObject(CMD(ca, "WHERE u4"));
	freeReplyObject(CMD(cb, "QUEUE other"));
	freeReplyObject(CMD(ca, "SERVICERS"));
	freeReplyObject(CMD(cb, "STATS"));
	/* The reaper's work too: u7 times out. */
	for (;;) {
		j = WAIT_EVENT(sub, "left");
		if (strstr(j, "\"u7\"") != NULL)
			break;
		free(j);
	}
	assert_json_str(j, "reason", "timeout");
	free(j);

	rc = redisd_connect(fx->r);
	r = CMD(rc, "KEYS *");
	assert_int_equal(r->type, REDIS_REPLY_ARRAY);
	assert_true(r->elements > 0);
	for (k = 0; k < r->elements; k++)
		if (strncmp(r->element[k]->str,
		            "{" PREFIX "}:", strlen("{" PREFIX "}:")) != 0)
			fail_msg("key outside the prefix: %s",
			         r->element[k]->str);
	freeReplyObject(r);
	r = CMD(rc, "PUBSUB CHANNELS *");
	assert_int_equal(r->type, REDIS_REPLY_ARRAY);
	for (k = 0; k < r->elements; k++)
		if (strncmp(r->element[k]->str,
		            "{" PREFIX "}:", strlen("{" PREFIX "}:")) != 0)
			fail_msg("channel outside the prefix: %s",
			         r->element[k]->str);
	freeReplyObject(r);
	redisFree(rc);
	redisFree(sub);
	redisFree(ca);
	redisFree(cb);
}

/*
 * Deadlines with two daemons: both arm a timer for the same deadlines and
 * both run the reaper; each expiry happens once. Users enqueued through
 * both with TTL 1 and a servicer with TTL 1 that holds one of them: every
 * user's "left" (timeout) and the servicer's servicer_down (lost) and the
 * requeued user's later "left" come exactly once, seen alike on both
 * daemons, and the counters say the same.
 */
#define REAP_USERS 40

static void
reaped_once(void **state)
{
	struct rfx *fx = *state;
	const char *ch[] = {"events"};
	redisContext *c[2], *sub[2];
	struct msgs m[2];
	int seen[REAP_USERS + 1];
	redisReply *r;
	char user[32], *j;
	int i, k, lost;
	int64_t deadline;

	for (k = 0; k < 2; k++) {
		fx_daemon(fx, k, "");
		sub[k] = csqd_connect(fx->d[k]);
		SUBSCRIBE(sub[k], 1, ch);
		c[k] = csqd_connect(fx->d[k]);
	}
	/* u0 goes to the servicer's room; the others wait. */
	CHECK(c[0],
	      "['servicer','sr','status','ready','capacity',:1,'active',:0,"
	      "'ttl',:1]",
	      "HEARTBEAT sr TTL 1");
	for (i = 0; i < REAP_USERS; i++) {
		snprintf(user, sizeof(user), "r%d", i);
		r = CMD(c[i % 2], "ENQUEUE %s TTL 1", user);
		freeReplyObject(r);
	}
	/* Both daemons' timers fire; wait until nothing is left. */
	deadline = now_ms() + 10000;
	for (;;) {
		r = CMD(c[1], "STATS");
		if (FIELD_INT(r, "waiting") == 0 &&
		    FIELD_INT(r, "servicers") == 0 &&
		    FIELD_INT(r, "rooms_busy") == 0) {
			freeReplyObject(r);
			break;
		}
		freeReplyObject(r);
		if (now_ms() > deadline)
			fail_msg("the deadlines were not all acted on");
		sleep_ms(POLL_MS);
	}
	r = CMD(c[0], "STATS");
	assert_int_equal(FIELD_INT(r, "abandoned_total"), REAP_USERS);
	assert_int_equal(FIELD_INT(r, "servicers_lost_total"), 1);
	assert_int_equal(FIELD_INT(r, "requeued_total"), 1);
	freeReplyObject(r);

	for (k = 0; k < 2; k++)
		MSGS_COLLECT(sub[k], &m[k]);
	assert_int_equal(m[0].n, m[1].n);
	memset(seen, 0, sizeof(seen));
	lost = 0;
	for (i = 0; i < m[0].n; i++) {
		assert_string_equal(m[0].m[i].payload, m[1].m[i].payload);
		j = m[0].m[i].payload;
		if (strstr(j, "\"event\":\"left\"") != NULL) {
			assert_json_str(j, "reason", "timeout");
			assert_true(sscanf(strstr(j, "\"user\":\"r") + 9, "%d",
			                   &k) == 1);
			assert_true(k >= 0 && k < REAP_USERS);
			seen[k]++;
		}
		if (strstr(j, "\"event\":\"servicer_down\"") != NULL) {
			assert_json_str(j, "reason", "lost");
			lost++;
		}
	}
	for (i = 0; i < REAP_USERS; i++)
		if (seen[i] != 1)
			fail_msg("r%d left %d times", i, seen[i]);
	assert_int_equal(lost, 1);
	for (k = 0; k < 2; k++) {
		msgs_free(&m[k]);
		redisFree(sub[k]);
		redisFree(c[k]);
	}
}

/* How many times Redis ran cmd ("csq.call"), from INFO commandstats; 0
 * when it never did. */
static long long
cmd_calls(redisContext *rc, const char *cmd)
{
	char field[64];
	const char *at;
	long long n = 0;
	redisReply *r = CMD(rc, "INFO commandstats");

	assert_int_equal(r->type, REDIS_REPLY_STRING);
	snprintf(field, sizeof(field), "cmdstat_%s:calls=", cmd);
	at = strstr(r->str, field);
	if (at != NULL)
		n = strtoll(at + strlen(field), NULL, 10);
	freeReplyObject(r);
	return n;
}

/* The status code of GET /healthz on port. */
static int
healthz_status(int port)
{
	char buf[1024];
	int fd = raw_connect(port), closed, code = 0;

	raw_sends(fd, "GET /healthz HTTP/1.0\r\n\r\n");
	raw_read(fd, buf, sizeof(buf), 3000, &closed);
	close(fd);
	if (strncmp(buf, "HTTP/1.", 7) == 0)
		code = atoi(buf + 9);
	return code;
}

/* Polls /healthz until it answers code; fails after 5 s. */
static void
wait_healthz(struct csqd *d, int code)
{
	int64_t deadline = now_ms() + 5000;
	int got;

	while ((got = healthz_status(d->http_port)) != code) {
		if (now_ms() > deadline) {
			csqd_dump_log(d);
			fail_msg("/healthz answered %d, not %d, for 5 s", got,
			         code);
		}
		sleep_ms(50);
	}
}

/*
 * csq's key made a string under a running csqd (the module's state;
 * eviction or a mistyped command can do as much): every call fails. /healthz
 * must then say 503 (it said 200: the health check's error was ignored), and
 * the reaper, whose deadline is past, must not send its expire again at once
 * (it did, about 250 times a second; an audit counted 773 calls in 5 s). Both
 * are right again once the key is.
 */
static void
broken_key(void **state)
{
	struct rfx *fx = *state;
	redisContext *rc = redisd_connect(fx->r), *c;
	long long n0, n1;

	fx->d[0] = csqd_start_redis_http(fx->r, PREFIX, "");
	c = csqd_connect(fx->d[0]);
	freeReplyObject(CMD(c, "ENQUEUE u1 TTL 1"));
	wait_healthz(fx->d[0], 200);
	freeReplyObject(CMD(rc, "SET {%s}:state oops", PREFIX));
	wait_healthz(fx->d[0], 503);
	assert_true(
	    file_contains(fx->d[0]->log_path, "reporting the engine down"));
	sleep_ms(1200); /* u1's deadline is past */
	n0 = cmd_calls(rc, "csq.call");
	sleep_ms(2000);
	n1 = cmd_calls(rc, "csq.call");
	print_message("broken key: %lld calls in 2 s\n", n1 - n0);
	assert_true(n1 - n0 <= 10);
	freeReplyObject(CMD(rc, "DEL {%s}:state", PREFIX));
	wait_healthz(fx->d[0], 200);
	assert_true(file_contains(fx->d[0]->log_path,
	                          "health check is answered again"));
	CHECK(c, "+PONG", "PING");
	redisFree(c);
	redisFree(rc);
}

/* Lines of a file that contain text. */
static int
lines_with(const char *path, const char *text)
{
	char line[4096];
	FILE *f = fopen(path, "r");
	int n = 0;

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strstr(line, text) != NULL)
			n++;
	fclose(f);
	return n;
}

/*
 * Messages on the events channel that csq did not write (someone's
 * PUBLISH): text, MessagePack of another shape, heads that are not "<last
 * id> <time> [events]", events of no kind csq has or with fields that are
 * not what their place says. csqd logs them, drops them, and goes on: the
 * next ENQUEUE is answered and its event reaches a subscriber.
 */
#define JUNK(...)                                                              \
	{                                                                      \
		(const char[]){__VA_ARGS__},                                   \
		    sizeof((const char[]){__VA_ARGS__})                        \
	}

static void
foreign_messages(void **state)
{
	struct rfx *fx = *state;
	const char *ch[] = {"events"};
	const struct {
		const char *b;
		size_t len;
	} junk[] = {
	    {"", 0},
	    {"garbage", 7},
	    {"0 1\n{\"event\":\"queued\"}", 23},
	    /* A last id beyond 64 bits would stop every reply from waiting
	     * for its events; one below the events' count, or negative, is
	     * not csq's either. */
	    JUNK('\xcf', '\xff', '\xff', '\xff', '\xff', '\xff', '\xff', '\xff',
	         '\xff', 1, '\x90'),
	    JUNK('\xff', 1, '\x90'),
	    JUNK(0, 1, '\x91', '\x91', '\xa6', 'q', 'u', 'e', 'u', 'e', 'd'),
	    JUNK(5, 1),                         /* no events */
	    JUNK(5, 1, '\xdc', '\xff', '\xff'), /* a count that lies */
	    JUNK(5, 1, '\x91', '\x91', '\xcb', 0, 0, 0, 0, 0, 0, 0, 0),
	    /* Events of no kind, or a user that is a number: each skipped
	     * alone, the rest of the message goes on. */
	    JUNK(2, 1, '\x92', '\x91', '\xa3', 'n', 'a', 'h', '\x92', '\xa6',
	         'q', 'u', 'e', 'u', 'e', 'd', 7),
	};
	redisContext *c, *sub, *rc;
	redisReply *r;
	size_t i;
	char *j;

	fx_daemon(fx, 0, "");
	rc = redisd_connect(fx->r);
	c = csqd_connect(fx->d[0]);
	sub = csqd_connect(fx->d[0]);
	SUBSCRIBE(sub, 1, ch);
	for (i = 0; i < sizeof(junk) / sizeof(junk[0]); i++) {
		r = redisCommand(rc, "PUBLISH {" PREFIX "}:events %b",
		                 junk[i].b, junk[i].len);
		assert_non_null(r);
		assert_int_equal(r->type, REDIS_REPLY_INTEGER);
		assert_int_equal(r->integer, 1); /* csqd heard it */
		freeReplyObject(r);
	}
	r = CMD(c, "ENQUEUE after");
	assert_string_equal(FIELD_STR(r, "state"), "waiting");
	freeReplyObject(r);
	j = WAIT_EVENT(sub, "queued");
	assert_json_str(j, "user", "after");
	free(j);
	assert_true(
	    file_contains(fx->d[0]->log_path, "a message that is not csq's"));
	assert_true(
	    file_contains(fx->d[0]->log_path, "an event that is not csq's"));
	CHECK(c, "+PONG", "PING");
	redisFree(sub);
	redisFree(c);
	redisFree(rc);
}

/* The bytes sent to port that it has not read (/proc/net/tcp): the most
 * any connection to it holds unsent (tx_queue) and the most that one of
 * its own sockets holds unread (rx_queue). More than 0 once Redis stops
 * reading and a call is written; how much stays unsent on the sender's
 * side depends on how much the receiver's buffer took, which varies. */
static unsigned long
tcp_unread_by(int port, unsigned long *unsent)
{
	char line[512];
	unsigned long tx_most = 0, rx_most = 0, tx, rx;
	unsigned lport, rport;
	FILE *f = fopen("/proc/net/tcp", "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f) != NULL) {
		if (sscanf(line,
		           "%*s %*[0-9A-Fa-f]:%x %*[0-9A-Fa-f]:%x %*x %lx:%lx",
		           &lport, &rport, &tx, &rx) != 4)
			continue;
		if ((int)rport == port && tx > tx_most)
			tx_most = tx;
		if ((int)lport == port && rx > rx_most)
			rx_most = rx;
	}
	fclose(f);
	*unsent = tx_most;
	return tx_most + rx_most;
}

/*
 * Redis stops reading (SIGSTOP), as during a long script or a slow disk,
 * while two clients pipeline big HEARTBEATs (32 long queue names each,
 * over a megabyte each): csqd's calls back up in the kernel on their way
 * to Redis (the test checks that they did) and behind them in csqd. When Redis
 * goes on, every command is answered, in order, and nothing is lost or doubled.
 *
 * Removing redis_event.c's wait for the socket after a short write does
 * not fail it (each reply that comes back writes more, and so does the
 * health check once a second): it checks that a backed-up link loses
 * nothing, not how fast it drains.
 */
#define STALL_HEARTBEATS 600

static void
stalled_redis(void **state)
{
	struct rfx *fx = *state;
	char queues[32 * 64], id[80];
	redisContext *c[2];
	redisReply *r;
	unsigned long unread, unsent;
	size_t used = 0;
	int64_t t0;
	int i, k;

	fx_daemon(fx, 0, "");
	/* Two clients: each has at most 128 calls in flight, and one's
	 * (about 256 KiB) may all fit in the kernel's buffers. */
	for (k = 0; k < 2; k++)
		c[k] = csqd_connect(fx->d[0]);
	for (i = 0; i < 32; i++)
		used +=
		    (size_t)snprintf(queues + used, sizeof(queues) - used,
		                     "%sq%02d%056d", i > 0 ? "," : "", i, 0);
	kill(fx->r->pid, SIGSTOP);
	for (k = 0; k < 2; k++) {
		for (i = 0; i < STALL_HEARTBEATS; i++) {
			snprintf(id, sizeof(id), "stall%d%05d%050d", k, i, 0);
			redisAppendCommand(
			    c[k], "HEARTBEAT %s CAPACITY 4 TTL 3600 QUEUES %s",
			    id, queues);
		}
		flush_pipeline(c[k]);
	}
	/* Until the kernel holds calls that Redis does not read (well
	 * before the health check gives the link up, 5 s), and a moment
	 * more for the rest to back up behind them. */
	t0 = now_ms();
	while ((unread = tcp_unread_by(fx->r->port, &unsent)) == 0 &&
	       now_ms() - t0 < 3000)
		sleep_ms(50);
	sleep_ms(200);
	unread = tcp_unread_by(fx->r->port, &unsent);
	kill(fx->r->pid, SIGCONT);
	t0 = now_ms();
	assert_true(unread > 0);
	for (k = 0; k < 2; k++) {
		for (i = 0; i < STALL_HEARTBEATS; i++) {
			snprintf(id, sizeof(id), "stall%d%05d%050d", k, i, 0);
			r = GET_REPLY(c[k]);
			assert_string_equal(FIELD_STR(r, "servicer"), id);
			assert_string_equal(FIELD_STR(r, "status"), "ready");
			freeReplyObject(r);
		}
	}
	print_message("stalled: %lu bytes waited for Redis in the kernel, %lu "
	              "of them unsent in csqd's socket; all answered %lld ms "
	              "after Redis went on\n",
	              unread, unsent, (long long)(now_ms() - t0));
	r = CMD(c[0], "STATS");
	assert_int_equal(FIELD_INT(r, "servicers"), 2 * STALL_HEARTBEATS);
	assert_int_equal(FIELD_INT(r, "rooms_free"), 8 * STALL_HEARTBEATS);
	freeReplyObject(r);
	CHECK(c[0], "+PONG", "PING");
	for (k = 0; k < 2; k++)
		redisFree(c[k]);
}

/*
 * Redis stops (SIGSTOP) with an ENQUEUE out. The health check gives the
 * link up after HEALTH_TIMEOUT, and the ENQUEUE is answered TRYAGAIN that
 * says it may have been applied, not that nothing changed: the call is in
 * Redis's socket, and Redis runs it when it goes on (the first version said
 * "nothing was changed" here, and the user was then found waiting). A
 * command sent while the link is down never left csqd, and a read out
 * beside the ENQUEUE wrote nothing: both get the plain text. Sent again once
 * Redis is back, the ENQUEUE leaves the user waiting once, and the other user
 * is nowhere.
 */

static void
stalled_unsure(void **state)
{
	struct rfx *fx = *state;
	redisContext *c, *c2;
	redisReply *r;
	int64_t t0, deadline;

	fx_daemon(fx, 0, "");
	c = csqd_connect(fx->d[0]);
	c2 = csqd_connect(fx->d[0]);
	r = CMD(c, "ENQUEUE before TTL 0");
	assert_string_equal(FIELD_STR(r, "state"), "waiting");
	freeReplyObject(r);
	kill(fx->r->pid, SIGSTOP);
	t0 = now_ms();
	/* A read out beside it wrote nothing, whatever became of it. */
	redisAppendCommand(c2, "WHERE before");
	flush_pipeline(c2);
	CHECK(c, UNSURE_TEXT, "ENQUEUE maybe1 TTL 0");
	r = GET_REPLY(c2);
	assert_repr(r, NOTHING_TEXT);
	freeReplyObject(r);
	redisFree(c2);
	print_message("stalled: the ENQUEUE out was answered after %lld ms\n",
	              (long long)(now_ms() - t0));
	CHECK(c, NOTHING_TEXT, "ENQUEUE never1 TTL 0");
	kill(fx->r->pid, SIGCONT);

	deadline = now_ms() + RECOVER_MS;
	for (;;) {
		r = CMD(c, "ENQUEUE maybe1 TTL 0");
		if (!is_tryagain(r))
			break;
		freeReplyObject(r);
		if (now_ms() > deadline)
			fail_msg("csqd not back %d ms after Redis went on",
			         RECOVER_MS);
		sleep_ms(POLL_MS);
	}
	assert_string_equal(FIELD_STR(r, "state"), "waiting");
	assert_int_equal(FIELD_INT(r, "position"), 2);
	freeReplyObject(r);
	CHECK(c, ":2", "QLEN default");
	r = CMD(c, "WHERE never1");
	assert_string_equal(FIELD_STR(r, "state"), "none");
	freeReplyObject(r);
	redisFree(c);
}

/*
 * Redis full, with maxmemory-policy noeviction (maxmemory 1 byte): a
 * change goes as CSQ.CALL, which is deny-oom, and Redis refuses it before
 * it runs: each answers TRYAGAIN saying why, with nothing changed, and the
 * log says OOM without a line per refusal. Reads go as CSQ.READ (readonly,
 * not deny-oom) and are answered from the state as it is, the views'
 * slices too; a MULTI of reads is answered, one with a change refused
 * whole. Once Redis has room again everything works, on the state as it
 * was; /healthz says up throughout. Tried to break it: a change sent to
 * CSQ.READ directly, with a read beside it, and a read of a prefix that has no
 * state (which must not make one).
 */
#define OOM_TRIES 50
#define OOM_TEXT                                                               \
	"-TRYAGAIN Redis is over its maxmemory, nothing was changed (reads "   \
	"are answered)"
#define OOM_KEY "{" PREFIX "}:state"

/* CSQ.READ or CSQ.CALL of key, sent to Redis straight, with one op. */
static redisReply *
module_call(redisContext *rc, const char *cmd, const char *key,
            const struct csq_op *op)
{
	uint8_t lim[CSQ_RECORD_MAX], rec[CSQ_RECORD_MAX];
	struct csq_op l;
	const char *argv[5] = {cmd, key, (const char *)lim, "",
	                       (const char *)rec};
	size_t argvlen[5];

	memset(&l, 0, sizeof(l));
	l.code = CSQ_OP_LIMITS;
	csq_limits_default(&l.limits);
	argvlen[0] = strlen(cmd);
	argvlen[1] = strlen(key);
	argvlen[2] = csq_record_encode(&l, 0, lim);
	argvlen[3] = 0;
	argvlen[4] = csq_record_encode(op, 0, rec);
	return redisCommandArgv(rc, 5, argv, argvlen);
}

static void
redis_out_of_memory(void **state)
{
	struct rfx *fx = *state;
	char before[64], after[64];
	redisContext *c, *rc;
	struct csq_op op;
	redisReply *r;
	int i;

	fx->d[0] = csqd_start_redis_http(fx->r, PREFIX, "");
	c = csqd_connect(fx->d[0]);
	rc = redisd_connect(fx->r);
	freeReplyObject(CMD(c, "ENQUEUE u1"));
	freeReplyObject(CMD(c, "ENQUEUE u2"));
	freeReplyObject(CMD(c, "ENQUEUE u3 QUEUE other"));
	redisd_digest(fx->r, OOM_KEY, before, sizeof(before));
	freeReplyObject(CMD(rc, "CONFIG SET maxmemory-policy noeviction"));
	r = CMD(rc, "CONFIG SET maxmemory 1");
	assert_reply_status(r, "OK");
	freeReplyObject(r);

	/* Refused before it ran, and saying why: not the "may have been
	 * applied" of a call lost in flight. */
	for (i = 0; i < OOM_TRIES; i++)
		CHECK(c, OOM_TEXT, "ENQUEUE new%d", i);
	CHECK(c, OOM_TEXT, "HEARTBEAT s1");
	CHECK(c, OOM_TEXT, "LEAVE u1");
	/* The reads are answered. */
	r = CMD(c, "WHERE u2");
	assert_string_equal(FIELD_STR(r, "state"), "waiting");
	assert_int_equal(FIELD_INT(r, "position"), 2);
	freeReplyObject(r);
	CHECK(c, ":2", "QLEN default");
	CHECK(c, "['state','none']", "WHERE new0");
	r = CMD(c, "STATS");
	assert_int_equal(FIELD_INT(r, "waiting"), 3);
	freeReplyObject(r);
	r = CMD(c, "QUEUE default");
	assert_int_equal(r->type, REDIS_REPLY_ARRAY);
	assert_int_equal(r->elements, 2);
	freeReplyObject(r);
	r = CMD(c, "QUEUES");
	assert_int_equal(r->type, REDIS_REPLY_ARRAY);
	freeReplyObject(r);
	CHECK(c, "[]", "SERVICERS");
	/* A MULTI of reads is answered; one with a change is refused. */
	CHECK(c, "+OK", "MULTI");
	CHECK(c, "+QUEUED", "QLEN default");
	CHECK(c, "+QUEUED", "QLEN other");
	CHECK(c, "[:2,:1]", "EXEC");
	CHECK(c, "+OK", "MULTI");
	CHECK(c, "+QUEUED", "QLEN default");
	CHECK(c, "+QUEUED", "ENQUEUE new0");
	CHECK(c, OOM_TEXT, "EXEC");
	/* One line, not one per refusal (all came within a second or so). */
	assert_true(lines_with(fx->d[0]->log_path, "OOM") >= 1);
	assert_true(lines_with(fx->d[0]->log_path, "OOM") <= 3);
	/* And the refusals held back are counted in the log a second later,
	 * not only with the next error (which may never come). */
	csqd_wait_log(fx->d[0], "the last of");
	assert_true(lines_with(fx->d[0]->log_path, "OOM") <= 4);

	/* Straight to the module: CSQ.CALL is refused even for a read;
	 * CSQ.READ refuses a change whole, and reads an empty prefix
	 * without making its key. */
	memset(&op, 0, sizeof(op));
	op.code = CSQ_OP_QLEN;
	op.id = "default";
	r = module_call(rc, "CSQ.CALL", OOM_KEY, &op);
	assert_reply_error_prefix(r, "OOM");
	freeReplyObject(r);
	r = module_call(rc, "CSQ.READ", OOM_KEY, &op);
	assert_int_equal(r->type, REDIS_REPLY_ARRAY);
	assert_int_equal(r->elements, 6);
	freeReplyObject(r);
	r = module_call(rc, "CSQ.READ", "{nostate}:state", &op);
	assert_int_equal(r->type, REDIS_REPLY_ARRAY);
	freeReplyObject(r);
	CHECK(rc, ":0", "EXISTS {nostate}:state");
	memset(&op, 0, sizeof(op));
	op.code = CSQ_OP_LEAVE;
	op.id = "u1";
	r = module_call(rc, "CSQ.READ", OOM_KEY, &op);
	assert_reply_error_prefix(r, "ERR operation 1 changes the state");
	freeReplyObject(r);
	op.code = CSQ_OP_EXPIRE;
	op.id = NULL;
	r = module_call(rc, "CSQ.READ", OOM_KEY, &op);
	assert_reply_error_prefix(r, "ERR operation 1 changes the state");
	freeReplyObject(r);
	redisd_digest(fx->r, OOM_KEY, after, sizeof(after));
	assert_string_equal(before, after);
	/* A health check (once a second) has run since the refusals: it
	 * reads, and the engine is up. */
	assert_int_equal(healthz_status(fx->d[0]->http_port), 200);
	assert_false(
	    file_contains(fx->d[0]->log_path, "reporting the engine down"));

	r = CMD(rc, "CONFIG SET maxmemory 0");
	freeReplyObject(r);
	r = CMD(c, "STATS");
	assert_int_equal(FIELD_INT(r, "waiting"), 3);
	assert_int_equal(FIELD_INT(r, "enqueued_total"), 3);
	assert_int_equal(FIELD_INT(r, "servicers"), 0);
	freeReplyObject(r);
	CHECK(
	    c,
	    "['state','waiting','queue','default','position',:3,'eta_ms',:-1]",
	    "ENQUEUE new0");
	CHECK(c,
	      "['servicer','s1','status','ready','capacity',:1,'active',:1,"
	      "'ttl',:30]",
	      "HEARTBEAT s1");
	CHECK(c, "['state','none']", "WHERE new1");
	redisFree(c);
	redisFree(rc);
}

/* Whether c has a push to read now, buffered or on its socket. */
static int
push_waiting(redisContext *c)
{
	struct pollfd pfd = {c->fd, POLLIN, 0};

	return c->reader->pos < c->reader->len || poll(&pfd, 1, 0) == 1;
}

/*
 * Redis restarts without its data (no persistence): the ids of the events
 * start again from 1 under a daemon that has seen 30. The daemon says in
 * its log that Redis's state went back, and its replies wait for their
 * events again: before, it took every reply's events for seen already
 * (their ids were below 30), let the reply go first, and so broke the
 * order (an event before the reply that caused it) until the ids passed
 * the old ones, which may be millions of events later.
 */
#define WENT_BACK_USERS 30

static void
state_went_back(void **state)
{
	struct rfx *fx = *state;
	const char *ch[] = {"events"};
	char cmd[CSQD_PATH_MAX + 16], *j, user[16];
	redisContext *c, *sub;
	int i, late = 0;

	fx_daemon(fx, 0, "");
	sub = csqd_connect(fx->d[0]);
	SUBSCRIBE(sub, 1, ch);
	c = csqd_connect(fx->d[0]);
	for (i = 0; i < WENT_BACK_USERS; i++) {
		freeReplyObject(CMD(c, "ENQUEUE a%d", i));
		free(WAIT_EVENT(sub, "queued"));
	}
	redisd_stop(fx->r);
	snprintf(cmd, sizeof(cmd), "rm -rf %s/*", fx->r->dir);
	assert_int_equal(system(cmd), 0);
	redisd_restart(fx->r);
	csqd_wait_engine(fx->d[0]);
	/* The state is gone: b0 is first in an empty line. */
	CHECK(
	    c,
	    "['state','waiting','queue','default','position',:1,'eta_ms',:-1]",
	    "ENQUEUE b0");
	j = WAIT_EVENT(sub, "queued");
	assert_json_str(j, "user", "b0");
	free(j);
	csqd_wait_log(fx->d[0], "went back from 30 to 1");
	for (i = 1; i <= WENT_BACK_USERS; i++) {
		freeReplyObject(CMD(c, "ENQUEUE b%d", i));
		if (!push_waiting(sub))
			late++;
		snprintf(user, sizeof(user), "b%d", i);
		j = WAIT_EVENT(sub, "queued");
		assert_json_str(j, "user", user);
		free(j);
	}
	print_message("state went back: %d of %d replies before their event\n",
	              late, WENT_BACK_USERS);
	assert_int_equal(late, 0);
	assert_int_equal(lines_with(fx->d[0]->log_path, "went back"), 1);
	redisFree(c);
	redisFree(sub);
}

/*
 * A read on daemon A of what a call through daemon B changed: its reply
 * must not reach its client before the change's event reaches A's
 * subscribers, as with one daemon or the memory engine. Redis is stopped
 * while B's ENQUEUE and A's read go out, so that it runs both in one turn
 * and A gets its reply at about the time of the event. Before, a reply
 * without events of its own went at once: 7 to 11 of 40 such replies
 * came before the event (an audit's count; an admin screen that takes
 * QUEUE and then applies the events counted such a user twice).
 *
 * Nothing makes B send its call to Redis before A sends the read (B may
 * not run for a while on a busy machine), so each read tells from its
 * reply whether it ran after B's ENQUEUE, and only those count: the test
 * goes on until OTHER_READS of them did. A read that ran first saw no
 * change and has no event to wait for. (The ENQUEUE through A counts
 * either way: run first, it makes the change, and its own event must
 * come before its reply just the same.)
 */
#define OTHER_READS 40
#define OTHER_TRIES 400 /* more tries than this: B's calls never came first */

/* Whether A's reply r to reads[kind] ran after B's ENQUEUE of the n-th
 * user of queue rq (from 0). */
static int
read_saw_enqueue(int kind, const redisReply *r, int n)
{
	switch (kind) {
	case 0: /* WHERE */
		return strcmp(FIELD_STR(r, "state"), "waiting") == 0;
	case 1: /* QUEUE rq n 1: the n-th waiting user, or none yet */
		return r->type == REDIS_REPLY_ARRAY && r->elements == 1;
	case 2: /* QLEN rq */
		return r->type == REDIS_REPLY_INTEGER && r->integer == n + 1;
	default: /* ENQUEUE */
		return 1;
	}
}

static void
reads_wait_for_others_events(void **state)
{
	struct rfx *fx = *state;
	const char *ch[] = {"queue:rq"};
	char user[16], *j;
	redisContext *x, *y, *z;
	redisReply *r;
	int64_t t0;
	int i, kind, saw = 0, late = 0;

	fx_daemon(fx, 0, "");
	fx_daemon(fx, 1, "");
	x = csqd_connect(fx->d[0]);
	SUBSCRIBE(x, 1, ch);
	y = csqd_connect(fx->d[1]);
	z = csqd_connect(fx->d[0]);
	for (i = 0; saw < OTHER_READS; i++) {
		if (i == OTHER_TRIES)
			fail_msg("only %d of %d reads on A ran after B's "
			         "ENQUEUE",
			         saw, i);
		snprintf(user, sizeof(user), "r%d", i);
		kind = i % 4;
		kill(fx->r->pid, SIGSTOP);
		redisAppendCommand(y, "ENQUEUE %s QUEUE rq", user);
		flush_pipeline(y);
		sleep_ms(20);
		if (kind == 0)
			redisAppendCommand(z, "WHERE %s", user);
		else if (kind == 1)
			redisAppendCommand(z, "QUEUE rq %d 1", i);
		else if (kind == 2)
			redisAppendCommand(z, "QLEN rq");
		else
			redisAppendCommand(z, "ENQUEUE %s QUEUE rq", user);
		flush_pipeline(z);
		sleep_ms(20);
		kill(fx->r->pid, SIGCONT);
		r = GET_REPLY(z);
		assert_int_not_equal(r->type, REDIS_REPLY_ERROR);
		if (read_saw_enqueue(kind, r, i)) {
			saw++;
			if (!push_waiting(x))
				late++;
		}
		freeReplyObject(r);
		freeReplyObject(GET_REPLY(y));
		j = WAIT_EVENT(x, "queued");
		assert_json_str(j, "user", user);
		free(j);
	}
	print_message("reads on A of B's changes: %d of %d before the event "
	              "(%d tries)\n",
	              late, saw, i);
	assert_int_equal(late, 0);
	/* A daemon started now has seen no event: its reads must not wait
	 * for the ones published before it subscribed (PARK_TIMEOUT_MS, 2 s,
	 * each, before the first reply of its subscription said how far
	 * they went). Each read is timed alone: 2 s is the bug's mark, far
	 * above a round trip, however busy the machine. */
	fx_daemon(fx, 2, "");
	redisFree(z);
	z = csqd_connect(fx->d[2]);
	for (kind = 0; kind < 5; kind++) {
		t0 = now_ms();
		r = CMD(z, "QLEN rq");
		assert_int_equal(r->type, REDIS_REPLY_INTEGER);
		assert_int_equal(r->integer, i);
		freeReplyObject(r);
		if (now_ms() - t0 >= 2000)
			fail_msg("QLEN on a new daemon took %lld ms: it waited "
			         "for events published before it subscribed",
			         (long long)(now_ms() - t0));
	}
	redisFree(x);
	redisFree(y);
	redisFree(z);
}

/*
 * SIGTERM in the middle of a pipeline of ENQUEUEs on the Redis engine:
 * the calls in flight are answered before the connection closes, in
 * order, and Redis holds exactly the users answered. Before, csqd closed
 * a stopping client at once, with its pipeline unread, and the kernel's
 * reset destroyed replies of users that Redis held (an audit counted
 * 2816 run and 1664 answered).
 */
static void
sigterm_mid_pipeline(void **state)
{
	struct rfx *fx = *state;
	redisContext *c;
	redisReply *r;
	int acked;

	/* The daemons stay in fx: teardown frees them, also after a failed
	 * assertion (csqd_stop returns the exit status already seen). */
	acked = sigterm_pipeline(fx_daemon(fx, 0, ""), 50000, 0);
	c = csqd_connect(fx_daemon(fx, 1, ""));
	r = CMD(c, "QLEN default");
	assert_int_equal(r->type, REDIS_REPLY_INTEGER);
	assert_int_equal(r->integer, acked);
	freeReplyObject(r);
	redisFree(c);
	/* Answered before the SIGTERM, and one more command after it (as in
	 * test_journal.c). */
	assert_int_equal(sigterm_pipeline(fx_daemon(fx, 2, ""), 2000, 1), 2000);
}

/* The fixture with csq.so on Redis's clock: its own timer acts on the
 * deadlines (no debug-clock). */
static int
setup_timer(void **state)
{
	struct rfx *fx = calloc(1, sizeof(*fx));

	if (fx == NULL)
		abort();
	fx->r = redisd_start(REDISD_MODULE_CLOCK);
	*state = fx;
	return 0;
}

/* How many times kind appears in the messages that came on sub so far
 * (the events' MessagePack, read as it comes: the kind's name is a
 * string in it), waiting up to wait_ms for more; the count so far is
 * added to *n. */
static void
count_kind(redisContext *sub, const char *kind, long *n, int wait_ms)
{
	struct timeval tv = {0, wait_ms * 1000};
	redisReply *r;
	void *rep;
	const char *p, *end;

	redisSetTimeout(sub, tv);
	while (redisGetReply(sub, &rep) == REDIS_OK) {
		r = rep;
		if (r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
		    r->element[2]->type == REDIS_REPLY_STRING) {
			p = r->element[2]->str;
			end = p + r->element[2]->len;
			while ((p = memmem(p, (size_t)(end - p), kind,
			                   strlen(kind))) != NULL) {
				(*n)++;
				p += strlen(kind);
			}
		}
		freeReplyObject(r);
	}
	/* A timeout ends the read: the context is no use after it. */
}

/* STATS's counter name, as r holds it. */
#define STAT(r, name) FIELD_INT((r), (name))

/*
 * The loss storm of harness.h with csq.so's own timer acting on time
 * beside two daemons' reapers, all three able to act on the same 1,100
 * deadlines (the Lua engine's reaper split such a storm into several
 * calls, and the tests here ran commands between them; csq.so has no
 * split reap, and those tests went with it). Each servicer is lost once:
 * servicers_lost_total and the servicer_down events the module published
 * are 1,100, not more. The deadlines come over the ~200 ms the setup
 * took, so a lost servicer's user may go to another's free room and be
 * requeued again when that one goes: how often is the timing's, but no
 * user is lost or counted twice: every user waits or is in one of L's
 * rooms, and matches minus requeues are L's 3.
 */
static void
storm_module_timer(void **state)
{
	struct rfx *fx = *state;
	redisContext *c[2], *sub;
	redisReply *r;
	long downs = 0;
	int64_t t0;
	int k;

	for (k = 0; k < 2; k++) {
		fx_daemon(fx, k, "");
		c[k] = csqd_connect(fx->d[k]);
	}
	sub = redisd_connect(fx->r);
	freeReplyObject(CMD(sub, "SUBSCRIBE {" PREFIX "}:events"));
	storm_begin(c[0]);
	t0 = now_ms();
	for (;;) {
		r = CMD(c[1], "STATS");
		if (STAT(r, "servicers") == 1)
			break;
		freeReplyObject(r);
		if (now_ms() - t0 > STORM_PAST_MS + 10000)
			fail_msg("the deadlines were not acted on");
		sleep_ms(POLL_MS);
	}
	assert_int_equal(STAT(r, "servicers_lost_total"), STORM_A + STORM_B);
	assert_int_equal(STAT(r, "waiting"), STORM_A + STORM_B - 3);
	assert_int_equal(STAT(r, "rooms_busy"), 3);
	assert_int_equal(STAT(r, "matched_total") - STAT(r, "requeued_total"),
	                 3);
	assert_true(STAT(r, "requeued_total") >= STORM_A + STORM_B);
	freeReplyObject(r);
	/* The other daemon sees the same state. */
	r = CMD(c[0], "STATS");
	assert_int_equal(STAT(r, "servicers_lost_total"), STORM_A + STORM_B);
	assert_int_equal(STAT(r, "waiting"), STORM_A + STORM_B - 3);
	freeReplyObject(r);
	/* Every servicer_down the module published, once each. */
	count_kind(sub, "servicer_down", &downs, 500);
	assert_int_equal(downs, STORM_A + STORM_B);
	redisFree(sub);
	for (k = 0; k < 2; k++)
		redisFree(c[k]);
}

/*
 * The loss storm of harness.h with two daemons on one prefix, both
 * stopped past every deadline: when they go on, both timers fire and
 * both reapers' calls reach csq.so. The outcome is one pass's, as with
 * one daemon (the Lua engine reaped such a storm in several calls, which
 * interleaved; csq.so's first call does it all, the other finds nothing).
 */
static void
storm_two_daemons(void **state)
{
	struct rfx *fx = *state;
	redisContext *c[2];
	int k;

	for (k = 0; k < 2; k++) {
		fx_daemon(fx, k, "");
		c[k] = csqd_connect(fx->d[k]);
	}
	storm_begin(c[0]);
	for (k = 0; k < 2; k++)
		kill(fx->d[k]->pid, SIGSTOP);
	sleep_ms(STORM_PAST_MS);
	for (k = 0; k < 2; k++)
		kill(fx->d[k]->pid, SIGCONT);
	storm_end(c[1], 0);
	for (k = 0; k < 2; k++)
		redisFree(c[k]);
}

/*
 * A client pipelines faster than Redis answers (here Redis is stopped):
 * the requests beyond the calls in flight wait in csqd, and csqd stops
 * reading the client once a megabyte of them is in. Before, it read all
 * it was sent: the 64 MiB of WHERE below, in a second or so. Then Redis
 * goes on, the client goes, and csqd serves the next one.
 */
#define HELD_WANT (64u << 20)

static void
held_input_bounded(void **state)
{
	struct rfx *fx = *state;
	static char buf[1 << 20];
	size_t len = 0, sent = 0;
	redisContext *c;
	int64_t t0;
	ssize_t n;
	int fd;

	fx_daemon(fx, 0, "");
	while (len + 32 < sizeof(buf))
		len += (size_t)snprintf(buf + len, sizeof(buf) - len,
		                        "WHERE u%zu\r\n", len);
	fd = raw_connect(fx->d[0]->port);
	assert_int_equal(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK),
	                 0);
	kill(fx->r->pid, SIGSTOP);
	t0 = now_ms();
	while (sent < HELD_WANT && now_ms() - t0 < 2000) {
		n = send(fd, buf, len, MSG_NOSIGNAL);
		if (n > 0)
			sent += (size_t)n;
		else
			sleep_ms(5);
	}
	kill(fx->r->pid, SIGCONT);
	close(fd);
	print_message("held: csqd and the kernel took %zu bytes of requests "
	              "while Redis was stopped\n",
	              sent);
	assert_true(sent < 32u << 20);
	c = csqd_connect(fx->d[0]);
	CHECK(c, "+PONG", "PING");
	CHECK(c, "['state','none']", "WHERE u1");
	redisFree(c);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(cluster_under_load, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(matched_across_daemons, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(kill9_one_daemon, setup, teardown),
	    cmocka_unit_test_setup_teardown(redis_outage, setup, teardown),
	    cmocka_unit_test_setup_teardown(auth_db_unix, setup, teardown),
	    cmocka_unit_test_setup_teardown(keys_under_prefix, setup, teardown),
	    cmocka_unit_test_setup_teardown(reaped_once, setup, teardown),
	    cmocka_unit_test_setup_teardown(storm_two_daemons, setup, teardown),
	    cmocka_unit_test_setup_teardown(foreign_messages, setup, teardown),
	    cmocka_unit_test_setup_teardown(stalled_redis, setup, teardown),
	    cmocka_unit_test_setup_teardown(stalled_unsure, setup, teardown),
	    cmocka_unit_test_setup_teardown(redis_out_of_memory, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(broken_key, setup, teardown),
	    cmocka_unit_test_setup_teardown(state_went_back, setup, teardown),
	    cmocka_unit_test_setup_teardown(held_input_bounded, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(reads_wait_for_others_events, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(sigterm_mid_pipeline, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(storm_module_timer, setup_timer,
	                                    teardown),
	};

	if (redisd_binary() == NULL) {
		fprintf(stderr, "%s: no redis-server: skipping\n", argv[0]);
		return 77;
	}
	csqd_init(argc, argv);
	return cmocka_run_group_tests_name("redis", tests, NULL, NULL);
}
