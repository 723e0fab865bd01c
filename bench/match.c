/*
 * Scenario match: S servicers of capacity K; a feeder keeps the line
 * non-empty (a preload, then one new user for each user matched); each
 * servicer learns of a user put in one of its rooms from its SUBSCRIBE
 * servicer:<id> connection and RELEASEs the room at once, which lets csqd
 * put the next waiting user in it. The latency is from the RELEASE being
 * sent to the `matched` message of that next user reaching the users'
 * subscriber (one connection, PSUBSCRIBE user:*): p50, p99, p99.9.
 *
 * With --offer S the servicers take offers (HEARTBEAT OFFER S): the next
 * user is offered, and the servicer ACCEPTs as soon as its channel says
 * so. Two latencies then: RELEASE to the `offered` message on the users'
 * subscriber, and ACCEPT to the `matched` message there.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <hiredis/async.h>

#include "bench.h"
#include "redis_engine.h"
#include "redis_event.h"

#define MATCH_PRELOAD   2000   /* users in line before the servicers log in */
#define MATCH_TTL       "3600" /* servicers outlive the run; no heartbeats */
#define MATCH_WARMUP_S  1.0    /* seconds of matches not sampled */
#define MATCH_ID_DIGITS 9      /* most digits of a room's servicer or number */
/* A command's RESP: a verb, an id, "TTL" and "0" at most. */
#define MATCH_CMD_MAX (4 * (BENCH_WORD_MAX + 32))
/* A verb as bench_resp_cmd takes it: the text and its length. */
#define MATCH_VERB(v) (v), (sizeof(v) - 1)

enum match_phase { MATCH_SETUP, MATCH_WARMUP, MATCH_MEASURE, MATCH_OVER };

/* What a message on a channel is to the scenario. */
enum match_kind {
	MATCH_BAD = -1, /* matched or offered, without a room and a user */
	MATCH_OTHER,    /* another event, or offered without --offer */
	MATCH_MATCHED,
	MATCH_OFFERED
};

/* A message's event, read in one pass: its kind, room and user. */
struct match_event {
	enum match_kind kind;
	struct bench_span room;
	struct bench_span user;
};

struct match;

/* A connection; hiredis frees it when it fails or closes, then ac is NULL. */
struct match_conn {
	struct match *m;
	redisAsyncContext *ac;
};

struct match_servicer {
	struct match *m;
	int idx;
	char id[BENCH_WORD_MAX];
	struct match_conn sub;
	struct match_conn cmd;
};

#define MATCH_CARRIED 4 /* matches the users' channel may lag behind */

/* A RELEASE whose next match is known, by its user, and not yet timed. */
struct match_carried {
	uint64_t released_ns; /* 0: a free entry */
	char user[BENCH_WORD_MAX];
};

/*
 * A room's last RELEASE and the user it ended, to know the next match. The
 * servicer's channel may hear of that match before the users' one does:
 * the RELEASE is then carried, keyed by the user matched, until that user's
 * message comes. A lag of more than MATCH_CARRIED matches loses samples
 * rather than pair a RELEASE with the wrong match.
 */
struct match_room {
	uint64_t released_ns;
	char ended[BENCH_WORD_MAX];
	struct match_carried carried[MATCH_CARRIED];
	unsigned ncarried;    /* carried so far: the oldest entry goes next */
	uint64_t accepted_ns; /* --offer: the ACCEPT not yet timed, or 0 */
	char offered[BENCH_WORD_MAX]; /* and its user */
};

struct match {
	const struct bench_opts *o;
	struct event_base *base;
	struct event *timer;
	enum match_phase phase;
	struct match_conn usub;
	struct match_conn feed;
	struct match_servicer *sv;
	struct match_room *rooms;
	char sprefix[32]; /* servicer ids */
	char uprefix[32]; /* user ids */
	size_t sprefix_len;
	size_t uprefix_len;
	long fed;
	int subscribed;
	uint64_t t_measure;
	uint64_t t_end;
	long matches;
	struct bench_samples accept; /* --offer: ACCEPT to matched */
	long errors;
	char first_error[128];
	struct bench_samples s;
	int failed;
};

static void match_subscribed(struct match *);

static void
match_fail(struct match *m, const char *why)
{
	if (m->phase == MATCH_OVER)
		return;
	bench_say("match: failed: %s", why);
	m->failed = 1;
	m->phase = MATCH_OVER;
	event_base_loopbreak(m->base);
}

static void
match_reply_cb(redisAsyncContext *ac, void *r, void *priv)
{
	struct match *m = priv;
	redisReply *reply = r;

	if (m->phase == MATCH_OVER)
		return;
	if (reply == NULL) {
		match_fail(m, ac->errstr[0] != '\0' ? ac->errstr
		                                    : "connection lost");
		return;
	}
	if (reply->type == REDIS_REPLY_ERROR && m->errors++ == 0)
		snprintf(m->first_error, sizeof(m->first_error), "%s",
		         reply->str);
}

/*
 * Sends the command of argc words on conn, written as RESP here rather
 * than from a format by hiredis: the same bytes, at a fraction of the
 * instructions (docs/benchmarks.md, "csq-bench's own CPU a match").
 */
static void
match_send(struct match *m, struct match_conn *conn, int argc,
           const char *const *argv, const size_t *argvlen)
{
	char buf[MATCH_CMD_MAX];
	size_t len;

	if ((len = bench_resp_cmd(buf, sizeof(buf), argc, argv, argvlen)) ==
	    0) {
		match_fail(m, "a command too long");
		return;
	}
	redisAsyncFormattedCommand(conn->ac, match_reply_cb, m, buf, len);
}

/* VERB <room>, the room as the event named it. */
static void
match_send_room(struct match *m, struct match_conn *conn, const char *verb,
                size_t verblen, struct bench_span room)
{
	const char *argv[2] = {verb, room.p};
	size_t argvlen[2] = {verblen, room.len};

	match_send(m, conn, 2, argv, argvlen);
}

/* ENQUEUE <uprefix><n> TTL 0, the next new user. */
static void
match_feed(struct match *m)
{
	char user[BENCH_WORD_MAX];
	const char *argv[4] = {"ENQUEUE", user, "TTL", "0"};
	size_t argvlen[4] = {sizeof("ENQUEUE") - 1, 0, sizeof("TTL") - 1, 1};

	memcpy(user, m->uprefix, m->uprefix_len);
	argvlen[1] =
	    m->uprefix_len + bench_resp_ulong(user + m->uprefix_len,
	                                      (unsigned long long)m->fed++);
	match_send(m, &m->feed, 4, argv, argvlen);
}

/* Reads the decimal number at *p, up to end or a byte not a digit. */
static long
match_number(const char **p, const char *end)
{
	const char *q = *p;
	long v = 0;

	while (q < end && *q >= '0' && *q <= '9' && q - *p < MATCH_ID_DIGITS)
		v = v * 10 + (*q++ - '0');
	if (q == *p || (q < end && *q >= '0' && *q <= '9'))
		return -1;
	*p = q;
	return v;
}

/* The slot of room "<sprefix><idx>/<n>", or -1 if it is not ours. */
static long
match_slot(struct match *m, struct bench_span room)
{
	const char *p = room.p + m->sprefix_len, *end = room.p + room.len;
	long idx, n;

	if (room.len <= m->sprefix_len ||
	    memcmp(room.p, m->sprefix, m->sprefix_len) != 0)
		return -1;
	idx = match_number(&p, end);
	if (idx < 0 || idx >= m->o->servicers || p >= end || *p++ != '/')
		return -1;
	n = match_number(&p, end);
	if (n < 0 || n >= m->o->capacity || p != end)
		return -1;
	return idx * m->o->capacity + n;
}

/* Whether s, NUL-terminated, is the id u. */
static int
match_same(const char *s, struct bench_span u)
{
	return strncmp(s, u.p, u.len) == 0 && s[u.len] == '\0';
}

/* Copies the id u, shorter than BENCH_WORD_MAX, into s. */
static void
match_copy(char *s, struct bench_span u)
{
	memcpy(s, u.p, u.len);
	s[u.len] = '\0';
}

/*
 * Reads a channel's message once: the event, and for a matched (or, with
 * --offer, an offered) its room and user, each shorter than an id may be.
 */
static enum match_kind
match_event_read(const struct match *m, const redisReply *msg,
                 struct match_event *ev)
{
	static const char *const event[] = {"event"};
	static const char *const ids[] = {"room", "user"};
	struct bench_span kind, f[2];

	/*
	 * "event" is the first key csqd writes: most messages (queued,
	 * released, ...) are put aside after it alone.
	 */
	if (msg->type != REDIS_REPLY_STRING ||
	    bench_json_strings(msg->str, msg->len, event, 1, &kind) != 1)
		return ev->kind = MATCH_OTHER;
	if (bench_span_is(kind, "matched"))
		ev->kind = MATCH_MATCHED;
	else if (m->o->offer > 0 && bench_span_is(kind, "offered"))
		ev->kind = MATCH_OFFERED;
	else
		return ev->kind = MATCH_OTHER;
	bench_json_strings(msg->str, msg->len, ids, 2, f);
	ev->room = f[0];
	ev->user = f[1];
	if (f[0].p == NULL || f[0].len >= BENCH_WORD_MAX || f[1].p == NULL ||
	    f[1].len >= BENCH_WORD_MAX)
		ev->kind = MATCH_BAD;
	return ev->kind;
}

/* A message on servicer:<id>: a user in one of our rooms ends at once. */
static void
match_servicer_cb(redisAsyncContext *ac, void *r, void *priv)
{
	struct match_servicer *sv = priv;
	struct match *m = sv->m;
	redisReply *reply = r;
	struct match_event ev;
	struct match_carried *c;
	struct match_room *rm;
	long slot;

	if (m->phase == MATCH_OVER)
		return;
	if (reply == NULL || reply->type != REDIS_REPLY_ARRAY ||
	    reply->elements < 3) {
		match_fail(m, reply == NULL ? ac->errstr : "bad message");
		return;
	}
	if (strcmp(reply->element[0]->str, "subscribe") == 0) {
		match_subscribed(m);
		return;
	}
	if (match_event_read(m, reply->element[2], &ev) == MATCH_OTHER)
		return;
	if (ev.kind == MATCH_BAD || (slot = match_slot(m, ev.room)) == -1) {
		match_fail(m, "matched event without our room");
		return;
	}
	rm = &m->rooms[slot];
	/* The event that follows a RELEASE: the next offer, or match. */
	if ((m->o->offer > 0) == (ev.kind == MATCH_OFFERED) &&
	    rm->released_ns != 0 && !match_same(rm->ended, ev.user)) {
		c = &rm->carried[rm->ncarried++ % MATCH_CARRIED];
		c->released_ns = rm->released_ns;
		match_copy(c->user, ev.user);
		rm->released_ns = 0;
	}
	if (ev.kind == MATCH_OFFERED) {
		match_copy(rm->offered, ev.user);
		rm->accepted_ns = bench_now_ns();
		match_send_room(m, &sv->cmd, MATCH_VERB("ACCEPT"), ev.room);
		return;
	}
	match_copy(rm->ended, ev.user);
	rm->released_ns = bench_now_ns();
	match_send_room(m, &sv->cmd, MATCH_VERB("RELEASE"), ev.room);
}

static void
match_sample(struct match *m, uint64_t ns)
{
	if (m->phase == MATCH_MEASURE) {
		bench_samples_add(&m->s, ns);
		m->matches++;
	}
}

/* A message on user:*: the match that a RELEASE made possible, timed. */
static void
match_user_cb(redisAsyncContext *ac, void *r, void *priv)
{
	struct match *m = priv;
	redisReply *reply = r;
	struct match_event ev;
	struct match_carried *c;
	struct match_room *rm;
	uint64_t now;
	long slot;
	int i;

	if (m->phase == MATCH_OVER)
		return;
	if (reply == NULL || reply->type != REDIS_REPLY_ARRAY ||
	    reply->elements < 3) {
		match_fail(m, reply == NULL ? ac->errstr : "bad message");
		return;
	}
	if (strcmp(reply->element[0]->str, "psubscribe") == 0) {
		match_subscribed(m);
		return;
	}
	if (reply->elements < 4)
		return;
	if (match_event_read(m, reply->element[3], &ev) == MATCH_OTHER)
		return;
	now = bench_now_ns();
	if (ev.kind == MATCH_BAD)
		return;
	if (ev.kind == MATCH_MATCHED && ev.user.len >= m->uprefix_len &&
	    memcmp(ev.user.p, m->uprefix, m->uprefix_len) == 0)
		match_feed(m);
	if ((slot = match_slot(m, ev.room)) == -1)
		return;
	rm = &m->rooms[slot];
	if (m->o->offer > 0 && ev.kind == MATCH_MATCHED) {
		if (rm->accepted_ns != 0 && match_same(rm->offered, ev.user)) {
			if (m->phase == MATCH_MEASURE)
				bench_samples_add(&m->accept,
				                  now - rm->accepted_ns);
			rm->accepted_ns = 0;
		}
		return;
	}
	for (i = 0; i < MATCH_CARRIED; i++) {
		c = &rm->carried[i];
		if (c->released_ns != 0 && match_same(c->user, ev.user)) {
			match_sample(m, now - c->released_ns);
			c->released_ns = 0;
			return;
		}
	}
	/* The match of the user whose RELEASE is pending is not the next. */
	if (rm->released_ns == 0 || match_same(rm->ended, ev.user))
		return;
	match_sample(m, now - rm->released_ns);
	rm->released_ns = 0;
}

static void
match_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct match *m = arg;
	struct timeval tv;

	(void)fd;
	(void)what;
	switch (m->phase) {
	case MATCH_SETUP:
		match_fail(m, "timed out subscribing");
		break;
	case MATCH_WARMUP:
		m->phase = MATCH_MEASURE;
		m->t_measure = bench_now_ns();
		tv.tv_sec = (time_t)m->o->duration;
		tv.tv_usec =
		    (suseconds_t)((m->o->duration - (double)tv.tv_sec) * 1e6);
		evtimer_add(m->timer, &tv);
		break;
	case MATCH_MEASURE:
		m->t_end = bench_now_ns();
		m->phase = MATCH_OVER;
		event_base_loopbreak(m->base);
		break;
	case MATCH_OVER:
		break;
	}
}

/* The line first, then the servicers log in and matching starts. */
static void
match_start(struct match *m)
{
	struct timeval tv = {(time_t)MATCH_WARMUP_S, 0};
	char cap[16];
	int i;

	for (i = 0; i < MATCH_PRELOAD; i++)
		match_feed(m);
	snprintf(cap, sizeof(cap), "%d", m->o->capacity);
	for (i = 0; i < m->o->servicers; i++)
		if (m->o->offer > 0)
			redisAsyncCommand(
			    m->sv[i].cmd.ac, match_reply_cb, m,
			    "HEARTBEAT %s CAPACITY %s TTL %s OFFER %d",
			    m->sv[i].id, cap, MATCH_TTL, m->o->offer);
		else
			redisAsyncCommand(m->sv[i].cmd.ac, match_reply_cb, m,
			                  "HEARTBEAT %s CAPACITY %s TTL %s",
			                  m->sv[i].id, cap, MATCH_TTL);
	m->phase = MATCH_WARMUP;
	evtimer_del(m->timer);
	evtimer_add(m->timer, &tv);
}

/* Counts a subscription; the run starts when every one is confirmed. */
static void
match_subscribed(struct match *m)
{
	if (++m->subscribed == m->o->servicers + 1 && m->phase == MATCH_SETUP)
		match_start(m);
}

static void
match_connect_cb(const redisAsyncContext *ac, int status)
{
	struct match_conn *conn = ac->data;

	if (status != REDIS_OK) {
		conn->ac = NULL;
		match_fail(conn->m, ac->errstr);
	}
}

static void
match_disconnect_cb(const redisAsyncContext *ac, int status)
{
	struct match_conn *conn = ac->data;

	(void)status;
	conn->ac = NULL;
	match_fail(conn->m,
	           ac->errstr[0] != '\0' ? ac->errstr : "connection closed");
}

static void
match_connect(struct match *m, struct match_conn *conn)
{
	redisAsyncContext *ac;

	ac = redisAsyncConnect(m->o->host, m->o->port);
	if (ac == NULL || ac->err)
		bench_fatalx("cannot connect to %s:%d: %s", m->o->host,
		             m->o->port, ac != NULL ? ac->errstr : "?");
	conn->m = m;
	conn->ac = ac;
	ac->data = conn;
	redis_reply_objects(ac);
	redis_event_attach(ac, m->base);
	redisAsyncSetConnectCallback(ac, match_connect_cb);
	redisAsyncSetDisconnectCallback(ac, match_disconnect_cb);
}

static void
match_close(struct match_conn *conn)
{
	if (conn->ac != NULL)
		redisAsyncFree(conn->ac);
	conn->ac = NULL;
}

int
bench_match(const struct bench_opts *o)
{
	struct match m;
	struct timeval tv = {(time_t)o->timeout, 0};
	double secs;
	int i, rc;

	memset(&m, 0, sizeof(m));
	m.o = o;
	snprintf(m.sprefix, sizeof(m.sprefix), "m%ld.%llu.s", (long)getpid(),
	         (unsigned long long)(bench_now_ns() % 1000000));
	snprintf(m.uprefix, sizeof(m.uprefix), "m%ld.%llu.u", (long)getpid(),
	         (unsigned long long)(bench_now_ns() % 1000000));
	m.sprefix_len = strlen(m.sprefix);
	m.uprefix_len = strlen(m.uprefix);
	if ((m.base = event_base_new()) == NULL)
		bench_fatalx("event_base_new failed");
	m.sv = calloc((size_t)o->servicers, sizeof(*m.sv));
	m.rooms = calloc((size_t)o->servicers * (size_t)o->capacity,
	                 sizeof(*m.rooms));
	if (m.sv == NULL || m.rooms == NULL)
		bench_fatalx("out of memory");
	bench_say("match: %d servicers x %d rooms, %.0f s warm-up, %.1f s "
	          "measured",
	          o->servicers, o->capacity, MATCH_WARMUP_S, o->duration);

	match_connect(&m, &m.usub);
	redisAsyncCommand(m.usub.ac, match_user_cb, &m, "PSUBSCRIBE user:*");
	match_connect(&m, &m.feed);
	for (i = 0; i < o->servicers; i++) {
		struct match_servicer *sv = &m.sv[i];

		sv->m = &m;
		sv->idx = i;
		snprintf(sv->id, sizeof(sv->id), "%s%d", m.sprefix, i);
		match_connect(&m, &sv->sub);
		match_connect(&m, &sv->cmd);
		redisAsyncCommand(sv->sub.ac, match_servicer_cb, sv,
		                  "SUBSCRIBE servicer:%s", sv->id);
	}
	m.timer = evtimer_new(m.base, match_timer_cb, &m);
	evtimer_add(m.timer, &tv);

	event_base_dispatch(m.base);
	m.phase = MATCH_OVER;

	rc = m.failed ? -1 : 0;
	if (rc == 0) {
		secs = (double)(m.t_end - m.t_measure) / BENCH_NS_PER_S;
		if (m.errors > 0)
			bench_say("match: %ld error replies, the first: %s",
			          m.errors, m.first_error);
		bench_say("match: %ld matches in %.1f s (%.0f/s), p50 %.1f us, "
		          "p99 %.1f us, p99.9 %.1f us",
		          m.matches, secs, (double)m.matches / secs,
		          bench_samples_pct_us(&m.s, 50),
		          bench_samples_pct_us(&m.s, 99),
		          bench_samples_pct_us(&m.s, 99.9));
		printf("result scenario=match target=%s servicers=%d "
		       "capacity=%d samples=%zu matches_per_sec=%.0f "
		       "p50_us=%.1f p99_us=%.1f p999_us=%.1f errors=%ld\n",
		       o->label, o->servicers, o->capacity, m.s.n,
		       (double)m.matches / secs, bench_samples_pct_us(&m.s, 50),
		       bench_samples_pct_us(&m.s, 99),
		       bench_samples_pct_us(&m.s, 99.9), m.errors);
		if (o->offer > 0) {
			bench_say("match: ACCEPT to matched: p50 %.1f us, p99 "
			          "%.1f us, p99.9 %.1f us",
			          bench_samples_pct_us(&m.accept, 50),
			          bench_samples_pct_us(&m.accept, 99),
			          bench_samples_pct_us(&m.accept, 99.9));
			printf("result scenario=match_accept target=%s "
			       "servicers=%d samples=%zu p50_us=%.1f "
			       "p99_us=%.1f p999_us=%.1f\n",
			       o->label, o->servicers, m.accept.n,
			       bench_samples_pct_us(&m.accept, 50),
			       bench_samples_pct_us(&m.accept, 99),
			       bench_samples_pct_us(&m.accept, 99.9));
		}
		fflush(stdout);
		if (m.matches == 0)
			rc = -1;
	}
	match_close(&m.usub);
	match_close(&m.feed);
	for (i = 0; i < o->servicers; i++) {
		match_close(&m.sv[i].sub);
		match_close(&m.sv[i].cmd);
	}
	event_free(m.timer);
	event_base_free(m.base);
	bench_samples_free(&m.s);
	bench_samples_free(&m.accept);
	free(m.sv);
	free(m.rooms);
	return rc;
}
