/*
 * csq-bench: load generator and latency probe for csqd (and redis-server,
 * for the scenarios that make sense there). Every figure is printed on stdout
 * as one machine-readable "result scenario=... key=value ..." line; what a
 * person wants to watch goes to stderr.
 */
#ifndef BENCH_H
#define BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <hiredis/hiredis.h>

#define BENCH_ARGV_MAX      8  /* most words in one generated command */
#define BENCH_WORD_MAX      96 /* longest generated word, an id with a prefix */
#define BENCH_NS_PER_S      1000000000ULL
#define BENCH_NS_PER_US     1000ULL
#define BENCH_JSON_KEYS_MAX 8 /* keys one bench_json_strings call finds */

/* Everything the command line sets; each scenario reads what it needs. */
struct bench_opts {
	const char *host;
	int port;
	const char *label;  /* what is measured, e.g. csqd-memory, redis */
	pid_t pid;          /* csqd's pid for VmRSS, 0 = unknown */
	int clients;        /* concurrent connections */
	int pipeline;       /* commands sent per batch on each connection */
	long requests;      /* commands in a throughput run */
	double duration;    /* seconds of a latency run */
	int servicers;      /* match: servicers; storm: servicers lost */
	int capacity;       /* match: rooms per servicer */
	int offer;          /* match: the servicers' OFFER, 0 = none */
	int ttl;            /* storm: the last heartbeat's TTL, seconds */
	const char *depths; /* scale: comma-separated line depths */
	long where;         /* scale: WHERE round trips per depth */
	double timeout;     /* seconds before a scenario gives up */
};

/* A generated command: argv points into the words. */
struct bench_cmd {
	int argc;
	const char *argv[BENCH_ARGV_MAX];
	size_t argvlen[BENCH_ARGV_MAX];
	char words[BENCH_ARGV_MAX][BENCH_WORD_MAX];
};

/* Fills cmd with the i-th command of a run. */
typedef void (*bench_gen_fn)(long i, struct bench_cmd *cmd, void *arg);

/* Latency samples in nanoseconds. */
struct bench_samples {
	uint64_t *v;
	size_t n;
	size_t cap;
	int sorted;
};

/* A piece of a message, where it lies: not copied, not NUL-terminated. */
struct bench_span {
	const char *p; /* NULL: not there */
	size_t len;
};

/* What a throughput or latency run did. */
struct bench_run {
	long ops;
	long errors;
	double seconds;
	double ops_per_sec;
	char first_error[128];
};

/* util.c */
uint64_t bench_now_ns(void);
void bench_say(const char *, ...) __attribute__((format(printf, 1, 2)));
void bench_fatalx(const char *, ...)
    __attribute__((format(printf, 1, 2), noreturn));
void bench_cmd_set(struct bench_cmd *, int, const char *, ...)
    __attribute__((format(printf, 3, 4)));
void bench_samples_add(struct bench_samples *, uint64_t);
double bench_samples_pct_us(struct bench_samples *, double);
void bench_samples_free(struct bench_samples *);

/* json.c: csqd's events read in one pass. */
int bench_json_strings(const char *, size_t, const char *const *, int,
                       struct bench_span *);
int bench_span_is(struct bench_span, const char *);

/* resp.c: commands written as RESP without a format. */
size_t bench_resp_ulong(char *, unsigned long long);
size_t bench_resp_cmd(char *, size_t, int, const char *const *, const size_t *);

/* drive.c: the asynchronous drivers over hiredis + libevent. */
int bench_drive_rate(const struct bench_opts *, int, int, long, bench_gen_fn,
                     void *, struct bench_run *);
int bench_drive_latency(const struct bench_opts *, int, double, long,
                        bench_gen_fn, void *, struct bench_samples *,
                        struct bench_run *);

/* sync.c: blocking helpers for setup and checks. */
redisContext *bench_sync_connect(const struct bench_opts *);
long bench_sync_pipeline(redisContext *, long, long, bench_gen_fn, void *);
long long bench_sync_int(redisContext *, const char *, const char *);
long long bench_sync_stat(redisContext *, const char *);
long bench_vmrss_kb(pid_t);

/* One file per scenario. */
int bench_enqueue(const struct bench_opts *);
int bench_zadd(const struct bench_opts *);
int bench_ping(const struct bench_opts *);
int bench_match(const struct bench_opts *);
int bench_scale(const struct bench_opts *);
int bench_storm(const struct bench_opts *);

#endif /* BENCH_H */
