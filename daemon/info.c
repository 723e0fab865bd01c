/*
 * INFO, as Redis 7 answers it: sections of "field:value" lines, each
 * section its own fields, chosen by name (several at once), or "default",
 * "all", "everything". The sections csqd has are Redis's where csqd has
 * the same thing (server, clients, memory, persistence, stats,
 * replication, cpu, commandstats, keyspace) and csq's own (csq: the
 * engine's counters). Those two need the engine's STATS, an engine call;
 * the rest is the daemon's own and is written at once.
 *
 * Only an admin sees it all (csq decision, issue 37): a frontend or a
 * servicer, which STATS refuses, gets the server section without the
 * process id and the configuration's path, and the csq section's engine
 * and whether it is up, never the counters; the other sections it asks
 * for are left out, as an unknown section is.
 */
#include "info.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <event2/buffer.h>
#include <event2/event.h>

#include "auth.h"
#include "client.h"
#include "command_queue.h"
#include "journal.h"
#include "metrics.h"
#include "pubsub.h"
#include "resp.h"
#include "server.h"
#include "util.h"

#define INFO_HUMAN_MAX 32

enum info_section {
	INFO_SERVER = 1 << 0,
	INFO_CLIENTS = 1 << 1,
	INFO_MEMORY = 1 << 2,
	INFO_PERSISTENCE = 1 << 3,
	INFO_STATS = 1 << 4,
	INFO_REPLICATION = 1 << 5,
	INFO_CPU = 1 << 6,
	INFO_COMMANDSTATS = 1 << 7,
	INFO_KEYSPACE = 1 << 8,
	INFO_CSQ = 1 << 9,
};

#define INFO_ALL     ((1 << 10) - 1)
#define INFO_DEFAULT (INFO_ALL & ~INFO_COMMANDSTATS)
/* The sections that need the engine's STATS. */
#define INFO_ENGINE (INFO_KEYSPACE | INFO_CSQ)
/* What a role other than admin sees (of them, less: info_public). */
#define INFO_PUBLIC (INFO_SERVER | INFO_CSQ)

static const struct {
	const char *name;
	unsigned bits;
} info_names[] = {
    {"server", INFO_SERVER},     {"clients", INFO_CLIENTS},
    {"memory", INFO_MEMORY},     {"persistence", INFO_PERSISTENCE},
    {"stats", INFO_STATS},       {"replication", INFO_REPLICATION},
    {"cpu", INFO_CPU},           {"commandstats", INFO_COMMANDSTATS},
    {"keyspace", INFO_KEYSPACE}, {"csq", INFO_CSQ},
    {"default", INFO_DEFAULT},   {"all", INFO_ALL},
    {"everything", INFO_ALL},
};

/* The allocator's count when built with AddressSanitizer, which keeps
 * glibc's malloc out of the picture. */
size_t __sanitizer_get_current_allocated_bytes(void) __attribute__((weak));

/* Bytes the heap holds for csqd (Redis's used_memory: the allocator's
 * count, not the resident size). */
static uint64_t
info_used_memory(void)
{
	if (__sanitizer_get_current_allocated_bytes != NULL)
		return __sanitizer_get_current_allocated_bytes();
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33)
	{
		struct mallinfo2 mi = mallinfo2();

		return (uint64_t)mi.uordblks + (uint64_t)mi.hblkhd;
	}
#else
	return 0;
#endif
}

/* Resident bytes, from /proc/self/statm. */
static uint64_t
info_rss(void)
{
	unsigned long long size = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f == NULL)
		return 0;
	if (fscanf(f, "%llu %llu", &size, &resident) != 2)
		resident = 0;
	fclose(f);
	return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* Redis's "human" form: 1.50M. */
static void
info_human(uint64_t n, char *buf, size_t len)
{
	static const char units[] = "BKMGTP";
	double v = (double)n;
	int u = 0;

	while (v >= 1024 && units[u + 1] != '\0') {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%lluB", (unsigned long long)n);
	else
		snprintf(buf, len, "%.2f%c", v, units[u]);
}

/* The first TCP port csqd listens on, 0 when none (Unix sockets only). */
static int
info_tcp_port(const struct config *cfg)
{
	struct config_addr a;
	int i;

	for (i = 0; i < cfg->nlisten; i++)
		if (config_parse_addr(cfg->listen[i], &a) == 0 && !a.is_unix)
			return a.port;
	return 0;
}

/* public: for a role other than admin, without the process id and the
 * configuration file's path. */
static void
info_server(struct evbuffer *b, struct server *s, int public)
{
	uint64_t up = (server_now_ms() - s->started_ms) / 1000;
	struct utsname u;

	if (uname(&u) != 0)
		memset(&u, 0, sizeof(u));
	evbuffer_add_printf(b,
	                    "# Server\r\n"
	                    "csq_version:%s\r\n"
	                    "redis_version:" CSQ_REDIS_VERSION "\r\n"
	                    "redis_mode:standalone\r\n"
	                    "os:%s %s %s\r\n"
	                    "arch_bits:%d\r\n"
	                    "multiplexing_api:%s\r\n",
	                    CSQ_VERSION, u.sysname, u.release, u.machine,
	                    (int)(sizeof(void *) * 8),
	                    event_base_get_method(s->base));
	if (!public)
		evbuffer_add_printf(b, "process_id:%ld\r\n", (long)getpid());
	evbuffer_add_printf(b,
	                    "tcp_port:%d\r\n"
	                    "uptime_in_seconds:%llu\r\n"
	                    "uptime_in_days:%llu\r\n",
	                    info_tcp_port(&s->cfg), (unsigned long long)up,
	                    (unsigned long long)(up / 86400));
	if (!public)
		evbuffer_add_printf(b, "config_file:%s\r\n",
		                    s->config_path != NULL ? s->config_path
		                                           : "");
	evbuffer_add_printf(b, "engine:%s\r\n", s->engine->ops->name);
}

static void
info_clients(struct evbuffer *b, struct server *s)
{
	uint64_t pubsub = 0, multi = 0, out = 0, max_in = 0, max_out = 0, n;
	struct client *c;

	TAILQ_FOREACH(c, &s->clients, entry) {
		if (c->state != CLIENT_ACTIVE && c->state != CLIENT_CLOSING)
			continue;
		pubsub += client_subscribed(c);
		multi += c->multi != NULL;
		n = client_pending(c);
		out += n;
		if (n > max_out)
			max_out = n;
		n = evbuffer_get_length(c->in);
		if (n > max_in)
			max_in = n;
	}
	evbuffer_add_printf(
	    b,
	    "# Clients\r\n"
	    "connected_clients:%llu\r\n"
	    "maxclients:%lld\r\n"
	    "client_recent_max_input_buffer:%llu\r\n"
	    "client_recent_max_output_buffer:%llu\r\n"
	    "blocked_clients:0\r\n"
	    "pubsub_clients:%llu\r\n"
	    "multi_clients:%llu\r\n"
	    "clients_input_bytes:%llu\r\n"
	    "clients_output_bytes:%llu\r\n",
	    (unsigned long long)s->nclients, (long long)s->cfg.max_clients,
	    (unsigned long long)max_in, (unsigned long long)max_out,
	    (unsigned long long)pubsub, (unsigned long long)multi,
	    (unsigned long long)s->input_total, (unsigned long long)out);
}

static void
info_memory(struct evbuffer *b, struct server *s)
{
	uint64_t used = info_used_memory(), rss = info_rss();
	char h_used[INFO_HUMAN_MAX], h_rss[INFO_HUMAN_MAX];
	struct rusage ru;

	info_human(used, h_used, sizeof(h_used));
	info_human(rss, h_rss, sizeof(h_rss));
	if (getrusage(RUSAGE_SELF, &ru) != 0)
		memset(&ru, 0, sizeof(ru));
	evbuffer_add_printf(
	    b,
	    "# Memory\r\n"
	    "used_memory:%llu\r\n"
	    "used_memory_human:%s\r\n"
	    "used_memory_rss:%llu\r\n"
	    "used_memory_rss_human:%s\r\n"
	    "used_memory_peak_rss:%llu\r\n"
	    "mem_allocator:%s\r\n"
	    "max_output_memory:%lld\r\n"
	    "max_input_memory:%lld\r\n",
	    (unsigned long long)used, h_used, (unsigned long long)rss, h_rss,
	    (unsigned long long)ru.ru_maxrss * 1024,
	    __sanitizer_get_current_allocated_bytes != NULL ? "asan" : "libc",
	    (long long)s->cfg.max_output_memory,
	    (long long)s->cfg.max_input_memory);
}

static void
info_persistence(struct evbuffer *b, struct server *s)
{
	static const char *const fsyncs[] = {"always", "everysec", "no"};

	evbuffer_add_printf(b,
	                    "# Persistence\r\n"
	                    "loading:0\r\n"
	                    "journal_enabled:%d\r\n",
	                    s->journal != NULL);
	if (s->journal != NULL)
		evbuffer_add_printf(
		    b,
		    "journal_path:%s\r\n"
		    "journal_fsync:%s\r\n"
		    "journal_bytes:%llu\r\n",
		    s->cfg.journal, fsyncs[s->cfg.fsync],
		    (unsigned long long)journal_size(s->journal));
}

static void
info_stats(struct evbuffer *b, struct server *s)
{
	evbuffer_add_printf(b,
	                    "# Stats\r\n"
	                    "total_connections_received:%llu\r\n"
	                    "total_commands_processed:%llu\r\n"
	                    "rejected_connections:%llu\r\n"
	                    "total_error_replies:%llu\r\n"
	                    "client_output_buffer_limit_disconnections:%llu\r\n"
	                    "client_query_buffer_limit_disconnections:%llu\r\n"
	                    "pubsub_channels:%zu\r\n"
	                    "pubsub_patterns:%zu\r\n",
	                    (unsigned long long)s->stats.connections_total,
	                    (unsigned long long)s->stats.commands_total,
	                    (unsigned long long)s->stats.rejected_total,
	                    (unsigned long long)s->stats.errors_total,
	                    (unsigned long long)s->stats.output_closed_total,
	                    (unsigned long long)s->stats.input_closed_total,
	                    pubsub_nchannels(s->pubsub),
	                    pubsub_npatterns(s->pubsub));
}

static void
info_cpu(struct evbuffer *b)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) != 0)
		memset(&ru, 0, sizeof(ru));
	evbuffer_add_printf(b,
	                    "# CPU\r\n"
	                    "used_cpu_sys:%ld.%06ld\r\n"
	                    "used_cpu_user:%ld.%06ld\r\n",
	                    (long)ru.ru_stime.tv_sec, (long)ru.ru_stime.tv_usec,
	                    (long)ru.ru_utime.tv_sec,
	                    (long)ru.ru_utime.tv_usec);
}

/* Redis's line per command; csqd counts every error reply of a command
 * as a failed call (it does not tell a rejection apart). */
static void
info_commandstats(struct evbuffer *b, struct server *s)
{
	uint64_t calls, usec, errors;
	const char *name;
	size_t i;

	evbuffer_add_printf(b, "# Commandstats\r\n");
	for (i = 0; i < metrics_ncommands(s->metrics); i++) {
		metrics_command_totals(s->metrics, i, &name, &calls, &usec,
		                       &errors);
		evbuffer_add_printf(
		    b,
		    "cmdstat_%s:calls=%llu,usec=%llu,usec_per_call=%.2f,"
		    "rejected_calls=0,failed_calls=%llu\r\n",
		    name, (unsigned long long)calls, (unsigned long long)usec,
		    calls > 0 ? (double)usec / (double)calls : 0.0,
		    (unsigned long long)errors);
	}
}

/*
 * Keyspace: what csq holds, in the shape of Redis's db0 line, so that
 * tools that count keys (redis-cli --stat) count something real: the
 * users (waiting and in rooms) and the servicers; "expires", those with
 * a deadline (waiting users and servicers).
 */
static void
info_keyspace(struct evbuffer *b, const struct csq_result *r)
{
	const struct csq_stats *st = &r->stats;

	evbuffer_add_printf(b, "# Keyspace\r\n");
	if (r->status == CSQ_OK)
		evbuffer_add_printf(
		    b, "db0:keys=%llu,expires=%llu,avg_ttl=0\r\n",
		    (unsigned long long)(st->waiting + st->rooms_busy +
		                         st->servicers),
		    (unsigned long long)(st->waiting + st->servicers));
}

/* public: for a role other than admin, the engine and whether it is up
 * (without a call: r is none then), no counter. */
static void
info_csq(struct evbuffer *b, struct server *s, const struct csq_result *r,
         int public)
{
	const struct csq_stats *st = &r->stats;
	int64_t rtt = csq_engine_rtt_us(s->engine);

	evbuffer_add_printf(b,
	                    "# csq\r\n"
	                    "engine:%s\r\n"
	                    "engine_up:%d\r\n",
	                    s->engine->ops->name,
	                    public ? s->engine->ops->up(s->engine)
	                           : r->status == CSQ_OK);
	if (public)
		return;
	if (rtt >= 0)
		evbuffer_add_printf(b, "redis_rtt_us:%lld\r\n", (long long)rtt);
	if (r->status != CSQ_OK)
		return;
	evbuffer_add_printf(b,
	                    "waiting:%llu\r\n"
	                    "servicers:%llu\r\n"
	                    "rooms_busy:%llu\r\n"
	                    "rooms_free:%llu\r\n"
	                    "enqueued_total:%llu\r\n"
	                    "matched_total:%llu\r\n"
	                    "abandoned_total:%llu\r\n"
	                    "requeued_total:%llu\r\n"
	                    "servicers_lost_total:%llu\r\n"
	                    "offers_total:%llu\r\n"
	                    "offers_declined_total:%llu\r\n"
	                    "offers_missed_total:%llu\r\n"
	                    "transferred_total:%llu\r\n",
	                    (unsigned long long)st->waiting,
	                    (unsigned long long)st->servicers,
	                    (unsigned long long)st->rooms_busy,
	                    (unsigned long long)st->rooms_free,
	                    (unsigned long long)st->enqueued_total,
	                    (unsigned long long)st->matched_total,
	                    (unsigned long long)st->abandoned_total,
	                    (unsigned long long)st->requeued_total,
	                    (unsigned long long)st->servicers_lost_total,
	                    (unsigned long long)st->offers_total,
	                    (unsigned long long)st->offers_declined_total,
	                    (unsigned long long)st->offers_missed_total,
	                    (unsigned long long)st->transferred_total);
}

/* Writes the sections asked for, in Redis's order, a blank line between
 * two; r: the engine's STATS, for the sections that need it. */
static void
info_write(struct client *c, struct evbuffer *out, unsigned want,
           const struct csq_result *r)
{
	struct server *s = c->server;
	struct evbuffer *b = evbuffer_new();
	int public = auth_role(c) != CONFIG_ROLE_ADMIN;
	size_t len;

	if (b == NULL)
		fatalx("out of memory");
#define SECTION(bit, call)                                                     \
	do {                                                                   \
		if (want & (bit)) {                                            \
			if (evbuffer_get_length(b) > 0)                        \
				evbuffer_add(b, "\r\n", 2);                    \
			call;                                                  \
		}                                                              \
	} while (0)
	if (public)
		want &= INFO_PUBLIC;
	SECTION(INFO_SERVER, info_server(b, s, public));
	SECTION(INFO_CLIENTS, info_clients(b, s));
	SECTION(INFO_MEMORY, info_memory(b, s));
	SECTION(INFO_PERSISTENCE, info_persistence(b, s));
	SECTION(INFO_STATS, info_stats(b, s));
	SECTION(INFO_REPLICATION,
	        evbuffer_add_printf(b, "# Replication\r\nrole:master\r\n"
	                               "connected_slaves:0\r\n"));
	SECTION(INFO_CPU, info_cpu(b));
	SECTION(INFO_COMMANDSTATS, info_commandstats(b, s));
	SECTION(INFO_CSQ, info_csq(b, s, r, public));
	SECTION(INFO_KEYSPACE, info_keyspace(b, r));
#undef SECTION
	len = evbuffer_get_length(b);
	resp_verbatim(out, c->proto,
	              len > 0 ? (const char *)evbuffer_pullup(b, -1) : "", len);
	evbuffer_free(b);
}

static void
info_render(struct client *c, struct evbuffer *out, const struct csq_result *r,
            void *arg)
{
	info_write(c, out, *(unsigned *)arg, r);
}

void
cmd_info(struct client *c, const struct resp_request *req)
{
	unsigned want = req->argc > 1 ? 0 : INFO_DEFAULT, *arg;
	struct csq_result none;
	struct csq_op op;
	size_t k;
	int i;

	/* As Redis 7: several sections at once; an unknown name adds
	 * nothing. */
	for (i = 1; i < req->argc; i++)
		for (k = 0; k < sizeof(info_names) / sizeof(info_names[0]); k++)
			if (strlen(info_names[k].name) == req->argvlen[i] &&
			    strncasecmp(info_names[k].name, req->argv[i],
			                req->argvlen[i]) == 0)
				want |= info_names[k].bits;
	if (!(want & INFO_ENGINE) || auth_role(c) != CONFIG_ROLE_ADMIN) {
		memset(&none, 0, sizeof(none));
		none.status = CSQ_ETRYAGAIN;
		info_write(c, client_output(c), want, &none);
		return;
	}
	memset(&op, 0, sizeof(op));
	op.code = CSQ_OP_STATS;
	op.ttl_s = -1;
	arg = csq_xmalloc(sizeof(*arg));
	*arg = want;
	command_call_render(c, &op, info_render, arg);
}
