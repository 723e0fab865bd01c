/*
 * sd_notify: a fake service manager. The test binds a Unix datagram socket,
 * points NOTIFY_SOCKET (and WATCHDOG_USEC) at it for the daemon it starts,
 * and reads what csqd tells: READY=1 once it serves, RELOADING=1 then
 * READY=1 around SIGHUP, STOPPING=1 at SIGTERM, WATCHDOG=1 at half the
 * watchdog interval. Skipped when csqd is built without libsystemd.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define DGRAM_MAX   4096
#define WAIT_MS     5000
#define WATCHDOG_US 200000 /* csqd pings every 100 ms */

struct fake_manager {
	int fd;
	char path[108];
};

static void
manager_open(struct fake_manager *m)
{
	struct sockaddr_un sun;

	snprintf(m->path, sizeof(m->path), "/tmp/csqd-notify.%ld",
	         (long)getpid());
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
 * timeout_ms. Every datagram read is appended to log (for messages).
 */
static int
manager_wait(struct fake_manager *m, const char *want, int timeout_ms,
             char *log, size_t loglen)
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
		if (strstr(buf, line) != NULL)
			return 1;
	}
	return 0;
}

static void
expect_message(struct fake_manager *m, struct csqd *d, const char *want)
{
	char log[8192] = "";

	if (!manager_wait(m, want, WAIT_MS, log, sizeof(log))) {
		csqd_dump_log(d);
		fail_at(__FILE__, __LINE__, "no %s; got:%s", want, log);
	}
}

static void
test_ready_reload_stopping(void **state)
{
	struct fake_manager m;
	struct csqd *d;
	char log[8192] = "";

	(void)state;
	manager_open(&m);
	d = csqd_start(NULL);
	unsetenv("NOTIFY_SOCKET");
	/* READY=1 comes with a STATUS for systemctl status. */
	assert_true(manager_wait(&m, "READY=1", WAIT_MS, log, sizeof(log)));
	assert_non_null(strstr(log, "STATUS=serving"));
	/* A reload, valid or not, begins with RELOADING=1 and ends ready. */
	kill(d->pid, SIGHUP);
	expect_message(&m, d, "RELOADING=1");
	expect_message(&m, d, "READY=1");
	csqd_rewrite_conf(d, "max_tier = 99;\n"); /* out of range */
	kill(d->pid, SIGHUP);
	expect_message(&m, d, "RELOADING=1");
	expect_message(&m, d, "READY=1");
	assert_int_equal(csqd_stop(d), 0);
	expect_message(&m, d, "STOPPING=1");
	manager_close(&m);
}

static void
test_watchdog(void **state)
{
	struct fake_manager m;
	struct csqd *d;
	char env[32];
	int64_t t0;
	int i;

	(void)state;
	manager_open(&m);
	snprintf(env, sizeof(env), "%d", WATCHDOG_US);
	setenv("WATCHDOG_USEC", env, 1);
	d = csqd_start(NULL);
	unsetenv("NOTIFY_SOCKET");
	unsetenv("WATCHDOG_USEC");
	expect_message(&m, d, "READY=1");
	/* Five pings at 100 ms intervals: well under a second. */
	t0 = now_ms();
	for (i = 0; i < 5; i++)
		expect_message(&m, d, "WATCHDOG=1");
	assert_true(now_ms() - t0 < 2000);
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
	expect_message(&m, d, "READY=1");
	assert_false(manager_wait(&m, "WATCHDOG=1", 500, NULL, 0));
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
