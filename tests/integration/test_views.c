/*
 * Views of every queue made in slices (issue 37), against a real csqd on
 * both engines: the snapshot's figures of each queue are its own beyond
 * the first slice; the QUEUES and SERVICERS of every connection take
 * turns, one slice at a time; the rows of a QUEUES being made, and a
 * snapshot being made, count against max_output_memory, and a client
 * that does not read is cut there with its line, csqd's memory coming
 * back after.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define ID_MAX 64 /* bytes of a queue name, at most */
/* max_output_memory of the cut's tests: 256 KiB */
#define CAP_CONF    "max_output_memory = 262144;\n"
#define RSS_SLACK   (4 * 1024) /* kB: RSS allowed over 10 % more after */
#define RSS_WAIT_MS 15000

/* Waits until csqd's VmRSS is back within 10 % (and RSS_SLACK) of rss0
 * kB; the last reading. */
static long
rss_back(struct csqd *d, long rss0)
{
	int64_t until = now_ms() + RSS_WAIT_MS;
	long rss;

	while ((rss = proc_status_kb(d->pid, "VmRSS")) >
	           rss0 + rss0 / 10 + RSS_SLACK &&
	       now_ms() < until)
		sleep_ms(100);
	return rss;
}

/* n queues, q00000 and on, each name followed by tail, each with one
 * user waiting. */
static void
make_queues(redisContext *c, int n, const char *tail)
{
	int i;

	for (i = 0; i < n; i++)
		redisAppendCommand(c, "ENQUEUE u%d QUEUE q%05d%s", i, i, tail);
	for (i = 0; i < n; i++)
		freeReplyObject(GET_REPLY(c));
}

#define FIG_QUEUES 2200 /* three slices, the last short */

/*
 * The snapshot's figures of each queue are that queue's in every slice:
 * queue i has 1 + i % 3 users waiting (QUEUES' figure) and i % 4 that
 * left it (QSTATS' abandoned_total). 5118291 found a later slice pairing
 * the queues of one slice with the QSTATS of the next (the memory
 * engine's QUEUES answer had moved the cursor before QSTATS was asked):
 * every queue after the first slice then read 0 abandoned.
 */
static void
snapshot_figures_by_queue(void **state)
{
	struct csqd *d = csqd_start_http("");
	redisContext *c = csqd_connect(d);
	char *body, *p, name[ID_MAX + 4];
	int i, j, n = 0, calls = 0, w, q, left;

	(void)state;
	for (i = 0; i < FIG_QUEUES; i++) {
		for (j = 0; j < 1 + i % 3; j++, calls++)
			redisAppendCommand(c, "ENQUEUE w%d-%d QUEUE q%05d", i,
			                   j, i);
		for (j = 0; j < i % 4; j++, calls += 2) {
			redisAppendCommand(c, "ENQUEUE l%d-%d QUEUE q%05d", i,
			                   j, i);
			redisAppendCommand(c, "LEAVE l%d-%d", i, j);
		}
	}
	for (i = 0; i < calls; i++)
		freeReplyObject(GET_REPLY(c));
	body = http_get(d->http_port, "/api/snapshot");
	assert_non_null(strstr(body, " 200 "));
	for (p = body; (p = strstr(p, "{\"name\":\"q")) != NULL; p++) {
		assert_int_equal(sscanf(p,
		                        "{\"name\":\"%67[^\"]\",\"waiting\":%d",
		                        name, &w),
		                 2);
		q = atoi(name + 1);
		assert_int_equal(q, n); /* each once, in order */
		assert_int_equal(w, 1 + q % 3);
		assert_non_null(p = strstr(p, "\"abandoned_total\":"));
		left = atoi(p + strlen("\"abandoned_total\":"));
		if (left != q % 4)
			print_message("queue %s: abandoned_total %d, not %d\n",
			              name, left, q % 4);
		assert_int_equal(left, q % 4);
		n++;
	}
	assert_int_equal(n, FIG_QUEUES);
	free(body);
	redisFree(c);
	assert_int_equal(csqd_stop(d), 0);
}

#define TURN_QUEUES    6000 /* 7 slices with default */
#define TURN_SERVICERS 1500 /* 2 slices */
#define TURN_ASKS      8    /* QUEUES pipelined by one connection */
#define TURN_WAIT_MS   30000

/* A connection's bytes so far, and whether they end with its PING's
 * PONG: every reply before it is whole. */
struct reading {
	int fd;
	char *buf;
	size_t len, cap;
	int done;
};

static void
reading_more(struct reading *r)
{
	ssize_t n;

	if (r->cap - r->len < 65536) {
		r->cap = r->cap * 2 + 65536;
		assert_non_null(r->buf = realloc(r->buf, r->cap));
	}
	n = read(r->fd, r->buf + r->len, r->cap - r->len);
	assert_true(n > 0);
	r->len += (size_t)n;
	r->done =
	    r->len >= 7 && memcmp(r->buf + r->len - 7, "+PONG\r\n", 7) == 0;
}

/* The replies of r, parsed, n of them before the PONG. */
static redisReply **
reading_replies(struct reading *r, int n)
{
	redisReader *rd = redisReaderCreate();
	redisReply **v = calloc((size_t)n + 1, sizeof(*v));
	void *x;
	int i;

	assert_non_null(rd);
	assert_non_null(v);
	assert_int_equal(redisReaderFeed(rd, r->buf, r->len), REDIS_OK);
	for (i = 0; i <= n; i++) {
		assert_int_equal(redisReaderGetReply(rd, &x), REDIS_OK);
		assert_non_null(x);
		v[i] = x;
	}
	assert_string_equal(v[n]->str, "PONG");
	redisReaderFree(rd);
	return v;
}

/*
 * One scheduler for the walks of QUEUES and SERVICERS, taking turns:
 * one connection pipelines 8 QUEUES of 7 slices each (and a PING), then
 * another asks SERVICERS of 2 slices (and a PING). Both are read as
 * their bytes come: the SERVICERS, whose turns come between the QUEUES'
 * slices, is whole before the last QUEUES (about 50 slices later); were
 * the walks made one after another it would come after them all. (Both
 * whole in the same reading says nothing, and is let be: the test
 * process may have waited for a CPU meanwhile.) Every reply is whole
 * and in order.
 */
static void
walks_take_turns(void **state)
{
	struct csqd *d = csqd_start("");
	redisContext *c = csqd_connect(d);
	struct reading a = {raw_connect(d->port), NULL, 0, 0, 0};
	struct reading b = {raw_connect(d->port), NULL, 0, 0, 0};
	struct pollfd pfd[2];
	redisReply **qs, **ss;
	int64_t until = now_ms() + TURN_WAIT_MS;
	int i, order = 0; /* 1: SERVICERS first, 2: QUEUES first, 3: both */
	size_t k;

	(void)state;
	make_queues(c, TURN_QUEUES, "");
	for (i = 0; i < TURN_SERVICERS; i++)
		redisAppendCommand(c, "HEARTBEAT s%05d", i);
	for (i = 0; i < TURN_SERVICERS; i++)
		freeReplyObject(GET_REPLY(c));
	for (i = 0; i < TURN_ASKS; i++)
		raw_sends(a.fd, "QUEUES\r\n");
	raw_sends(a.fd, "PING\r\n");
	raw_sends(b.fd, "SERVICERS\r\nPING\r\n");
	while (!(a.done && b.done)) {
		assert_true(now_ms() < until);
		pfd[0].fd = a.fd;
		pfd[1].fd = b.fd;
		pfd[0].events = a.done ? 0 : POLLIN;
		pfd[1].events = b.done ? 0 : POLLIN;
		assert_true(poll(pfd, 2, 1000) >= 0);
		if (pfd[0].revents & POLLIN)
			reading_more(&a);
		if (pfd[1].revents & POLLIN)
			reading_more(&b);
		if (order == 0 && (a.done || b.done))
			order = a.done && b.done ? 3 : b.done ? 1 : 2;
	}
	print_message("SERVICERS whole %s the last QUEUES\n",
	              order == 1   ? "before"
	              : order == 2 ? "after"
	                           : "in the same reading as");
	assert_int_not_equal(order, 2);
	qs = reading_replies(&a, TURN_ASKS);
	for (i = 0; i < TURN_ASKS; i++) {
		/* default and the 6,000 */
		assert_int_equal(qs[i]->elements, TURN_QUEUES + 1);
		for (k = 1; k < qs[i]->elements; k++)
			assert_true(strcmp(qs[i]->element[k - 1]->str,
			                   qs[i]->element[k]->str) < 0);
	}
	ss = reading_replies(&b, 1);
	assert_int_equal(ss[0]->elements, TURN_SERVICERS);
	for (k = 0; k < ss[0]->elements; k++)
		assert_int_equal(atoi(ss[0]->element[k]->element[0]->str + 1),
		                 (int)k);
	for (i = 0; i <= TURN_ASKS; i++)
		freeReplyObject(qs[i]);
	freeReplyObject(ss[0]);
	freeReplyObject(ss[1]);
	free(qs);
	free(ss);
	free(a.buf);
	free(b.buf);
	close(a.fd);
	close(b.fd);
	redisFree(c);
	assert_int_equal(csqd_stop(d), 0);
}

#define CUT_QUEUES  8000 /* 60-byte names: a QUEUES of 512 kB */
#define CUT_CLIENTS 8
#define CUT_NAME    "-abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwx"

/*
 * A QUEUES's rows count against max_output_memory (256 kB here) while
 * they are made: 8 clients that ask a QUEUES of 512 kB each and read
 * nothing are all closed with the line before their replies are whole
 * (so nothing of them was sent, nothing waits in the kernel); another
 * client is served meanwhile, and csqd's resident memory comes back.
 */
static void
unread_queues_cut(void **state)
{
	struct csqd *d = csqd_start(CAP_CONF);
	redisContext *c = csqd_connect(d);
	int fds[CUT_CLIENTS], i, closed, cut = 0;
	long rss0, rss1, hwm;
	size_t got;
	char buf[4096];

	(void)state;
	make_queues(c, CUT_QUEUES, CUT_NAME);
	rss0 = proc_status_kb(d->pid, "VmRSS");
	assert_true(rss0 > 0);
	for (i = 0; i < CUT_CLIENTS; i++) {
		fds[i] = raw_connect_small(d->port, 4096);
		raw_sends(fds[i], "QUEUES\r\nQUEUES\r\n");
	}
	csqd_wait_log(d, "all clients' output over max_output_memory (262144 "
	                 "bytes), this one's");
	CHECK(c, "+PONG", "PING");
	for (i = 0; i < CUT_CLIENTS; i++) {
		got = raw_read(fds[i], buf, sizeof(buf), 5000, &closed);
		if (!closed || got > 0)
			print_message("client %d: %zu bytes, closed %d\n", i,
			              got, closed);
		cut += closed && got == 0;
		close(fds[i]);
	}
	print_message("%d of %d unread QUEUES clients cut\n", cut, CUT_CLIENTS);
	assert_int_equal(cut, CUT_CLIENTS);
	assert_true(
	    INFO_FIELD(c, "client_output_buffer_limit_disconnections") ==
	    CUT_CLIENTS);
	/* Every one's rows were dropped: the memory comes back. */
	rss1 = rss_back(d, rss0);
	hwm = proc_status_kb(d->pid, "VmHWM");
	print_message("csqd VmRSS %ld kB before, %ld kB after (VmHWM %ld)\n",
	              rss0, rss1, hwm);
	assert_true(rss1 <= rss0 + rss0 / 10 + RSS_SLACK);
	/* A reader under the cap is answered. */
	for (i = 100; i < CUT_QUEUES; i++)
		redisAppendCommand(c, "LEAVE u%d", i);
	for (i = 100; i < CUT_QUEUES; i++)
		freeReplyObject(GET_REPLY(c));
	{
		redisReply *r = CMD(c, "QUEUES");

		assert_int_equal(r->elements, 101);
		freeReplyObject(r);
	}
	redisFree(c);
	assert_int_equal(csqd_stop(d), 0);
}

/*
 * A snapshot being made counts against max_output_memory while it
 * grows (its slices' JSON): over it, it is dropped with its line and its
 * requests get 503 (8,000 queues of 60-byte names: about 1.6 MB, against
 * 256 kB), and RESP clients are served meanwhile. A snapshot under the
 * cap is answered, and csqd's memory comes back.
 */
static void
snapshot_being_made_counted(void **state)
{
	/* Every request makes its answer (no shared one from before). */
	struct csqd *d = csqd_start_http_conf("cache_ms = 0;", CAP_CONF);
	redisContext *c = csqd_connect(d);
	char *body;
	long rss0, rss1;
	int i;

	(void)state;
	body = http_get(d->http_port, "/api/snapshot");
	assert_non_null(strstr(body, " 200 "));
	free(body);
	make_queues(c, CUT_QUEUES, CUT_NAME);
	rss0 = proc_status_kb(d->pid, "VmRSS");
	for (i = 0; i < 3; i++) {
		body = http_get(d->http_port, "/api/snapshot");
		assert_non_null(strstr(body, " 503 "));
		assert_non_null(strstr(body, "{\"error\":\"output over "
		                             "max_output_memory\"}"));
		free(body);
		CHECK(c, "+PONG", "PING");
	}
	csqd_wait_log(d, "http: all clients' output over max_output_memory "
	                 "(262144 bytes), the snapshot being made ");
	/* Each drop counts where the cap's other closings do. */
	assert_int_equal(
	    INFO_FIELD(c, "client_output_buffer_limit_disconnections"), 3);
	rss1 = rss_back(d, rss0);
	print_message("csqd VmRSS %ld kB before, %ld kB after\n", rss0, rss1);
	assert_true(rss1 <= rss0 + rss0 / 10 + RSS_SLACK);
	/* Under the cap again, it is answered. */
	for (i = 0; i < CUT_QUEUES; i++)
		redisAppendCommand(c, "LEAVE u%d", i);
	for (i = 0; i < CUT_QUEUES; i++)
		freeReplyObject(GET_REPLY(c));
	body = http_get(d->http_port, "/api/snapshot");
	assert_non_null(strstr(body, " 200 "));
	free(body);
	redisFree(c);
	assert_int_equal(csqd_stop(d), 0);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(snapshot_figures_by_queue),
	    cmocka_unit_test(walks_take_turns),
	    cmocka_unit_test(unread_queues_cut),
	    cmocka_unit_test(snapshot_being_made_counted),
	};
	const char *asan = getenv("ASAN_OPTIONS");
	char opts[1024];

	/* Memory freed under AddressSanitizer waits in its quarantine (256
	 * MiB by default) and counts as resident: csqd's own memory is what
	 * comes back (as test_limits.c). */
	snprintf(opts, sizeof(opts), "%s%squarantine_size_mb=1",
	         asan != NULL ? asan : "", asan != NULL && *asan ? ":" : "");
	setenv("ASAN_OPTIONS", opts, 1);
	csqd_init(argc, argv);
	return cmocka_run_group_tests_name("views", tests, NULL, NULL);
}
