/* csqd: the customer-service queue matcher daemon. */
#include <stdio.h>
#include <stdlib.h>
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
