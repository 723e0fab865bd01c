/* csqd: the customer-service queue matcher daemon. */
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

static void
usage(void)
{
	fprintf(stderr, "usage: csqd [-nv] [-c file]\n"
	                "  -c file  run with this configuration\n"
	                "  -n       check the configuration and exit\n"
	                "  -v       print the version and exit\n");
	exit(EX_USAGE);
}

int
main(int argc, char *argv[])
{
	struct config cfg;
	const char *path = NULL;
	int ch, check = 0, errors = 0;

	while ((ch = getopt(argc, argv, "c:nvh")) != -1) {
		switch (ch) {
		case 'c':
			path = optarg;
			break;
		case 'n':
			check = 1;
			break;
		case 'v':
			printf("csqd %s\n", CSQ_VERSION);
			return 0;
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();

	log_init();
	config_default(&cfg);
	/* A check (-n) is for a person at a terminal: the bare lines. */
	if (check) {
		if (path != NULL)
			errors = config_load(&cfg, path, stderr);
		if (errors == 0)
			printf("configuration OK\n");
		return errors == 0 ? 0 : EX_CONFIG;
	}
	main_hugepages(argv);
	if (path != NULL)
		errors = main_load(&cfg, path);
	if (errors > 0) {
		log_error("%d error%s in %s; not starting", errors,
		          errors == 1 ? "" : "s", path);
		return EX_CONFIG;
	}
	log_set_level(cfg.log_level);
	return server_run(&cfg, path);
}
