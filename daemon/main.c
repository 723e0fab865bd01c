/* csqd: the customer-service queue matcher daemon. */
#include <sys/prctl.h>

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "csq.h"
#include "log.h"
#include "server.h"

#define EX_USAGE  64 /* sysexits.h: bad command line */
#define EX_CONFIG 78 /* sysexits.h: configuration error */

/*
 * Loads the file for a run: each error is logged (under systemd, at the
 * journal's error priority, so `journalctl -p err` shows why csqd did not
 * start). Returns the number of errors.
 */
static int
main_load(struct config *cfg, const char *path)
{
	char *report = NULL;
	size_t len = 0;
	FILE *err;
	int n;

	if ((err = open_memstream(&report, &len)) == NULL)
		fatal("open_memstream");
	n = config_load(cfg, path, err);
	fclose(err);
	log_lines(LOG_LVL_ERROR, report);
	free(report);
	return n;
}

/*
 * The users, their places in line and the user table are millions of small
 * objects on a heap of hundreds of megabytes, and under a hypervisor every
 * TLB miss on them costs a nested page walk. glibc's malloc keeps its heap
 * on transparent huge pages when its tunable glibc.malloc.hugetlb is 1,
 * which it reads only as a process starts: so csqd starts itself once
 * more, same pid, with it, unless GLIBC_TUNABLES already says what to do
 * about it (glibc.malloc.hugetlb=0 keeps csqd off huge pages) or the
 * kernel has them off. Redis keeps off them, since its forked snapshots
 * would copy 2 MiB pages; csqd never forks. If the exec fails, csqd runs
 * on as it is. docs/benchmarks.md has the measurements.
 */
static void
main_hugepages(char *argv[])
{
	const char *t = getenv("GLIBC_TUNABLES");
	char mode[64] = "", self[4096], *v;
	ssize_t n;
	FILE *f;

	if (t != NULL && strstr(t, "glibc.malloc.hugetlb") != NULL)
		return;
	if ((f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r"))) {
		if (fgets(mode, sizeof(mode), f) == NULL)
			mode[0] = '\0';
		fclose(f);
	}
	if (strstr(mode, "[never]") != NULL)
		return;
	if (asprintf(&v, "%s%sglibc.malloc.hugetlb=1", t != NULL ? t : "",
	             t != NULL && *t != '\0' ? ":" : "") < 0)
		return;
	/* By its own path, not /proc/self/exe: the process's name (ps,
	 * pidof, the journal's identifier) is the file's. */
	n = readlink("/proc/self/exe", self, sizeof(self));
	if (n > 0 && (size_t)n < sizeof(self) &&
	    setenv("GLIBC_TUNABLES", v, 1) == 0) {
		self[n] = '\0';
		execv(self, argv);
	}
	free(v);
}

/*
 * With engine "redis" the state is in redis-server, and csqd's heap is a
 * few megabytes of buffers that come and go (a view's slices, replies). On
 * huge pages such a heap does not shrink back after a burst: the trim
 * gives back the 4 KiB pages freed inside a 2 MiB one, and khugepaged
 * fills the holes again, +17 to +100 % of csqd's RSS (docs/benchmarks.md,
 * "csqd's RSS on csq.so: huge pages"). So once the configuration says the
 * engine, csqd turns transparent huge pages off for itself, which wins
 * over the MADV_HUGEPAGE of glibc's tunable; the re-exec of
 * main_hugepages stays as it is, before the file is read (an earlier try
 * that skipped it for the Redis engine is in docs/benchmarks.md). The
 * heap is still small then: config_load's allocations. A kernel that
 * refuses (before Linux 3.15) leaves them on, said at info level.
 */
static void
main_thp_off(const struct config *cfg)
{
	if (strcmp(cfg->engine, "redis") != 0)
		return;
	if (prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) != 0)
		log_info("engine redis: transparent huge pages stay on "
		         "(prctl PR_SET_THP_DISABLE: %s)",
		         strerror(errno));
}

/*
 * The command line: the short options of protocol.md (-c, -n, -v), each
 * with a long name, and -h. Long names are taken whole, never as a
 * prefix: a script that says --conf would break the day another option
 * starts with it. "+" stops at the first operand (csqd takes none), ":"
 * lets main_parse name a missing argument itself.
 */
#define MAIN_SHORT_OPTS "+:c:nhv"

static const struct option main_options[] = {
    {"config", required_argument, NULL, 'c'},
    {"check", no_argument, NULL, 'n'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'v'},
    {NULL, 0, NULL, 0},
};

/* What the command line asked for. */
struct main_args {
	const char *path; /* -c; NULL: the built-in defaults */
	int check;        /* -n */
};

static void
main_help(void)
{
	printf("usage: csqd [-c FILE]         serve, in the foreground\n"
	       "       csqd -n [-c FILE]      check the configuration, exit\n"
	       "       csqd -h | -v\n"
	       "\n"
	       "csqd is csq's customer-service queue matcher. It speaks RESP, "
	       "the Redis\n"
	       "protocol, on the addresses of its configuration "
	       "(127.0.0.1:7878 by default).\n"
	       "\n"
	       "  -c, --config FILE  the configuration file (libconfig "
	       "syntax); without it,\n"
	       "                     the built-in defaults\n"
	       "  -n, --check        check the configuration: print "
	       "\"configuration OK\" or\n"
	       "                     each error with its line, and exit 0 "
	       "or 78\n"
	       "  -h, --help         print this help and exit\n"
	       "  -v, --version      print the version and exit\n"
	       "\n"
	       "Signals: SIGHUP reloads the configuration; SIGTERM or "
	       "SIGINT stops.\n"
	       "Exit status: 0 after a stop, 64 for a bad command line, 78 "
	       "for an invalid\n"
	       "configuration, 1 when csqd cannot start otherwise.\n"
	       "The manual: man 8 csqd.\n");
}

/* A bad command line: what was wrong, where to look, exit 64. */
static void main_usage_error(const char *, ...)
    __attribute__((format(printf, 1, 2), noreturn));

static void
main_usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "csqd: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nusage: csqd [-n] [-c FILE] | -h | -v\n"
	                "Try 'csqd --help' for more.\n");
	exit(EX_USAGE);
}

/*
 * The option getopt_long has just taken, as the user wrote it but without
 * any "=value", for the messages: a long one from its word (the one before
 * its value when that came as a word of its own), a short one from c.
 */
static const char *
main_word(char *argv[], int c, char *buf, size_t len)
{
	const char *w = argv[optind - 1];
	size_t n;

	if (optarg != NULL && optarg == w && optind >= 2)
		w = argv[optind - 2];
	if (strncmp(w, "--", 2) != 0) {
		snprintf(buf, len, "-%c", c);
		return buf;
	}
	n = strcspn(w, "=");
	if (n >= len)
		n = len - 1;
	memcpy(buf, w, n);
	buf[n] = '\0';
	return buf;
}

/* How many long options start with what follows the word's "--". */
static int
main_prefixed(const char *word)
{
	const struct option *o;
	int n = 0;

	for (o = main_options; o->name != NULL; o++)
		if (strncmp(o->name, word + 2, strlen(word + 2)) == 0)
			n++;
	return n;
}

/* A '?' from getopt_long: which of its three cases, in words. */
static void
main_bad_option(char *argv[])
{
	char word[64];

	main_word(argv, optopt, word, sizeof(word));
	if (word[1] != '-')
		main_usage_error("unknown option '%s'", word);
	/* A long option's optopt is its letter when it was given a value. */
	if (optopt != 0)
		main_usage_error("option '%s' takes no value", word);
	if (main_prefixed(word) > 1)
		main_usage_error("ambiguous option '%s'", word);
	main_usage_error("unknown option '%s'", word);
}

static void
main_parse(int argc, char *argv[], struct main_args *a)
{
	char word[64];
	int ch, idx;

	opterr = 0; /* the messages below say more than getopt's */
	for (;;) {
		idx = -1;
		ch = getopt_long(argc, argv, MAIN_SHORT_OPTS, main_options,
		                 &idx);
		if (ch == -1)
			break;
		/* getopt_long takes an unambiguous prefix; csqd does not. */
		if (idx >= 0 &&
		    strcmp(main_word(argv, ch, word, sizeof(word)) + 2,
		           main_options[idx].name) != 0)
			main_usage_error("unknown option '%s' (options are "
			                 "spelt in full: '--%s')",
			                 word, main_options[idx].name);
		switch (ch) {
		case 'c':
			a->path = optarg;
			break;
		case 'n':
			a->check = 1;
			break;
		case 'h':
			main_help();
			exit(0);
		case 'v':
			printf("csqd %s\n", CSQ_VERSION);
			exit(0);
		case ':':
			main_usage_error(
			    "option '%s' needs a file name",
			    main_word(argv, optopt, word, sizeof(word)));
			break;
		default:
			main_bad_option(argv);
		}
	}
	if (optind != argc)
		main_usage_error("unexpected argument '%s' (csqd takes none)",
		                 argv[optind]);
}

int
main(int argc, char *argv[])
{
	struct main_args a = {NULL, 0};
	static struct config cfg; /* large: not on the stack */
	int errors = 0;

	main_parse(argc, argv, &a);
	log_init();
	config_default(&cfg);
	/* A check (-n) is for a person at a terminal: the bare lines. */
	if (a.check) {
		if (a.path != NULL)
			errors = config_load(&cfg, a.path, stderr);
		if (errors == 0)
			printf("configuration OK\n");
		return errors == 0 ? 0 : EX_CONFIG;
	}
	main_hugepages(argv);
	if (a.path != NULL)
		errors = main_load(&cfg, a.path);
	if (errors > 0) {
		log_error("%d error%s in %s; not starting", errors,
		          errors == 1 ? "" : "s", a.path);
		return EX_CONFIG;
	}
	log_set_level(cfg.log_level);
	log_set_format(cfg.log_format);
	main_thp_off(&cfg);
	return server_run(&cfg, a.path);
}
