/*
 * csq-bench: the benchmark scenarios of csqd, see docs/benchmarks.md.
 *
 *	csq-bench [options] enqueue|zadd|ping|match|scale|storm
 *
 * Results go to stdout, one "result scenario=..." line each; progress goes
 * to stderr. Exit status 0 when the scenario ran, 1 otherwise.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "redis_engine.h"

#define DEFAULT_PORT      7878
#define DEFAULT_CLIENTS   50
#define DEFAULT_REQUESTS  200000
#define DEFAULT_DURATION  5.0
#define DEFAULT_MATCH_SV  10
#define DEFAULT_STORM_SV  10000
#define DEFAULT_DEPTHS    "0,1000,100000,1000000"
#define DEFAULT_WHERE     20000
#define DEFAULT_TIMEOUT_S 300

struct scenario {
	const char *name;
	int (*run)(const struct bench_opts *);
	const char *what;
};

static const struct scenario scenarios[] = {
    {"enqueue", bench_enqueue, "ENQUEUE throughput at -c clients, -P depth"},
    {"zadd", bench_zadd, "ZADD throughput, the same way (for redis-server)"},
    {"ping", bench_ping, "PING round-trip latency, -c clients, -d seconds"},
    {"match", bench_match,
     "RELEASE-to-matched latency, --servicers x "
     "--capacity"},
    {"scale", bench_scale,
     "ENQUEUE/LEAVE rate, WHERE latency, memory at "
     "--depths"},
    {"storm", bench_storm,
     "--servicers lost at once: time until all "
     "users are back in line"},
    {NULL, NULL, NULL},
};

enum {
	OPT_LABEL = 256,
	OPT_PID,
	OPT_SERVICERS,
	OPT_CAPACITY,
	OPT_OFFER,
	OPT_TTL,
	OPT_DEPTHS,
	OPT_WHERE,
	OPT_TIMEOUT,
};

static const struct option options[] = {
    {"host", required_argument, NULL, 'h'},
    {"port", required_argument, NULL, 'p'},
    {"clients", required_argument, NULL, 'c'},
    {"pipeline", required_argument, NULL, 'P'},
    {"requests", required_argument, NULL, 'n'},
    {"duration", required_argument, NULL, 'd'},
    {"label", required_argument, NULL, OPT_LABEL},
    {"pid", required_argument, NULL, OPT_PID},
    {"servicers", required_argument, NULL, OPT_SERVICERS},
    {"capacity", required_argument, NULL, OPT_CAPACITY},
    {"offer", required_argument, NULL, OPT_OFFER},
    {"ttl", required_argument, NULL, OPT_TTL},
    {"depths", required_argument, NULL, OPT_DEPTHS},
    {"where", required_argument, NULL, OPT_WHERE},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"help", no_argument, NULL, 'H'},
    {NULL, 0, NULL, 0},
};

static void
usage(int status)
{
	const struct scenario *s;

	fprintf(
	    stderr,
	    "usage: csq-bench [options] scenario\n"
	    "  -h, --host H         server address (127.0.0.1)\n"
	    "  -p, --port N         server port (%d)\n"
	    "  -c, --clients N      connections (%d; ping: 1)\n"
	    "  -P, --pipeline N     commands per batch (1)\n"
	    "  -n, --requests N     commands per throughput run (%d)\n"
	    "  -d, --duration S     seconds of a latency run (%.0f)\n"
	    "      --label NAME     target= in the results (csqd)\n"
	    "      --pid PID        csqd's pid, for its VmRSS (scale)\n"
	    "      --servicers N    match: %d; storm: %d\n"
	    "      --capacity N     match: rooms per servicer (1)\n"
	    "      --offer S        match: servicers take offers of S s, "
	    "and ACCEPT (0)\n"
	    "      --ttl S          storm: the last heartbeat's TTL (1)\n"
	    "      --depths LIST    scale: line depths (%s)\n"
	    "      --where N        scale: WHERE round trips per depth (%d)\n"
	    "      --timeout S      give up after S seconds (%d)\n"
	    "scenarios:\n",
	    DEFAULT_PORT, DEFAULT_CLIENTS, DEFAULT_REQUESTS, DEFAULT_DURATION,
	    DEFAULT_MATCH_SV, DEFAULT_STORM_SV, DEFAULT_DEPTHS, DEFAULT_WHERE,
	    DEFAULT_TIMEOUT_S);
	for (s = scenarios; s->name != NULL; s++)
		fprintf(stderr, "  %-8s %s\n", s->name, s->what);
	exit(status);
}

/* A strictly positive integer option, or death with its name. */
static long
number(const char *name, const char *arg, long min, long max)
{
	char *end;
	long v;

	v = strtol(arg, &end, 10);
	if (end == arg || *end != '\0' || v < min || v > max)
		bench_fatalx("--%s: want a number from %ld to %ld, not \"%s\"",
		             name, min, max, arg);
	return v;
}

int
main(int argc, char *argv[])
{
	struct bench_opts o;
	const struct scenario *s;
	char *end;
	int ch, clients = 0, rc;

	memset(&o, 0, sizeof(o));
	o.host = "127.0.0.1";
	o.port = DEFAULT_PORT;
	o.label = "csqd";
	o.pipeline = 1;
	o.requests = DEFAULT_REQUESTS;
	o.duration = DEFAULT_DURATION;
	o.capacity = 1;
	o.ttl = 1;
	o.depths = DEFAULT_DEPTHS;
	o.where = DEFAULT_WHERE;
	o.timeout = DEFAULT_TIMEOUT_S;

	while ((ch = getopt_long(argc, argv, "h:p:c:P:n:d:", options, NULL)) !=
	       -1) {
		switch (ch) {
		case 'h':
			o.host = optarg;
			break;
		case 'p':
			o.port = (int)number("port", optarg, 1, 65535);
			break;
		case 'c':
			clients = (int)number("clients", optarg, 1, 10000);
			break;
		case 'P':
			o.pipeline = (int)number("pipeline", optarg, 1, 10000);
			break;
		case 'n':
			o.requests = number("requests", optarg, 1, 1000000000);
			break;
		case 'd':
			o.duration = strtod(optarg, &end);
			if (end == optarg || *end != '\0' || o.duration <= 0 ||
			    o.duration > 3600)
				bench_fatalx("--duration: want seconds, more "
				             "than 0 and at most 3600");
			break;
		case OPT_LABEL:
			o.label = optarg;
			break;
		case OPT_PID:
			o.pid = (pid_t)number("pid", optarg, 1, 1L << 30);
			break;
		case OPT_SERVICERS:
			o.servicers =
			    (int)number("servicers", optarg, 1, 1000000);
			break;
		case OPT_CAPACITY:
			o.capacity = (int)number("capacity", optarg, 1, 1000);
			break;
		case OPT_OFFER:
			o.offer = (int)number("offer", optarg, 0, 600);
			break;
		case OPT_TTL:
			o.ttl = (int)number("ttl", optarg, 1, 86400);
			break;
		case OPT_DEPTHS:
			o.depths = optarg;
			break;
		case OPT_WHERE:
			o.where = number("where", optarg, 1, 100000000);
			break;
		case OPT_TIMEOUT:
			o.timeout = (double)number("timeout", optarg, 1, 86400);
			break;
		case 'H':
			usage(0);
			break;
		default:
			usage(2);
		}
	}
	if (optind != argc - 1)
		usage(2);
	for (s = scenarios; s->name != NULL; s++)
		if (strcmp(s->name, argv[optind]) == 0)
			break;
	if (s->name == NULL) {
		fprintf(stderr, "csq-bench: unknown scenario \"%s\"\n",
		        argv[optind]);
		usage(2);
	}
	if (clients > 0)
		o.clients = clients;
	else
		o.clients = strcmp(s->name, "ping") == 0 ? 1 : DEFAULT_CLIENTS;
	if (o.servicers == 0)
		o.servicers = strcmp(s->name, "storm") == 0 ? DEFAULT_STORM_SV
		                                            : DEFAULT_MATCH_SV;
	rc = s->run(&o) == 0 ? 0 : 1;
	redis_reply_spares_free();
	return rc;
}
