/*
 * Integration test harness: runs the real csqd on a free port with a private
 * configuration file, talks to it with hiredis or a raw socket, and checks
 * replies exactly. Every test program calls csqd_init(argc, argv) first;
 * argv[1] (or $CSQD) is the daemon binary and $CSQ_TEST_ENGINE the engine.
 */
#ifndef CSQ_TEST_HARNESS_H
#define CSQ_TEST_HARNESS_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <sys/types.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>

#define CSQD_PATH_MAX 512

struct csqd {
	pid_t pid;
	int port;
	int running;
	char dir[64]; /* private temporary directory */
	char conf_path[CSQD_PATH_MAX];
	char log_path[CSQD_PATH_MAX];  /* the daemon's stdout and stderr */
	char unix_path[CSQD_PATH_MAX]; /* "" unless started with a socket */
	char base_conf[1024];          /* listen, engine, redis prefix */
	int http_port;                 /* 0 unless started with HTTP */
	int exit_status;               /* csqd_wait_exit's, or -1 */
};

/* The fixture most tests use: a daemon and one connection to it. */
struct csqd_fx {
	struct csqd *d;
	redisContext *c;
};

void csqd_init(int argc, char **argv);
const char *csqd_binary(void);
const char *csqd_engine(void);

struct csqd *csqd_start(const char *extra_conf);
/* The same, also listening on a Unix socket (d->unix_path) and on
 * [::1] at the same port. */
struct csqd *csqd_start_unix(const char *extra_conf);
/* The same, with http.listen on a free port of 127.0.0.1 (d->http_port). */
struct csqd *csqd_start_http(const char *extra_conf);
/* The same with settings of the http group ("request_timeout = 1;"). */
struct csqd *csqd_start_http_conf(const char *http_conf,
                                  const char *extra_conf);
/* Rewrites the configuration file (same listen/engine) for a SIGHUP. */
void csqd_rewrite_conf(struct csqd *, const char *extra_conf);
redisContext *csqd_connect(struct csqd *);
/* SIGTERM, wait; returns the exit status (128 + signal when killed). */
int csqd_stop(struct csqd *);
int csqd_alive(struct csqd *);
/* Waits up to timeout_ms for d to exit by itself (no signal sent); its
 * exit status (128 + signal when killed), which csqd_stop then returns,
 * or -1 if it is still running. */
int csqd_wait_exit(struct csqd *, int timeout_ms);
/* Prints the daemon's log to stderr (on failures). */
void csqd_dump_log(struct csqd *);

/* kill -9 (nothing flushed, nothing synced), then frees d. */
void csqd_kill9(struct csqd *);

/*
 * Private redis-servers, for the Redis engine. With CSQ_TEST_ENGINE=redis
 * and no CSQ_TEST_REDIS_PORT, csqd_init starts one for the whole program
 * (redisd_shared_server()) and sets CSQ_TEST_REDIS_PORT; everything the
 * harness starts dies and its directory goes when the program exits.
 * Each server: 127.0.0.1 on a free port, its own temporary directory,
 * no RDB, append-only file fsynced every second, in the foreground.
 */
#define REDISD_UNIX 0x1 /* also a Unix socket: unix_path */
#define REDISD_PASS 0x2 /* requirepass REDISD_PASSWORD */
/* Every server loads csq.so (CSQ_TEST_REDIS_MODULE) with the clock of
 * DEBUG CLOCK; these load it with Redis's own clock (its deadlines on its
 * timer), or not at all. */
#define REDISD_MODULE_CLOCK 0x4
#define REDISD_NO_MODULE    0x8
#define REDISD_PASSWORD     "csq-it-secret"

struct redisd {
	pid_t pid;
	int port;
	int running;
	int flags;
	char dir[64];                  /* --dir: the append-only files */
	char log_path[CSQD_PATH_MAX];  /* its stdout and stderr */
	char unix_path[CSQD_PATH_MAX]; /* "" without REDISD_UNIX */
	char password[64];             /* "" without REDISD_PASS */
	/* A Sentinel (redisd_start_sentinel): the master it monitors. */
	int sentinel_of;
	char master_name[64];
};

/* redis-server from PATH, else /usr/bin/redis-server; NULL if neither. */
const char *redisd_binary(void);
/* Starts a server (REDISD_* flags) and waits until it answers PING. */
struct redisd *redisd_start(int flags);
/*
 * A Sentinel (Debian's redis-sentinel) on a free port, monitoring the
 * master on 127.0.0.1:master_port under name with a quorum of 1, which
 * judges a master down after REDISD_SENTINEL_DOWN_MS; stopped and freed
 * as a redisd.
 */
#define REDISD_SENTINEL_DOWN_MS 1000
struct redisd *redisd_start_sentinel(int master_port, const char *name);
/* SIGTERM (Redis syncs its append-only file), wait; the exit status. */
int redisd_stop(struct redisd *);
void redisd_kill9(struct redisd *);
/* Stops it if running, starts it again: same port, directory, options;
 * waits until it answers PING, so the append-only file is loaded. */
void redisd_restart(struct redisd *);
/* Kills it if running, removes its directory, frees it. */
void redisd_free(struct redisd *);
/* CSQ_TEST_REDIS_MODULE=<csq.so> (ctest sets it): every redis-server loads
 * the module (with debug-clock, unless REDISD_MODULE_CLOCK). */
const char *harness_module(void);
/* A synchronous connection over TCP, authenticated when needed. */
redisContext *redisd_connect(struct redisd *);
void redisd_dump_log(struct redisd *);
/* The server csqd_init started, or NULL. */
struct redisd *redisd_shared_server(void);

/* csq.so's replication (harness_replica.c), each within 8 s: replica
 * made a replica of master and its link up; every write of master on its
 * one replica (WAIT 1); key's CSQ.DIGEST on r into out; the next message
 * on a subscription that holds both texts (0: none came). */
void redisd_replica_of(struct redisd *replica, struct redisd *master);
void redisd_replicated(struct redisd *master);
void redisd_digest(struct redisd *r, const char *key, char *out, size_t cap);
int redis_wait_message(redisContext *sub, const char *a, const char *b);

/*
 * csqd with engine "redis" on r (TCP, r's password, db 0) and this key
 * prefix, whatever CSQ_TEST_ENGINE says; two daemons given the same r and
 * prefix share one state. Like every csqd_start* on the Redis engine, it
 * returns once the engine is up (state commands no longer TRYAGAIN).
 */
struct csqd *csqd_start_redis(struct redisd *r, const char *prefix,
                              const char *extra_conf);
/* The same, with http.listen on a free port (d->http_port). */
struct csqd *csqd_start_redis_http(struct redisd *r, const char *prefix,
                                   const char *extra_conf);
/* The same with the whole redis group given: "redis: { ... };". This one
 * does not wait for the engine (it may be meant never to come up). */
struct csqd *csqd_start_redis_conf(const char *redis_conf,
                                   const char *extra_conf);
/* Waits until QLEN is no longer TRYAGAIN (after AUTH if the configuration
 * has a requirepass); fails the test after 10 s. */
void csqd_wait_engine(struct csqd *);
void csqd_wait_log(struct csqd *, const char *text);

/* Runs csqd with arguments; output (stdout+stderr) into out. Exit status. */
int csqd_run(char *out, size_t outlen, const char *arg, ...);

/* Fixture helpers: start with extra configuration / stop and assert 0. */
int csqd_fx_setup(void **state, const char *extra_conf);
/* csqd_fx_setup with no extra configuration: the built-in defaults. */
int csqd_fx_setup_default(void **state);
int csqd_fx_teardown(void **state);

/* Writes a file (for configurations). */
void write_file(const char *path, const char *text);
/* 1 when the file's first MiB holds text (case-insensitive): log lines. */
int file_contains(const char *path, const char *text);
/* How many times the file's first MiB holds text (case-sensitive). */
int count_in_file(const char *path, const char *text);
/* User and system time of pid, in clock ticks (/proc/<pid>/stat). */
long long proc_cpu_ticks(pid_t pid);
/* A number field of /proc/<pid>/status (VmRSS, VmHWM in kB; Threads); -1
 * without it. */
long proc_status_kb(pid_t pid, const char *field);
struct rlimit;
/* Lowers d's RLIMIT_NOFILE to the descriptors it has open plus extra; the
 * limit it had goes to *was, for prlimit to give back. A PING on c first
 * makes sure c's connection is one of them (accepted, not in the backlog). */
void csqd_limit_fds(struct csqd *d, redisContext *c, int extra,
                    struct rlimit *was);
void sleep_ms(int ms);
int64_t now_ms(void);

/* Raw sockets, for requests hiredis would refuse to send. */
int raw_connect(int port);
/* A connection whose receive buffer is rcv bytes (set before the
 * connect, so that the window stays small): what csqd sends waits in
 * csqd. */
int raw_connect_small(int port, int rcv);
/* GET path over HTTP/1.0 on a new connection: the whole answer, its
 * head included, NUL-terminated (freed by the caller). */
char *http_get(int port, const char *path);
void raw_send(int fd, const void *buf, size_t len);
void raw_sends(int fd, const char *s);
/* An ECHO of size bytes of fill into buf (cap at least size + 64); its
 * length. */
size_t raw_echo_request(char *buf, size_t cap, int size, char fill);
/*
 * Reads until the peer closes or nothing arrives for idle_ms. Returns the
 * length read (NUL-terminated in buf); *closed tells whether EOF was seen.
 */
size_t raw_read(int fd, char *buf, size_t cap, int idle_ms, int *closed);
/*
 * Reads until the text until has arrived (RAW_REPLY_MS at most: a reply
 * may be slow on a busy machine, and waiting for it costs nothing when it
 * comes), then on until the peer closes or nothing more arrives for
 * idle_ms; "" waits idle_ms from the start. As raw_read otherwise.
 */
#define RAW_REPLY_MS 10000
size_t raw_read_until(int fd, char *buf, size_t cap, const char *until,
                      int idle_ms, int *closed);
/* Reads until exactly want bytes arrived (or timeout_ms). */
size_t raw_read_n(int fd, char *buf, size_t want, int timeout_ms);

/* A compact rendering of a reply: +OK -ERR x :1 "bulk" nil [a,b]. */
void reply_repr(const redisReply *, char *buf, size_t len);
/* The value after field name in a flat field/value array, or NULL. */
redisReply *reply_field(const redisReply *, const char *name);

redisReply *cmd_at(const char *file, int line, redisContext *, const char *fmt,
                   ...);
redisReply *cmd_argv_at(const char *file, int line, redisContext *, int argc,
                        const char **argv, const size_t *argvlen);
redisReply *get_reply_at(const char *file, int line, redisContext *);
void check_at(const char *file, int line, redisContext *, const char *expect,
              const char *fmt, ...);
void assert_repr_at(const char *file, int line, const redisReply *,
                    const char *expect);
void assert_status_at(const char *file, int line, const redisReply *,
                      const char *status);
void assert_error_at(const char *file, int line, const redisReply *,
                     const char *text);
void assert_error_prefix_at(const char *file, int line, const redisReply *,
                            const char *prefix);
void assert_integer_at(const char *file, int line, const redisReply *,
                       long long v);
void assert_bulk_at(const char *file, int line, const redisReply *,
                    const char *s);
long long field_int_at(const char *file, int line, const redisReply *,
                       const char *name);
const char *field_str_at(const char *file, int line, const redisReply *,
                         const char *name);
/* A field of INFO's text, as an integer; -1 when it is not there. */
long long info_field_at(const char *file, int line, redisContext *,
                        const char *name);

/*
 * Writes n ENQUEUEs (users t0, t1, ...) in one pipeline, sends csqd
 * SIGTERM, and reads the replies until csqd's end of the connection:
 * each in order, and the end a FIN, not a reset (which would destroy
 * replies not read yet). With late, it waits before the SIGTERM until
 * csqd has read and run them all (INFO's count of commands, on a second
 * connection), and sends one more command 100 ms after it, which a
 * closed socket would answer with a reset.
 * Waits for csqd to exit with 0; returns how many were answered. d is
 * still the caller's: csqd_stop(d) frees it and returns that status.
 */
int sigterm_pipeline_at(const char *file, int line, struct csqd *, int n,
                        int late);
#define sigterm_pipeline(d, n, late)                                           \
	sigterm_pipeline_at(__FILE__, __LINE__, (d), (n), (late))

/*
 * A loss storm larger than one call of the Redis engine's reaper (1000
 * deadlines). storm_begin logs in 1000 servicers a0000… with a user each
 * and 100 servicers b000… with a VIP each, all with a free room and a TTL
 * of STORM_TTL_S, then L with 3 free rooms and a TTL of 60 s. The caller
 * stops the daemons for STORM_PAST_MS, so that every deadline passes
 * before one reap; storm_end waits until only L is left and checks the
 * outcome of one pass: 1100 requeued once each, the 3 best (v000 to v002)
 * in L's rooms, the rest in line in order; and extra users waiting beside
 * them, ahead of them all (the caller's, of a tier above 2).
 */
#define STORM_A 1000 /* the a servicers and u users */
#define STORM_B 100  /* the b servicers and v users (tier 2) */
/* The a and b servicers' TTL: their 2201 pipelined commands and a STATS
 * must be done before the first deadline, or some are lost before the
 * storm: 0.1 s (memory) and 0.4 s (Redis) here at a load average of 5,
 * and more than the 2 s of old under one of 11 (docs/testing.md). */
#define STORM_TTL_S   5
#define STORM_PAST_MS (STORM_TTL_S * 1000 + 600)
void storm_begin_at(const char *file, int line, redisContext *);
void storm_end_at(const char *file, int line, redisContext *, int extra);
#define storm_begin(c)    storm_begin_at(__FILE__, __LINE__, (c))
#define storm_end(c, ext) storm_end_at(__FILE__, __LINE__, (c), (ext))

/* Runs a command, returns its reply (never NULL: fails the test instead). */
#define CMD(c, ...)          cmd_at(__FILE__, __LINE__, (c), __VA_ARGS__)
#define CMD_ARGV(c, n, v, l) cmd_argv_at(__FILE__, __LINE__, (c), (n), (v), (l))
#define GET_REPLY(c)         get_reply_at(__FILE__, __LINE__, (c))
/* Runs a command and compares reply_repr of its reply with expect, in
 * which ":?" stands for any integer. */
#define CHECK(c, expect, ...)                                                  \
	check_at(__FILE__, __LINE__, (c), (expect), __VA_ARGS__)
#define assert_repr(r, e)         assert_repr_at(__FILE__, __LINE__, (r), (e))
#define assert_reply_status(r, s) assert_status_at(__FILE__, __LINE__, (r), (s))
#define assert_reply_error(r, s)  assert_error_at(__FILE__, __LINE__, (r), (s))
#define assert_reply_error_prefix(r, s)                                        \
	assert_error_prefix_at(__FILE__, __LINE__, (r), (s))
#define assert_reply_integer(r, v)                                             \
	assert_integer_at(__FILE__, __LINE__, (r), (v))
#define assert_reply_bulk(r, s) assert_bulk_at(__FILE__, __LINE__, (r), (s))
#define FIELD_INT(r, n)         field_int_at(__FILE__, __LINE__, (r), (n))
#define FIELD_STR(r, n)         field_str_at(__FILE__, __LINE__, (r), (n))
#define INFO_FIELD(c, n)        info_field_at(__FILE__, __LINE__, (c), (n))

/* Pub/sub: messages collected on a subscribed connection. */
#define MSGS_MAX 512
struct msg {
	char kind[16];     /* message or pmessage */
	char pattern[128]; /* pmessage only */
	char channel[128];
	char *payload;
};
struct msgs {
	int n;
	struct msg m[MSGS_MAX];
};

/* Subscribes (verb SUBSCRIBE or PSUBSCRIBE) and checks the confirmations. */
void subscribe_at(const char *file, int line, redisContext *, const char *verb,
                  int already, int n, const char **names);
/*
 * Collects the messages pushed so far: sends PING and reads until its
 * ["pong",""]. Anything published before the PING arrived is included.
 */
void msgs_collect_at(const char *file, int line, redisContext *, struct msgs *);
void msgs_free(struct msgs *);
/* Index of the next message at or after from whose event is ev, or -1. */
int msgs_find(const struct msgs *, int from, const char *event);
#define SUBSCRIBE(c, n, names)                                                 \
	subscribe_at(__FILE__, __LINE__, (c), "SUBSCRIBE", 0, (n), (names))
#define PSUBSCRIBE(c, n, names)                                                \
	subscribe_at(__FILE__, __LINE__, (c), "PSUBSCRIBE", 0, (n), (names))
#define MSGS_COLLECT(c, m) msgs_collect_at(__FILE__, __LINE__, (c), (m))
/* The messages' event names, space-separated and JSON-quoted, in order. */
void msgs_events(const struct msgs *, char *out, size_t len);
/* Prints the messages to stderr (on a failure). */
void msgs_dump(const struct msgs *);
/*
 * Runs cmd on c (none when NULL; an error reply fails), then collects what
 * sub received and checks the sequence of event names ("\"a\" \"b\"").
 */
void expect_events_at(const char *file, int line, redisContext *c,
                      redisContext *sub, struct msgs *m, const char *events,
                      const char *cmd);
#define EXPECT_EVENTS(c, sub, m, events, cmd)                                  \
	expect_events_at(__FILE__, __LINE__, (c), (sub), (m), (events), (cmd))

/* Minimal JSON: the raw value text of a top-level key ("x" with quotes). */
int json_value(const char *json, const char *key, char *out, size_t outlen);
void assert_json_str_at(const char *file, int line, const char *json,
                        const char *key, const char *value);
void assert_json_int_at(const char *file, int line, const char *json,
                        const char *key, long long value);
void assert_json_has_at(const char *file, int line, const char *json,
                        const char *key);
void assert_json_lacks_at(const char *file, int line, const char *json,
                          const char *key);
long long json_int_at(const char *file, int line, const char *json,
                      const char *key);
#define assert_json_str(j, k, v)                                               \
	assert_json_str_at(__FILE__, __LINE__, (j), (k), (v))
#define assert_json_int(j, k, v)                                               \
	assert_json_int_at(__FILE__, __LINE__, (j), (k), (v))
#define assert_json_has(j, k) assert_json_has_at(__FILE__, __LINE__, (j), (k))
#define assert_json_lacks(j, k)                                                \
	assert_json_lacks_at(__FILE__, __LINE__, (j), (k))
#define JSON_INT(j, k) json_int_at(__FILE__, __LINE__, (j), (k))

/* Fails the test at file:line with a formatted message. */
void fail_at(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
