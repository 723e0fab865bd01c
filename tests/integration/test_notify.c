/*
 * sd_notify: a fake service manager. The test binds a Unix datagram socket,
 * points NOTIFY_SOCKET (and WATCHDOG_USEC) at it for the daemon it starts,
 * and reads what csqd tells: READY=1 and a STATUS once it serves,
 * RELOADING=1 (with MONOTONIC_USEC) then READY=1 and a STATUS saying how
 * it went around SIGHUP, STOPPING=1 at SIGTERM, WATCHDOG=1 at half the
 * watchdog interval and only while the event loop turns. Skipped (77) when
 * csqd is built without libsystemd.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define DGRAM_MAX      4096
#define WAIT_MS        5000
#define WATCHDOG_US    400000 /* csqd pings every 200 ms */
#define WATCHDOG_PINGS 8

struct fake_manager {
	int fd;
	char path[108];
};

static void
manager_open(struct fake_manager *m)
{
	static int n;
	struct sockaddr_un sun;

	/* A path per test: a daemon left by a failed test pings the old. */
	snprintf(m->path, sizeof(m->path), "/tmp/csqd-notify.%ld.%d",
	         (long)getpid(), n++);
	unlink(m->path);
	m->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	assert_true(m->fd >= 0);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, m->path, strlen(m->path) + 1);
	if (bind(m->fd, (struct sockaddr *)&sun, sizeof(sun)) != 0)
		fail_at(__FILE__, __LINE__, "bind %s: %s", m->path,
		        strerror(errno));
	setenv("NOTIFY_SOCKET", m->path, 1);
}

static void
manager_close(struct fake_manager *m)
{
	unsetenv("NOTIFY_SOCKET");
	unsetenv("WATCHDOG_USEC");
	close(m->fd);
	unlink(m->path);
}

/*
 * Reads datagrams until one holds the line `want`; returns 1, or 0 after
 * timeout_ms. Every datagram read is appended to log (for messages); the
 * one that matched is copied to match, when not NULL, with a '\n' around
 * each line.
 */
static int
manager_wait(struct fake_manager *m, const char *want, int timeout_ms,
             char *log, size_t loglen, char *match, size_t matchlen)
{
	char buf[DGRAM_MAX + 2], line[128];
	int64_t deadline = now_ms() + timeout_ms;
	struct pollfd pfd;
	ssize_t n;
	int left;

	snprintf(line, sizeof(line), "\n%s\n", want);
	while ((left = (int)(deadline - now_ms())) > 0) {
		pfd.fd = m->fd;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, left) <= 0)
			continue;
		n = recv(m->fd, buf + 1, DGRAM_MAX, 0);
		if (n <= 0)
			continue;
		/* Lines are matched whole: "\nREADY=1\n" in "\n...\n". */
		buf[0] = '\n';
		buf[n + 1] = '\0';
		if (buf[n] != '\n')
			strcat(buf, "\n");
		if (log != NULL && strlen(log) + strlen(buf) < loglen)
			strcat(log, buf);
		if (strstr(buf, line) != NULL) {
			if (match != NULL)
				snprintf(match, matchlen, "%s", buf);
			return 1;
		}
	}
	return 0;
}

/* Throws away the datagrams already there. */
static void
manager_drain(struct fake_manager *m)
{
	char buf[DGRAM_MAX];

	while (recv(m->fd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
		;
}

/* Waits for the datagram with the line want (copied to out); fails
 * without it. */
static void
expect_at(const char *file, int line, struct fake_manager *m, struct csqd *d,
          const char *want, char *out, size_t outlen)
{
	char log[8192] = "";

	if (!manager_wait(m, want, WAIT_MS, log, sizeof(log), out, outlen)) {
		csqd_dump_log(d);
		fail_at(file, line, "no %s; got:%s", want, log);
	}
}
#define EXPECT(m, d, want)                                                     \
	expect_at(__FILE__, __LINE__, (m), (d), (want), NULL, 0)
#define EXPECT_DGRAM(m, d, want, out)                                          \
	expect_at(__FILE__, __LINE__, (m), (d), (want), (out), sizeof(out))

/* The datagram has the line `line` ("STATUS=stopping"). */
static void
assert_line_at(const char *file, int line, const char *dgram, const char *want)
{
	char l[256];

	snprintf(l, sizeof(l), "\n%s\n", want);
	if (strstr(dgram, l) == NULL)
		fail_at(file, line, "no line %s in:%s", want, dgram);
}
#define ASSERT_LINE(dgram, want)                                               \
	assert_line_at(__FILE__, __LINE__, (dgram), (want))

static uint64_t
monotonic_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/*
 * SIGHUP; the reload's RELOADING=1 carries MONOTONIC_USEC, the time of
 * the reload (Type=notify-reload of systemd 253 needs it), and ends with
 * READY=1 and the STATUS given.
 */
static void
reload_at(const char *file, int line, struct fake_manager *m, struct csqd *d,
          const char *status)
{
	char dgram[DGRAM_MAX + 2], *p;
	unsigned long long usec;
	uint64_t before, after;

	before = monotonic_us();
	kill(d->pid, SIGHUP);
	expect_at(file, line, m, d, "RELOADING=1", dgram, sizeof(dgram));
	after = monotonic_us();
	assert_line_at(file, line, dgram, "STATUS=reloading the configuration");
	if ((p = strstr(dgram, "\nMONOTONIC_USEC=")) == NULL ||
	    sscanf(p, "\nMONOTONIC_USEC=%llu\n", &usec) != 1)
		fail_at(file, line, "RELOADING=1 without MONOTONIC_USEC:%s",
		        dgram);
	if (usec < before || usec > after)
		fail_at(file, line,
		        "MONOTONIC_USEC=%llu not within [%llu, %llu]", usec,
		        (unsigned long long)before, (unsigned long long)after);
	expect_at(file, line, m, d, "READY=1", dgram, sizeof(dgram));
	assert_line_at(file, line, dgram, status);
}
#define RELOAD(m, d, status) reload_at(__FILE__, __LINE__, (m), (d), (status))

static void
test_ready_reload_stopping(void **state)
{
	struct fake_manager m;
	struct csqd *d;
	redisContext *c;
	char dgram[DGRAM_MAX + 2], status[128];

	(void)state;
	manager_open(&m);
	d = csqd_start(NULL);
	unsetenv("NOTIFY_SOCKET");
	/* READY=1 comes with a STATUS for systemctl status. */
	EXPECT_DGRAM(&m, d, "READY=1", dgram);
	snprintf(status, sizeof(status),
	         "STATUS=serving on 1 address, engine %s", csqd_engine());
	ASSERT_LINE(dgram, status);
	/* A reload, valid or not, begins with RELOADING=1 and ends ready;
	 * the status says how it went. A connection opened before serves
	 * on. */
	c = csqd_connect(d);
	RELOAD(&m, d, "STATUS=serving (configuration reloaded)");
	CHECK(c, "+PONG", "PING");
	csqd_rewrite_conf(d, "max_tier = 99;\n"); /* out of range */
	RELOAD(&m, d,
	       "STATUS=serving (reload failed: invalid configuration, the "
	       "running one kept)");
	CHECK(c, "+PONG", "PING");
	csqd_rewrite_conf(d, "max_tier = 3;\n");
	RELOAD(&m, d, "STATUS=serving (configuration reloaded)");
	CHECK(c, "-ERR value is not an integer or out of range",
	      "ENQUEUE u1 TIER 4");
	redisFree(c);
	/* Nothing more until the stop. */
	assert_false(manager_wait(&m, "READY=1", 200, NULL, 0, NULL, 0));
	assert_int_equal(csqd_stop(d), 0);
	EXPECT_DGRAM(&m, d, "STOPPING=1", dgram);
	ASSERT_LINE(dgram, "STATUS=stopping");
	manager_close(&m);
}

/* Until pid is stopped (state T in /proc/<pid>/stat, after the comm's
 * closing parenthesis): a SIGSTOP takes effect a moment after kill(2). */
static void
wait_stopped(pid_t pid)
{
	int64_t deadline = now_ms() + 10000;
	char path[64], buf[512], *p;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	for (;;) {
		assert_non_null(f = fopen(path, "r"));
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[n] = '\0';
		if ((p = strrchr(buf, ')')) != NULL && p[1] == ' ' &&
		    p[2] == 'T')
			return;
		if (now_ms() > deadline)
			fail_msg("pid %d not stopped: %s", (int)pid, buf);
		sleep_ms(1);
	}
}

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * WATCHDOG_USEC=400000: a ping every 200 ms, half the interval, from the
 * first one on. The period is the median of the gaps between the pings'
 * arrivals, bounded on both sides: pings at the full interval (400 ms) or
 * far more often both fail. Not the mean from the first to the last: the
 * pings wait in the socket while this process is not running, so one late
 * read makes the pings after it arrive at once; a clean-clone CI run read
 * a mean of 147 ms that way (the first ping read about 265 ms late), where
 * one or two gaps short and one long leave the median at the period.
 */
static void
test_watchdog(void **state)
{
	struct fake_manager m;
	struct csqd *d;
	char env[32];
	int64_t t[WATCHDOG_PINGS], gap[WATCHDOG_PINGS - 1], median;
	int i;

	(void)state;
	manager_open(&m);
	snprintf(env, sizeof(env), "%d", WATCHDOG_US);
	setenv("WATCHDOG_USEC", env, 1);
	d = csqd_start(NULL);
	unsetenv("NOTIFY_SOCKET");
	unsetenv("WATCHDOG_USEC");
	EXPECT(&m, d, "READY=1");
	for (i = 0; i < WATCHDOG_PINGS; i++) {
		EXPECT(&m, d, "WATCHDOG=1");
		t[i] = now_ms();
	}
	for (i = 1; i < WATCHDOG_PINGS; i++)
		gap[i - 1] = t[i] - t[i - 1];
	qsort(gap, WATCHDOG_PINGS - 1, sizeof(gap[0]), cmp_i64);
	median = gap[(WATCHDOG_PINGS - 1) / 2];
	if (median < WATCHDOG_US / 2000 * 3 / 4 ||
	    median > WATCHDOG_US / 2000 * 3 / 2)
		fail_msg("a ping every %lld ms (the median gap), want about %d",
		         (long long)median, WATCHDOG_US / 2000);
	/* A stopped loop sends no ping; a running one pings again. */
	kill(d->pid, SIGSTOP);
	wait_stopped(d->pid); /* then a ping sent before is in the socket */
	manager_drain(&m);
	assert_false(manager_wait(&m, "WATCHDOG=1", WATCHDOG_US / 1000, NULL, 0,
	                          NULL, 0));
	kill(d->pid, SIGCONT);
	EXPECT(&m, d, "WATCHDOG=1");
	assert_int_equal(csqd_stop(d), 0);
	manager_close(&m);
}

/* Without WATCHDOG_USEC, no pings. */
static void
test_no_watchdog_by_default(void **state)
{
	struct fake_manager m;
	struct csqd *d;

	(void)state;
	manager_open(&m);
	d = csqd_start(NULL);
	unsetenv("NOTIFY_SOCKET");
	EXPECT(&m, d, "READY=1");
	assert_false(manager_wait(&m, "WATCHDOG=1", 500, NULL, 0, NULL, 0));
	assert_int_equal(csqd_stop(d), 0);
	manager_close(&m);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ready_reload_stopping),
	    cmocka_unit_test(test_watchdog),
	    cmocka_unit_test(test_no_watchdog_by_default),
	};

	csqd_init(argc, argv);
#ifndef CSQ_NOTIFY_BUILT
	fprintf(stderr, "csqd is built without libsystemd: skipped\n");
	return 77;
#endif
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
