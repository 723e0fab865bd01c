/*
 * The HTTP endpoint: /healthz, /metrics parsed by the reference Prometheus
 * text parser (prometheus_client, through metrics_check.py) after scripted
 * scenarios, and the answers to other paths and methods.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define HTTP_REPLY_MAX 65536
#define SKIP_STATUS    77   /* ctest: skipped (a tool is missing) */
#define OUTAGE_MS      2000 /* Redis down: csqd retries several times */
/* The engine's lines of a start and an outage: up, down, why each of its
 * two connections failed, each restored, up again. */
#define OUTAGE_LINES_MAX 7

/* One HTTP/1.0 request; the whole answer (headers and body) into buf. */
static void
http_request(int port, const char *method, const char *path, char *buf,
             size_t cap)
{
	char req[512];
	int fd, closed;

	fd = raw_connect(port);
	snprintf(req, sizeof(req), "%s %s HTTP/1.0\r\nHost: test\r\n\r\n",
	         method, path);
	raw_sends(fd, req);
	raw_read(fd, buf, cap, 5000, &closed);
	close(fd);
	if (!closed)
		fail_at(__FILE__, __LINE__, "%s %s: no end of answer", method,
		        path);
}

static void
assert_http_status(const char *buf, int code)
{
	char want[32];

	/* HTTP/1.0 asked, HTTP/1.0 answered; either will do. */
	snprintf(want, sizeof(want), " %d ", code);
	if (strncmp(buf, "HTTP/1.", 7) != 0 ||
	    strncmp(buf + 8, want, strlen(want)) != 0)
		fail_at(__FILE__, __LINE__, "expected %s..., got:\n%s", want,
		        buf);
}

static const char *
http_body(const char *buf)
{
	const char *p = strstr(buf, "\r\n\r\n");

	return p != NULL ? p + 4 : "";
}

/*
 * Runs metrics_check.py on the daemon's /metrics with the expectations in
 * ap; returns its exit status (-1: it did not exit). Quiet sends its
 * output to /dev/null, for polling.
 */
static int
metrics_run(struct csqd *d, int quiet, va_list ap)
{
	const char *argv[64];
	char url[128];
	int argc = 0, status, fd;
	pid_t pid;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", d->http_port);
	argv[argc++] = CSQ_PYTHON;
	argv[argc++] = CSQ_METRICS_CHECK;
	argv[argc++] = url;
	while (argc < 63 && (argv[argc] = va_arg(ap, const char *)) != NULL)
		argc++;
	argv[argc] = NULL;
	fflush(stderr);
	if ((pid = fork()) == 0) {
		if (quiet && (fd = open("/dev/null", O_WRONLY)) >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		} else
			dup2(2, 1);
		execv(CSQ_PYTHON, (char *const *)argv);
		_exit(127);
	}
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/*
 * Checks the daemon's /metrics with expectations (NULL terminated). main()
 * made sure that Python and prometheus_client are there, so anything but
 * success fails, 77 too.
 */
static void
metrics_check_at(const char *file, int line, struct csqd *d, ...)
{
	va_list ap;
	int rc;

	va_start(ap, d);
	rc = metrics_run(d, 0, ap);
	va_end(ap);
	if (rc != 0) {
		csqd_dump_log(d);
		fail_at(file, line, "metrics_check.py failed (%d)", rc);
	}
}
#define metrics_check(d, ...)                                                  \
	metrics_check_at(__FILE__, __LINE__, (d), __VA_ARGS__)

/* The same, polled until the expectations hold; fails after 5 s. */
static void
metrics_wait_at(const char *file, int line, struct csqd *d, ...)
{
	int64_t deadline = now_ms() + 5000;
	va_list ap;
	int rc;

	for (;;) {
		va_start(ap, d);
		rc = metrics_run(d, 1, ap);
		va_end(ap);
		if (rc == 0)
			return;
		if (now_ms() > deadline)
			break;
		sleep_ms(50);
	}
	/* Once more, aloud, for the reason. */
	va_start(ap, d);
	rc = metrics_run(d, 0, ap);
	va_end(ap);
	csqd_dump_log(d);
	fail_at(file, line, "metrics_check.py: not within 5 s (%d)", rc);
}
#define metrics_wait(d, ...)                                                   \
	metrics_wait_at(__FILE__, __LINE__, (d), __VA_ARGS__)

static int
setup(void **state)
{
	struct csqd_fx *fx = calloc(1, sizeof(*fx));

	*state = fx;
	fx->d = csqd_start_http(NULL);
	fx->c = csqd_connect(fx->d);
	return 0;
}

/* The same with all clients' output capped at 1 MiB. */
static int
setup_output_cap(void **state)
{
	struct csqd_fx *fx = calloc(1, sizeof(*fx));

	*state = fx;
	fx->d = csqd_start_http("max_output_memory = 1048576;");
	fx->c = csqd_connect(fx->d);
	return 0;
}

/*
 * A client that sends 40 ECHOs of 512 KiB and reads nothing: its replies
 * pass max_output_memory (1 MiB here) long before its own 256 MiB limit,
 * and it is closed, which the counter shows.
 */
#define CAP_ECHO  (512 * 1024)
#define CAP_ECHOS 40

static void
test_metrics_output_closed(void **state)
{
	struct csqd_fx *fx = *state;
	static char req[CAP_ECHO + 64];
	struct timeval tv = {1, 0};
	int fd = raw_connect(fx->d->port), i;
	size_t len;

	len = raw_echo_request(req, sizeof(req), CAP_ECHO, 'z');
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	for (i = 0; i < CAP_ECHOS; i++)
		raw_send(fd, req, len);
	csqd_wait_log(fx->d, "max_output_memory (1048576 bytes)");
	metrics_check(fx->d, "csq_output_limit_disconnections_total=1",
	              "csq_connected_clients=1", NULL);
	close(fd);
	CHECK(fx->c, "+PONG", "PING");
}

static void
test_healthz(void **state)
{
	struct csqd_fx *fx = *state;
	char buf[HTTP_REPLY_MAX];

	http_request(fx->d->http_port, "GET", "/healthz", buf, sizeof(buf));
	assert_http_status(buf, 200);
	assert_string_equal(http_body(buf), "ok\n");
	http_request(fx->d->http_port, "HEAD", "/healthz", buf, sizeof(buf));
	assert_http_status(buf, 200);
	assert_string_equal(http_body(buf), "");
}

static void
test_other_paths_and_methods(void **state)
{
	struct csqd_fx *fx = *state;
	char buf[HTTP_REPLY_MAX];

	/* "/" is the admin page (test_admin_http.py). */
	http_request(fx->d->http_port, "GET", "/", buf, sizeof(buf));
	assert_http_status(buf, 200);
	http_request(fx->d->http_port, "GET", "/nothing", buf, sizeof(buf));
	assert_http_status(buf, 404);
	http_request(fx->d->http_port, "GET", "/metrics/x", buf, sizeof(buf));
	assert_http_status(buf, 404);
	http_request(fx->d->http_port, "POST", "/metrics", buf, sizeof(buf));
	assert_http_status(buf, 405);
	assert_non_null(strstr(buf, "Allow: GET, HEAD\r\n"));
	http_request(fx->d->http_port, "DELETE", "/healthz", buf, sizeof(buf));
	assert_http_status(buf, 405);
	/* A method evhttp does not know is 405 too, not evhttp's 501. */
	http_request(fx->d->http_port, "PROPFIND", "/metrics", buf,
	             sizeof(buf));
	assert_http_status(buf, 405);
	/* A query string does not change the path. */
	http_request(fx->d->http_port, "GET", "/healthz?verbose=1", buf,
	             sizeof(buf));
	assert_http_status(buf, 200);
	/* Still serving RESP afterwards. */
	CHECK(fx->c, "+PONG", "PING");
}

/* A fresh daemon: every family there, engine series at zero. */
static void
test_metrics_fresh(void **state)
{
	struct csqd_fx *fx = *state;

	metrics_check(fx->d, "csq_engine_up=1", "csq_waiting_users_all=0",
	              "csq_servicers{status=\"ready\"}=0",
	              "csq_servicers{status=\"paused\"}=0",
	              "csq_rooms{state=\"busy\"}=0",
	              "csq_rooms{state=\"free\"}=0", "csq_enqueued_total=0",
	              "csq_matched_total=0", "csq_wait_seconds_count=0",
	              "csq_connected_clients=1",
	              "csq_output_limit_disconnections_total=0", NULL);
}

static void
test_metrics_scenario(void **state)
{
	struct csqd_fx *fx = *state;
	redisReply *r;

	/* s1 serves default and vip with one room; s2 paused. */
	r = CMD(fx->c, "HEARTBEAT s1 CAPACITY 1 QUEUES default,vip");
	freeReplyObject(r);
	r = CMD(fx->c, "HEARTBEAT s2 QUEUES other");
	freeReplyObject(r);
	CHECK(fx->c, "+OK", "PAUSE s2");
	/* u1 gets s1/0 at once; u2 and u3 wait; u4 comes and goes. */
	r = CMD(fx->c, "ENQUEUE u1");
	assert_string_equal(FIELD_STR(r, "state"), "assigned");
	freeReplyObject(r);
	r = CMD(fx->c, "ENQUEUE u2");
	freeReplyObject(r);
	r = CMD(fx->c, "ENQUEUE u3 QUEUE vip TIER 2");
	freeReplyObject(r);
	r = CMD(fx->c, "ENQUEUE u4 QUEUE brief");
	freeReplyObject(r);
	CHECK(fx->c, ":1", "LEAVE u4");
	/* Errors: a bad id, an unknown servicer, an unknown command. */
	CHECK(fx->c, "-ERR invalid user id", "ENQUEUE %s", "bad!id");
	CHECK(fx->c, "-NOTFOUND no such servicer or room", "PAUSE nobody");
	CHECK(fx->c, "-ERR unknown command 'FROBNICATE'", "FROBNICATE");
	/* Every family documented in operations.md with its type, and
	 * nothing documented that is not exported. */
	metrics_check(
	    fx->d, "--doc=" CSQ_OPERATIONS_DOC, "--outcomes", "csq_engine_up=1",
	    "csq_waiting_users{queue=\"default\"}=1",
	    "csq_waiting_users{queue=\"vip\"}=1",
	    "csq_waiting_users{queue=\"other\"}=0",
	    "csq_waiting_users{queue=\"brief\"}=0", "csq_waiting_users_all=2",
	    "csq_servicers{status=\"ready\"}=1",
	    "csq_servicers{status=\"paused\"}=1", "csq_rooms{state=\"busy\"}=1",
	    "csq_rooms{state=\"free\"}=0", "csq_enqueued_total=4",
	    "csq_matched_total=1", "csq_abandoned_total=1",
	    "csq_requeued_total=0", "csq_servicers_lost_total=0",
	    "csq_wait_seconds_count=1", "csq_wait_seconds_bucket{le=\"1\"}=1",
	    "csq_connected_clients=1",
	    "csq_output_limit_disconnections_total=0",
	    "csq_commands_total{command=\"enqueue\"}=5",
	    "csq_command_errors_total{command=\"enqueue\"}=1",
	    "csq_commands_total{command=\"heartbeat\"}=2",
	    "csq_command_errors_total{command=\"heartbeat\"}=0",
	    "csq_commands_total{command=\"pause\"}=2",
	    "csq_command_errors_total{command=\"pause\"}=1",
	    "csq_commands_total{command=\"unknown\"}=1",
	    "csq_command_errors_total{command=\"unknown\"}=1",
	    "csq_command_duration_seconds_count{command=\"enqueue\"}=5",
	    "csq_command_duration_seconds_bucket{command=\"enqueue\","
	    "le=\"+Inf\"}=5",
	    NULL);
	/* The empty queue nobody serves was forgotten by that scrape. */
	metrics_check(fx->d, "!csq_waiting_users{queue=\"brief\"}",
	              "csq_waiting_users{queue=\"other\"}=0", NULL);
	/* A logout puts u1 back in line, at its old place. */
	CHECK(fx->c, ":1", "LOGOUT s1");
	metrics_check(fx->d, "csq_requeued_total=1",
	              "csq_waiting_users{queue=\"default\"}=2",
	              "csq_servicers{status=\"ready\"}=0",
	              "csq_rooms{state=\"busy\"}=0", NULL);
}

/* The wait histogram puts a user who waited over a second above le=1. */
/* The same with all clients' input capped at 1 MiB. */
static int
setup_input_cap(void **state)
{
	struct csqd_fx *fx = calloc(1, sizeof(*fx));

	*state = fx;
	fx->d = csqd_start_http("max_input_memory = 1048576;");
	fx->c = csqd_connect(fx->d);
	return 0;
}

/*
 * A client sends half a MiB of a 4 MiB ECHO: csq_input_bytes shows it
 * held. Then 1 MiB more: all input is over max_input_memory, the client
 * is closed, which the counter shows, and nothing is held any more.
 */
static void
test_metrics_input_closed(void **state)
{
	struct csqd_fx *fx = *state;
	static char fill[CAP_ECHO];
	int fd = raw_connect(fx->d->port);

	memset(fill, 'y', sizeof(fill));
	raw_sends(fd, "*2\r\n$4\r\nECHO\r\n$4194304\r\n");
	raw_send(fd, fill, sizeof(fill));
	metrics_wait(fx->d, "csq_input_bytes>=524288",
	             "csq_input_limit_disconnections_total=0", NULL);
	raw_send(fd, fill, sizeof(fill));
	raw_send(fd, fill, sizeof(fill));
	csqd_wait_log(fx->d, "max_input_memory (1048576 bytes)");
	metrics_wait(fx->d, "csq_input_limit_disconnections_total=1",
	             "csq_input_bytes=0", "csq_connected_clients=1", NULL);
	close(fd);
	CHECK(fx->c, "+PONG", "PING");
}

static void
test_metrics_wait_histogram(void **state)
{
	struct csqd_fx *fx = *state;
	redisReply *r;

	r = CMD(fx->c, "ENQUEUE slow");
	freeReplyObject(r);
	sleep_ms(1100); /* real time to pass: a wait over 1 s, for its bucket */
	r = CMD(fx->c, "HEARTBEAT s1");
	assert_int_equal(FIELD_INT(r, "active"), 1);
	freeReplyObject(r);
	metrics_check(fx->d, "csq_wait_seconds_count=1",
	              "csq_wait_seconds_bucket{le=\"1\"}=0",
	              "csq_wait_seconds_bucket{le=\"5\"}=1",
	              "csq_wait_seconds_sum>=1.1", "csq_matched_total=1", NULL);
}

/* Polls WHERE user until its state is want; fails after 5 s. */
static void
where_wait(redisContext *c, const char *user, const char *want)
{
	int64_t deadline = now_ms() + 10000;
	redisReply *r;
	int done;

	for (;;) {
		r = CMD(c, "WHERE %s", user);
		done = strcmp(FIELD_STR(r, "state"), want) == 0;
		freeReplyObject(r);
		if (done)
			return;
		if (now_ms() > deadline)
			fail_msg("%s not %s within 10 s", user, want);
		sleep_ms(50);
	}
}

/*
 * A servicer lost with a user in its room: the loss and the requeue are
 * counted, the user waits again; the next servicer takes both waiting
 * users, and each match moves the wait histogram.
 */
static void
test_metrics_lost_servicer(void **state)
{
	struct csqd_fx *fx = *state;
	redisReply *r;

	/* TTL 3: the first scrape (a python3 that imports
	 * prometheus_client) must come before the loss, even on a loaded
	 * machine. */
	r = CMD(fx->c, "HEARTBEAT s1 TTL 3");
	freeReplyObject(r);
	r = CMD(fx->c, "ENQUEUE u1");
	assert_string_equal(FIELD_STR(r, "state"), "assigned");
	freeReplyObject(r);
	r = CMD(fx->c, "ENQUEUE u2");
	assert_string_equal(FIELD_STR(r, "state"), "waiting");
	freeReplyObject(r);
	metrics_check(fx->d, "csq_matched_total=1", "csq_wait_seconds_count=1",
	              "csq_rooms{state=\"busy\"}=1",
	              "csq_servicers_lost_total=0", NULL);
	where_wait(fx->c, "u1", "waiting");
	metrics_check(
	    fx->d, "csq_servicers_lost_total=1", "csq_requeued_total=1",
	    "csq_servicers{status=\"ready\"}=0", "csq_rooms{state=\"busy\"}=0",
	    "csq_waiting_users{queue=\"default\"}=2", "csq_waiting_users_all=2",
	    "csq_enqueued_total=2", "csq_matched_total=1",
	    "csq_wait_seconds_count=1", NULL);
	r = CMD(fx->c, "HEARTBEAT s2 CAPACITY 3");
	assert_int_equal(FIELD_INT(r, "active"), 2);
	freeReplyObject(r);
	metrics_check(
	    fx->d, "csq_matched_total=3", "csq_wait_seconds_count=3",
	    "csq_wait_seconds_bucket{le=\"+Inf\"}=3",
	    "csq_rooms{state=\"busy\"}=2", "csq_rooms{state=\"free\"}=1",
	    "csq_waiting_users{queue=\"default\"}=0",
	    "csq_servicers{status=\"ready\"}=1", "csq_servicers_lost_total=1",
	    "csq_requeued_total=1", NULL);
}

/*
 * A queue a servicer names is kept in csq_waiting_users while empty, but
 * only while a servicer that names it is up. The mark used to stay for
 * good: 40 servicers of 32 queues each that came and went left 1,000
 * empty series, the most csqd keeps, and a queue with a waiting user had
 * none (an audit found it; this test fails on that code).
 */
#define SERVED_SERVICERS 40
#define SERVED_QUEUES    32

static void
test_metrics_served_queues(void **state)
{
	struct csqd_fx *fx = *state;
	char cmd[SERVED_QUEUES * 16 + 64];
	int i, k, n;

	freeReplyObject(CMD(fx->c, "HEARTBEAT s1 QUEUES qa,qb"));
	freeReplyObject(CMD(fx->c, "HEARTBEAT s2 QUEUES qb,qc"));
	metrics_wait(fx->d, "csq_waiting_users{queue=\"qa\"}=0",
	             "csq_waiting_users{queue=\"qb\"}=0",
	             "csq_waiting_users{queue=\"qc\"}=0", NULL);
	freeReplyObject(CMD(fx->c, "LOGOUT s1"));
	metrics_wait(fx->d, "!csq_waiting_users{queue=\"qa\"}",
	             "csq_waiting_users{queue=\"qb\"}=0",
	             "csq_waiting_users{queue=\"qc\"}=0", NULL);
	/* Lost, not logged out: the same. */
	freeReplyObject(CMD(fx->c, "HEARTBEAT s2 TTL 1"));
	metrics_wait(fx->d, "!csq_waiting_users{queue=\"qb\"}",
	             "!csq_waiting_users{queue=\"qc\"}",
	             "csq_servicers_lost_total=1", NULL);

	for (i = 0; i < SERVED_SERVICERS; i++) {
		n = snprintf(cmd, sizeof(cmd), "HEARTBEAT m%d QUEUES ", i);
		for (k = 0; k < SERVED_QUEUES; k++)
			n += snprintf(cmd + n, sizeof(cmd) - (size_t)n,
			              "%sq%d-%d", k ? "," : "", i, k);
		freeReplyObject(CMD(fx->c, "%s", cmd));
	}
	for (i = 0; i < SERVED_SERVICERS; i++)
		freeReplyObject(CMD(fx->c, "LOGOUT m%d", i));
	metrics_wait(fx->d, "!csq_waiting_users{queue=\"q0-0\"}",
	             "!csq_waiting_users{queue=\"q30-0\"}", NULL);
	freeReplyObject(CMD(fx->c, "ENQUEUE u1 QUEUE support"));
	metrics_wait(fx->d, "csq_waiting_users{queue=\"support\"}=1",
	             "csq_waiting_users_all=1", NULL);
}

/*
 * Per-queue series (issue 26) under a cap of 3 labels: vip, a and b have
 * their own, c and d (noted after) are summed under queue="_other". Every
 * queue's histogram has a bucket at vip's service level (7 s). The Redis
 * engine has the same numbers per queue, but not the policies yet: vip's
 * service level is the default there (20 s).
 */
static int
setup_queue_cap(void **state)
{
	struct csqd_fx *fx = calloc(1, sizeof(*fx));

	*state = fx;
	fx->d = csqd_start_http(
	    strcmp(csqd_engine(), "memory") == 0
	        ? "metrics_max_queues = 3;\n"
	          "queues = ( { name = \"vip\"; service_level = 7; } );\n"
	        : "metrics_max_queues = 3;\n");
	fx->c = csqd_connect(fx->d);
	return 0;
}

static void
test_metrics_queue_cap(void **state)
{
	struct csqd_fx *fx = *state;
	const char *q[] = {"vip", "a", "b", "c"};
	size_t i;

	freeReplyObject(CMD(fx->c, "HEARTBEAT s1 CAPACITY 4 QUEUES vip,a,b,c"));
	for (i = 0; i < 4; i++)
		freeReplyObject(
		    CMD(fx->c, "ENQUEUE x%d QUEUE %s", (int)i, q[i]));
	freeReplyObject(CMD(fx->c, "ENQUEUE y1 QUEUE d"));
	freeReplyObject(CMD(fx->c, "ENQUEUE y2 QUEUE d"));
	CHECK(fx->c, ":1", "LEAVE y2");
	metrics_check(fx->d, "--doc=" CSQ_OPERATIONS_DOC,
	              "csq_waiting_users{queue=\"vip\"}=0",
	              "csq_waiting_users{queue=\"a\"}=0",
	              "!csq_waiting_users{queue=\"c\"}",
	              "!csq_waiting_users{queue=\"d\"}",
	              "csq_queue_wait_seconds_count{queue=\"vip\"}=1",
	              "csq_queue_wait_seconds_count{queue=\"b\"}=1",
	              "csq_queue_wait_seconds_count{queue=\"_other\"}=1",
	              "!csq_queue_wait_seconds_count{queue=\"c\"}", NULL);
	/* The same numbers on both engines; vip's service level is a
	 * policy's, which the Redis engine does not have yet. */
	if (strcmp(csqd_engine(), "memory") != 0)
		metrics_check(
		    fx->d,
		    "csq_queue_wait_seconds_bucket{queue=\"vip\",le=\"20\"}=1",
		    "csq_queue_service_level_seconds{queue=\"vip\"}=20",
		    "!csq_queue_wait_seconds_bucket{queue=\"vip\",le=\"7\"}",
		    NULL);
	else
		metrics_check(
		    fx->d,
		    "csq_queue_wait_seconds_bucket{queue=\"vip\",le=\"7\"}=1",
		    "csq_queue_wait_seconds_bucket{queue=\"_other\",le=\"7\"}="
		    "1",
		    "csq_queue_service_level_seconds{queue=\"vip\"}=7", NULL);
	metrics_check(
	    fx->d, "--outcomes", "csq_waiting_users{queue=\"_other\"}=1",
	    "csq_waiting_users_all=1",
	    "csq_queue_wait_seconds_bucket{queue=\"a\",le=\"20\"}=1",
	    "csq_queue_matched_total{queue=\"vip\"}=1",
	    "csq_queue_matched_total{queue=\"_other\"}=1",
	    "csq_queue_abandoned_total{queue=\"_other\",reason=\"leave\"}=1",
	    "csq_queue_abandoned_total{queue=\"_other\",reason=\"timeout\"}=0",
	    "csq_queue_overflowed_total{queue=\"vip\"}=0",
	    "csq_queue_service_level_seconds{queue=\"a\"}=20",
	    "!csq_queue_service_level_seconds{queue=\"_other\"}",
	    "csq_queue_service_level_ratio{queue=\"vip\"}=1",
	    /* c's match within, d's abandon: one of two. */
	    "csq_queue_service_level_ratio{queue=\"_other\"}=0.5",
	    "csq_queue_oldest_wait_seconds{queue=\"_other\"}>=0",
	    "csq_build_info{version=\"" CSQ_TEST_VERSION "\"}=1", NULL);
}

/* csq_connected_clients follows connections as they come and go. */
static void
test_metrics_clients(void **state)
{
	struct csqd_fx *fx = *state;
	redisContext *c2, *c3;

	c2 = csqd_connect(fx->d);
	c3 = csqd_connect(fx->d);
	CHECK(c2, "+PONG", "PING");
	CHECK(c3, "+PONG", "PING");
	metrics_check(fx->d, "csq_connected_clients=3", NULL);
	redisFree(c2);
	redisFree(c3);
	metrics_wait(fx->d, "csq_connected_clients=1", NULL);
}

/* A port taken: csqd refuses to start rather than run without it. */
static void
test_http_port_taken(void **state)
{
	struct csqd_fx *fx = *state;
	char conf[512], path[600], out[4096];
	int rc;

	snprintf(conf, sizeof(conf),
	         "listen = [ \"unix:%s/taken.sock\" ];\n"
	         "http: { listen = \"127.0.0.1:%d\"; };\n",
	         fx->d->dir, fx->d->http_port);
	snprintf(path, sizeof(path), "%s/taken.conf", fx->d->dir);
	write_file(path, conf);
	rc = csqd_run(out, sizeof(out), "-c", path, NULL);
	assert_int_equal(rc, 1);
	assert_non_null(strstr(out, "cannot listen on http"));
}

/*
 * csqd out of file descriptors (its RLIMIT_NOFILE lowered under it) while
 * scrapers connect to HTTP. evhttp's own listener had no error callback:
 * its accept() failed and was retried at once, for good, at 100 % of a
 * core with a line of libevent's each time (by hand: 140,000 to 190,000
 * lines a second), until a descriptor was freed. It now pauses as the RESP
 * listeners do: one line, and the CPU of a process that sleeps.
 */
#define HTTP_FD_EXTRA 10

static void
test_http_out_of_descriptors(void **state)
{
	struct csqd_fx *fx = *state;
	char buf[HTTP_REPLY_MAX];
	int fds[HTTP_FD_EXTRA], i, lines;
	struct rlimit was;
	long long t0, t1;

	csqd_limit_fds(fx->d, fx->c, 0, &was);
	for (i = 0; i < HTTP_FD_EXTRA; i++)
		fds[i] = raw_connect(fx->d->http_port);
	csqd_wait_log(fx->d, "Too many open files");
	t0 = proc_cpu_ticks(fx->d->pid);
	sleep_ms(1500);
	t1 = proc_cpu_ticks(fx->d->pid);
	lines = count_in_file(fx->d->log_path, "accept on http");
	print_message("http out of descriptors: %d log lines, %lld of %ld "
	              "ticks of CPU in 1.5 s\n",
	              lines, t1 - t0, 3 * sysconf(_SC_CLK_TCK) / 2);
	if (lines != 1)
		csqd_dump_log(fx->d);
	assert_int_equal(lines, 1);
	assert_true(t0 >= 0 && t1 - t0 < sysconf(_SC_CLK_TCK) / 2);
	assert_true(
	    file_contains(fx->d->log_path, "accept on http 127.0.0.1:"));
	CHECK(fx->c, "+PONG", "PING");
	assert_int_equal(prlimit(fx->d->pid, RLIMIT_NOFILE, &was, NULL), 0);
	for (i = 0; i < HTTP_FD_EXTRA; i++)
		close(fds[i]);
	/* Served again once descriptors are back. */
	http_request(fx->d->http_port, "GET", "/healthz", buf, sizeof(buf));
	assert_http_status(buf, 200);
}

/* Polls GET path until its status is code; fails after 10 s. */
static void
wait_http_status(int port, const char *path, int code)
{
	char buf[HTTP_REPLY_MAX], want[32];
	int64_t deadline = now_ms() + 10000;

	snprintf(want, sizeof(want), " %d ", code);
	for (;;) {
		http_request(port, "GET", path, buf, sizeof(buf));
		if (strncmp(buf + 8, want, strlen(want)) == 0)
			return;
		if (now_ms() > deadline)
			fail_at(__FILE__, __LINE__, "%s: no %d, last:\n%s",
			        path, code, buf);
		sleep_ms(50);
	}
}

/* How many lines of the daemon's log hold text. */
static int
log_lines_with(struct csqd *d, const char *text)
{
	char line[4096];
	FILE *f;
	int n = 0;

	if ((f = fopen(d->log_path, "r")) == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		n += strstr(line, text) != NULL;
	fclose(f);
	return n;
}

/*
 * The Redis engine can be down: /healthz says 503 while redis-server is
 * stopped, /metrics says csq_engine_up 0 and leaves the engine's series
 * out, and both recover when it is back, without a restart of csqd. The
 * log says "down" once and "up" once, however many reconnection attempts
 * the outage took (backing off from 100 ms, several in 2 s).
 */
static void
test_healthz_engine_down(void **state)
{
	struct csqd_fx *fx = *state;
	struct redisd *r = redisd_shared_server();
	char buf[HTTP_REPLY_MAX];
	redisReply *rep;

	if (strcmp(csqd_engine(), "redis") != 0 || r == NULL)
		skip(); /* the memory engine is always up */
	rep = CMD(fx->c, "ENQUEUE before-outage");
	freeReplyObject(rep);
	wait_http_status(fx->d->http_port, "/healthz", 200);
	assert_int_equal(log_lines_with(fx->d, "engine redis: up addr="), 1);
	assert_int_equal(log_lines_with(fx->d, "engine redis: down"), 0);
	assert_int_equal(redisd_stop(r), 0);
	wait_http_status(fx->d->http_port, "/healthz", 503);
	http_request(fx->d->http_port, "GET", "/healthz", buf, sizeof(buf));
	assert_string_equal(http_body(buf), "engine down\n");
	metrics_check(fx->d, "csq_engine_up=0", "!csq_waiting_users_all", NULL);
	CHECK(fx->c, "-TRYAGAIN engine unavailable, nothing was changed",
	      "WHERE before-outage");
	sleep_ms(OUTAGE_MS);
	redisd_restart(r);
	wait_http_status(fx->d->http_port, "/healthz", 200);
	metrics_check(fx->d, "csq_engine_up=1", "csq_waiting_users_all=1",
	              NULL);
	if (log_lines_with(fx->d, "engine redis: down") != 1 ||
	    log_lines_with(fx->d, "engine redis: up addr=") != 2 ||
	    log_lines_with(fx->d, "engine redis: ") > OUTAGE_LINES_MAX) {
		csqd_dump_log(fx->d);
		fail_msg("not one line for down and one for up");
	}
}

#define JOURNAL_PAD 3000 /* TOUCHes: a journal larger than the log */

/* The journal of test_journal_health, in a directory of its own. */
static char journal_dir[64], journal_path[128];

static int
setup_journal(void **state)
{
	struct csqd_fx *fx = calloc(1, sizeof(*fx));
	char conf[256];

	snprintf(journal_dir, sizeof(journal_dir), "/tmp/csq-health-XXXXXX");
	assert_non_null(mkdtemp(journal_dir));
	snprintf(journal_path, sizeof(journal_path), "%s/csqd.journal",
	         journal_dir);
	snprintf(conf, sizeof(conf),
	         "memory: { journal = \"%s\"; fsync = \"everysec\"; };",
	         journal_path);
	*state = fx;
	fx->d = csqd_start_http(conf);
	fx->c = csqd_connect(fx->d);
	return 0;
}

static int
teardown_journal(void **state)
{
	int rc = csqd_fx_teardown(state);

	unlink(journal_path);
	rmdir(journal_dir);
	return rc;
}

/* The journal's size on disk now. */
static rlim_t
journal_size(void)
{
	struct stat st;

	assert_int_equal(stat(journal_path, &st), 0);
	return (rlim_t)st.st_size;
}

/*
 * Heartbeats naming 32 long queues, pipelined, until the journal has
 * compacted (about 16 MiB of records).
 */
static void
journal_compact_now(struct csqd *d, redisContext *c)
{
	char queues[32 * 66 + 1];
	redisReply *r;
	size_t off = 0;
	int i, q, n = 9000;

	for (q = 0; q < 32; q++)
		off += (size_t)snprintf(queues + off, sizeof(queues) - off,
		                        "%sq%02d-%060d", q ? "," : "", q, 0);
	for (i = 0; i < n; i++)
		redisAppendCommand(c, "HEARTBEAT big TTL 600 QUEUES %s",
		                   queues);
	for (i = 0; i < n; i++) {
		assert_int_equal(redisGetReply(c, (void **)&r), REDIS_OK);
		assert_int_not_equal(r->type, REDIS_REPLY_ERROR);
		freeReplyObject(r);
	}
	csqd_wait_log(d, "compacted");
}

/*
 * A full disk, simulated by the file size limit: csqd's RLIMIT_FSIZE at
 * the journal's size makes every write of a record fail (EFBIG, as
 * ENOSPC would). ENQUEUE answers TRYAGAIN and changes nothing; /healthz
 * answers 503 with the reason, /metrics counts the failed write; once
 * the limit is lifted /healthz is 200 again without any command (the
 * journal probes once a second), and changes are written again. Then the
 * fsync histogram, the bytes and a compaction's time. On the Redis
 * engine, which has no journal, the same configuration shows no journal
 * series and /healthz stays 200.
 */
static void
test_journal_health(void **state)
{
	struct csqd_fx *fx = *state;
	char buf[HTTP_REPLY_MAX], since[96];
	struct rlimit was, full;
	redisReply *r;
	int i;

	r = CMD(fx->c, "ENQUEUE u1");
	assert_string_equal(FIELD_STR(r, "state"), "waiting");
	freeReplyObject(r);
	http_request(fx->d->http_port, "GET", "/healthz", buf, sizeof(buf));
	assert_http_status(buf, 200);
	if (strcmp(csqd_engine(), "memory") != 0) {
		metrics_check(fx->d, "!csq_journal_write_errors_total",
		              "!csq_journal_fsync_seconds_count", NULL);
		return;
	}
	metrics_check(fx->d, "--journal", "csq_journal_write_errors_total=0",
	              "csq_journal_written_bytes_total>=1",
	              "csq_journal_last_compaction_timestamp_seconds=0", NULL);
	/* The limit holds for csqd's log too: the journal is made larger
	 * than the log will be, so that only the journal is full. */
	for (i = 0; i < JOURNAL_PAD; i++)
		redisAppendCommand(fx->c, "TOUCH u1 TTL %d", 100 + i);
	for (i = 0; i < JOURNAL_PAD; i++) {
		assert_int_equal(redisGetReply(fx->c, (void **)&r), REDIS_OK);
		freeReplyObject(r);
	}
	assert_int_equal(prlimit(fx->d->pid, RLIMIT_FSIZE, NULL, &was), 0);
	full.rlim_cur = journal_size();
	assert_true(full.rlim_cur > 64 * 1024);
	full.rlim_max = was.rlim_max;
	assert_int_equal(prlimit(fx->d->pid, RLIMIT_FSIZE, &full, NULL), 0);
	CHECK(fx->c, "-TRYAGAIN engine unavailable, nothing was changed",
	      "ENQUEUE u2");
	CHECK(fx->c, "['state','none']", "WHERE u2");
	http_request(fx->d->http_port, "GET", "/healthz", buf, sizeof(buf));
	assert_http_status(buf, 503);
	assert_string_equal(http_body(buf),
	                    "journal not writable: write: File too large\n");
	metrics_check(fx->d, "--journal", "csq_journal_write_errors_total=1",
	              NULL);
	/* The probe keeps finding the disk full. */
	sleep_ms(1500);
	http_request(fx->d->http_port, "GET", "/healthz", buf, sizeof(buf));
	assert_http_status(buf, 503);
	assert_int_equal(journal_size(), full.rlim_cur);
	assert_int_equal(prlimit(fx->d->pid, RLIMIT_FSIZE, &was, NULL), 0);
	wait_http_status(fx->d->http_port, "/healthz", 200);
	if (log_lines_with(fx->d, "write: File too large; changes answer "
	                          "TRYAGAIN") != 1 ||
	    log_lines_with(fx->d, "writable again") != 1) {
		csqd_dump_log(fx->d);
		fail_msg("not one line for the failure and one for the end");
	}
	r = CMD(fx->c, "ENQUEUE u2");
	assert_string_equal(FIELD_STR(r, "state"), "waiting");
	freeReplyObject(r);
	assert_true(journal_size() > full.rlim_cur);
	metrics_wait(fx->d, "--journal", "csq_journal_write_errors_total=1",
	             "csq_journal_fsync_seconds_count>=1", NULL);
	journal_compact_now(fx->d, fx->c);
	snprintf(since, sizeof(since),
	         "csq_journal_last_compaction_timestamp_seconds>=%lld",
	         (long long)(now_ms() / 1000 - 60));
	metrics_check(fx->d, "--journal", "--doc=" CSQ_OPERATIONS_DOC, since,
	              "csq_journal_written_bytes_total>=16000000", NULL);
}

/*
 * 1 when Python can import prometheus_client's parser. Without it the
 * whole program skips (77), visibly to ctest, rather than half its tests
 * passing without a check.
 */
static int
have_parser(void)
{
	int status;
	pid_t pid;

	if (access(CSQ_PYTHON, X_OK) != 0)
		return 0;
	if ((pid = fork()) == 0) {
		dup2(2, 1);
		execl(CSQ_PYTHON, CSQ_PYTHON, "-c",
		      "import prometheus_client.parser", (char *)NULL);
		_exit(127);
	}
	waitpid(pid, &status, 0);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/*
 * Routing's counters and the histogram of offer to ACCEPT (protocol-v2
 * sections 1, 1a), on both engines: zero at first; then an offer accepted
 * after 300 ms, one declined, a transfer. The accept is in the bucket of
 * 5 s, not 1 s: its 300 ms are at least 300 ms (the sum says so) but a
 * loaded machine may make them more than 1 s.
 */
static void
test_metrics_routing(void **state)
{
	struct csqd_fx *fx = *state;

	metrics_check(fx->d, "csq_offers_total=0",
	              "csq_offers_declined_total=0",
	              "csq_offers_missed_total=0", "csq_transferred_total=0",
	              "csq_offer_accept_seconds_count=0", NULL);
	freeReplyObject(CMD(fx->c, "HEARTBEAT s CAPACITY 2 OFFER 30"));
	freeReplyObject(CMD(fx->c, "ENQUEUE u1"));
	freeReplyObject(CMD(fx->c, "ENQUEUE u2"));
	CHECK(fx->c, ":1", "DECLINE s/1");
	sleep_ms(300); /* real time to pass: the accept's seconds count it */
	CHECK(fx->c, ":1", "ACCEPT s/0");
	freeReplyObject(CMD(fx->c, "TRANSFER s/0 other"));
	metrics_check(fx->d, "--doc=" CSQ_OPERATIONS_DOC, "csq_offers_total=2",
	              "csq_offers_declined_total=1",
	              "csq_offers_missed_total=0", "csq_transferred_total=1",
	              "csq_matched_total=1", "csq_offer_accept_seconds_count=1",
	              "csq_offer_accept_seconds_bucket{le=\"5\"}=1",
	              "csq_offer_accept_seconds_sum>=0.3",
	              "csq_rooms{state=\"busy\"}=0", NULL);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_healthz, setup,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_other_paths_and_methods, setup,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_metrics_fresh, setup,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_metrics_scenario, setup,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_metrics_output_closed,
	                                    setup_output_cap, csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_metrics_input_closed,
	                                    setup_input_cap, csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_metrics_wait_histogram, setup,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_metrics_routing, setup,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_metrics_lost_servicer, setup,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_metrics_clients, setup,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_metrics_served_queues, setup,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_metrics_queue_cap,
	                                    setup_queue_cap, csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_http_port_taken, setup,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_healthz_engine_down, setup,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_http_out_of_descriptors, setup,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(test_journal_health, setup_journal,
	                                    teardown_journal),
	};

	if (!have_parser()) {
		fprintf(stderr,
		        "%s: needs %s with prometheus_client "
		        "(python3-prometheus-client); exit 77 (skip)\n",
		        argv[0], CSQ_PYTHON);
		return SKIP_STATUS;
	}
	csqd_init(argc, argv);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
