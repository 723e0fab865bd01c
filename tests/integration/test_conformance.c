/*
 * The two engines side by side: the same random requests go to a csqd on
 * the memory engine and to a csqd on the Redis engine (with its own
 * redis-server), and every reply and every event must be the same, byte
 * for byte, once the times in them (waited_ms, since_ms, idle_ms, ts) are
 * set aside. Any difference is a bug in one of the engines.
 *
 * The requests come from a small set of ids, so that users, rooms and
 * queues collide all the time; a few in ten are bad on purpose (bad ids,
 * values out of range, rooms that do not exist), and the queues are short
 * so that FULL happens. TTLs are an hour: expiry depends on time, which
 * the two daemons do not share; test_ttl.c covers it on both engines.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define OPS       2400
#define BATCH     40 /* requests between two comparisons of the events */
#define NUSERS    24
#define NSERVICER 5
#define SEED      20261122u

static const char conf[] = "user_ttl = 3600;\n"
                           "servicer_ttl = 3600;\n"
                           "max_queue_length = 5;\n"
                           "max_tier = 3;\n";

struct side {
	const char *name;
	struct csqd *d;
	redisContext *c;   /* requests */
	redisContext *sub; /* SUBSCRIBE events */
};

static struct redisd *redis;
static struct side sides[2];
static uint32_t rng = SEED;

static uint32_t
rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng % n;
}

static const char *const queue_names[] = {"default", "q1", "q2", "q3"};

/* One random request, as argv; strings live in buf. */
static int
random_request(char buf[16][80], const char **argv)
{
	int argc = 0, n;
	static const char *const bad_ids[] = {"", "bad id", "x/y",
	                                      "0123456789012345678901234567890"
	                                      "12345678901234567890123456789012"
	                                      "34"};

#define ARG(...)                                                               \
	do {                                                                   \
		snprintf(buf[argc], 80, __VA_ARGS__);                          \
		argv[argc] = buf[argc];                                        \
		argc++;                                                        \
	} while (0)
#define USER()     ARG("u%u", rnd(NUSERS))
#define SERVICER() ARG("s%u", rnd(NSERVICER))
#define QUEUE()    ARG("%s", queue_names[rnd(4)])

	switch (rnd(20)) {
	case 0:
	case 1:
	case 2:
		ARG("HEARTBEAT");
		SERVICER();
		if (rnd(2)) {
			ARG("CAPACITY");
			ARG("%u", rnd(8) == 0 ? 1001 : 1 + rnd(3));
		}
		if (rnd(2)) {
			ARG("QUEUES");
			n = (int)rnd(3);
			ARG("%s%s%s", queue_names[rnd(4)], n ? "," : "",
			    n ? queue_names[rnd(4)] : "");
		}
		if (rnd(6) == 0) {
			ARG("TTL");
			ARG("%u", rnd(3) == 0 ? 0 : 3600);
		}
		break;
	case 3:
		ARG(rnd(2) ? "PAUSE" : "RESUME");
		SERVICER();
		break;
	case 4:
		ARG("LOGOUT");
		SERVICER();
		break;
	case 5:
	case 6:
	case 7:
		ARG("RELEASE");
		ARG("s%u/%u", rnd(NSERVICER + 1), rnd(rnd(6) == 0 ? 10 : 3));
		break;
	case 8:
	case 9:
	case 10:
	case 11:
		ARG("ENQUEUE");
		USER();
		if (rnd(2)) {
			ARG("QUEUE");
			QUEUE();
		}
		if (rnd(3) == 0) {
			ARG("TIER");
			ARG("%u", rnd(5));
		}
		break;
	case 12:
		ARG("TOUCH");
		USER();
		break;
	case 13:
		ARG("LEAVE");
		USER();
		break;
	case 14:
	case 15:
		ARG("WHERE");
		USER();
		break;
	case 16:
		ARG("QUEUE");
		QUEUE();
		ARG("%u", rnd(4));
		ARG("%u", rnd(5));
		break;
	case 17:
		ARG(rnd(2) ? "QLEN" : "STATS");
		QUEUE();
		if (strcmp(argv[0], "STATS") == 0)
			argc--;
		break;
	case 18:
		n = (int)rnd(3);
		ARG("%s", n == 0 ? "SERVICERS" : n == 1 ? "QUEUES" : "ROOMS");
		if (n == 2)
			SERVICER();
		break;
	default: /* bad on purpose */
		ARG("%s", rnd(2) ? "ENQUEUE" : "HEARTBEAT");
		ARG("%s", bad_ids[rnd(4)]);
		break;
	}
	return argc;
#undef ARG
#undef USER
#undef SERVICER
#undef QUEUE
}

/* Times in replies: fields named *_ms, QUEUE's last, SERVICERS' fifth
 * (idle_ms; its queues follow) and ROOMS' since_ms. */
static void
normalize(redisReply *r, const char *cmd)
{
	size_t i;
	redisReply *e;

	if (r->type != REDIS_REPLY_ARRAY)
		return;
	for (i = 0; i < r->elements; i++) {
		e = r->element[i];
		if (e->type == REDIS_REPLY_STRING && e->len > 3 &&
		    strcmp(e->str + e->len - 3, "_ms") == 0 &&
		    i + 1 < r->elements &&
		    r->element[i + 1]->type == REDIS_REPLY_INTEGER)
			r->element[i + 1]->integer = 0;
		if (e->type == REDIS_REPLY_ARRAY && e->elements > 0 &&
		    strcmp(cmd, "QUEUE") == 0)
			e->element[e->elements - 1]->integer = 0;
		if (e->type == REDIS_REPLY_ARRAY && e->elements > 4 &&
		    strcmp(cmd, "SERVICERS") == 0)
			e->element[4]->integer = 0;
		if (e->type == REDIS_REPLY_ARRAY && e->elements == 8 &&
		    strcmp(cmd, "ROOMS") == 0)
			e->element[7]->integer = 0;
	}
}

/* Times in events: the digits after "ts": and "waited_ms":. */
static void
normalize_json(char *s)
{
	static const char *const keys[] = {"\"ts\":", "\"waited_ms\":"};
	char *p, *q;
	size_t k;

	for (k = 0; k < 2; k++) {
		if ((p = strstr(s, keys[k])) == NULL)
			continue;
		p += strlen(keys[k]);
		q = p;
		while (*q >= '0' && *q <= '9')
			q++;
		if (q > p) {
			*p = '0';
			memmove(p + 1, q, strlen(q) + 1);
		}
	}
}

static void
compare_events(int op)
{
	struct msgs m[2];
	int i, k;

	for (k = 0; k < 2; k++) {
		MSGS_COLLECT(sides[k].sub, &m[k]);
		for (i = 0; i < m[k].n; i++)
			normalize_json(m[k].m[i].payload);
	}
	if (m[0].n != m[1].n) {
		for (k = 0; k < 2; k++)
			for (i = 0; i < m[k].n; i++)
				fprintf(stderr, "%s: %s\n", sides[k].name,
				        m[k].m[i].payload);
		fail_msg("before request %d: %d events on memory, %d on redis",
		         op, m[0].n, m[1].n);
	}
	for (i = 0; i < m[0].n; i++)
		if (strcmp(m[0].m[i].payload, m[1].m[i].payload) != 0)
			fail_msg("before request %d, event %d:\nmemory %s\n"
			         "redis  %s",
			         op, i, m[0].m[i].payload, m[1].m[i].payload);
	msgs_free(&m[0]);
	msgs_free(&m[1]);
}

static void
same_everywhere(void **state)
{
	char buf[16][80], repr[2][8192], line[1024];
	const char *argv[16];
	redisReply *r;
	int op, argc, k, i, errors = 0, events_seen = 0;
	size_t off;

	(void)state;
	for (op = 0; op < OPS; op++) {
		if (op % BATCH == 0)
			compare_events(op);
		argc = random_request(buf, argv);
		off = 0;
		for (i = 0; i < argc && off < sizeof(line) - 100; i++)
			off += (size_t)snprintf(line + off, sizeof(line) - off,
			                        "%s%s", i ? " " : "", argv[i]);
		for (k = 0; k < 2; k++) {
			r = CMD_ARGV(sides[k].c, argc, argv, NULL);
			normalize(r, argv[0]);
			reply_repr(r, repr[k], sizeof(repr[k]));
			if (k == 0 && r->type == REDIS_REPLY_ERROR)
				errors++;
			freeReplyObject(r);
		}
		if (strcmp(repr[0], repr[1]) != 0)
			fail_msg("request %d: %s\nmemory %s\nredis  %s", op,
			         line, repr[0], repr[1]);
	}
	compare_events(OPS);
	/* The run did exercise what it claims to. */
	r = CMD(sides[0].c, "STATS");
	events_seen = (int)FIELD_INT(r, "matched_total");
	assert_true(events_seen > 50);
	assert_true(FIELD_INT(r, "requeued_total") > 5);
	freeReplyObject(r);
	assert_true(errors > OPS / 20);
}

static int
setup(void **state)
{
	static const char *events[] = {"events"};
	int k;

	(void)state;
	if (redisd_binary() == NULL) {
		fprintf(stderr, "redis-server not found: skipped\n");
		exit(77);
	}
	redis = redisd_start(0);
	sides[0].name = "memory";
	sides[0].d = csqd_start(conf);
	sides[1].name = "redis";
	sides[1].d = csqd_start_redis(redis, "conformance", conf);
	for (k = 0; k < 2; k++) {
		sides[k].c = csqd_connect(sides[k].d);
		sides[k].sub = csqd_connect(sides[k].d);
		SUBSCRIBE(sides[k].sub, 1, events);
	}
	return 0;
}

static int
teardown(void **state)
{
	int k;

	(void)state;
	for (k = 0; k < 2; k++) {
		redisFree(sides[k].c);
		redisFree(sides[k].sub);
		assert_int_equal(csqd_stop(sides[k].d), 0);
	}
	assert_int_equal(redisd_stop(redis), 0);
	redisd_free(redis);
	return 0;
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(same_everywhere, setup, teardown),
	};

	csqd_init(argc, argv);
	return cmocka_run_group_tests_name("conformance", tests, NULL, NULL);
}
