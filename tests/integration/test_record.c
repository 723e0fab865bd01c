/*
 * The record of the day (record.path, daemon/event_record.c) on both
 * engines: the lines are the events that SUBSCRIBE events delivers, byte
 * for byte, ids without a gap; every reply that reached a client has its
 * events in the file even when csqd is killed with SIGKILL the moment
 * after (the lines are written before the reply leaves); a restart
 * appends to the file, after cutting a torn last line; a file that is
 * not a record is refused; rotation by size and by day (on the test
 * clock) loses and repeats nothing, and old files go after keep_days;
 * csqd with a record is one thread (its fdatasync is the kernel's).
 *
 * How it was tried to break: SIGKILL at a random moment under a pipeline
 * of 2000 ENQUEUEs, a torn line and a foreign file in the path, rotation
 * every few lines, a clock moved three days on.
 */
#include <dirent.h>
#include <poll.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define KILL_USERS  2000
#define LINE_MAX_   4096
#define ROTATE_N    60
#define FULL_BEFORE 200 /* lines before the disk is full */
#define FULL_DURING 50

/* A command whose reply is not an error. */
#define OK(c, ...)                                                             \
	do {                                                                   \
		redisReply *ok_ = CMD((c), __VA_ARGS__);                       \
		assert_int_not_equal(ok_->type, REDIS_REPLY_ERROR);            \
		freeReplyObject(ok_);                                          \
	} while (0)

struct rfx {
	char dir[64];
	char path[128];
	char conf[512];
};

static int
setup(void **state)
{
	struct rfx *f = calloc(1, sizeof(*f));

	snprintf(f->dir, sizeof(f->dir), "/tmp/csq-record-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/day.events", f->dir);
	snprintf(f->conf, sizeof(f->conf),
	         "record: { path = \"%s\"; fsync = \"everysec\"; };\n",
	         f->path);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct rfx *f = *state;
	char p[600];
	struct dirent *de;
	DIR *d = opendir(f->dir);

	while (d != NULL && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", f->dir, de->d_name);
		unlink(p);
	}
	if (d != NULL)
		closedir(d);
	rmdir(f->dir);
	free(f);
	return 0;
}

/* The lines of a file; each without its newline. */
struct lines {
	char **v;
	size_t n;
};

static void
lines_read_torn(const char *path, struct lines *l, int torn_ok)
{
	char buf[LINE_MAX_ + 2];
	FILE *fp = fopen(path, "r");

	memset(l, 0, sizeof(*l));
	if (fp == NULL)
		return;
	while (fgets(buf, sizeof(buf), fp) != NULL) {
		size_t len = strlen(buf);

		if (len == 0 || buf[len - 1] != '\n') {
			/* Only the file's last line may lack its newline,
			 * and only after a SIGKILL: a write(2) of a turn's
			 * lines can stop between pages when the process is
			 * killed. Those lines were never acknowledged (the
			 * replies wait for the write), and csqd cuts them
			 * when it starts again (record_resume). */
			assert_true(torn_ok && fgetc(fp) == EOF);
			print_message("a torn last line of %zu bytes\n", len);
			break;
		}
		buf[len - 1] = '\0';
		l->v = realloc(l->v, (l->n + 1) * sizeof(*l->v));
		l->v[l->n++] = strdup(buf);
	}
	fclose(fp);
}

static void
lines_read(const char *path, struct lines *l)
{
	lines_read_torn(path, l, 0);
}

static void
lines_free(struct lines *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
}

static unsigned long long
line_id(const char *line)
{
	const char *p = strstr(line, ",\"id\":");

	assert_non_null(p);
	return strtoull(p + 6, NULL, 10);
}

/* Every line an event with ids one more than the line before. */
static void
assert_ids_follow(const struct lines *l, unsigned long long first)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		assert_true(strncmp(l->v[i], "{\"event\":\"", 10) == 0);
		assert_int_equal(line_id(l->v[i]), first + i);
	}
}

/* Waits until the file has at least n lines (written at a turn's end). */
static void
wait_lines(const char *path, size_t n, struct lines *l)
{
	int64_t until = now_ms() + 10000;

	for (;;) {
		lines_read(path, l);
		if (l->n >= n || now_ms() > until)
			break;
		lines_free(l);
		sleep_ms(10);
	}
	assert_true(l->n >= n);
}

static void
test_lines_are_the_published_events(void **state)
{
	struct rfx *f = *state;
	struct csqd *d = csqd_start(f->conf);
	redisContext *c = csqd_connect(d), *sub = csqd_connect(d);
	redisReply *r;
	struct lines l;
	size_t i;

	r = CMD(sub, "SUBSCRIBE events");
	freeReplyObject(r);
	OK(c, "HEARTBEAT s1 CAPACITY 1 QUEUES q TTL 3600");
	OK(c, "ENQUEUE u1 QUEUE q");
	OK(c, "ENQUEUE u2 QUEUE q TIER 2");
	OK(c, "RELEASE s1/0");
	OK(c, "LEAVE u2");
	OK(c, "LOGOUT s1");
	/* servicer_up, matched, queued, released, matched, released,
	 * servicer_down */
	wait_lines(f->path, 7, &l);
	assert_int_equal(l.n, 7);
	assert_ids_follow(&l, 1);
	for (i = 0; i < l.n; i++) {
		assert_int_equal(redisGetReply(sub, (void **)&r), REDIS_OK);
		assert_int_equal(r->type, REDIS_REPLY_ARRAY);
		assert_string_equal(r->element[2]->str, l.v[i]);
		freeReplyObject(r);
	}
	assert_non_null(strstr(l.v[1], "\"event\":\"matched\""));
	assert_non_null(strstr(l.v[1], "\"ts\":"));
	lines_free(&l);
	/* The record's fdatasync is not a thread of csqd's: a second
	 * thread makes glibc lock its arena on every malloc and free
	 * (event_record.c; tried: with the old sync thread, this fails). */
	assert_int_equal(proc_status_kb(d->pid, "Threads"), 1);
	redisFree(sub);
	redisFree(c);
	assert_int_equal(csqd_stop(d), 0);
}

/*
 * SIGKILL from a child at a random moment while 2000 pipelined ENQUEUEs
 * are answered: every user whose reply arrived is in the record. Then a
 * restart appends: the lines before stay, new ones follow.
 */
static void
test_acknowledged_survives_kill9(void **state)
{
	struct rfx *f = *state;
	struct csqd *d = csqd_start(f->conf);
	redisContext *c = csqd_connect(d);
	redisReply *r;
	struct lines l;
	char want[64];
	pid_t killer;
	int i, acked = 0;
	size_t j, found;

	srand((unsigned)now_ms());
	for (i = 0; i < KILL_USERS; i++)
		redisAppendCommand(c, "ENQUEUE k%d QUEUE q TTL 0", i);
	if ((killer = fork()) == 0) {
		usleep((useconds_t)(1000 + rand() % 30000));
		kill(d->pid, SIGKILL);
		_exit(0);
	}
	for (i = 0; i < KILL_USERS; i++) {
		if (redisGetReply(c, (void **)&r) != REDIS_OK)
			break;
		assert_int_equal(r->type, REDIS_REPLY_ARRAY);
		freeReplyObject(r);
		acked++;
	}
	waitpid(killer, NULL, 0);
	redisFree(c);
	csqd_kill9(d);
	print_message("%d of %d acknowledged before the kill\n", acked,
	              KILL_USERS);
	lines_read_torn(f->path, &l, 1);
	assert_true(l.n >= (size_t)acked);
	assert_ids_follow(&l, l.n > 0 ? line_id(l.v[0]) : 1);
	for (i = 0, j = 0; i < acked; i++) {
		/* The users went in line in order: one line each. */
		snprintf(want, sizeof(want), "\"user\":\"k%d\"", i);
		for (found = 0; j < l.n && !found; j++)
			found = strstr(l.v[j], want) != NULL;
		if (!found)
			fail_msg("k%d was acknowledged and is not recorded", i);
	}
	found = l.n;
	lines_free(&l);

	/* The restart appends (after a torn last line, cut). */
	d = csqd_start(f->conf);
	c = csqd_connect(d);
	OK(c, "ENQUEUE after QUEUE q2");
	wait_lines(f->path, found + 1, &l);
	assert_true(strstr(l.v[l.n - 1], "\"user\":\"after\"") != NULL);
	assert_true(l.n == found + 1);
	lines_free(&l);
	redisFree(c);
	assert_int_equal(csqd_stop(d), 0);
}

static void all_lines(struct rfx *, struct lines *, int *rotated);

/*
 * The reply must not be ahead of its line. Many clients' pipelines reach
 * csqd together, so that one turn of its loop runs them all and writes
 * the record once, at its end; the first reply to arrive anywhere gets
 * csqd killed at once. Had a reply left before the write, its client
 * would hold it while the record lacks its line (tried: with the hold
 * taken out, this fails).
 */
#define RACE_CONNS 40
#define RACE_EACH  40

static void
test_reply_never_ahead_of_record(void **state)
{
	struct rfx *f = *state;
	struct csqd *d = csqd_start(f->conf);
	redisContext *c[RACE_CONNS];
	struct pollfd pfd[RACE_CONNS];
	struct lines l;
	redisReply *r;
	char want[64];
	int i, k, done, acked = 0, hit;
	size_t j;

	for (i = 0; i < RACE_CONNS; i++) {
		c[i] = csqd_connect(d);
		OK(c[i], "PING"); /* accepted, not in the backlog */
		for (k = 0; k < RACE_EACH; k++)
			redisAppendCommand(c[i], "ENQUEUE c%d_%d TTL 0", i, k);
	}
	/* Every request sent before csqd can answer the first. */
	kill(d->pid, SIGSTOP);
	for (i = 0; i < RACE_CONNS; i++) {
		do
			assert_int_equal(redisBufferWrite(c[i], &done),
			                 REDIS_OK);
		while (!done);
		pfd[i].fd = c[i]->fd;
		pfd[i].events = POLLIN;
	}
	kill(d->pid, SIGCONT);
	assert_true(poll(pfd, RACE_CONNS, 10000) > 0);
	kill(d->pid, SIGKILL);
	csqd_kill9(d);
	lines_read_torn(f->path, &l, 1); /* killed mid-write: see there */
	for (i = 0; i < RACE_CONNS; i++) {
		for (k = 0; k < RACE_EACH; k++) {
			if (redisGetReply(c[i], (void **)&r) != REDIS_OK)
				break;
			freeReplyObject(r);
			acked++;
			snprintf(want, sizeof(want), "\"user\":\"c%d_%d\"", i,
			         k);
			for (j = 0, hit = 0; j < l.n && !hit; j++)
				hit = strstr(l.v[j], want) != NULL;
			if (!hit)
				fail_msg("c%d_%d was acknowledged and is not "
				         "recorded",
				         i, k);
		}
		redisFree(c[i]);
	}
	print_message("%d of %d acknowledged, %zu recorded\n", acked,
	              RACE_CONNS * RACE_EACH, l.n);
	assert_true(acked > 0);
	lines_free(&l);
}

static void
test_torn_tail_cut_and_foreign_file_refused(void **state)
{
	struct rfx *f = *state;
	struct csqd *d;
	redisContext *c;
	struct lines l;
	char out[4096];
	int rotated;
	FILE *fp;

	/* What a power cut leaves: a whole line, then part of one. */
	fp = fopen(f->path, "w");
	fputs("{\"event\":\"queued\",\"id\":7,\"ts\":1795000000000,\"user\":"
	      "\"old\",\"queue\":\"q\",\"tier\":0,\"position\":1}\n"
	      "{\"event\":\"left\",\"id\":8,\"ts\":17950",
	      fp);
	fclose(fp);
	d = csqd_start(f->conf);
	csqd_wait_log(d, "cut a torn last line");
	c = csqd_connect(d);
	OK(c, "ENQUEUE fresh");
	wait_lines(f->path, 1, &l);
	lines_free(&l);
	redisFree(c);
	assert_int_equal(csqd_stop(d), 0);
	/* The old line is of another day: its file was rotated away
	 * before the new day's first line. */
	all_lines(f, &l, &rotated);
	assert_int_equal(rotated, 1);
	assert_int_equal(l.n, 2);
	assert_non_null(strstr(l.v[0], "\"user\":\"old\""));
	assert_non_null(strstr(l.v[1], "\"user\":\"fresh\""));
	lines_free(&l);

	/* Not a record: csqd will not append to it, and says why. */
	write_file(f->path, "somebody else's file\n");
	snprintf(out, sizeof(out), "%s/c.conf", f->dir);
	{
		char text[1024];

		snprintf(text, sizeof(text),
		         "listen = [\"127.0.0.1:1\"];\nhttp: { listen = \"\"; "
		         "};\n%s",
		         f->conf);
		write_file(out, text);
	}
	{
		char log[4096];
		int st = csqd_run(log, sizeof(log), "-c", out, NULL);

		assert_int_not_equal(st, 0);
		assert_non_null(strstr(log, "is not an event"));
	}
	fp = fopen(f->path, "r");
	assert_non_null(fgets(out, sizeof(out), fp));
	fclose(fp);
	assert_string_equal(out, "somebody else's file\n");
}

/* The record's files in the directory: rotated ones (sorted by name,
 * which is by time) then the live one. */
static void
all_lines(struct rfx *f, struct lines *all, int *rotated)
{
	struct dirent **names;
	char p[600];
	struct lines l;
	int n, i;
	size_t k;

	memset(all, 0, sizeof(*all));
	*rotated = 0;
	n = scandir(f->dir, &names, NULL, alphasort);
	assert_true(n >= 0);
	for (i = 0; i < n; i++) {
		if (strncmp(names[i]->d_name, "day.events.", 11) == 0) {
			snprintf(p, sizeof(p), "%s/%s", f->dir,
			         names[i]->d_name);
			lines_read(p, &l);
			for (k = 0; k < l.n; k++) {
				all->v = realloc(all->v,
				                 (all->n + 1) * sizeof(char *));
				all->v[all->n++] = l.v[k];
			}
			free(l.v);
			(*rotated)++;
		}
		free(names[i]);
	}
	free(names);
	lines_read(f->path, &l);
	for (k = 0; k < l.n; k++) {
		all->v = realloc(all->v, (all->n + 1) * sizeof(char *));
		all->v[all->n++] = l.v[k];
	}
	free(l.v);
}

static void
test_rotation_by_size(void **state)
{
	struct rfx *f = *state;
	struct csqd *d;
	redisContext *c;
	struct lines all, l;
	char conf[600];
	int i, rotated;

	snprintf(conf, sizeof(conf),
	         "record: { path = \"%s\"; rotate_size = 1000; };\n", f->path);
	d = csqd_start(conf);
	c = csqd_connect(d);
	for (i = 0; i < ROTATE_N; i++)
		OK(c, "ENQUEUE r%d TTL 0", i);
	wait_lines(f->path, 1, &l);
	lines_free(&l);
	redisFree(c);
	assert_int_equal(csqd_stop(d), 0);
	all_lines(f, &all, &rotated);
	/* About 100 bytes a line: a file every 10 or 11. */
	assert_true(rotated >= ROTATE_N / 12);
	assert_int_equal(all.n, ROTATE_N);
	assert_ids_follow(&all, 1);
	lines_free(&all);
}

/*
 * A full disk, simulated by the file size limit (as test_http.c does for
 * the journal): csqd's RLIMIT_FSIZE at the record's size makes its writes
 * fail (EFBIG). The record is a report, not the state: replies keep
 * coming, the failure is logged once, the lines wait in memory, and once
 * the limit is lifted they are all written, in order, within a second.
 */
static void
test_full_disk_loses_nothing(void **state)
{
	struct rfx *f = *state;
	struct csqd *d = csqd_start(f->conf);
	redisContext *c = csqd_connect(d);
	struct rlimit was, full;
	struct lines l;
	struct stat st;
	int i;

	/* A record larger than csqd's log, whose lines must still go to
	 * its file under the same limit. */
	for (i = 0; i < FULL_BEFORE; i++)
		redisAppendCommand(c, "ENQUEUE before%d TTL 0", i);
	for (i = 0; i < FULL_BEFORE; i++) {
		redisReply *r;

		assert_int_equal(redisGetReply(c, (void **)&r), REDIS_OK);
		freeReplyObject(r);
	}
	wait_lines(f->path, FULL_BEFORE, &l);
	lines_free(&l);
	assert_int_equal(stat(f->path, &st), 0);
	assert_int_equal(prlimit(d->pid, RLIMIT_FSIZE, NULL, &was), 0);
	full.rlim_cur = (rlim_t)st.st_size;
	full.rlim_max = was.rlim_max;
	assert_int_equal(prlimit(d->pid, RLIMIT_FSIZE, &full, NULL), 0);
	for (i = 0; i < FULL_DURING; i++)
		OK(c, "ENQUEUE full%d TTL 0", i);
	csqd_wait_log(d, "events are kept in memory");
	lines_read(f->path, &l);
	assert_int_equal(l.n, FULL_BEFORE);
	lines_free(&l);
	assert_int_equal(prlimit(d->pid, RLIMIT_FSIZE, &was, NULL), 0);
	csqd_wait_log(d, "writable again");
	wait_lines(f->path, FULL_BEFORE + FULL_DURING, &l);
	assert_int_equal(l.n, FULL_BEFORE + FULL_DURING);
	assert_ids_follow(&l, 1);
	assert_non_null(strstr(l.v[l.n - 1], "\"user\":\"full49\""));
	lines_free(&l);
	redisFree(c);
	assert_int_equal(csqd_stop(d), 0);
}

#ifdef CSQ_TEST_CLOCK
#define DAY_MS 86400000ULL
/* 2026-11-29T10:00:00Z */
#define T0_MS 1795946400000ULL

static void
test_rotation_by_day_and_retention(void **state)
{
	struct rfx *f = *state;
	struct csqd *d;
	redisContext *c;
	struct lines all;
	char conf[600], p[700];
	struct stat st;
	int day, rotated;

	snprintf(conf, sizeof(conf),
	         "record: { path = \"%s\"; keep_days = 2; };\n", f->path);
	d = csqd_start(conf);
	c = csqd_connect(d);
	for (day = 0; day < 4; day++) {
		OK(c, "DEBUG CLOCK %llu", T0_MS + day * DAY_MS);
		OK(c, "ENQUEUE d%d TTL 0", day);
	}
	redisFree(c);
	assert_int_equal(csqd_stop(d), 0);
	/* Day 0 rotated on day 1, day 1 on day 2, day 2 on day 3; at day
	 * 3's rotation day 0's file is more than 2 days old and goes. */
	snprintf(p, sizeof(p), "%s.20261129-100000", f->path);
	assert_int_equal(stat(p, &st), -1);
	snprintf(p, sizeof(p), "%s.20261130-100000", f->path);
	assert_int_equal(stat(p, &st), 0);
	snprintf(p, sizeof(p), "%s.20261201-100000", f->path);
	assert_int_equal(stat(p, &st), 0);
	all_lines(f, &all, &rotated);
	assert_int_equal(rotated, 2);
	assert_int_equal(all.n, 3);
	assert_ids_follow(&all, 2);
	assert_non_null(strstr(all.v[2], "\"user\":\"d3\""));
	lines_free(&all);
}
#endif

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_lines_are_the_published_events,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_acknowledged_survives_kill9,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_reply_never_ahead_of_record,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_torn_tail_cut_and_foreign_file_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_rotation_by_size, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_full_disk_loses_nothing, setup,
	                                    teardown),
#ifdef CSQ_TEST_CLOCK
	    cmocka_unit_test_setup_teardown(test_rotation_by_day_and_retention,
	                                    setup, teardown),
#endif
	};

	csqd_init(argc, argv);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
