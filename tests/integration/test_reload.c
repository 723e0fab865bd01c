/*
 * SIGHUP reload and the operator's log lines. Every reload test keeps a
 * connection opened before the SIGHUP and uses it after: a reload drops
 * no connection. A reload is waited for by its line in the log
 * ("configuration reloaded path=", or "keeping the running configuration"
 * for an invalid file), never by a fixed sleep. Also here: the log lines
 * of a lost servicer, a logout that requeues, a full queue; the journal's
 * priority prefixes; and ECHO.
 */
#include <sys/stat.h>
#include <sys/wait.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define NOAUTH     "-NOAUTH Authentication required."
#define WRONGPASS  "-WRONGPASS invalid username-password pair"
#define FULL       "-FULL queue is at its maximum length"
#define QUEUES_MAX "-FULL too many queues (max_queues)"
#define RANGE      "-ERR value is not an integer or out of range"
#define MAXCLIENTS "-ERR max number of clients reached\r\n"
#define RELOADED   "configuration reloaded path="
#define KEPT       "keeping the running configuration"
#define WAIT_MS    5000
#define LOG_MAX    (4 << 20)

/* The daemon's log so far, NUL-terminated; the caller frees it. */
static char *
log_read(struct csqd *d)
{
	char *buf = malloc(LOG_MAX);
	size_t n = 0;
	FILE *f;

	if (buf == NULL)
		abort();
	if ((f = fopen(d->log_path, "r")) != NULL) {
		n = fread(buf, 1, LOG_MAX - 1, f);
		fclose(f);
	}
	buf[n] = '\0';
	return buf;
}

/* How many times text occurs in the log. */
static int
log_count(struct csqd *d, const char *text)
{
	char *buf = log_read(d), *p;
	int n = 0;

	for (p = buf; (p = strstr(p, text)) != NULL; p += strlen(text))
		n++;
	free(buf);
	return n;
}

/* Waits until text occurs at least n times in the log; fails otherwise. */
static void
log_wait_at(const char *file, int line, struct csqd *d, const char *text, int n)
{
	int64_t deadline = now_ms() + WAIT_MS;

	while (log_count(d, text) < n) {
		if (now_ms() > deadline) {
			csqd_dump_log(d);
			fail_at(file, line, "log: \"%s\" not %d times in %d ms",
			        text, n, WAIT_MS);
		}
		sleep_ms(20);
	}
}
#define LOG_WAIT(d, text, n) log_wait_at(__FILE__, __LINE__, (d), (text), (n))

/* Rewrites the file, sends SIGHUP, waits for the reload's verdict. */
static void
reload_at(const char *file, int line, struct csqd *d, const char *extra,
          int valid)
{
	const char *verdict = valid ? RELOADED : KEPT;
	int before = log_count(d, verdict);

	csqd_rewrite_conf(d, extra);
	kill(d->pid, SIGHUP);
	log_wait_at(file, line, d, verdict, before + 1);
	if (!csqd_alive(d))
		fail_at(file, line, "csqd died on a reload");
}
#define RELOAD(d, extra)     reload_at(__FILE__, __LINE__, (d), (extra), 1)
#define RELOAD_BAD(d, extra) reload_at(__FILE__, __LINE__, (d), (extra), 0)

/* The line number of line k (from 1) of extra in the configuration file. */
static int
conf_line(struct csqd *d, int k)
{
	const char *p;
	int n = 0;

	for (p = d->base_conf; *p != '\0'; p++)
		n += *p == '\n';
	return n + k;
}

/* A new connection's first reply to req, and whether it was closed. */
static void
raw_expect(int port, const char *req, const char *expect, int expect_close)
{
	char out[1024];
	int fd, closed;

	fd = raw_connect(port);
	raw_sends(fd, req);
	/* The whole reply, however slow; then the close, which comes at
	 * once when it is right, or 300 ms of silence. */
	raw_read_until(fd, out, sizeof(out), expect,
	               expect_close ? RAW_REPLY_MS : 300, &closed);
	close(fd);
	assert_string_equal(out, expect);
	assert_int_equal(closed, expect_close);
}

static long long
client_id(redisContext *c)
{
	redisReply *r = CMD(c, "CLIENT ID");
	long long id;

	assert_int_equal(r->type, REDIS_REPLY_INTEGER);
	id = r->integer;
	freeReplyObject(r);
	return id;
}

/* Polls WHERE user until its state is want; fails after WAIT_MS. */
static void
where_wait_at(const char *file, int line, redisContext *c, const char *user,
              const char *want)
{
	int64_t deadline = now_ms() + WAIT_MS;
	redisReply *r;
	const char *state;
	int done;

	for (;;) {
		r = cmd_at(file, line, c, "WHERE %s", user);
		state = field_str_at(file, line, r, "state");
		done = strcmp(state, want) == 0;
		freeReplyObject(r);
		if (done)
			return;
		if (now_ms() > deadline)
			fail_at(file, line, "%s not %s within %d ms", user,
			        want, WAIT_MS);
		sleep_ms(50);
	}
}
#define WHERE_WAIT(c, u, s) where_wait_at(__FILE__, __LINE__, (c), (u), (s))

#define HB(id, ttl)                                                            \
	"['servicer','" id "','status','ready','capacity',:1,'active',:0,"     \
	"'ttl',:" #ttl "]"

/*
 * servicer_ttl and user_ttl are the defaults of new heartbeats and new
 * users; what already runs keeps the TTL it was given.
 */
static void
ttl_defaults(void **state)
{
	struct csqd_fx *fx = *state;

	CHECK(fx->c, HB("s1", 30), "HEARTBEAT s1 QUEUES other");
	CHECK(fx->c,
	      "['state','waiting','queue','q','position',:1,'eta_ms',:-1]",
	      "ENQUEUE u1 QUEUE q");
	RELOAD(fx->d, "servicer_ttl = 7;\nuser_ttl = 1;");
	assert_true(file_contains(fx->d->log_path,
	                          "changed=\"servicer_ttl, user_ttl\""));
	/* The connection opened before the SIGHUP serves on. */
	CHECK(fx->c, HB("s2", 7), "HEARTBEAT s2 QUEUES other");
	CHECK(fx->c, HB("s1", 30), "HEARTBEAT s1");
	CHECK(fx->c,
	      "['state','waiting','queue','q','position',:2,'eta_ms',:-1]",
	      "ENQUEUE u2 QUEUE q");
	/* u2 got the new 1 s; u1 keeps its 120 s. */
	WHERE_WAIT(fx->c, "u2", "none");
	CHECK(fx->c, ":1", "QLEN q");
	WHERE_WAIT(fx->c, "u1", "waiting");
	/* An explicit TTL still wins over the default. */
	CHECK(fx->c, HB("s3", 99), "HEARTBEAT s3 TTL 99 QUEUES other");
	CHECK(fx->c,
	      "['state','waiting','queue','q','position',:2,'eta_ms',:-1]",
	      "ENQUEUE u3 QUEUE q TTL 0");
	/* And back: the built-in defaults when the keys go. */
	RELOAD(fx->d, "");
	CHECK(fx->c, HB("s4", 30), "HEARTBEAT s4 QUEUES other");
	CHECK(fx->c, "+PONG", "PING");
}

/* max_queue_length and max_tier, lowered and raised. */
static void
limits(void **state)
{
	struct csqd_fx *fx = *state;
	redisReply *r;

	CHECK(fx->c,
	      "['state','waiting','queue','q','position',:1,'eta_ms',:-1]",
	      "ENQUEUE a1 QUEUE q TIER 9");
	CHECK(fx->c, RANGE, "ENQUEUE a2 QUEUE q TIER 12");
	RELOAD(fx->d, "max_queue_length = 2;\nmax_tier = 12;");
	CHECK(fx->c,
	      "['state','waiting','queue','q','position',:1,'eta_ms',:-1]",
	      "ENQUEUE a2 QUEUE q TIER 12");
	CHECK(fx->c, RANGE, "ENQUEUE a3 QUEUE q TIER 13");
	CHECK(fx->c, FULL, "ENQUEUE a3 QUEUE q");
	/* A user already waiting is not refused: it is not added. */
	CHECK(fx->c,
	      "['state','waiting','queue','q','position',:2,'eta_ms',:-1]",
	      "ENQUEUE a1 QUEUE q");
	CHECK(fx->c, ":2", "QLEN q");
	CHECK(fx->c, "['state','none']", "WHERE a3");

	/* Lowered below the tiers already waiting: they stay. */
	RELOAD(fx->d, "max_queue_length = 3;\nmax_tier = 3;");
	CHECK(fx->c, RANGE, "ENQUEUE a3 QUEUE q TIER 4");
	CHECK(fx->c,
	      "['state','waiting','queue','q','position',:3,'eta_ms',:-1]",
	      "ENQUEUE a3 QUEUE q TIER 3");
	CHECK(fx->c, FULL, "ENQUEUE a4 QUEUE q");
	r = CMD(fx->c, "WHERE a2");
	assert_int_equal(FIELD_INT(r, "tier"), 12);
	assert_int_equal(FIELD_INT(r, "position"), 1);
	freeReplyObject(r);
	RELOAD(fx->d, "");
	CHECK(fx->c,
	      "['state','waiting','queue','q','position',:4,'eta_ms',:-1]",
	      "ENQUEUE a4 QUEUE q");
	CHECK(fx->c, RANGE, "ENQUEUE a5 QUEUE q TIER 10");
}

/*
 * max_queues (issue 37): a new queue beyond it is refused, whoever asks
 * (ENQUEUE, a move, HEARTBEAT), and nothing changes; lowered below the
 * queues that exist, they stay; raised, new ones come. On both engines.
 */
static void
max_queues(void **state)
{
	struct csqd_fx *fx = *state;
	redisReply *r;

	RELOAD(fx->d, "max_queues = 3;"); /* default and two more */
	CHECK(fx->c, HB("s1", 30), "HEARTBEAT s1 QUEUES a");
	CHECK(fx->c,
	      "['state','waiting','queue','b','position',:1,'eta_ms',:-1]",
	      "ENQUEUE u1 QUEUE b");
	CHECK(fx->c, QUEUES_MAX, "ENQUEUE u2 QUEUE c");
	CHECK(fx->c, QUEUES_MAX, "ENQUEUE u1 QUEUE c TIER 3");
	CHECK(fx->c, QUEUES_MAX, "HEARTBEAT s2 QUEUES a,c,c");
	CHECK(fx->c, QUEUES_MAX, "HEARTBEAT s1 QUEUES c");
	CHECK(fx->c, "['state','none']", "WHERE u2");
	r = CMD(fx->c, "WHERE u1");
	assert_string_equal(FIELD_STR(r, "queue"), "b");
	assert_int_equal(FIELD_INT(r, "tier"), 0);
	freeReplyObject(r);
	r = CMD(fx->c, "QUEUES");
	assert_int_equal(r->type, REDIS_REPLY_ARRAY);
	assert_int_equal(r->elements, 3);
	freeReplyObject(r);
	/* Those that exist take anyone (and s2 takes u1 from b). */
	CHECK(fx->c,
	      "['servicer','s2','status','ready','capacity',:1,'active',:1,"
	      "'ttl',:30]",
	      "HEARTBEAT s2 QUEUES a,b,default");
	/* Lowered below what exists: nothing goes, nothing new comes. */
	RELOAD(fx->d, "max_queues = 1;");
	assert_true(log_count(fx->d, " changed=max_queues") >= 1);
	CHECK(fx->c, QUEUES_MAX, "ENQUEUE u3 QUEUE d");
	/* Raised: new ones come. */
	RELOAD(fx->d, "max_queues = 4;");
	CHECK(fx->c,
	      "['state','waiting','queue','d','position',:1,'eta_ms',:-1]",
	      "ENQUEUE u3 QUEUE d");
	CHECK(fx->c, QUEUES_MAX, "ENQUEUE u4 QUEUE e");
}

/* An AUTH on a new connection: 1 when pw is accepted. */
static int
auth_ok(struct csqd *d, const char *pw)
{
	redisContext *c = csqd_connect(d);
	redisReply *r = CMD(c, "AUTH %s", pw);
	int ok = r->type == REDIS_REPLY_STATUS;

	freeReplyObject(r);
	redisFree(c);
	return ok;
}

/*
 * requirepass, as Redis's CONFIG SET requirepass: new connections need the
 * new password; connections already authenticated (or opened when none was
 * needed) stay so; a connection that never authenticated needs no AUTH
 * once the password is gone.
 */
static void
requirepass(void **state)
{
	struct csqd_fx *fx = *state;
	redisContext *c2, *c3, *c4;

	RELOAD(fx->d, "requirepass = \"pw\";");
	/* Opened without a password: still served. */
	CHECK(fx->c, "+PONG", "PING");
	CHECK(
	    fx->c,
	    "['state','waiting','queue','default','position',:1,'eta_ms',:-1]",
	    "ENQUEUE u1");
	c2 = csqd_connect(fx->d);
	CHECK(c2, NOAUTH, "PING");
	CHECK(c2, NOAUTH, "ECHO x");
	CHECK(c2, "+OK", "AUTH pw");
	CHECK(c2, "+PONG", "PING");
	c3 = csqd_connect(fx->d);
	CHECK(c3, NOAUTH, "QLEN default");
	raw_expect(fx->d->port, "PING\r\n", NOAUTH "\r\n", 0);

	/* A new password: authenticated connections stay authenticated. */
	RELOAD(fx->d, "requirepass = \"pw2\";");
	assert_true(file_contains(fx->d->log_path, "changed=requirepass"));
	assert_false(file_contains(fx->d->log_path, "pw2"));
	CHECK(fx->c, "+PONG", "PING");
	CHECK(c2, ":1", "QLEN default");
	CHECK(c3, NOAUTH, "PING");
	assert_false(auth_ok(fx->d, "pw"));
	assert_true(auth_ok(fx->d, "pw2"));
	CHECK(c3, WRONGPASS, "AUTH pw");
	c4 = csqd_connect(fx->d);
	CHECK(c4, NOAUTH, "PING");

	/* No password: every connection is served, new ones and c4. */
	RELOAD(fx->d, "requirepass = \"\";");
	raw_expect(fx->d->port, "PING\r\n", "+PONG\r\n", 0);
	CHECK(c4, "+PONG", "PING");
	CHECK(c4, ":1", "QLEN default");
	CHECK(c4,
	      "-ERR AUTH <password> called without any password configured "
	      "for the default user. Are you sure your configuration is "
	      "correct?",
	      "AUTH pw2");
	CHECK(c3, "+PONG", "PING");
	CHECK(c2, "+PONG", "PING");
	CHECK(fx->c, "+PONG", "PING");
	/* RESET of a connection now follows the new setting. */
	CHECK(c4, "+RESET", "RESET");
	CHECK(c4, "+PONG", "PING");

	/* Required again: c3 never authenticated, so it needs AUTH again;
	 * the others keep theirs. */
	RELOAD(fx->d, "requirepass = \"pw3\";");
	CHECK(c3, NOAUTH, "PING");
	CHECK(c3, "+OK", "AUTH pw3");
	CHECK(c3, "+PONG", "PING");
	CHECK(c2, "+PONG", "PING");
	CHECK(fx->c, "+PONG", "PING");
	redisFree(c2);
	redisFree(c3);
	redisFree(c4);
}

/* log.level: debug lines (a connection's) appear, then go again. */
static void
log_level(void **state)
{
	struct csqd_fx *fx = *state;
	redisContext *c;
	char line[64];
	long long id;

	c = csqd_connect(fx->d);
	id = client_id(c);
	redisFree(c);
	snprintf(line, sizeof(line), "client connected client=%lld ", id);
	assert_false(file_contains(fx->d->log_path, line));

	RELOAD(fx->d, "log: { level = \"debug\"; };");
	assert_true(file_contains(fx->d->log_path, "changed=log.level"));
	c = csqd_connect(fx->d);
	id = client_id(c);
	snprintf(line, sizeof(line), "client connected client=%lld ", id);
	LOG_WAIT(fx->d, line, 1);
	redisFree(c);
	snprintf(line, sizeof(line), "client closed client=%lld ", id);
	LOG_WAIT(fx->d, line, 1);

	/* A reload to a quieter level still logs that it happened. */
	RELOAD(fx->d, "log: { level = \"warning\"; };");
	c = csqd_connect(fx->d);
	id = client_id(c);
	redisFree(c);
	CHECK(fx->c, "+PONG", "PING");
	snprintf(line, sizeof(line), "client connected client=%lld ", id);
	assert_false(file_contains(fx->d->log_path, line));
	/* Nothing per request at info either. */
	RELOAD(fx->d, "");
	CHECK(
	    fx->c,
	    "['state','waiting','queue','default','position',:1,'eta_ms',:-1]",
	    "ENQUEUE user-quiet-7");
	CHECK(fx->c, ":1", "LEAVE user-quiet-7");
	c = csqd_connect(fx->d);
	id = client_id(c);
	redisFree(c);
	snprintf(line, sizeof(line), "client connected client=%lld ", id);
	assert_false(file_contains(fx->d->log_path, line));
	assert_false(file_contains(fx->d->log_path, "user-quiet-7"));
	CHECK(fx->c, "+PONG", "PING");
}

/*
 * An invalid file changes nothing (the old TTL still applies), each error
 * is logged with its line, the daemon serves on.
 */
static void
invalid_file(void **state)
{
	struct csqd_fx *fx = *state;
	char want[128];

	RELOAD(fx->d, "servicer_ttl = 11;\nmax_queue_length = 1;");
	CHECK(fx->c, HB("s1", 11), "HEARTBEAT s1 QUEUES other");

	/* A syntax error on line 2 of the extra text. */
	RELOAD_BAD(fx->d, "servicer_ttl = 5;\nmax_tier = ;\nuser_ttl = 1;");
	snprintf(want, sizeof(want), "csqd.conf:%d: ", conf_line(fx->d, 2));
	LOG_WAIT(fx->d, want, 1);
	LOG_WAIT(fx->d, "failed (1 error); " KEPT, 1);
	CHECK(fx->c, HB("s2", 11), "HEARTBEAT s2 QUEUES other");

	/* Two values out of range, on lines 2 and 4, and an unknown key on
	 * line 3: three errors, each with its line. */
	RELOAD_BAD(fx->d, "servicer_ttl = 5;\nuser_ttl = 99999999;\n"
	                  "no_such_key = 1;\nmax_tier = 16;");
	snprintf(want, sizeof(want),
	         "csqd.conf:%d: user_ttl must be between 0 and 86400",
	         conf_line(fx->d, 2));
	LOG_WAIT(fx->d, want, 1);
	snprintf(want, sizeof(want), "csqd.conf:%d: unknown key no_such_key",
	         conf_line(fx->d, 3));
	LOG_WAIT(fx->d, want, 1);
	snprintf(want, sizeof(want),
	         "csqd.conf:%d: max_tier must be between 0 and 15",
	         conf_line(fx->d, 4));
	LOG_WAIT(fx->d, want, 1);
	LOG_WAIT(fx->d, "failed (3 errors); " KEPT, 1);

	/* Still the old configuration: TTL 11, one user per queue. */
	assert_true(csqd_alive(fx->d));
	CHECK(fx->c, HB("s3", 11), "HEARTBEAT s3 QUEUES other");
	CHECK(fx->c,
	      "['state','waiting','queue','q','position',:1,'eta_ms',:-1]",
	      "ENQUEUE u1 QUEUE q");
	CHECK(fx->c, FULL, "ENQUEUE u2 QUEUE q");
	assert_int_equal(log_count(fx->d, RELOADED), 1);

	/* A file that cannot be read is an invalid one too. */
	unlink(fx->d->conf_path);
	kill(fx->d->pid, SIGHUP);
	LOG_WAIT(fx->d, KEPT, 3);
	CHECK(fx->c, HB("s4", 11), "HEARTBEAT s4 QUEUES other");

	/* And a valid file after all that applies. */
	RELOAD(fx->d, "servicer_ttl = 5;");
	CHECK(fx->c, HB("s5", 5), "HEARTBEAT s5 QUEUES other");
	CHECK(fx->c,
	      "['state','waiting','queue','q','position',:2,'eta_ms',:-1]",
	      "ENQUEUE u2 QUEUE q");
}

/* max_clients lowered: new connections are refused, none is dropped. */
static void
max_clients(void **state)
{
	struct csqd_fx *fx = *state;
	redisContext *c2, *c3;
	int64_t deadline;
	char out[256];
	int fd, closed;

	c2 = csqd_connect(fx->d);
	c3 = csqd_connect(fx->d);
	CHECK(c2, "+PONG", "PING");
	CHECK(c3, "+PONG", "PING");
	RELOAD(fx->d, "max_clients = 2;");
	CHECK(fx->c, "+PONG", "PING");
	CHECK(c2, "+PONG", "PING");
	CHECK(c3, "+PONG", "PING");
	raw_expect(fx->d->port, "PING\r\n", MAXCLIENTS, 1);
	CHECK(c3, "+PONG", "PING");

	/* Two go: one more fits (the count drops as the closes arrive). */
	redisFree(c2);
	redisFree(c3);
	deadline = now_ms() + WAIT_MS;
	for (;;) {
		fd = raw_connect(fx->d->port);
		raw_sends(fd, "PING\r\n");
		raw_read_until(fd, out, sizeof(out), "\r\n", 300, &closed);
		if (strcmp(out, "+PONG\r\n") == 0)
			break;
		assert_string_equal(out, MAXCLIENTS);
		close(fd);
		if (now_ms() > deadline)
			fail_msg("no room after two clients left");
		sleep_ms(20);
	}
	raw_expect(fx->d->port, "PING\r\n", MAXCLIENTS, 1);
	close(fd);

	/* Raised again. */
	RELOAD(fx->d, "");
	c2 = csqd_connect(fx->d);
	CHECK(c2, "+PONG", "PING");
	CHECK(fx->c, "+PONG", "PING");
	redisFree(c2);
}

/* Keys that change only at the next start say so; the rest applies. */
static void
restart_only_keys(void **state)
{
	struct csqd_fx *fx = *state;

	RELOAD(fx->d, "servicer_ttl = 9;\nmemory: { fsync = \"always\"; };");
	LOG_WAIT(fx->d,
	         "reload: memory changed; that takes effect at the next start",
	         1);
	LOG_WAIT(fx->d, "changed=servicer_ttl", 1);
	CHECK(fx->c, HB("s1", 9), "HEARTBEAT s1");
	RELOAD(fx->d, "servicer_ttl = 9;\nmemory: { fsync = \"always\"; };");
	LOG_WAIT(fx->d, "changed=nothing", 1);
	CHECK(fx->c, "+PONG", "PING");
}

/*
 * The log lines of servicers coming and leaving, as fields: lost or
 * logged out with how many users were requeued (0 too), each user
 * requeued; a LOGOUT of nobody logs nothing.
 */
static void
servicer_lines(void **state)
{
	struct csqd_fx *fx = *state;

	CHECK(fx->c,
	      "['servicer','s1','status','ready','capacity',:3,'active',:0,"
	      "'ttl',:1]",
	      "HEARTBEAT s1 CAPACITY 3 QUEUES q1 TTL 1");
	CHECK(fx->c, HB("s5", 1), "HEARTBEAT s5 QUEUES q5 TTL 1");
	CHECK(fx->c, HB("s6", 1), "HEARTBEAT s6 QUEUES q6 TTL 1");
	CHECK(fx->c,
	      "['state','assigned','queue','q1','room','s1/0','servicer','s1']",
	      "ENQUEUE u1 QUEUE q1");
	CHECK(fx->c,
	      "['state','assigned','queue','q1','room','s1/1','servicer','s1']",
	      "ENQUEUE u2 QUEUE q1");
	CHECK(fx->c,
	      "['state','assigned','queue','q5','room','s5/0','servicer','s5']",
	      "ENQUEUE u5 QUEUE q5");
	LOG_WAIT(fx->d, "servicer lost servicer=s1 requeued=2 ", 1);
	LOG_WAIT(fx->d, "servicer lost servicer=s5 requeued=1 ", 1);
	LOG_WAIT(fx->d, "servicer lost servicer=s6 requeued=0 ", 1);
	CHECK(fx->c, ":2", "QLEN q1");

	CHECK(fx->c,
	      "['servicer','s2','status','ready','capacity',:2,'active',:0,"
	      "'ttl',:30]",
	      "HEARTBEAT s2 CAPACITY 2 QUEUES q2");
	CHECK(fx->c,
	      "['state','assigned','queue','q2','room','s2/0','servicer','s2']",
	      "ENQUEUE v1 QUEUE q2");
	CHECK(fx->c, ":1", "LOGOUT s2");
	LOG_WAIT(fx->d, "servicer logged out servicer=s2 requeued=1 ", 1);
	CHECK(fx->c, HB("s3", 30), "HEARTBEAT s3 QUEUES q3");
	CHECK(fx->c, ":0", "LOGOUT s3");
	CHECK(fx->c, ":0", "LOGOUT nobody");
	/* The PING's reply comes after anything the LOGOUTs logged. */
	CHECK(fx->c, "+PONG", "PING");
	assert_true(file_contains(
	    fx->d->log_path, "servicer logged out servicer=s3 requeued=0 "));
	assert_false(file_contains(fx->d->log_path, "nobody"));
	assert_int_equal(log_count(fx->d, "servicer lost "), 3);
	assert_int_equal(log_count(fx->d, "user requeued "), 4);
	assert_int_equal(log_count(fx->d, "servicer logged in "), 5);
}

/* -FULL: one warning per queue per minute, not one per refused user. */
static void
queue_full_lines(void **state)
{
	struct csqd_fx *fx = *state;
	int i;

	RELOAD(fx->d, "max_queue_length = 2;");
	CHECK(fx->c,
	      "['state','waiting','queue','q','position',:1,'eta_ms',:-1]",
	      "ENQUEUE a1 QUEUE q");
	CHECK(fx->c,
	      "['state','waiting','queue','q','position',:2,'eta_ms',:-1]",
	      "ENQUEUE a2 QUEUE q");
	for (i = 0; i < 5; i++)
		CHECK(fx->c, FULL, "ENQUEUE b%d QUEUE q", i);
	LOG_WAIT(fx->d, "queue full queue=q max_queue_length=2", 1);
	/* The default queue, reached without QUEUE. */
	CHECK(
	    fx->c,
	    "['state','waiting','queue','default','position',:1,'eta_ms',:-1]",
	    "ENQUEUE d1");
	CHECK(
	    fx->c,
	    "['state','waiting','queue','default','position',:2,'eta_ms',:-1]",
	    "ENQUEUE d2");
	CHECK(fx->c, FULL, "ENQUEUE d3");
	CHECK(fx->c, FULL, "ENQUEUE d4");
	/* A move of a waiting user into a full queue. */
	CHECK(fx->c, FULL, "ENQUEUE d1 QUEUE q");
	LOG_WAIT(fx->d, "queue full queue=default max_queue_length=2", 1);
	CHECK(fx->c, "+PONG", "PING");
	assert_int_equal(log_count(fx->d, "queue full queue=q "), 1);
	assert_int_equal(log_count(fx->d, "queue full queue=default "), 1);
	assert_int_equal(log_count(fx->d, "queue full "), 2);
	/* The limit in the line is the one in force. */
	RELOAD(fx->d, "max_queue_length = 3;");
	CHECK(fx->c,
	      "['state','waiting','queue','r','position',:1,'eta_ms',:-1]",
	      "ENQUEUE r1 QUEUE r");
	CHECK(fx->c,
	      "['state','waiting','queue','r','position',:2,'eta_ms',:-1]",
	      "ENQUEUE r2 QUEUE r");
	CHECK(fx->c,
	      "['state','waiting','queue','r','position',:3,'eta_ms',:-1]",
	      "ENQUEUE r3 QUEUE r");
	CHECK(fx->c, FULL, "ENQUEUE r4 QUEUE r");
	LOG_WAIT(fx->d, "queue full queue=r max_queue_length=3", 1);
	/* The warning is a warning. */
	assert_true(file_contains(
	    fx->d->log_path, "warning: queue full queue=r max_queue_length=3"));
}

/*
 * Runs csqd -c conf with stdout and stderr to a file of dir, JOURNAL_STREAM
 * naming that file (journal) or something else; when the daemon starts,
 * stops it with SIGTERM once it is ready. Returns its exit status; the
 * file's text is in out.
 */
static int
journal_run(const char *dir, const char *conf, int journal, char *out,
            size_t outlen)
{
	char log_path[256], conf_path[256], env[64];
	int64_t deadline = now_ms() + WAIT_MS;
	struct stat st;
	int fd, status;
	ssize_t n;
	pid_t pid;

	snprintf(conf_path, sizeof(conf_path), "%s/csqd.conf", dir);
	snprintf(log_path, sizeof(log_path), "%s/stderr", dir);
	write_file(conf_path, conf);
	fd = open(log_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	if (journal)
		snprintf(env, sizeof(env), "%llu:%llu",
		         (unsigned long long)st.st_dev,
		         (unsigned long long)st.st_ino);
	else
		snprintf(env, sizeof(env), "%llu:%llu",
		         (unsigned long long)st.st_dev,
		         (unsigned long long)st.st_ino + 1);
	if ((pid = fork()) == 0) {
		setenv("JOURNAL_STREAM", env, 1);
		dup2(fd, 1);
		dup2(fd, 2);
		execl(csqd_binary(), csqd_binary(), "-c", conf_path,
		      (char *)NULL);
		_exit(127);
	}
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (file_contains(log_path, "ready, engine")) {
			kill(pid, SIGTERM);
			waitpid(pid, &status, 0);
			break;
		}
		if (now_ms() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			fail_msg("csqd neither ready nor gone in %d ms",
			         WAIT_MS);
		}
		sleep_ms(20);
	}
	n = pread(fd, out, outlen - 1, 0);
	out[n > 0 ? n : 0] = '\0';
	close(fd);
	unlink(log_path);
	unlink(conf_path);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Every line of text starts with a syslog priority prefix "<n>". */
static void
assert_all_prefixed(const char *text)
{
	const char *p;

	for (p = text; *p != '\0'; p = strchr(p, '\n') + 1) {
		if (p[0] != '<' || p[1] < '0' || p[1] > '7' || p[2] != '>')
			fail_msg("a line without a priority prefix in:\n%s",
			         text);
		if (strchr(p, '\n') == NULL)
			fail_msg("an unterminated line in:\n%s", text);
	}
}

/*
 * stderr is the journal (JOURNAL_STREAM names it): every line carries its
 * priority, a run's and a refused start's alike, so `journalctl -p err`
 * shows why csqd did not start; on any other stderr, timestamps and level
 * words instead.
 */
static void
journal_prefixes(void **state)
{
	char dir[] = "/tmp/csqd-journal.XXXXXX", conf[512], want[512];
	char out[8192];

	(void)state;
	if (strcmp(csqd_engine(), "memory") != 0)
		skip(); /* the same code on every engine */
	assert_non_null(mkdtemp(dir));
	snprintf(conf, sizeof(conf),
	         "listen = [ \"unix:%s/csqd.sock\" ];\nhttp: { listen = "
	         "\"\"; };\n",
	         dir);
	assert_int_equal(journal_run(dir, conf, 1, out, sizeof(out)), 0);
	assert_all_prefixed(out);
	snprintf(want, sizeof(want), "<6>listening on unix:%s/csqd.sock\n",
	         dir);
	assert_non_null(strstr(out, want));
	assert_non_null(strstr(out, "<6>csqd "));
	assert_non_null(strstr(out, "<6>signal 15: stopping\n"));
	assert_non_null(strstr(out, "<6>stopped\n"));

	/* A refused start: each error at priority 3 with its line. */
	assert_int_equal(journal_run(dir,
	                             "max_tier = 99;\nno_such_key = 1;\n"
	                             "user_ttl = 5;\n",
	                             1, out, sizeof(out)),
	                 78);
	assert_all_prefixed(out);
	snprintf(want, sizeof(want),
	         "<3>%s/csqd.conf:1: max_tier must be between 0 and 15", dir);
	assert_non_null(strstr(out, want));
	snprintf(want, sizeof(want),
	         "<3>%s/csqd.conf:2: unknown key no_such_key\n", dir);
	assert_non_null(strstr(out, want));
	snprintf(want, sizeof(want),
	         "<3>2 errors in %s/csqd.conf; not starting\n", dir);
	assert_non_null(strstr(out, want));

	/* JOURNAL_STREAM set, but stderr is something else. */
	assert_int_equal(
	    journal_run(dir, "max_tier = 99;\n", 0, out, sizeof(out)), 78);
	assert_null(strstr(out, "<3>"));
	snprintf(want, sizeof(want),
	         "Z error: %s/csqd.conf:1: max_tier must be between 0 and 15",
	         dir);
	assert_non_null(strstr(out, want));
	assert_int_equal(rmdir(dir), 0);
}

/* ECHO, as Redis. */
static void
echo(void **state)
{
	struct csqd_fx *fx = *state;
	const char *argv[] = {"ECHO", "a\0b\r\n"};
	const size_t argvlen[] = {4, 5};
	const char *sub[] = {"events"};
	redisReply *r;

	CHECK(fx->c, "'hello'", "ECHO hello");
	CHECK(fx->c, "'hello world'", "ECHO %s", "hello world");
	CHECK(fx->c, "''", "ECHO %s", "");
	CHECK(fx->c, "'1'", "echo 1");
	r = CMD_ARGV(fx->c, 2, argv, argvlen);
	assert_int_equal(r->type, REDIS_REPLY_STRING);
	assert_int_equal(r->len, 5);
	assert_memory_equal(r->str, "a\0b\r\n", 5);
	freeReplyObject(r);
	CHECK(fx->c, "-ERR wrong number of arguments for 'echo' command",
	      "ECHO");
	CHECK(fx->c, "-ERR wrong number of arguments for 'echo' command",
	      "ECHO a b");
	raw_expect(fx->d->port, "ECHO \"a b\"\r\n", "$3\r\na b\r\n", 0);
	SUBSCRIBE(fx->c, 1, sub);
	CHECK(fx->c,
	      "-ERR Can't execute 'echo': only (P|S)SUBSCRIBE / "
	      "(P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this "
	      "context",
	      "ECHO x");
}

/* A field of /proc/<pid>/status ("voluntary_ctxt_switches"), -1 if none. */
static long long
proc_status(pid_t pid, const char *key)
{
	char path[64], line[256];
	size_t klen = strlen(key);
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, key, klen) == 0 && line[klen] == ':')
			v = atoll(line + klen + 1);
	fclose(f);
	return v;
}

/*
 * How often csqd went to sleep during n PING round trips on c, gap_ms
 * apart: a gap far longer than a round trip, so that csqd has nothing to
 * do in it however the machine is loaded.
 */
static long long
sleeps_over_pings(struct csqd *d, redisContext *c, int n, int gap_ms)
{
	long long before, after;
	int i;

	CHECK(c, "+PONG", "PING");
	before = proc_status(d->pid, "voluntary_ctxt_switches");
	for (i = 0; i < n; i++) {
		sleep_ms(gap_ms);
		CHECK(c, "+PONG", "PING");
	}
	after = proc_status(d->pid, "voluntary_ctxt_switches");
	assert_true(before >= 0 && after >= before);
	return after - before;
}

/*
 * busy_poll_us, reloaded. At 0, csqd sleeps in epoll_wait in every 2 ms
 * gap between a client's requests (a voluntary context switch each); at
 * 10000 the next request comes within the poll and it does not sleep (a
 * sched_yield is no voluntary switch). However long the poll, an idle
 * csqd goes to sleep: a second with nothing to do costs almost no CPU.
 * Broken on purpose, each part fails: a loop that ignores the key sleeps
 * as often at 10000 as at 0, and one that never stops polling burns the
 * idle second.
 */
static void
busy_poll(void **state)
{
	struct csqd_fx *fx = *state;
	long long sleeping, polling, t0, t1;
	long hz = sysconf(_SC_CLK_TCK);

	RELOAD(fx->d, "busy_poll_us = 0;");
	LOG_WAIT(fx->d, "changed=busy_poll_us", 1);
	sleeping = sleeps_over_pings(fx->d, fx->c, 100, 2);
	RELOAD(fx->d, "busy_poll_us = 10000;");
	polling = sleeps_over_pings(fx->d, fx->c, 100, 2);
	print_message("busy_poll: %lld sleeps in 100 PINGs at 0 us, %lld at "
	              "10000 us\n",
	              sleeping, polling);
	/* Far apart, with room for a loaded machine, where the test's own
	 * 2 ms sleep can last past the 10 ms poll now and then. */
	assert_true(sleeping >= 80);
	assert_true(polling <= 50);

	/* Out of range: the reload is refused, 10000 stays in force. */
	RELOAD_BAD(fx->d, "busy_poll_us = 10001;");
	LOG_WAIT(fx->d, "busy_poll_us must be between 0 and 10000", 1);
	assert_true(sleeps_over_pings(fx->d, fx->c, 20, 2) <= 10);

	/* Idle: the poll ends 10 ms after the last PING. */
	CHECK(fx->c, "+PONG", "PING");
	sleep_ms(100);
	t0 = proc_cpu_ticks(fx->d->pid);
	sleep_ms(1000);
	t1 = proc_cpu_ticks(fx->d->pid);
	print_message("busy_poll: %lld of %ld ticks of CPU in an idle second\n",
	              t1 - t0, hz);
	assert_true(t0 >= 0 && t1 >= t0);
	assert_true((t1 - t0) * 5 < hz);
	CHECK(fx->c, "+PONG", "PING");
}

/* Reads and counts the messages c has now, without waiting for more. */
static int
messages_now(redisContext *c)
{
	struct pollfd pfd = {c->fd, POLLIN, 0};
	void *r;
	int n = 0;

	for (;;) {
		while (redisGetReplyFromReader(c, &r) == REDIS_OK &&
		       r != NULL) {
			freeReplyObject(r);
			n++;
		}
		if (poll(&pfd, 1, 0) != 1)
			return n;
		if (redisBufferRead(c) != REDIS_OK)
			fail_msg("reading a subscriber: %s", c->errstr);
	}
}

/*
 * max_output_memory: all clients' unsent output together. A subscriber
 * that stopped reading (every message, twice: SUBSCRIBE events and
 * PSUBSCRIBE *) holds megabytes while 20,000 users are enqueued, under
 * its own 32 MiB limit and the default cap of 1 GiB, so it stays. A
 * reload to 1 MiB applies at once: it is closed, the largest first, and
 * only it, since what is left fits; a subscriber that reads as it goes
 * is never the largest and gets every event, and so does the client of
 * the ENQUEUEs. Under the cap, a second stalled subscriber goes while the
 * messages pile up (the first was closed by the reload itself). Out of
 * range, the key is refused.
 */
#define CAP_USERS 20000
#define CAP_CHUNK 1000

/* CAP_USERS more users from first; reader's messages counted meanwhile. */
static int
cap_enqueue(redisContext *c, redisContext *reader, int first)
{
	redisReply *r;
	int i, k, got = 0;

	for (i = first; i < first + CAP_USERS; i += CAP_CHUNK) {
		for (k = i; k < i + CAP_CHUNK; k++)
			redisAppendCommand(c, "ENQUEUE cap%d", k);
		for (k = i; k < i + CAP_CHUNK; k++) {
			r = GET_REPLY(c);
			assert_int_equal(FIELD_INT(r, "position"), k + 1);
			freeReplyObject(r);
		}
		got += messages_now(reader);
	}
	return got;
}

/* A subscriber to every message, twice, that never reads. */
static redisContext *
stalled_subscriber(struct csqd *d)
{
	redisContext *c = csqd_connect(d);

	freeReplyObject(CMD(c, "SUBSCRIBE events"));
	freeReplyObject(CMD(c, "PSUBSCRIBE *"));
	return c;
}

/* Reads from c until it has had n messages in all, then finds no more. */
static void
messages_until(redisContext *c, int got, int n)
{
	redisReply *r;

	for (; got < n; got++) {
		r = GET_REPLY(c);
		assert_string_equal(r->element[0]->str, "message");
		freeReplyObject(r);
	}
	assert_int_equal(messages_now(c), 0);
}

static void
output_memory_cap(void **state)
{
	struct csqd_fx *fx = *state;
	redisContext *stalled, *stalled2, *reader;
	int got;

	stalled = stalled_subscriber(fx->d);
	reader = csqd_connect(fx->d);
	freeReplyObject(CMD(reader, "SUBSCRIBE events"));
	got = cap_enqueue(fx->c, reader, 0);
	assert_int_equal(INFO_FIELD(fx->c, "connected_clients"), 3);
	assert_int_equal(
	    INFO_FIELD(fx->c, "client_output_buffer_limit_disconnections"), 0);

	RELOAD(fx->d, "max_output_memory = 1048576;");
	LOG_WAIT(fx->d, "changed=max_output_memory", 1);
	LOG_WAIT(fx->d,
	         "all clients' output over max_output_memory (1048576 bytes)",
	         1);
	messages_until(reader, got, CAP_USERS);
	assert_int_equal(INFO_FIELD(fx->c, "connected_clients"), 2);
	assert_int_equal(
	    INFO_FIELD(fx->c, "client_output_buffer_limit_disconnections"), 1);
	assert_int_equal(log_count(fx->d, "max_output_memory (1048576"), 1);
	CHECK(fx->c, ":20000", "QLEN default");

	stalled2 = stalled_subscriber(fx->d);
	got = cap_enqueue(fx->c, reader, CAP_USERS);
	LOG_WAIT(fx->d, "max_output_memory (1048576", 2);
	messages_until(reader, got, CAP_USERS);
	assert_int_equal(INFO_FIELD(fx->c, "connected_clients"), 2);
	assert_int_equal(
	    INFO_FIELD(fx->c, "client_output_buffer_limit_disconnections"), 2);
	CHECK(fx->c, ":40000", "QLEN default");

	RELOAD_BAD(fx->d, "max_output_memory = 1099511627777;");
	LOG_WAIT(fx->d, "max_output_memory must be between 0 and 1099511627776",
	         1);
	redisFree(stalled);
	redisFree(stalled2);
	redisFree(reader);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(ttl_defaults, csqd_fx_setup_default,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(limits, csqd_fx_setup_default,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(max_queues, csqd_fx_setup_default,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(requirepass, csqd_fx_setup_default,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(log_level, csqd_fx_setup_default,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(invalid_file, csqd_fx_setup_default,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(max_clients, csqd_fx_setup_default,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(
	        restart_only_keys, csqd_fx_setup_default, csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(
	        servicer_lines, csqd_fx_setup_default, csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(
	        queue_full_lines, csqd_fx_setup_default, csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(echo, csqd_fx_setup_default,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(busy_poll, csqd_fx_setup_default,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(
	        output_memory_cap, csqd_fx_setup_default, csqd_fx_teardown),
	    cmocka_unit_test(journal_prefixes),
	};

	csqd_init(argc, argv);
	return cmocka_run_group_tests_name("reload", tests, NULL, NULL);
}
