/*
 * Integration test harness: see harness.h.
 */
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define START_TIMEOUT_MS  10000 /* the daemon must answer PING by then */
#define START_TRIES       5     /* ports tried when another took ours */
#define ENGINE_TIMEOUT_MS 10000 /* and its Redis engine be up by then */
#define STOP_TIMEOUT_MS   10000 /* and exit after SIGTERM by then */
#define CONNECT_TIMEOUT_S 5
#define READ_TIMEOUT_S    10
#define LIVE_MAX          64
#define REPR_BULK_MAX     300 /* longer bulk strings are shown cut */

#define REDISD_LIVE_MAX     16
#define REDISD_START_TRIES  5     /* a free port may be taken meanwhile */
#define REDISD_READY_MS     10000 /* redis-server must answer PING by then */
#define REDISD_STOP_MS      10000 /* and exit after SIGTERM by then */
#define REDISD_FALLBACK_BIN "/usr/bin/redis-server"

static const char *harness_bin;
static const char *harness_engine = "memory";
static struct csqd *harness_live[LIVE_MAX];
static int harness_started;
static pid_t harness_pid; /* the test program, not a forked child */
static struct redisd *redisd_live[REDISD_LIVE_MAX];
static struct redisd *redisd_shared;
static char redisd_bin[CSQD_PATH_MAX];

static void redisd_rmtree(const char *);

void
fail_at(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "%s:%d: ", file, line);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	_fail(file, line);
}

/*
 * An aborted test must not leave a daemon or a redis-server behind. A
 * forked child of the test that calls exit() must not kill them either.
 */
static void
harness_kill_all(void)
{
	struct redisd *r;
	int i;

	if (getpid() != harness_pid)
		return;
	for (i = 0; i < LIVE_MAX; i++) {
		if (harness_live[i] != NULL && harness_live[i]->running) {
			kill(harness_live[i]->pid, SIGKILL);
			waitpid(harness_live[i]->pid, NULL, 0);
			harness_live[i]->running = 0;
		}
	}
	for (i = 0; i < REDISD_LIVE_MAX; i++) {
		if ((r = redisd_live[i]) == NULL)
			continue;
		if (r->running) {
			kill(r->pid, SIGKILL);
			waitpid(r->pid, NULL, 0);
			r->running = 0;
		}
		redisd_rmtree(r->dir);
		redisd_live[i] = NULL;
		free(r);
	}
	redisd_shared = NULL;
}

void
csqd_init(int argc, char **argv)
{
	const char *e;

	if (argc > 1)
		harness_bin = argv[1];
	else
		harness_bin = getenv("CSQD");
	if (harness_bin == NULL || *harness_bin == '\0') {
		fprintf(stderr, "usage: %s /path/to/csqd (or set CSQD)\n",
		        argv[0]);
		exit(2);
	}
	/* One test or a few, by name (a cmocka pattern), when working on them.
	 */
	if ((e = getenv("CSQ_TEST_FILTER")) != NULL && *e != '\0')
		cmocka_set_test_filter(e);
	if (access(harness_bin, X_OK) != 0) {
		fprintf(stderr, "%s: not executable: %s\n", argv[0],
		        harness_bin);
		exit(2);
	}
	e = getenv("CSQ_TEST_ENGINE");
	if (e != NULL && *e != '\0')
		harness_engine = e;
	/* Raw-socket tests write to sockets the daemon has closed. */
	signal(SIGPIPE, SIG_IGN);
	harness_pid = getpid();
	atexit(harness_kill_all);

	/*
	 * The Redis engine needs a redis-server: one of the test program's
	 * own unless the caller names one. Each daemon still gets its own
	 * key prefix (harness_start).
	 */
	e = getenv("CSQ_TEST_REDIS_PORT");
	if (strcmp(harness_engine, "redis") == 0 && (e == NULL || *e == '\0')) {
		char port[16];

		if (redisd_binary() == NULL) {
			fprintf(stderr,
			        "%s: engine redis needs redis-server "
			        "(not in PATH nor " REDISD_FALLBACK_BIN
			        "); skipping\n",
			        argv[0]);
			exit(77);
		}
		redisd_shared = redisd_start(0);
		snprintf(port, sizeof(port), "%d", redisd_shared->port);
		setenv("CSQ_TEST_REDIS_PORT", port, 1);
		if (harness_no_functions())
			redisd_forbid_functions(redisd_shared);
	}
}

/*
 * CSQ_TEST_REDIS_FUNCTIONS=off: the suite runs with csqd calling its
 * script by EVALSHA, as on a Redis without functions, because the shared
 * redis-server's ACL forbids FUNCTION (csqd's FUNCTION LOAD then fails).
 */
int
harness_no_functions(void)
{
	const char *e = getenv("CSQ_TEST_REDIS_FUNCTIONS");

	return e != NULL && strcmp(e, "off") == 0;
}

void
redisd_forbid_functions(struct redisd *r)
{
	redisContext *c = redisd_connect(r);
	redisReply *rep =
	    cmd_at(__FILE__, __LINE__, c, "ACL SETUSER default -function");

	if (rep->type != REDIS_REPLY_STATUS || strcmp(rep->str, "OK") != 0)
		fail_at(__FILE__, __LINE__, "ACL SETUSER default -function: %s",
		        rep->str != NULL ? rep->str : "?");
	freeReplyObject(rep);
	redisFree(c);
}

const char *
csqd_binary(void)
{
	return harness_bin;
}

const char *
csqd_engine(void)
{
	return harness_engine;
}

void
sleep_ms(int ms)
{
	struct timespec ts;

	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (long)(ms % 1000) * 1000000L;
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void
write_file(const char *path, const char *text)
{
	FILE *f;

	f = fopen(path, "w");
	if (f == NULL)
		fail_at(__FILE__, __LINE__, "cannot write %s: %s", path,
		        strerror(errno));
	fputs(text, f);
	fclose(f);
}

/* Binds 127.0.0.1:0 to let the kernel pick a free port, then frees it. */
static int
harness_free_port(void)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	int fd, port;

	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd == -1)
		fail_at(__FILE__, __LINE__, "socket: %s", strerror(errno));
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    getsockname(fd, (struct sockaddr *)&sin, &len) == -1)
		fail_at(__FILE__, __LINE__, "bind: %s", strerror(errno));
	port = ntohs(sin.sin_port);
	close(fd);
	return port;
}

void
csqd_dump_log(struct csqd *d)
{
	char buf[4096];
	size_t n;
	FILE *f;

	f = fopen(d->log_path, "r");
	if (f == NULL)
		return;
	fprintf(stderr, "---- csqd log (%s) ----\n", d->log_path);
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		fwrite(buf, 1, n, stderr);
	fprintf(stderr, "---- end of csqd log ----\n");
	fclose(f);
}

void
csqd_rewrite_conf(struct csqd *d, const char *extra_conf)
{
	char *text;

	if (asprintf(&text, "%s%s\n", d->base_conf,
	             extra_conf != NULL ? extra_conf : "") == -1)
		abort();
	write_file(d->conf_path, text);
	free(text);
}

/* Any reply at all (even -NOAUTH) means the daemon is serving. */
static int
harness_answers(int port)
{
	struct timeval tv = {0, 200000};
	redisContext *c;
	redisReply *r;
	int ok = 0;

	c = redisConnectWithTimeout("127.0.0.1", port, tv);
	if (c == NULL)
		return 0;
	if (c->err == 0) {
		redisSetTimeout(c, tv);
		r = redisCommand(c, "PING");
		if (r != NULL) {
			ok = 1;
			freeReplyObject(r);
		}
	}
	redisFree(c);
	return ok;
}

/*
 * Whether process pid holds a socket listening on TCP port (IPv4). A free
 * port is picked before csqd binds it, so a test program running beside
 * this one may start its own daemon on the same port first; its PING
 * answers, and without this check the test would talk to that daemon
 * (seen once in CI: a test found the other's servicers, then its
 * connection reset when the other stopped).
 */
static int
port_owned_by(pid_t pid, int port)
{
	char line[512], path[300], link[64], want[64];
	unsigned long inodes[8], inode;
	unsigned int lport, state;
	size_t ninodes = 0, i;
	struct dirent *e;
	ssize_t n;
	int found = 0;
	DIR *dir;
	FILE *f;

	if ((f = fopen("/proc/net/tcp", "r")) == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL && ninodes < 8)
		if (sscanf(line,
		           " %*d: %*x:%x %*x:%*x %x %*x:%*x %*x:%*x %*x %*u "
		           "%*u %lu",
		           &lport, &state, &inode) == 3 &&
		    lport == (unsigned int)port && state == 0x0A /* LISTEN */)
			inodes[ninodes++] = inode;
	fclose(f);
	snprintf(path, sizeof(path), "/proc/%ld/fd", (long)pid);
	if (ninodes == 0 || (dir = opendir(path)) == NULL)
		return 0;
	while (!found && (e = readdir(dir)) != NULL) {
		snprintf(path, sizeof(path), "/proc/%ld/fd/%s", (long)pid,
		         e->d_name);
		if ((n = readlink(path, link, sizeof(link) - 1)) <= 0)
			continue;
		link[n] = '\0';
		for (i = 0; i < ninodes && !found; i++) {
			snprintf(want, sizeof(want), "socket:[%lu]", inodes[i]);
			found = strcmp(link, want) == 0;
		}
	}
	closedir(dir);
	return found;
}

#define HARNESS_UNIX    0x1 /* also a Unix socket and [::1] */
#define HARNESS_HTTP    0x2 /* http.listen on a free port */
#define HARNESS_NO_WAIT 0x4 /* do not wait for the Redis engine */

static struct csqd *harness_start(const char *, int, const char *,
                                  const char *);

struct csqd *
csqd_start(const char *extra_conf)
{
	return harness_start(extra_conf, 0, NULL, NULL);
}

struct csqd *
csqd_start_unix(const char *extra_conf)
{
	return harness_start(extra_conf, HARNESS_UNIX, NULL, NULL);
}

struct csqd *
csqd_start_http(const char *extra_conf)
{
	return harness_start(extra_conf, HARNESS_HTTP, NULL, NULL);
}

/* csqd on r with this prefix; flags: harness_start's. */
static struct csqd *
start_on_redis(struct redisd *r, const char *prefix, const char *extra_conf,
               int flags)
{
	char redis[512];

	snprintf(redis, sizeof(redis),
	         "redis: { host = \"127.0.0.1\"; port = %d; password = \"%s\"; "
	         "db = 0; prefix = \"%s\"; };\n",
	         r->port, r->password, prefix);
	return harness_start(extra_conf, flags, "redis", redis);
}

struct csqd *
csqd_start_redis(struct redisd *r, const char *prefix, const char *extra_conf)
{
	return start_on_redis(r, prefix, extra_conf, 0);
}

struct csqd *
csqd_start_redis_http(struct redisd *r, const char *prefix,
                      const char *extra_conf)
{
	return start_on_redis(r, prefix, extra_conf, HARNESS_HTTP);
}

struct csqd *
csqd_start_redis_conf(const char *redis_conf, const char *extra_conf)
{
	char redis[1024];

	snprintf(redis, sizeof(redis), "%s\n", redis_conf);
	return harness_start(extra_conf, HARNESS_NO_WAIT, "redis", redis);
}

/* The value of requirepass in the configuration text, or "". */
static void
harness_requirepass(const char *conf, char *out, size_t len)
{
	const char *p = strstr(conf, "requirepass");
	size_t n = 0;

	out[0] = '\0';
	if (p == NULL || (p = strchr(p, '"')) == NULL)
		return;
	for (p++; *p != '\0' && *p != '"' && n + 1 < len; p++)
		out[n++] = *p;
	out[n] = '\0';
}

/* Waits for text in d's log; fails the test if it does not come. */
void
csqd_wait_log(struct csqd *d, const char *text)
{
	int64_t deadline = now_ms() + ENGINE_TIMEOUT_MS;

	while (!file_contains(d->log_path, text)) {
		if (now_ms() > deadline) {
			csqd_dump_log(d);
			fail_at(__FILE__, __LINE__,
			        "csqd's log never said \"%s\"", text);
		}
		sleep_ms(10);
	}
}

void
csqd_wait_engine(struct csqd *d)
{
	struct timeval tv = {READ_TIMEOUT_S, 0};
	char conf[4096], pass[256], got[512];
	int64_t deadline = now_ms() + ENGINE_TIMEOUT_MS;
	redisContext *c;
	redisReply *r;
	FILE *f;
	size_t n;

	/* The file, not base_conf: extra_conf may set requirepass. */
	conf[0] = '\0';
	if ((f = fopen(d->conf_path, "r")) != NULL) {
		n = fread(conf, 1, sizeof(conf) - 1, f);
		conf[n] = '\0';
		fclose(f);
	}
	harness_requirepass(conf, pass, sizeof(pass));
	c = redisConnectWithTimeout("127.0.0.1", d->port, tv);
	if (c == NULL || c->err)
		fail_at(__FILE__, __LINE__, "connect to csqd port %d: %s",
		        d->port, c != NULL ? c->errstr : "out of memory");
	redisSetTimeout(c, tv);
	if (pass[0] != '\0') {
		r = cmd_at(__FILE__, __LINE__, c, "AUTH %s", pass);
		freeReplyObject(r);
	}
	for (;;) {
		r = cmd_at(__FILE__, __LINE__, c, "QLEN default");
		reply_repr(r, got, sizeof(got));
		if (r->type != REDIS_REPLY_ERROR ||
		    strncmp(r->str, "TRYAGAIN", 8) != 0) {
			freeReplyObject(r);
			break;
		}
		freeReplyObject(r);
		if (now_ms() > deadline) {
			csqd_dump_log(d);
			fail_at(__FILE__, __LINE__,
			        "csqd's engine not up within %d ms: %s",
			        ENGINE_TIMEOUT_MS, got);
		}
		sleep_ms(10);
	}
	redisFree(c);
}

/*
 * engine NULL: the test program's engine; redis_conf NULL: the harness's
 * own redis group (shared redis-server, a prefix of this daemon's own).
 */
static struct csqd *
harness_start(const char *extra_conf, int flags, const char *engine,
              const char *redis_conf)
{
	char unix_listen[CSQD_PATH_MAX + 64] = "", http_listen[64] = "";
	struct csqd *d;
	int64_t deadline;
	int fd, i, status, tries = 0;
	char *redis = NULL;
	const char *rport;

	d = calloc(1, sizeof(*d));
	if (d == NULL)
		abort();
	snprintf(d->dir, sizeof(d->dir), "/tmp/csqd-it.XXXXXX");
	if (mkdtemp(d->dir) == NULL)
		fail_at(__FILE__, __LINE__, "mkdtemp: %s", strerror(errno));
	snprintf(d->conf_path, sizeof(d->conf_path), "%s/csqd.conf", d->dir);
	snprintf(d->log_path, sizeof(d->log_path), "%s/csqd.log", d->dir);
again:
	d->port = harness_free_port();
	if (flags & HARNESS_HTTP) {
		/* Two free ports in a row may come out the same. */
		while ((d->http_port = harness_free_port()) == d->port)
			;
		snprintf(http_listen, sizeof(http_listen), "127.0.0.1:%d",
		         d->http_port);
	}
	if (flags & HARNESS_UNIX) {
		snprintf(d->unix_path, sizeof(d->unix_path), "%s/csqd.sock",
		         d->dir);
		snprintf(unix_listen, sizeof(unix_listen),
		         ", \"unix:%s\", \"[::1]:%d\"", d->unix_path, d->port);
	}

	/*
	 * The HTTP listener is off so that tests run in parallel do not fight
	 * over its default port; with the Redis engine every daemon gets its
	 * own key prefix, so runs do not see each other's state.
	 */
	if (engine == NULL)
		engine = harness_engine;
	if (redis_conf != NULL) {
		if ((redis = strdup(redis_conf)) == NULL)
			abort();
	} else if (strcmp(engine, "redis") == 0) {
		rport = getenv("CSQ_TEST_REDIS_PORT");
		if (asprintf(&redis,
		             "redis: { host = \"127.0.0.1\"; port = %s; "
		             "prefix = \"csqit%ldx%d\"; };\n",
		             rport != NULL ? rport : "6379", (long)getpid(),
		             harness_started) == -1)
			abort();
	}
	snprintf(d->base_conf, sizeof(d->base_conf),
	         "listen = [ \"127.0.0.1:%d\"%s ];\n"
	         "engine = \"%s\";\n"
	         "http: { listen = \"%s\"; };\n"
	         "%s",
	         d->port, unix_listen, engine, http_listen,
	         redis != NULL ? redis : "");
	free(redis);
	redis = NULL;
	harness_started++;
	csqd_rewrite_conf(d, extra_conf);

	d->pid = fork();
	if (d->pid == -1)
		fail_at(__FILE__, __LINE__, "fork: %s", strerror(errno));
	if (d->pid == 0) {
		fd = open(d->log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd != -1) {
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
		/* Dies with the test even if the test is SIGKILLed. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		signal(SIGPIPE, SIG_DFL);
		execl(harness_bin, harness_bin, "-c", d->conf_path,
		      (char *)NULL);
		fprintf(stderr, "exec %s: %s\n", harness_bin, strerror(errno));
		_exit(127);
	}
	d->exit_status = -1;
	d->running = 1;
	for (i = 0; i < LIVE_MAX && harness_live[i] != d; i++) {
		if (harness_live[i] == NULL) {
			harness_live[i] = d;
			break;
		}
	}

	deadline = now_ms() + START_TIMEOUT_MS;
	for (;;) {
		if (waitpid(d->pid, &status, WNOHANG) == d->pid) {
			d->running = 0;
			/* Another daemon took the port first: another one. */
			if (file_contains(d->log_path,
			                  "Address already in use") &&
			    ++tries < START_TRIES)
				goto again;
			csqd_dump_log(d);
			fail_at(
			    __FILE__, __LINE__,
			    "csqd died at startup (status 0x%x); config:\n%s%s",
			    status, d->base_conf,
			    extra_conf != NULL ? extra_conf : "");
		}
		if (harness_answers(d->port) && port_owned_by(d->pid, d->port))
			break;
		if (now_ms() > deadline) {
			csqd_dump_log(d);
			fail_at(
			    __FILE__, __LINE__,
			    "csqd did not answer PING on port %d within %d ms",
			    d->port, START_TIMEOUT_MS);
		}
		sleep_ms(20);
	}
	/* csqd answers PING before its Redis engine is connected. */
	if (strcmp(engine, "redis") == 0 && !(flags & HARNESS_NO_WAIT)) {
		csqd_wait_engine(d);
		if (redis_conf == NULL && harness_no_functions())
			csqd_wait_log(d, "calls by EVALSHA");
	}
	return d;
}

redisContext *
csqd_connect(struct csqd *d)
{
	struct timeval ctv = {CONNECT_TIMEOUT_S, 0};
	struct timeval rtv = {READ_TIMEOUT_S, 0};
	redisContext *c;

	c = redisConnectWithTimeout("127.0.0.1", d->port, ctv);
	if (c == NULL || c->err)
		fail_at(__FILE__, __LINE__, "connect to csqd port %d: %s",
		        d->port, c != NULL ? c->errstr : "out of memory");
	redisSetTimeout(c, rtv);
	return c;
}

int
csqd_alive(struct csqd *d)
{
	int status;

	if (!d->running)
		return 0;
	if (waitpid(d->pid, &status, WNOHANG) == d->pid) {
		d->running = 0;
		return 0;
	}
	return 1;
}

int
csqd_wait_exit(struct csqd *d, int timeout_ms)
{
	int64_t deadline = now_ms() + timeout_ms;
	int status;
	pid_t w;

	if (!d->running)
		return d->exit_status;
	while ((w = waitpid(d->pid, &status, WNOHANG)) == 0) {
		if (now_ms() > deadline)
			return -1;
		sleep_ms(10);
	}
	d->running = 0;
	if (w == d->pid && WIFEXITED(status))
		d->exit_status = WEXITSTATUS(status);
	else if (w == d->pid && WIFSIGNALED(status))
		d->exit_status = 128 + WTERMSIG(status);
	return d->exit_status;
}

/* A daemon that has exited: its files go, then d itself. */
static void
harness_forget(struct csqd *d)
{
	int i;

	for (i = 0; i < LIVE_MAX; i++)
		if (harness_live[i] == d)
			harness_live[i] = NULL;
	unlink(d->conf_path);
	unlink(d->log_path);
	if (d->unix_path[0] != '\0')
		unlink(d->unix_path);
	rmdir(d->dir);
	free(d);
}

int
csqd_stop(struct csqd *d)
{
	int64_t deadline;
	int status = 0, rc = -1;
	pid_t w;

	if (d == NULL)
		return -1;
	if (d->running) {
		kill(d->pid, SIGTERM);
		deadline = now_ms() + STOP_TIMEOUT_MS;
		while ((w = waitpid(d->pid, &status, WNOHANG)) == 0 &&
		       now_ms() < deadline)
			sleep_ms(10);
		if (w == 0) {
			fprintf(stderr, "csqd did not exit after SIGTERM\n");
			kill(d->pid, SIGKILL);
			waitpid(d->pid, &status, 0);
			rc = -1;
		} else if (WIFEXITED(status))
			rc = WEXITSTATUS(status);
		else if (WIFSIGNALED(status))
			rc = 128 + WTERMSIG(status);
		d->running = 0;
	} else if (d->exit_status >= 0)
		rc = d->exit_status; /* csqd_wait_exit saw it */
	else
		fprintf(stderr, "csqd had already exited\n");
	if (rc != 0) {
		fprintf(stderr, "csqd exit status %d\n", rc);
		csqd_dump_log(d);
	}
	harness_forget(d);
	return rc;
}

int
csqd_run(char *out, size_t outlen, const char *arg, ...)
{
	const char *argv[16];
	int p[2], argc = 0, status, rc;
	size_t used = 0;
	ssize_t n;
	struct pollfd pfd;
	int64_t deadline;
	va_list ap;
	pid_t pid;

	argv[argc++] = harness_bin;
	va_start(ap, arg);
	while (arg != NULL && argc < 15) {
		argv[argc++] = arg;
		arg = va_arg(ap, const char *);
	}
	va_end(ap);
	argv[argc] = NULL;

	if (pipe(p) == -1)
		fail_at(__FILE__, __LINE__, "pipe: %s", strerror(errno));
	pid = fork();
	if (pid == -1)
		fail_at(__FILE__, __LINE__, "fork: %s", strerror(errno));
	if (pid == 0) {
		close(p[0]);
		dup2(p[1], 1);
		dup2(p[1], 2);
		close(p[1]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execv(harness_bin, (char *const *)argv);
		_exit(127);
	}
	close(p[1]);
	deadline = now_ms() + START_TIMEOUT_MS;
	for (;;) {
		pfd.fd = p[0];
		pfd.events = POLLIN;
		if (poll(&pfd, 1, 100) == 1) {
			n = read(p[0], out + used, outlen - 1 - used);
			if (n <= 0)
				break;
			used += n;
			if (used == outlen - 1)
				break;
		}
		if (now_ms() > deadline) {
			kill(pid, SIGKILL);
			break;
		}
	}
	out[used] = '\0';
	close(p[0]);
	waitpid(pid, &status, 0);
	if (WIFEXITED(status))
		rc = WEXITSTATUS(status);
	else
		rc = 128 + WTERMSIG(status);
	return rc;
}

/* kill -9: no chance to flush or sync anything. Frees d. */
void
csqd_kill9(struct csqd *d)
{
	if (d->running) {
		kill(d->pid, SIGKILL);
		waitpid(d->pid, NULL, 0);
		d->running = 0;
	}
	harness_forget(d);
}

/* Private redis-servers. */

const char *
redisd_binary(void)
{
	const char *path, *p, *e;
	size_t n;

	if (redisd_bin[0] != '\0')
		return redisd_bin;
	path = getenv("PATH");
	for (p = path; p != NULL && *p != '\0'; p = *e ? e + 1 : e) {
		e = strchr(p, ':');
		if (e == NULL)
			e = p + strlen(p);
		n = (size_t)(e - p);
		if (n == 0 || n + sizeof("/redis-server") > sizeof(redisd_bin))
			continue;
		snprintf(redisd_bin, sizeof(redisd_bin), "%.*s/redis-server",
		         (int)n, p);
		if (access(redisd_bin, X_OK) == 0)
			return redisd_bin;
	}
	snprintf(redisd_bin, sizeof(redisd_bin), "%s", REDISD_FALLBACK_BIN);
	if (access(redisd_bin, X_OK) == 0)
		return redisd_bin;
	redisd_bin[0] = '\0';
	return NULL;
}

struct redisd *
redisd_shared_server(void)
{
	return redisd_shared;
}

static int
redisd_rm_one(const char *path, const struct stat *sb, int flag,
              struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	remove(path);
	return 0;
}

/* The server's directory and all that it wrote there (the AOF files). */
static void
redisd_rmtree(const char *dir)
{
	if (dir[0] != '\0')
		nftw(dir, redisd_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void
redisd_spawn(struct redisd *r)
{
	const char *argv[32];
	char port[16];
	int argc = 0, fd;

	snprintf(port, sizeof(port), "%d", r->port);
	argv[argc++] = redisd_binary();
	argv[argc++] = "--save";
	argv[argc++] = "";
	argv[argc++] = "--appendonly";
	argv[argc++] = "yes";
	argv[argc++] = "--appendfsync";
	argv[argc++] = "everysec";
	argv[argc++] = "--dir";
	argv[argc++] = r->dir;
	argv[argc++] = "--bind";
	argv[argc++] = "127.0.0.1";
	argv[argc++] = "--port";
	argv[argc++] = port;
	argv[argc++] = "--daemonize";
	argv[argc++] = "no";
	if (r->unix_path[0] != '\0') {
		argv[argc++] = "--unixsocket";
		argv[argc++] = r->unix_path;
		argv[argc++] = "--unixsocketperm";
		argv[argc++] = "700";
	}
	if (r->password[0] != '\0') {
		argv[argc++] = "--requirepass";
		argv[argc++] = r->password;
	}
	argv[argc] = NULL;

	r->pid = fork();
	if (r->pid == -1)
		fail_at(__FILE__, __LINE__, "fork: %s", strerror(errno));
	if (r->pid == 0) {
		/* Appended: a restart keeps the log of the earlier runs. */
		fd = open(r->log_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (fd != -1) {
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		signal(SIGPIPE, SIG_DFL);
		execv(argv[0], (char *const *)argv);
		fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	r->running = 1;
}

/* PONG, after AUTH when needed; LOADING (the AOF) is not ready yet. */
static int
redisd_ready(struct redisd *r)
{
	struct timeval tv = {0, 200000};
	char want[64];
	redisContext *c;
	redisReply *rep;
	int ok = 0;

	c = redisConnectWithTimeout("127.0.0.1", r->port, tv);
	if (c == NULL)
		return 0;
	if (c->err == 0) {
		redisSetTimeout(c, tv);
		if (r->password[0] != '\0') {
			rep = redisCommand(c, "AUTH %s", r->password);
			if (rep != NULL)
				freeReplyObject(rep);
		}
		rep = redisCommand(c, "PING");
		if (rep != NULL) {
			ok = rep->type == REDIS_REPLY_STATUS &&
			     strcmp(rep->str, "PONG") == 0;
			freeReplyObject(rep);
		}
		/* Ours, not another server that had the port first. */
		snprintf(want, sizeof(want), "process_id:%ld\r\n",
		         (long)r->pid);
		rep = ok ? redisCommand(c, "INFO server") : NULL;
		ok = rep != NULL && rep->type == REDIS_REPLY_STRING &&
		     strstr(rep->str, want) != NULL;
		if (rep != NULL)
			freeReplyObject(rep);
	}
	redisFree(c);
	return ok;
}

int
file_contains(const char *path, const char *text)
{
	static char buf[1 << 20];
	size_t n;
	FILE *f = fopen(path, "r");

	if (f == NULL)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return strcasestr(buf, text) != NULL;
}

int
count_in_file(const char *path, const char *text)
{
	static char buf[1 << 20];
	const char *p;
	size_t n;
	FILE *f;
	int count = 0;

	if ((f = fopen(path, "r")) == NULL)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	for (p = buf; (p = strstr(p, text)) != NULL; p += strlen(text))
		count++;
	return count;
}

void
csqd_limit_fds(struct csqd *d, redisContext *c, int extra, struct rlimit *was)
{
	struct rlimit low;
	struct dirent *e;
	char path[64];
	int open_fds = 0;
	DIR *dir;

	/* Counted before csqd accepted c, c would wait in the backlog behind
	 * the limit for good (seen in CI, under load: a PING timed out). */
	CHECK(c, "+PONG", "PING");
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)d->pid);
	assert_non_null(dir = opendir(path));
	while ((e = readdir(dir)) != NULL)
		open_fds += e->d_name[0] != '.';
	closedir(dir);
	assert_int_equal(prlimit(d->pid, RLIMIT_NOFILE, NULL, was), 0);
	low = *was;
	low.rlim_cur = (rlim_t)(open_fds + extra);
	assert_int_equal(prlimit(d->pid, RLIMIT_NOFILE, &low, NULL), 0);
}

long long
proc_cpu_ticks(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long ut, st;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* After the command name's closing parenthesis: state is field 3,
	 * utime and stime are 14 and 15. */
	if ((p = strrchr(buf, ')')) == NULL ||
	    sscanf(p + 2,
	           "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
	           &st) != 2)
		return -1;
	return (long long)(ut + st);
}

void
redisd_dump_log(struct redisd *r)
{
	char buf[4096];
	size_t n;
	FILE *f;

	f = fopen(r->log_path, "r");
	if (f == NULL)
		return;
	fprintf(stderr, "---- redis-server log (%s) ----\n", r->log_path);
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		fwrite(buf, 1, n, stderr);
	fprintf(stderr, "---- end of redis-server log ----\n");
	fclose(f);
}

/*
 * Waits until the server answers PING. 1 ready, 0 it exited because its
 * port was taken (the caller may try another), fails the test otherwise.
 */
static int
redisd_wait(struct redisd *r)
{
	int64_t deadline = now_ms() + REDISD_READY_MS;
	int status;

	for (;;) {
		if (waitpid(r->pid, &status, WNOHANG) == r->pid) {
			r->running = 0;
			if (file_contains(r->log_path,
			                  "Address already in use"))
				return 0;
			redisd_dump_log(r);
			fail_at(__FILE__, __LINE__,
			        "redis-server died at startup (status 0x%x)",
			        status);
		}
		if (redisd_ready(r))
			return 1;
		if (now_ms() > deadline) {
			redisd_dump_log(r);
			fail_at(__FILE__, __LINE__,
			        "redis-server did not answer PING on port %d "
			        "within %d ms",
			        r->port, REDISD_READY_MS);
		}
		sleep_ms(10);
	}
}

struct redisd *
redisd_start(int flags)
{
	struct redisd *r;
	int i, tries;

	if (redisd_binary() == NULL)
		fail_at(__FILE__, __LINE__, "no redis-server (PATH, %s)",
		        REDISD_FALLBACK_BIN);
	r = calloc(1, sizeof(*r));
	if (r == NULL)
		abort();
	r->flags = flags;
	snprintf(r->dir, sizeof(r->dir), "/tmp/csq-redis.XXXXXX");
	if (mkdtemp(r->dir) == NULL)
		fail_at(__FILE__, __LINE__, "mkdtemp: %s", strerror(errno));
	snprintf(r->log_path, sizeof(r->log_path), "%s/redis.log", r->dir);
	if (flags & REDISD_UNIX)
		snprintf(r->unix_path, sizeof(r->unix_path), "%s/redis.sock",
		         r->dir);
	if (flags & REDISD_PASS)
		snprintf(r->password, sizeof(r->password), "%s",
		         REDISD_PASSWORD);
	for (i = 0; i < REDISD_LIVE_MAX; i++) {
		if (redisd_live[i] == NULL) {
			redisd_live[i] = r;
			break;
		}
	}
	if (i == REDISD_LIVE_MAX)
		fail_at(__FILE__, __LINE__, "more than %d redis-servers",
		        REDISD_LIVE_MAX);
	for (tries = 0; tries < REDISD_START_TRIES; tries++) {
		r->port = harness_free_port();
		redisd_spawn(r);
		if (redisd_wait(r))
			return r;
	}
	redisd_dump_log(r);
	fail_at(__FILE__, __LINE__,
	        "redis-server found no free port in %d tries",
	        REDISD_START_TRIES);
	return NULL;
}

int
redisd_stop(struct redisd *r)
{
	int64_t deadline;
	int status = 0;
	pid_t w;

	if (!r->running)
		return -1;
	kill(r->pid, SIGTERM);
	deadline = now_ms() + REDISD_STOP_MS;
	while ((w = waitpid(r->pid, &status, WNOHANG)) == 0 &&
	       now_ms() < deadline)
		sleep_ms(10);
	r->running = 0;
	if (w == 0) {
		fprintf(stderr, "redis-server did not exit after SIGTERM\n");
		kill(r->pid, SIGKILL);
		waitpid(r->pid, &status, 0);
		return -1;
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + WTERMSIG(status);
}

void
redisd_kill9(struct redisd *r)
{
	if (!r->running)
		return;
	kill(r->pid, SIGKILL);
	waitpid(r->pid, NULL, 0);
	r->running = 0;
}

void
redisd_restart(struct redisd *r)
{
	if (r->running)
		redisd_stop(r);
	redisd_spawn(r);
	if (!redisd_wait(r)) {
		redisd_dump_log(r);
		fail_at(__FILE__, __LINE__,
		        "redis-server cannot get its port %d back", r->port);
	}
}

void
redisd_free(struct redisd *r)
{
	int i;

	if (r == NULL)
		return;
	redisd_kill9(r);
	for (i = 0; i < REDISD_LIVE_MAX; i++)
		if (redisd_live[i] == r)
			redisd_live[i] = NULL;
	if (r == redisd_shared)
		redisd_shared = NULL;
	redisd_rmtree(r->dir);
	free(r);
}

redisContext *
redisd_connect(struct redisd *r)
{
	struct timeval ctv = {CONNECT_TIMEOUT_S, 0};
	struct timeval rtv = {READ_TIMEOUT_S, 0};
	redisContext *c;
	redisReply *rep;

	c = redisConnectWithTimeout("127.0.0.1", r->port, ctv);
	if (c == NULL || c->err)
		fail_at(__FILE__, __LINE__,
		        "connect to redis-server port %d: %s", r->port,
		        c != NULL ? c->errstr : "out of memory");
	redisSetTimeout(c, rtv);
	if (r->password[0] != '\0') {
		rep = cmd_at(__FILE__, __LINE__, c, "AUTH %s", r->password);
		assert_status_at(__FILE__, __LINE__, rep, "OK");
		freeReplyObject(rep);
	}
	return c;
}

int
csqd_fx_setup(void **state, const char *extra_conf)
{
	struct csqd_fx *fx;

	fx = calloc(1, sizeof(*fx));
	if (fx == NULL)
		abort();
	*state = fx;
	fx->d = csqd_start(extra_conf);
	fx->c = csqd_connect(fx->d);
	return 0;
}

int
csqd_fx_setup_default(void **state)
{
	return csqd_fx_setup(state, "");
}

int
csqd_fx_teardown(void **state)
{
	struct csqd_fx *fx = *state;
	int rc;

	if (fx == NULL)
		return 0;
	if (fx->c != NULL)
		redisFree(fx->c);
	rc = csqd_stop(fx->d);
	free(fx);
	*state = NULL;
	if (rc != 0) {
		fprintf(stderr, "csqd exited with status %d (expected 0)\n",
		        rc);
		return -1;
	}
	return 0;
}

int
raw_connect(int port)
{
	struct sockaddr_in sin;
	int fd, one = 1;

	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd == -1)
		fail_at(__FILE__, __LINE__, "socket: %s", strerror(errno));
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1)
		fail_at(__FILE__, __LINE__, "connect: %s", strerror(errno));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* Send errors are ignored: the daemon may close on purpose mid-request. */
void
raw_send(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t n;

	while (len > 0) {
		n = send(fd, p, len, MSG_NOSIGNAL);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			return;
		}
		p += n;
		len -= n;
	}
}

void
raw_sends(int fd, const char *s)
{
	raw_send(fd, s, strlen(s));
}

size_t
raw_echo_request(char *buf, size_t cap, int size, char fill)
{
	size_t len =
	    (size_t)snprintf(buf, cap, "*2\r\n$4\r\nECHO\r\n$%d\r\n", size);

	assert_true(len + (size_t)size + 2 <= cap);
	memset(buf + len, fill, (size_t)size);
	memcpy(buf + len + size, "\r\n", 2);
	return len + (size_t)size + 2;
}

size_t
raw_read(int fd, char *buf, size_t cap, int idle_ms, int *closed)
{
	struct pollfd pfd;
	size_t used = 0;
	ssize_t n;

	*closed = 0;
	while (used < cap - 1) {
		pfd.fd = fd;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, idle_ms) <= 0)
			break;
		n = recv(fd, buf + used, cap - 1 - used, 0);
		if (n == 0 || (n == -1 && errno != EINTR)) {
			*closed = 1;
			break;
		}
		if (n > 0)
			used += n;
	}
	buf[used] = '\0';
	return used;
}

size_t
raw_read_n(int fd, char *buf, size_t want, int timeout_ms)
{
	struct pollfd pfd;
	int64_t deadline = now_ms() + timeout_ms;
	size_t used = 0;
	ssize_t n;
	int left;

	while (used < want) {
		left = (int)(deadline - now_ms());
		if (left <= 0)
			break;
		pfd.fd = fd;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, left) <= 0)
			break;
		n = recv(fd, buf + used, want - used, 0);
		if (n <= 0)
			break;
		used += n;
	}
	buf[used] = '\0';
	return used;
}

struct repr {
	char *buf;
	size_t len, used;
};

static void
repr_add(struct repr *r, const char *s, size_t n)
{
	if (r->used + n >= r->len)
		n = r->len - 1 - r->used;
	memcpy(r->buf + r->used, s, n);
	r->used += n;
	r->buf[r->used] = '\0';
}

/* Bulk strings are quoted with '; inside them ' and \\ are escaped. */
static void
repr_str(struct repr *r, const char *s, size_t n, int quoted)
{
	char tmp[8];
	size_t i;

	for (i = 0; i < n; i++) {
		if (i == REPR_BULK_MAX) {
			snprintf(tmp, sizeof(tmp), "...");
			repr_add(r, tmp, strlen(tmp));
			break;
		}
		if (quoted && (s[i] == '\'' || s[i] == '\\')) {
			tmp[0] = '\\';
			tmp[1] = s[i];
			repr_add(r, tmp, 2);
		} else if ((unsigned char)s[i] < 0x20 ||
		           (unsigned char)s[i] >= 0x7f) {
			snprintf(tmp, sizeof(tmp), "\\x%02x",
			         (unsigned char)s[i]);
			repr_add(r, tmp, 4);
		} else
			repr_add(r, s + i, 1);
	}
}

static void
repr_reply(struct repr *r, const redisReply *rep)
{
	char tmp[32];
	size_t i;

	if (rep == NULL) {
		repr_add(r, "(null)", 6);
		return;
	}
	switch (rep->type) {
	case REDIS_REPLY_STATUS:
		repr_add(r, "+", 1);
		repr_str(r, rep->str, rep->len, 0);
		break;
	case REDIS_REPLY_ERROR:
		repr_add(r, "-", 1);
		repr_str(r, rep->str, rep->len, 0);
		break;
	case REDIS_REPLY_INTEGER:
		snprintf(tmp, sizeof(tmp), ":%lld", rep->integer);
		repr_add(r, tmp, strlen(tmp));
		break;
	case REDIS_REPLY_NIL:
		repr_add(r, "nil", 3);
		break;
	case REDIS_REPLY_STRING:
		repr_add(r, "'", 1);
		repr_str(r, rep->str, rep->len, 1);
		repr_add(r, "'", 1);
		break;
	case REDIS_REPLY_ARRAY:
		repr_add(r, "[", 1);
		for (i = 0; i < rep->elements; i++) {
			if (i > 0)
				repr_add(r, ",", 1);
			repr_reply(r, rep->element[i]);
		}
		repr_add(r, "]", 1);
		break;
	default:
		snprintf(tmp, sizeof(tmp), "?type%d", rep->type);
		repr_add(r, tmp, strlen(tmp));
		break;
	}
}

void
reply_repr(const redisReply *rep, char *buf, size_t len)
{
	struct repr r = {buf, len, 0};

	buf[0] = '\0';
	repr_reply(&r, rep);
}

redisReply *
reply_field(const redisReply *r, const char *name)
{
	size_t i;

	if (r == NULL || r->type != REDIS_REPLY_ARRAY)
		return NULL;
	for (i = 0; i + 1 < r->elements; i += 2) {
		if (r->element[i]->type == REDIS_REPLY_STRING &&
		    strcmp(r->element[i]->str, name) == 0)
			return r->element[i + 1];
	}
	return NULL;
}

static redisReply *
harness_vcmd(const char *file, int line, redisContext *c, const char *fmt,
             va_list ap)
{
	redisReply *r;

	r = redisvCommand(c, fmt, ap);
	if (r == NULL)
		fail_at(file, line, "command '%s' got no reply: %s", fmt,
		        c->errstr);
	return r;
}

redisReply *
cmd_at(const char *file, int line, redisContext *c, const char *fmt, ...)
{
	redisReply *r;
	va_list ap;

	va_start(ap, fmt);
	r = harness_vcmd(file, line, c, fmt, ap);
	va_end(ap);
	return r;
}

redisReply *
cmd_argv_at(const char *file, int line, redisContext *c, int argc,
            const char **argv, const size_t *argvlen)
{
	redisReply *r;

	r = redisCommandArgv(c, argc, argv, argvlen);
	if (r == NULL)
		fail_at(file, line, "command '%s' got no reply: %s", argv[0],
		        c->errstr);
	return r;
}

redisReply *
get_reply_at(const char *file, int line, redisContext *c)
{
	void *r = NULL;

	if (redisGetReply(c, &r) != REDIS_OK || r == NULL)
		fail_at(file, line, "no reply: %s", c->errstr);
	return r;
}

void
check_at(const char *file, int line, redisContext *c, const char *expect,
         const char *fmt, ...)
{
	char got[8192];
	redisReply *r;
	va_list ap;

	va_start(ap, fmt);
	r = harness_vcmd(file, line, c, fmt, ap);
	va_end(ap);
	reply_repr(r, got, sizeof(got));
	freeReplyObject(r);
	if (strcmp(got, expect) != 0)
		fail_at(file, line,
		        "command '%s'\n  expected %s\n  got      %s", fmt,
		        expect, got);
}

void
assert_repr_at(const char *file, int line, const redisReply *r,
               const char *expect)
{
	char got[8192];

	reply_repr(r, got, sizeof(got));
	if (strcmp(got, expect) != 0)
		fail_at(file, line, "reply\n  expected %s\n  got      %s",
		        expect, got);
}

void
assert_status_at(const char *file, int line, const redisReply *r,
                 const char *status)
{
	char got[8192];

	if (r != NULL && r->type == REDIS_REPLY_STATUS &&
	    strcmp(r->str, status) == 0)
		return;
	reply_repr(r, got, sizeof(got));
	fail_at(file, line, "expected status +%s, got %s", status, got);
}

void
assert_error_at(const char *file, int line, const redisReply *r,
                const char *text)
{
	char got[8192];

	if (r != NULL && r->type == REDIS_REPLY_ERROR &&
	    strcmp(r->str, text) == 0)
		return;
	reply_repr(r, got, sizeof(got));
	fail_at(file, line, "expected error -%s, got %s", text, got);
}

void
assert_error_prefix_at(const char *file, int line, const redisReply *r,
                       const char *prefix)
{
	char got[8192];

	if (r != NULL && r->type == REDIS_REPLY_ERROR &&
	    strncmp(r->str, prefix, strlen(prefix)) == 0)
		return;
	reply_repr(r, got, sizeof(got));
	fail_at(file, line, "expected error starting -%s, got %s", prefix, got);
}

void
assert_integer_at(const char *file, int line, const redisReply *r, long long v)
{
	char got[8192];

	if (r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer == v)
		return;
	reply_repr(r, got, sizeof(got));
	fail_at(file, line, "expected :%lld, got %s", v, got);
}

void
assert_bulk_at(const char *file, int line, const redisReply *r, const char *s)
{
	char got[8192];

	if (r != NULL && r->type == REDIS_REPLY_STRING && r->len == strlen(s) &&
	    memcmp(r->str, s, r->len) == 0)
		return;
	reply_repr(r, got, sizeof(got));
	fail_at(file, line, "expected bulk '%s', got %s", s, got);
}

long long
field_int_at(const char *file, int line, const redisReply *r, const char *name)
{
	char got[8192];
	redisReply *v;

	v = reply_field(r, name);
	if (v != NULL && v->type == REDIS_REPLY_INTEGER)
		return v->integer;
	reply_repr(r, got, sizeof(got));
	fail_at(file, line, "no integer field '%s' in %s", name, got);
	return -1;
}

int
sigterm_pipeline_at(const char *file, int line, struct csqd *d, int n, int late)
{
	redisContext *c = csqd_connect(d);
	redisReply *r;
	int i, acked = 0, done = 0;

	for (i = 0; i < n; i++)
		redisAppendCommand(c, "ENQUEUE t%d", i);
	while (!done)
		if (redisBufferWrite(c, &done) != REDIS_OK)
			fail_at(file, line, "writing the pipeline: %s",
			        c->errstr);
	if (late)
		sleep_ms(300);
	kill(d->pid, SIGTERM);
	if (late) {
		sleep_ms(100);
		redisAppendCommand(c, "PING");
		for (done = 0; !done;)
			if (redisBufferWrite(c, &done) != REDIS_OK)
				break;
	}
	while (redisGetReply(c, (void **)&r) == REDIS_OK) {
		if (field_int_at(file, line, r, "position") != acked + 1)
			fail_at(file, line, "reply %d out of order", acked);
		freeReplyObject(r);
		acked++;
	}
	if (c->err != REDIS_ERR_EOF)
		fail_at(file, line, "after %d replies: %s", acked, c->errstr);
	redisFree(c);
	print_message("SIGTERM: %d of %d pipelined ENQUEUEs answered\n", acked,
	              n);
	if (csqd_wait_exit(d, 10000) != 0 || csqd_stop(d) != 0)
		fail_at(file, line, "csqd did not exit with 0 after SIGTERM");
	return acked;
}

long long
info_field_at(const char *file, int line, redisContext *c, const char *name)
{
	redisReply *r = cmd_at(file, line, c, "INFO");
	char key[64], *v;
	long long n = -1;

	snprintf(key, sizeof(key), "\r\n%s:", name);
	if (r->type == REDIS_REPLY_STRING && (v = strstr(r->str, key)) != NULL)
		n = atoll(v + strlen(key));
	freeReplyObject(r);
	return n;
}

const char *
field_str_at(const char *file, int line, const redisReply *r, const char *name)
{
	char got[8192];
	redisReply *v;

	v = reply_field(r, name);
	if (v != NULL && v->type == REDIS_REPLY_STRING)
		return v->str;
	reply_repr(r, got, sizeof(got));
	fail_at(file, line, "no bulk field '%s' in %s", name, got);
	return NULL;
}

static void
harness_lower(char *dst, const char *src, size_t len)
{
	size_t i;

	for (i = 0; i + 1 < len && src[i] != '\0'; i++)
		dst[i] = tolower((unsigned char)src[i]);
	dst[i] = '\0';
}

void
subscribe_at(const char *file, int line, redisContext *c, const char *verb,
             int already, int n, const char **names)
{
	const char *argv[64];
	char kind[32], expect[512];
	redisReply *r;
	int i;

	argv[0] = verb;
	for (i = 0; i < n && i < 63; i++)
		argv[i + 1] = names[i];
	redisAppendCommandArgv(c, n + 1, argv, NULL);
	harness_lower(kind, verb, sizeof(kind));
	for (i = 0; i < n; i++) {
		r = get_reply_at(file, line, c);
		snprintf(expect, sizeof(expect), "['%s','%s',:%d]", kind,
		         names[i], already + i + 1);
		assert_repr_at(file, line, r, expect);
		freeReplyObject(r);
	}
}

static void
harness_copy(char *dst, size_t len, const redisReply *r)
{
	snprintf(dst, len, "%s", r->type == REDIS_REPLY_STRING ? r->str : "?");
}

void
msgs_collect_at(const char *file, int line, redisContext *c, struct msgs *m)
{
	char got[8192];
	redisReply *r;
	struct msg *x;

	m->n = 0;
	redisAppendCommand(c, "PING");
	for (;;) {
		r = get_reply_at(file, line, c);
		if (r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
		    r->element[0]->type == REDIS_REPLY_STRING) {
			if (strcmp(r->element[0]->str, "pong") == 0) {
				freeReplyObject(r);
				return;
			}
			if (m->n < MSGS_MAX &&
			    strcmp(r->element[0]->str, "message") == 0 &&
			    r->elements == 3) {
				x = &m->m[m->n++];
				snprintf(x->kind, sizeof(x->kind), "message");
				x->pattern[0] = '\0';
				harness_copy(x->channel, sizeof(x->channel),
				             r->element[1]);
				x->payload = strdup(r->element[2]->str);
				freeReplyObject(r);
				continue;
			}
			if (m->n < MSGS_MAX &&
			    strcmp(r->element[0]->str, "pmessage") == 0 &&
			    r->elements == 4) {
				x = &m->m[m->n++];
				snprintf(x->kind, sizeof(x->kind), "pmessage");
				harness_copy(x->pattern, sizeof(x->pattern),
				             r->element[1]);
				harness_copy(x->channel, sizeof(x->channel),
				             r->element[2]);
				x->payload = strdup(r->element[3]->str);
				freeReplyObject(r);
				continue;
			}
		}
		reply_repr(r, got, sizeof(got));
		freeReplyObject(r);
		fail_at(file, line, "unexpected push in subscribe mode: %s",
		        got);
	}
}

void
msgs_free(struct msgs *m)
{
	int i;

	for (i = 0; i < m->n; i++)
		free(m->m[i].payload);
	m->n = 0;
}

int
msgs_find(const struct msgs *m, int from, const char *event)
{
	char v[256], want[256];
	int i;

	snprintf(want, sizeof(want), "\"%s\"", event);
	for (i = from; i < m->n; i++) {
		if (json_value(m->m[i].payload, "event", v, sizeof(v)) == 0 &&
		    strcmp(v, want) == 0)
			return i;
	}
	return -1;
}

/* Skips a JSON string starting at its opening quote; returns past it. */
static const char *
json_skip_string(const char *p)
{
	for (p++; *p != '\0' && *p != '"'; p++)
		if (*p == '\\' && p[1] != '\0')
			p++;
	return *p == '"' ? p + 1 : p;
}

/* Skips one JSON value (string, array, object or scalar). */
static const char *
json_skip_value(const char *p)
{
	int depth = 0;

	if (*p == '"')
		return json_skip_string(p);
	if (*p == '[' || *p == '{') {
		do {
			if (*p == '"') {
				p = json_skip_string(p);
				continue;
			}
			if (*p == '[' || *p == '{')
				depth++;
			else if (*p == ']' || *p == '}')
				depth--;
			p++;
		} while (*p != '\0' && depth > 0);
		return p;
	}
	while (*p != '\0' && *p != ',' && *p != '}' && *p != ']' &&
	       !isspace((unsigned char)*p))
		p++;
	return p;
}

int
json_value(const char *json, const char *key, char *out, size_t outlen)
{
	const char *p = json, *k, *v, *e;
	size_t klen = strlen(key), n;

	while (isspace((unsigned char)*p))
		p++;
	if (*p != '{')
		return -1;
	p++;
	for (;;) {
		while (isspace((unsigned char)*p) || *p == ',')
			p++;
		if (*p != '"')
			return -1;
		k = p + 1;
		p = json_skip_string(p);
		n = (size_t)(p - k) - 1;
		while (isspace((unsigned char)*p))
			p++;
		if (*p != ':')
			return -1;
		p++;
		while (isspace((unsigned char)*p))
			p++;
		v = p;
		e = json_skip_value(p);
		if (n == klen && memcmp(k, key, klen) == 0) {
			n = (size_t)(e - v);
			if (n >= outlen)
				n = outlen - 1;
			memcpy(out, v, n);
			out[n] = '\0';
			return 0;
		}
		p = e;
		if (*p == '\0' || p == v)
			return -1;
	}
}

void
assert_json_str_at(const char *file, int line, const char *json,
                   const char *key, const char *value)
{
	char v[1024], want[1024];

	snprintf(want, sizeof(want), "\"%s\"", value);
	if (json_value(json, key, v, sizeof(v)) != 0)
		fail_at(file, line, "no key \"%s\" in %s", key, json);
	if (strcmp(v, want) != 0)
		fail_at(file, line, "key \"%s\": expected %s, got %s in %s",
		        key, want, v, json);
}

long long
json_int_at(const char *file, int line, const char *json, const char *key)
{
	char v[1024], *end;
	long long n;

	if (json_value(json, key, v, sizeof(v)) != 0)
		fail_at(file, line, "no key \"%s\" in %s", key, json);
	errno = 0;
	n = strtoll(v, &end, 10);
	if (v[0] == '\0' || *end != '\0' || errno != 0)
		fail_at(file, line,
		        "key \"%s\": %s is not a JSON integer in %s", key, v,
		        json);
	return n;
}

void
assert_json_int_at(const char *file, int line, const char *json,
                   const char *key, long long value)
{
	long long n;

	n = json_int_at(file, line, json, key);
	if (n != value)
		fail_at(file, line, "key \"%s\": expected %lld, got %lld in %s",
		        key, value, n, json);
}

void
assert_json_has_at(const char *file, int line, const char *json,
                   const char *key)
{
	char v[1024];

	if (json_value(json, key, v, sizeof(v)) != 0)
		fail_at(file, line, "no key \"%s\" in %s", key, json);
}

void
assert_json_lacks_at(const char *file, int line, const char *json,
                     const char *key)
{
	char v[1024];

	if (json_value(json, key, v, sizeof(v)) == 0)
		fail_at(file, line, "unexpected key \"%s\" in %s", key, json);
}

/* The loss storm of harness.h. */

static void
storm_stat_is(const char *file, int line, const redisReply *r, const char *name,
              long long want)
{
	long long got = field_int_at(file, line, r, name);

	if (got != want)
		fail_at(file, line, "STATS %s: %lld, expected %lld", name, got,
		        want);
}

void
storm_begin_at(const char *file, int line, redisContext *c)
{
	redisReply *r;
	int i, n = 2 * (STORM_A + STORM_B) + 1;

	for (i = 0; i < STORM_A; i++)
		redisAppendCommand(
		    c, "HEARTBEAT a%04d CAPACITY 2 QUEUES q TTL 2", i);
	for (i = 0; i < STORM_B; i++)
		redisAppendCommand(
		    c, "HEARTBEAT b%03d CAPACITY 2 QUEUES q TTL 2", i);
	for (i = 0; i < STORM_A; i++)
		redisAppendCommand(c, "ENQUEUE u%04d QUEUE q", i);
	for (i = 0; i < STORM_B; i++)
		redisAppendCommand(c, "ENQUEUE v%03d QUEUE q TIER 2", i);
	redisAppendCommand(c, "HEARTBEAT L CAPACITY 3 QUEUES q TTL 60");
	while (n-- > 0) {
		r = get_reply_at(file, line, c);
		if (r->type == REDIS_REPLY_ERROR)
			fail_at(file, line, "storm setup: %s", r->str);
		freeReplyObject(r);
	}
	/* Every user in a room of its own, each a servicer's first, and
	 * nobody lost yet. */
	r = cmd_at(file, line, c, "STATS");
	storm_stat_is(file, line, r, "servicers", STORM_A + STORM_B + 1);
	storm_stat_is(file, line, r, "rooms_busy", STORM_A + STORM_B);
	storm_stat_is(file, line, r, "waiting", 0);
	freeReplyObject(r);
	check_at(file, line, c,
	         "['state','assigned','queue','q','room','b000/0','servicer',"
	         "'b000']",
	         "ENQUEUE v000");
}

void
storm_end_at(const char *file, int line, redisContext *c, int extra)
{
	redisReply *r;
	int64_t t0 = now_ms();

	for (;;) {
		r = cmd_at(file, line, c, "STATS");
		if (field_int_at(file, line, r, "servicers") == 1)
			break;
		freeReplyObject(r);
		if (now_ms() - t0 > 10000)
			fail_at(file, line,
			        "the servicers were not declared lost");
		sleep_ms(100);
	}
	storm_stat_is(file, line, r, "servicers_lost_total", STORM_A + STORM_B);
	storm_stat_is(file, line, r, "requeued_total", STORM_A + STORM_B);
	storm_stat_is(file, line, r, "matched_total", STORM_A + STORM_B + 3);
	storm_stat_is(file, line, r, "waiting", STORM_A + STORM_B - 3 + extra);
	storm_stat_is(file, line, r, "rooms_busy", 3);
	freeReplyObject(r);
	check_at(file, line, c,
	         "['state','assigned','queue','q','room','L/0','servicer','L']",
	         "ENQUEUE v000");
	check_at(file, line, c,
	         "['state','assigned','queue','q','room','L/1','servicer','L']",
	         "ENQUEUE v001");
	check_at(file, line, c,
	         "['state','assigned','queue','q','room','L/2','servicer','L']",
	         "ENQUEUE v002");
	r = cmd_at(file, line, c, "WHERE v003");
	if (field_int_at(file, line, r, "position") != 1 + extra)
		fail_at(file, line, "v003 is not at %d", 1 + extra);
	freeReplyObject(r);
	r = cmd_at(file, line, c, "WHERE u0000");
	if (field_int_at(file, line, r, "position") != 98 + extra)
		fail_at(file, line, "u0000 is not at %d", 98 + extra);
	freeReplyObject(r);
}
