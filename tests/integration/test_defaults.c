/*
 * What a team gets on its first day without writing a configuration:
 * scripts/run's (conf/run.conf) keeps the memory engine's state across a
 * SIGTERM and a start, the way an operator stops and starts it; the
 * built-in defaults keep nothing and say so in one warning line at start.
 * A csqd that cannot start says why at error level, with the key to
 * change, and exits 1 (an address taken, a journal it cannot open).
 * The memory engine only: the Redis engine keeps its state in Redis.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "harness.h"

#define NO_JOURNAL_LINE "warning: memory engine without a journal"

/* The text of conf/run.conf, as scripts/run gives it to csqd. */
static char *
run_conf(void)
{
	static char text[4096];
	size_t n;
	FILE *f;

	f = fopen(CSQ_SOURCE_DIR "/conf/run.conf", "r");
	assert_non_null(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	assert_true(n > 0 && n < sizeof(text) - 1);
	text[n] = '\0';
	fclose(f);
	return text;
}

/*
 * STATS' state (not its _total counters, which count since the start)
 * and WHERE of every user, without the fields that grow with the clock.
 */
static void
state_of(redisContext *c, int nusers, char *out, size_t len)
{
	static const char *const kept[] = {"waiting", "servicers", "rooms_busy",
	                                   "rooms_free"};
	char one[256];
	size_t off = 0, i, k;
	redisReply *r;
	int u;

	r = CMD(c, "STATS");
	for (k = 0; k < sizeof(kept) / sizeof(kept[0]); k++)
		off += (size_t)snprintf(
		    out + off, len - off, "%s=%lld ", kept[k],
		    field_int_at(__FILE__, __LINE__, r, kept[k]));
	freeReplyObject(r);
	for (u = 0; u < nusers; u++) {
		r = CMD(c, "WHERE u%d", u);
		for (i = 0; i + 1 < r->elements; i += 2) {
			const char *f = r->element[i]->str;

			if (strcmp(f, "waited_ms") == 0 ||
			    strcmp(f, "since_ms") == 0 ||
			    strcmp(f, "eta_ms") == 0)
				continue;
			reply_repr(r->element[i + 1], one, sizeof(one));
			off += (size_t)snprintf(out + off, len - off, "%s=%s ",
			                        f, one);
		}
		off += (size_t)snprintf(out + off, len - off, "| ");
		freeReplyObject(r);
	}
	r = CMD(c, "SERVICERS");
	for (i = 0; i < r->elements; i++)
		off +=
		    (size_t)snprintf(out + off, len - off, "%s/%s/%lld/%lld ",
		                     r->element[i]->element[0]->str,
		                     r->element[i]->element[1]->str,
		                     r->element[i]->element[2]->integer,
		                     r->element[i]->element[3]->integer);
	freeReplyObject(r);
}

/*
 * scripts/run's configuration, in a directory laid out as a checkout
 * after scripts/run built it (build-run/ exists, csqd runs from the top):
 * users waiting in two queues and two tiers, servicers ready, paused and
 * full, busy rooms; SIGTERM, start again: all of it is there.
 */
static void
run_conf_keeps_state(void **state)
{
	static char before[16384], after[16384];
	char top[] = "/tmp/csq-run-XXXXXX", was[4096], path[128];
	struct csqd *d;
	redisContext *c;
	struct stat sb;
	int u;

	(void)state;
	assert_non_null(getcwd(was, sizeof(was)));
	assert_non_null(mkdtemp(top));
	snprintf(path, sizeof(path), "%s/build-run", top);
	assert_int_equal(mkdir(path, 0700), 0);
	/* csqd inherits it: the journal's relative path starts here. */
	assert_int_equal(chdir(top), 0);

	d = csqd_start(run_conf());
	c = csqd_connect(d);
	freeReplyObject(
	    CMD(c, "HEARTBEAT s1 CAPACITY 2 TTL 600 QUEUES sales,support"));
	freeReplyObject(CMD(c, "HEARTBEAT s2 CAPACITY 3 TTL 600 QUEUES sales"));
	freeReplyObject(CMD(c, "HEARTBEAT s3 CAPACITY 1 TTL 600"));
	for (u = 0; u < 9; u++)
		freeReplyObject(CMD(c, "ENQUEUE u%d QUEUE %s TIER %d TTL 600",
		                    u, u % 2 ? "support" : "sales", u % 3));
	CHECK(c, "+OK", "PAUSE s2");
	freeReplyObject(CMD(c, "ENQUEUE u9 TTL 0"));
	freeReplyObject(CMD(c, "ENQUEUE u10 QUEUE support"));
	state_of(c, 11, before, sizeof(before));
	/* Something of each: waiting users, servicers, busy rooms. */
	assert_non_null(strstr(before, "waiting=5 servicers=3 rooms_busy=6 "));
	assert_non_null(strstr(before, "s2/paused/"));
	redisFree(c);
	assert_int_equal(csqd_stop(d), 0);

	snprintf(path, sizeof(path), "%s/build-run/csqd.journal", top);
	assert_int_equal(stat(path, &sb), 0);

	d = csqd_start(run_conf());
	c = csqd_connect(d);
	state_of(c, 11, after, sizeof(after));
	assert_string_equal(after, before);
	/* A csqd that keeps its state has nothing to warn about. */
	assert_int_equal(count_in_file(d->log_path, NO_JOURNAL_LINE), 0);
	redisFree(c);
	assert_int_equal(csqd_stop(d), 0);

	assert_int_equal(chdir(was), 0);
	unlink(path);
	snprintf(path, sizeof(path), "%s/build-run", top);
	rmdir(path);
	rmdir(top);
}

/* The built-in defaults: one warning line at start, and only one. */
static void
no_journal_warns_once(void **state)
{
	struct csqd *d;
	redisContext *c;

	(void)state;
	d = csqd_start(NULL);
	c = csqd_connect(d);
	CHECK(c, "+PONG", "PING");
	csqd_wait_log(d, NO_JOURNAL_LINE);
	assert_int_equal(count_in_file(d->log_path, NO_JOURNAL_LINE), 1);
	assert_int_equal(
	    count_in_file(d->log_path,
	                  "warning: memory engine without a journal "
	                  "(memory.journal is \"\"): a restart loses every "
	                  "user, servicer and room; set memory.journal to "
	                  "keep them\n"),
	    1);
	/* A reload is not a start: no second line. */
	assert_int_equal(kill(d->pid, SIGHUP), 0);
	csqd_wait_log(d, "configuration reloaded");
	CHECK(c, "+PONG", "PING");
	assert_int_equal(count_in_file(d->log_path, NO_JOURNAL_LINE), 1);
	redisFree(c);
	assert_int_equal(csqd_stop(d), 0);
}

/* A socket listening on a free port of 127.0.0.1, held by the test. */
static int
taken_port(int *port)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	int fd;

	fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(listen(fd, 1), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
	*port = ntohs(sin.sin_port);
	return fd;
}

/*
 * Runs csqd on conf (a file in dir) and expects exit 1 and want as an
 * error line of its own, with no warning line: an error that stops csqd
 * is an error (journalctl -p err shows it), not a warning before an exit.
 */
static void
start_fails(const char *dir, const char *conf, const char *want)
{
	char path[128], out[8192], line[1024];
	const char *at;
	int rc;

	snprintf(path, sizeof(path), "%s/fail.conf", dir);
	write_file(path, conf);
	rc = csqd_run(out, sizeof(out), "-c", path, NULL);
	if (rc != 1 || (at = strstr(out, want)) == NULL)
		fail_msg("csqd -c with\n%sexited %d, output:\n%s\nwanted: %s",
		         conf, rc, out, want);
	/* The line's level is error. */
	snprintf(line, sizeof(line), " error: %s", want);
	assert_non_null(strstr(out, line));
	assert_null(strstr(out, " warning: "));
	unlink(path);
}

/* An address taken (RESP, HTTP) and a journal that cannot be opened. */
static void
start_errors(void **state)
{
	char dir[] = "/tmp/csq-fail-XXXXXX", conf[512], want[512];
	int fd, port;

	(void)state;
	assert_non_null(mkdtemp(dir));
	fd = taken_port(&port);

	snprintf(conf, sizeof(conf),
	         "listen = [ \"127.0.0.1:%d\" ];\nhttp: { listen = \"\"; };\n"
	         "memory: { journal = \"%s/j\"; };\n",
	         port, dir);
	snprintf(want, sizeof(want),
	         "cannot listen on 127.0.0.1:%d: Address already in use; not "
	         "starting: free the address or change listen\n",
	         port);
	start_fails(dir, conf, want);

	snprintf(conf, sizeof(conf),
	         "listen = [ \"unix:%s/s.sock\" ];\n"
	         "http: { listen = \"127.0.0.1:%d\"; };\n"
	         "memory: { journal = \"%s/j\"; };\n",
	         dir, port, dir);
	snprintf(want, sizeof(want),
	         "cannot listen on http 127.0.0.1:%d: Address already in use; "
	         "not starting: free the address or change http.listen (\"\" "
	         "turns HTTP off)\n",
	         port);
	start_fails(dir, conf, want);
	close(fd);

	/* The directory of scripts/run's journal, gone (rm -rf build-run
	 * while csqd was stopped). */
	snprintf(conf, sizeof(conf),
	         "listen = [ \"unix:%s/s.sock\" ];\nhttp: { listen = \"\"; };\n"
	         "memory: { journal = \"%s/build-run/csqd.journal\"; };\n",
	         dir, dir);
	snprintf(want, sizeof(want),
	         "journal %s/build-run/csqd.journal: open: No such file or "
	         "directory; not starting: fix the file or its directory, or "
	         "change memory.journal\n",
	         dir);
	start_fails(dir, conf, want);

	snprintf(conf, sizeof(conf), "%s/j", dir);
	unlink(conf);
	snprintf(conf, sizeof(conf), "%s/s.sock", dir);
	unlink(conf);
	rmdir(dir);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(run_conf_keeps_state),
	    cmocka_unit_test(no_journal_warns_once),
	    cmocka_unit_test(start_errors),
	};

	csqd_init(argc, argv);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
