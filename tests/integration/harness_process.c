/*
 * The harness's processes: csqd started on a free port with a private
 * configuration, stopped, killed, restarted; private redis-servers for the
 * Redis engine; and everything either leaves behind, gone at exit.
 */
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <netinet/in.h>
#include <arpa/inet.h>

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

#define START_TIMEOUT_MS             10000 /* the daemon must answer PING by then */
#define START_TRIES                  5 /* ports tried when another took ours */
#define ENGINE_TIMEOUT_MS            10000 /* and its Redis engine be up by then */
#define STOP_TIMEOUT_MS              10000 /* and exit after SIGTERM by then */
#define CONNECT_TIMEOUT_S            5
#define READ_TIMEOUT_S               10
#define LIVE_MAX                     64
#define REDISD_LIVE_MAX              16
#define REDISD_START_TRIES           5 /* a free port may be taken meanwhile */
#define REDISD_READY_MS              10000 /* redis-server must answer PING by then */
#define REDISD_STOP_MS               10000 /* and exit after SIGTERM by then */
#define REDISD_FALLBACK_BIN          "/usr/bin/redis-server"
#define REDISD_SENTINEL_FALLBACK_BIN "/usr/bin/redis-sentinel"
#define REDISD_SENTINEL_FAILOVER_MS  3000 /* a Sentinel's failover-timeout */

static const char *harness_bin;
static const char *harness_engine = "memory";
static struct csqd *harness_live[LIVE_MAX];
static int harness_started;

static pid_t harness_pid; /* the test program, not a forked child */

static struct redisd *redisd_live[REDISD_LIVE_MAX];
static struct redisd *redisd_shared;
static char redisd_bin[CSQD_PATH_MAX];

static void redisd_rmtree(const char *);

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
	}
}

/* CSQ_TEST_REDIS_MODULE=<csq.so>, which ctest sets (the tests'
 * CMakeLists.txt): every redis-server started for csqd loads it. */
const char *
harness_module(void)
{
	const char *e = getenv("CSQ_TEST_REDIS_MODULE");

	return e != NULL && *e != '\0' ? e : NULL;
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

/* Settings of the http group, for the next start only. */
static const char *harness_http_conf = "";

struct csqd *
csqd_start_http_conf(const char *http_conf, const char *extra_conf)
{
	struct csqd *d;

	harness_http_conf = http_conf;
	d = harness_start(extra_conf, HARNESS_HTTP, NULL, NULL);
	harness_http_conf = "";
	return d;
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
	         "http: { listen = \"%s\"; %s%s };\n"
	         "%s",
	         d->port, unix_listen, engine, http_listen,
	         /* Fresh answers: tests compare them with what they just
	          * did (http.cache_ms has cases of its own). */
	         strstr(harness_http_conf, "cache_ms") ? "" : "cache_ms = 0; ",
	         harness_http_conf, redis != NULL ? redis : "");
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

/* redis-sentinel, beside redis-server or from PATH; NULL if missing. */
static const char *
redisd_sentinel_binary(void)
{
	static char bin[CSQD_PATH_MAX];
	const char *server = redisd_binary();
	const char *slash = server != NULL ? strrchr(server, '/') : NULL;

	if (slash != NULL) {
		snprintf(bin, sizeof(bin), "%.*s/redis-sentinel",
		         (int)(slash - server), server);
		if (access(bin, X_OK) == 0)
			return bin;
	}
	snprintf(bin, sizeof(bin), "%s", REDISD_SENTINEL_FALLBACK_BIN);
	return access(bin, X_OK) == 0 ? bin : NULL;
}

/* A Sentinel's configuration, which it rewrites as it learns: written
 * again at each start. */
static const char *
redisd_sentinel_conf(struct redisd *r)
{
	static char path[CSQD_PATH_MAX];
	char text[1024];

	snprintf(path, sizeof(path), "%s/sentinel.conf", r->dir);
	snprintf(text, sizeof(text),
	         "port %d\nbind 127.0.0.1\ndaemonize no\ndir %s\n"
	         "sentinel monitor %s 127.0.0.1 %d 1\n"
	         "sentinel down-after-milliseconds %s %d\n"
	         "sentinel failover-timeout %s %d\n",
	         r->port, r->dir, r->master_name, r->sentinel_of,
	         r->master_name, REDISD_SENTINEL_DOWN_MS, r->master_name,
	         REDISD_SENTINEL_FAILOVER_MS);
	write_file(path, text);
	return path;
}

static void
redisd_spawn(struct redisd *r)
{
	const char *argv[32];
	char port[16];
	int argc = 0, fd;

	snprintf(port, sizeof(port), "%d", r->port);
	if (r->sentinel_of != 0) {
		argv[argc++] = redisd_sentinel_binary();
		argv[argc++] = redisd_sentinel_conf(r);
		argv[argc] = NULL;
		goto spawn;
	}
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
	if (!(r->flags & REDISD_NO_MODULE)) {
		if (harness_module() == NULL)
			fail_at(__FILE__, __LINE__,
			        "CSQ_TEST_REDIS_MODULE names no csq.so (ctest "
			        "sets it): the Redis engine is the module");
		/* csq.so, with the clock that DEBUG CLOCK sets. */
		argv[argc++] = "--loadmodule";
		argv[argc++] = harness_module();
		if (!(r->flags & REDISD_MODULE_CLOCK))
			argv[argc++] = "debug-clock";
	}
	argv[argc] = NULL;
spawn:
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
		/* A module built with the sanitizers needs their runtimes
		 * first in redis-server (CSQ_TEST_REDIS_PRELOAD); a finding
		 * stops it (exit status not 0), leaks of Redis's own aside. */
		if (getenv("CSQ_TEST_REDIS_PRELOAD") != NULL &&
		    r->sentinel_of == 0) {
			setenv("LD_PRELOAD", getenv("CSQ_TEST_REDIS_PRELOAD"),
			       1);
			setenv("ASAN_OPTIONS",
			       "detect_leaks=0:abort_on_error=0:halt_on_error=1"
			       ":exitcode=66",
			       1);
			setenv("UBSAN_OPTIONS",
			       "print_stacktrace=1:halt_on_error=1", 1);
		}
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

long
proc_status_kb(pid_t pid, const char *field)
{
	char path[64], line[256];
	size_t flen = strlen(field);
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, field, flen) == 0 && line[flen] == ':') {
			kb = strtol(line + flen + 1, NULL, 10);
			break;
		}
	fclose(f);
	return kb;
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

/* A server of flags, or a Sentinel of master_port (0: none) and name. */
static struct redisd *
redisd_start_as(int flags, int master_port, const char *name)
{
	struct redisd *r;
	int i, tries;

	if (redisd_binary() == NULL)
		fail_at(__FILE__, __LINE__, "no redis-server (PATH, %s)",
		        REDISD_FALLBACK_BIN);
	if (master_port != 0 && redisd_sentinel_binary() == NULL)
		fail_at(__FILE__, __LINE__, "no redis-sentinel (%s)",
		        REDISD_SENTINEL_FALLBACK_BIN);
	r = calloc(1, sizeof(*r));
	if (r == NULL)
		abort();
	r->flags = flags;
	r->sentinel_of = master_port;
	if (name != NULL)
		snprintf(r->master_name, sizeof(r->master_name), "%s", name);
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

struct redisd *
redisd_start(int flags)
{
	return redisd_start_as(flags, 0, NULL);
}

struct redisd *
redisd_start_sentinel(int master_port, const char *name)
{
	return redisd_start_as(0, master_port, name);
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
