/*
 * The configuration of csqd. Every key lives in config_keys[] with its type,
 * range and default; loading walks the whole libconfig tree once, checks each
 * setting against its table entry, and counts every error instead of stopping
 * at the first, so `csqd -n` reports them all at once.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <libconfig.h>

#include "config.h"
#include "hours.h"
#include "util.h"
#include "webhook.h"

#define CONFIG_PORT_DIGITS   5
#define CONFIG_REDIS_DB_MAX  1000000
#define CONFIG_QUEUE_MAX     100000000 /* max_queue_length at most */
#define CONFIG_CLIENTS_MAX   1000000
#define CONFIG_MULTI_MAX     1000000 /* commands in a MULTI block */
#define CONFIG_MULTI_MEM_MIN 1024    /* bytes of a MULTI block, at least */
#define CONFIG_MSG_MAX       512
#define CONFIG_SUN_PATH_SIZE sizeof(((struct sockaddr_un *)0)->sun_path)
#define CONFIG_TEXT_MAX      (1024 * 1024) /* a file read again, at most */
#define CONFIG_LITERAL_MAX   64            /* an integer's text, at most */

enum config_type {
	CONFIG_T_INT,    /* libconfig int or int64, within min..max */
	CONFIG_T_STRING, /* shorter than the field; check() may refine */
	CONFIG_T_ENUM,   /* one of names[] */
	CONFIG_T_LIST,   /* min..max strings, each passing check() */
	CONFIG_T_CUSTOM, /* its own loader, load() */
	CONFIG_T_BOOL,   /* true or false, into an int */
};

/* How a value is stored at its offset in struct config. */
enum config_field {
	CONFIG_F_U32,  /* uint32_t */
	CONFIG_F_U64,  /* uint64_t */
	CONFIG_F_I64,  /* int64_t */
	CONFIG_F_ENUM, /* an enum: the index into names[] */
	CONFIG_F_STR,  /* char[size]: the string (for an enum, the name) */
	CONFIG_F_LIST, /* char[max][size] plus an int count at count_off */
};

/* Returns NULL when s is acceptable, else why not. */
typedef const char *config_check_fn(const char *s);
struct config_report;
struct config_key;
/* Checks and stores a CONFIG_T_CUSTOM setting, reporting every error. */
typedef void config_load_fn(struct config_report *, struct config *,
                            const config_setting_t *,
                            const struct config_key *);

struct config_key {
	const char *name; /* full path, "memory.fsync" */
	enum config_type type;
	enum config_field field;
	size_t off;
	size_t size;      /* CONFIG_F_STR and CONFIG_F_LIST: bytes per string */
	size_t count_off; /* CONFIG_F_LIST: offset of the int count */
	int64_t min, max; /* CONFIG_T_INT: range; CONFIG_T_LIST: entries */
	int64_t def_int;  /* CONFIG_T_INT and CONFIG_T_ENUM (an index) */
	const char *def_str;
	const char *const *names; /* CONFIG_T_ENUM, NULL-terminated */
	config_check_fn *check;
	config_load_fn *load; /* CONFIG_T_CUSTOM; its default is all zeros */
};

static const char *config_check_listen(const char *);
static const char *config_check_http(const char *);
static const char *config_check_nonempty(const char *);
static const char *config_check_prefix(const char *);
static const char *config_check_sentinel(const char *);
static const char *config_check_origin(const char *);
static config_load_fn config_set_users;
static config_load_fn config_set_queues;
static config_load_fn config_set_webhooks;

static const char *const config_engines[] = {"memory", "redis", NULL};
/* In the order of enum config_fsync. */
static const char *const config_fsyncs[] = {"always", "everysec", "no", NULL};
/* In the order of enum config_role. */
static const char *const config_roles[] = {"frontend", "servicer", "admin",
                                           NULL};
/* In the order of enum csq_strategy. */
static const char *const config_strategies[] = {"longest_idle", "least_busy",
                                                NULL};
/* In the order of enum log_level. */
static const char *const config_levels[] = {"debug", "info", "warning", "error",
                                            NULL};
/* In the order of enum log_format. */
static const char *const config_formats[] = {"text", "json", NULL};

#define OFF(m)  offsetof(struct config, m)
#define SIZE(m) sizeof(((struct config *)0)->m)

#define KEY_INT(n, fld, m, lo, hi, d)                                          \
	{                                                                      \
		.name = (n), .type = CONFIG_T_INT, .field = (fld),             \
		.off = OFF(m), .min = (lo), .max = (hi), .def_int = (d)        \
	}
#define KEY_STR(n, m, d, chk)                                                  \
	{                                                                      \
		.name = (n), .type = CONFIG_T_STRING, .field = CONFIG_F_STR,   \
		.off = OFF(m), .size = SIZE(m), .def_str = (d), .check = (chk) \
	}
#define KEY_ENUM(n, fld, m, nm, d)                                             \
	{                                                                      \
		.name = (n), .type = CONFIG_T_ENUM, .field = (fld),            \
		.off = OFF(m), .size = SIZE(m), .names = (nm), .def_int = (d)  \
	}
#define KEY_BOOL(n, m, d)                                                      \
	{                                                                      \
		.name = (n), .type = CONFIG_T_BOOL, .field = CONFIG_F_ENUM,    \
		.off = OFF(m), .def_int = (d)                                  \
	}
/* A list that may be empty, and is by default. */
#define KEY_LIST_OPT(n, m, cnt, most, chk)                                     \
	{                                                                      \
		.name = (n), .type = CONFIG_T_LIST, .field = CONFIG_F_LIST,    \
		.off = OFF(m), .size = sizeof(((struct config *)0)->m[0]),     \
		.count_off = OFF(cnt), .min = 0, .max = (most), .check = (chk) \
	}
#define KEY_CUSTOM(n, fn)                                                      \
	{                                                                      \
		.name = (n), .type = CONFIG_T_CUSTOM, .load = (fn)             \
	}
#define KEY_LIST(n, m, cnt, most, d, chk)                                      \
	{                                                                      \
		.name = (n), .type = CONFIG_T_LIST, .field = CONFIG_F_LIST,    \
		.off = OFF(m), .size = sizeof(((struct config *)0)->m[0]),     \
		.count_off = OFF(cnt), .min = 1, .max = (most),                \
		.def_str = (d), .check = (chk)                                 \
	}

/* A list that may be empty, and is by default. */
#define KEY_LIST_EMPTY(n, m, cnt, most, chk)                                   \
	{                                                                      \
		.name = (n), .type = CONFIG_T_LIST, .field = CONFIG_F_LIST,    \
		.off = OFF(m), .size = sizeof(((struct config *)0)->m[0]),     \
		.count_off = OFF(cnt), .min = 0, .max = (most),                \
		.def_str = NULL, .check = (chk)                                \
	}

/* Every key of protocol.md, "Running csqd", with its default. */
static const struct config_key config_keys[] = {
    KEY_LIST("listen", listen, nlisten, CONFIG_LISTEN_MAX, "127.0.0.1:7878",
             config_check_listen),
    KEY_STR("requirepass", requirepass, "", NULL),
    KEY_CUSTOM("users", config_set_users),
    KEY_CUSTOM("queues", config_set_queues),
    KEY_CUSTOM("webhooks", config_set_webhooks),
    KEY_INT("metrics_max_queues", CONFIG_F_I64, metrics_max_queues, 1,
            CONFIG_QUEUE_LABELS_MAX, 1000),
    KEY_ENUM("engine", CONFIG_F_STR, engine, config_engines, 0),
    KEY_INT("servicer_ttl", CONFIG_F_U32, limits.servicer_ttl_s, 1, CSQ_TTL_MAX,
            30),
    KEY_INT("user_ttl", CONFIG_F_U32, limits.user_ttl_s, 0, CSQ_TTL_MAX, 120),
    KEY_INT("max_tier", CONFIG_F_U32, limits.max_tier, 0, CSQ_TIER_LIMIT, 9),
    KEY_INT("max_queue_length", CONFIG_F_U64, limits.max_queue_length, 1,
            CONFIG_QUEUE_MAX, 100000),
    KEY_INT("max_queues", CONFIG_F_U64, limits.max_queues, 1, CSQ_QUEUES_LIMIT,
            CSQ_DEFAULT_MAX_QUEUES),
    KEY_INT("offer_timeout", CONFIG_F_U32, limits.offer_timeout_s, 0,
            CSQ_OFFER_MAX, 0),
    KEY_INT("offer_max_missed", CONFIG_F_U32, limits.offer_max_missed, 0,
            CSQ_MISSED_MAX, CSQ_DEFAULT_MAX_MISSED),
    KEY_INT("offer_retry", CONFIG_F_U32, limits.offer_retry_s, 0, CSQ_RETRY_MAX,
            CSQ_DEFAULT_RETRY),
    KEY_INT("wrapup", CONFIG_F_U32, limits.wrapup_s, 0, CSQ_WRAPUP_MAX, 0),
    KEY_ENUM("strategy", CONFIG_F_ENUM, limits.strategy, config_strategies,
             CSQ_STRATEGY_LONGEST_IDLE),
    KEY_INT("max_clients", CONFIG_F_I64, max_clients, 1, CONFIG_CLIENTS_MAX,
            10000),
    KEY_INT("busy_poll_us", CONFIG_F_I64, busy_poll_us, 0, CONFIG_BUSY_POLL_MAX,
            50),
    KEY_INT("max_output_memory", CONFIG_F_I64, max_output_memory, 0,
            CONFIG_OUTPUT_MEMORY_MAX, 1LL << 30),
    KEY_INT("max_input_memory", CONFIG_F_I64, max_input_memory, 0,
            CONFIG_INPUT_MEMORY_MAX, 1LL << 30),
    KEY_INT("max_channel_length", CONFIG_F_I64, max_channel_length, 1,
            CONFIG_CHANNEL_MAX, 256),
    KEY_INT("max_multi_commands", CONFIG_F_I64, max_multi_commands, 1,
            CONFIG_MULTI_MAX, 10000),
    KEY_INT("max_multi_memory", CONFIG_F_I64, max_multi_memory,
            CONFIG_MULTI_MEM_MIN, CONFIG_OUTPUT_MEMORY_MAX, 16LL << 20),
    KEY_INT("auth_timeout", CONFIG_F_I64, auth_timeout, 1, CONFIG_TIMEOUT_MAX,
            10),
    KEY_INT("max_unauth_output", CONFIG_F_I64, max_unauth_output,
            CONFIG_UNAUTH_OUTPUT_MIN, CONFIG_OUTPUT_MEMORY_MAX, 65536),
    KEY_INT("max_client_patterns", CONFIG_F_I64, max_client_patterns, 1,
            CONFIG_PATTERNS_MAX, 100),
    KEY_INT("reserved_fds", CONFIG_F_I64, reserved_fds, 0,
            CONFIG_RESERVED_FDS_MAX, 32),
    KEY_STR("memory.journal", journal, "", NULL),
    KEY_ENUM("memory.fsync", CONFIG_F_ENUM, fsync, config_fsyncs,
             CONFIG_FSYNC_EVERYSEC),
    KEY_STR("record.path", record_path, "", NULL),
    KEY_ENUM("record.fsync", CONFIG_F_ENUM, record_fsync, config_fsyncs,
             CONFIG_FSYNC_EVERYSEC),
    KEY_INT("record.rotate_size", CONFIG_F_I64, record_rotate_size, 0,
            CONFIG_OUTPUT_MEMORY_MAX, 256LL << 20),
    KEY_BOOL("record.rotate_daily", record_rotate_daily, 1),
    KEY_INT("record.keep_days", CONFIG_F_I64, record_keep_days, 0,
            CONFIG_KEEP_DAYS_MAX, 30),
    KEY_STR("record.report", record_report, "", NULL),
    KEY_STR("redis.host", redis_host, "127.0.0.1", config_check_nonempty),
    KEY_INT("redis.port", CONFIG_F_I64, redis_port, 1, CONFIG_PORT_MAX, 6379),
    KEY_STR("redis.password", redis_password, "", NULL),
    KEY_INT("redis.db", CONFIG_F_I64, redis_db, 0, CONFIG_REDIS_DB_MAX, 0),
    KEY_STR("redis.prefix", redis_prefix, "csq", config_check_prefix),
    KEY_LIST_EMPTY("redis.sentinels", redis_sentinels, nsentinels,
                   CONFIG_SENTINELS_MAX, config_check_sentinel),
    KEY_STR("redis.master", redis_master, "", NULL),
    KEY_INT("redis.wait_replicas", CONFIG_F_I64, redis_wait_replicas, 0,
            CONFIG_REPLICAS_MAX, 0),
    KEY_BOOL("redis.module", redis_module, 1),
    KEY_INT("redis.wait_timeout_ms", CONFIG_F_I64, redis_wait_timeout_ms, 1,
            CONFIG_WAIT_TIMEOUT_MAX, 1000),
    KEY_STR("http.listen", http_listen, "127.0.0.1:7879", config_check_http),
    KEY_BOOL("http.tls", http_tls, 0),
    KEY_LIST_OPT("tls.listen", tls_listen, ntls_listen, CONFIG_LISTEN_MAX,
                 config_check_listen),
    KEY_STR("tls.cert", tls_cert, "", NULL),
    KEY_STR("tls.key", tls_key, "", NULL),
    KEY_STR("tls.ca", tls_ca, "", NULL),
    KEY_BOOL("tls.verify_clients", tls_verify_clients, 0),
    KEY_INT("http.event_history", CONFIG_F_I64, http_event_history, 0,
            CONFIG_HISTORY_MAX, 10000),
    KEY_INT("http.max_event_streams", CONFIG_F_I64, http_max_event_streams, 1,
            CONFIG_STREAMS_MAX, 64),
    KEY_INT("http.event_stream_buffer", CONFIG_F_I64, http_event_stream_buffer,
            CONFIG_STREAM_BUFFER_MIN, CONFIG_OUTPUT_MEMORY_MAX, 8LL << 20),
    KEY_INT("http.max_connections", CONFIG_F_I64, http_max_connections, 1,
            CONFIG_CLIENTS_MAX, 256),
    KEY_INT("http.request_timeout", CONFIG_F_I64, http_request_timeout, 1,
            CONFIG_TIMEOUT_MAX, 10),
    KEY_INT("http.cache_ms", CONFIG_F_I64, http_cache_ms, 0,
            CONFIG_CACHE_MS_MAX, 1000),
    KEY_STR("http.history", http_history, "", NULL),
    KEY_LIST_EMPTY("http.cors_origins", cors_origins, ncors_origins,
                   CONFIG_CORS_MAX, config_check_origin),
    KEY_ENUM("log.level", CONFIG_F_ENUM, log_level, config_levels,
             LOG_LVL_INFO),
    KEY_ENUM("log.format", CONFIG_F_ENUM, log_format, config_formats,
             LOG_FMT_TEXT),
    KEY_BOOL("log.audit", log_audit, 0),
};

#define CONFIG_NKEYS (sizeof(config_keys) / sizeof(config_keys[0]))

/* CONFIG_F_ENUM stores through an int. */
_Static_assert(sizeof(enum config_fsync) == sizeof(int), "enum size");
_Static_assert(sizeof(enum log_level) == sizeof(int), "enum size");
_Static_assert(sizeof(enum log_format) == sizeof(int), "enum size");
_Static_assert(sizeof(enum csq_strategy) == sizeof(int), "enum size");

/* Where errors go while one file is being checked. */
struct config_report {
	FILE *err;
	const char *name; /* file name, or the name given to a string */
	int errors;
	const char *text; /* the string loaded; NULL for a file */
	char *file_text;  /* the file last read again (config_source) */
	char *file_name;  /* its name */
};

static void config_error(struct config_report *, const config_setting_t *,
                         const char *, ...)
    __attribute__((format(printf, 3, 4)));

static void
config_error(struct config_report *r, const config_setting_t *s,
             const char *fmt, ...)
{
	const char *file = NULL;
	va_list ap;

	r->errors++;
	if (r->err == NULL)
		return;
	if (s != NULL)
		file = config_setting_source_file(s);
	fprintf(r->err, "%s:%u: ", file != NULL ? file : r->name,
	        s != NULL ? (unsigned)config_setting_source_line(s) : 0U);
	va_start(ap, fmt);
	vfprintf(r->err, fmt, ap);
	va_end(ap);
	fputc('\n', r->err);
}

static void *
config_field(struct config *cfg, const struct config_key *k)
{
	return (char *)cfg + k->off;
}

static void
config_store_int(struct config *cfg, const struct config_key *k, int64_t v)
{
	void *p = config_field(cfg, k);

	switch (k->field) {
	case CONFIG_F_U32:
		*(uint32_t *)p = (uint32_t)v;
		break;
	case CONFIG_F_U64:
		*(uint64_t *)p = (uint64_t)v;
		break;
	case CONFIG_F_I64:
		*(int64_t *)p = v;
		break;
	case CONFIG_F_ENUM:
		*(int *)p = (int)v;
		break;
	default:
		break;
	}
}

/* The caller has checked that s fits. */
static void
config_store_str(struct config *cfg, const struct config_key *k, size_t i,
                 const char *s)
{
	char *p = (char *)config_field(cfg, k) + i * k->size;

	memcpy(p, s, strlen(s) + 1);
}

static void
config_store_enum(struct config *cfg, const struct config_key *k, int64_t i)
{
	if (k->field == CONFIG_F_STR)
		config_store_str(cfg, k, 0, k->names[i]);
	else
		config_store_int(cfg, k, i);
}

void
config_default(struct config *cfg)
{
	const struct config_key *k;
	size_t i;

	memset(cfg, 0, sizeof(*cfg));
	/* The limits that have no key here keep libcsq's defaults. */
	csq_limits_default(&cfg->limits);
	for (i = 0; i < CONFIG_NKEYS; i++) {
		k = &config_keys[i];
		switch (k->type) {
		case CONFIG_T_INT:
			config_store_int(cfg, k, k->def_int);
			break;
		case CONFIG_T_STRING:
			config_store_str(cfg, k, 0, k->def_str);
			break;
		case CONFIG_T_ENUM:
			config_store_enum(cfg, k, k->def_int);
			break;
		case CONFIG_T_LIST:
			if (k->def_str == NULL)
				break; /* empty */
			config_store_str(cfg, k, 0, k->def_str);
			*(int *)((char *)cfg + k->count_off) = 1;
			break;
		case CONFIG_T_BOOL:
			config_store_int(cfg, k, k->def_int);
			break;
		case CONFIG_T_CUSTOM:
			break;
		}
	}
}

static const struct config_key *
config_find(const char *path)
{
	size_t i;

	for (i = 0; i < CONFIG_NKEYS; i++) {
		if (strcmp(config_keys[i].name, path) == 0)
			return &config_keys[i];
	}
	return NULL;
}

/* Whether some key lives under "path.", which makes path a group. */
static int
config_is_group(const char *path)
{
	size_t i, len = strlen(path);

	for (i = 0; i < CONFIG_NKEYS; i++) {
		if (strncmp(config_keys[i].name, path, len) == 0 &&
		    config_keys[i].name[len] == '.')
			return 1;
	}
	return 0;
}

static int
config_is_int(const config_setting_t *s)
{
	int t = config_setting_type(s);

	return t == CONFIG_TYPE_INT || t == CONFIG_TYPE_INT64;
}

/* Checks one string value for key k (or one entry of a list); 0 if it fits. */
static int
config_check_str(struct config_report *r, const config_setting_t *s,
                 const struct config_key *k, const char *v)
{
	const char *why;

	if (strlen(v) >= k->size) {
		config_error(r, s, "%s is too long (at most %zu bytes)",
		             k->name, k->size - 1);
		return -1;
	}
	if (k->check != NULL && (why = k->check(v)) != NULL) {
		config_error(r, s, "%s: \"%s\": %s", k->name, v, why);
		return -1;
	}
	return 0;
}

/*
 * libconfig 1.5, Debian 12's, keeps an integer written without an L suffix
 * in 32 bits, without a word: "max_queue_length = 4294967297;" reads as 1.
 * So each integer is read again from the text it came from: the first
 * "name = literal" (or "name : literal") at the setting's line, comments
 * and strings skipped as libconfig skips them.
 */

/* The text that setting s was read from, or NULL if it cannot be read. */
static const char *
config_source(struct config_report *r, const config_setting_t *s)
{
	const char *file = config_setting_source_file(s);
	FILE *f;
	size_t len;
	long size;

	if (file == NULL)
		return r->text;
	if (r->file_name != NULL && strcmp(r->file_name, file) == 0)
		return r->file_text;
	free(r->file_text);
	free(r->file_name);
	r->file_text = r->file_name = NULL;
	if ((f = fopen(file, "r")) == NULL)
		return NULL;
	/* Its size, not the most that is read, is what is allocated. */
	if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) != 0) {
		fclose(f);
		return NULL;
	}
	if (size > CONFIG_TEXT_MAX)
		size = CONFIG_TEXT_MAX;
	r->file_text = csq_xmalloc((size_t)size + 1);
	len = fread(r->file_text, 1, (size_t)size, f);
	r->file_text[len] = '\0';
	r->file_name = csq_xstrndup(file, strlen(file));
	fclose(f);
	return r->file_text;
}

/* Past blanks, line ends and comments; counts the lines. */
static const char *
config_skip_space(const char *p, unsigned *line)
{
	for (;;) {
		if (*p == '\n') {
			(*line)++;
			p++;
		} else if (isspace((unsigned char)*p)) {
			p++;
		} else if (*p == '#' || (p[0] == '/' && p[1] == '/')) {
			while (*p != '\0' && *p != '\n')
				p++;
		} else if (p[0] == '/' && p[1] == '*') {
			for (p += 2;
			     *p != '\0' && !(p[0] == '*' && p[1] == '/'); p++)
				*line += *p == '\n';
			if (*p != '\0')
				p += 2;
		} else {
			return p;
		}
	}
}

/* Past a string literal, which starts at p. */
static const char *
config_skip_string(const char *p, unsigned *line)
{
	for (p++; *p != '\0' && *p != '"'; p++) {
		if (*p == '\\' && p[1] != '\0')
			p++;
		*line += *p == '\n';
	}
	return *p == '"' ? p + 1 : p;
}

static int
config_name_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '-' || c == '*';
}

/*
 * The integer literal at p ([-+]digits or 0x hex, no L suffix, not a
 * float), copied into lit; its base (10 or 16), or 0 if there is none.
 */
static int
config_literal(const char *p, char *lit, size_t size)
{
	const char *q = p, *digits;
	int hex;
	size_t n;

	if (*q == '-' || *q == '+')
		q++;
	hex = q[0] == '0' && (q[1] == 'x' || q[1] == 'X');
	if (hex)
		q += 2;
	for (digits = q;
	     hex ? isxdigit((unsigned char)*q) : isdigit((unsigned char)*q);
	     q++)
		;
	if (q == digits || *q == '.' || config_name_char(*q))
		return 0; /* none, a float, 64-bit already (L), or a name */
	n = (size_t)(q - p);
	if (n >= size)
		n = size - 1;
	memcpy(lit, p, n);
	lit[n] = '\0';
	return hex ? 16 : 10;
}

/*
 * 1 when the text of integer setting s says something other than v, the
 * value libconfig read, with that text in lit; 0 when it says v, or when
 * it cannot be found (libconfig is then taken at its word).
 */
static int
config_int_wrapped(struct config_report *r, const config_setting_t *s,
                   long long v, char *lit, size_t size)
{
	const char *p = config_source(r, s), *name = config_setting_name(s);
	unsigned at = 1, want = config_setting_source_line(s);
	size_t nlen = name != NULL ? strlen(name) : 0;
	long long parsed;
	char *end;
	int base;

	if (p == NULL || nlen == 0)
		return 0;
	while (*(p = config_skip_space(p, &at)) != '\0' && at <= want) {
		if (*p == '"') {
			p = config_skip_string(p, &at);
			continue;
		}
		if (!config_name_char(*p)) {
			p++;
			continue;
		}
		if (at != want || strncmp(p, name, nlen) != 0 ||
		    config_name_char(p[nlen])) {
			while (config_name_char(*p))
				p++;
			continue;
		}
		p = config_skip_space(p + nlen, &at);
		if (*p != '=' && *p != ':')
			continue;
		p = config_skip_space(p + 1, &at);
		if ((base = config_literal(p, lit, size)) == 0)
			return 0;
		errno = 0;
		parsed = strtoll(lit, &end, base);
		return errno == ERANGE || *end != '\0' || parsed != v;
	}
	return 0;
}

static void
config_set_int(struct config_report *r, struct config *cfg,
               const config_setting_t *s, const struct config_key *k)
{
	char lit[CONFIG_LITERAL_MAX];
	long long v;

	if (!config_is_int(s)) {
		config_error(r, s, "%s must be an integer", k->name);
		return;
	}
	v = config_setting_get_int64(s);
	if (config_int_wrapped(r, s, v, lit, sizeof(lit))) {
		config_error(r, s,
		             "%s must be between %" PRId64 " and %" PRId64
		             " (not %s)",
		             k->name, k->min, k->max, lit);
		return;
	}
	if (v < k->min || v > k->max) {
		config_error(r, s,
		             "%s must be between %" PRId64 " and %" PRId64
		             " (not %lld)",
		             k->name, k->min, k->max, v);
		return;
	}
	config_store_int(cfg, k, (int64_t)v);
}

static void
config_set_string(struct config_report *r, struct config *cfg,
                  const config_setting_t *s, const struct config_key *k)
{
	const char *v;

	if (config_setting_type(s) != CONFIG_TYPE_STRING) {
		config_error(r, s, "%s must be a string", k->name);
		return;
	}
	v = config_setting_get_string(s);
	if (config_check_str(r, s, k, v) == 0)
		config_store_str(cfg, k, 0, v);
}

static void
config_set_enum(struct config_report *r, struct config *cfg,
                const config_setting_t *s, const struct config_key *k)
{
	char want[CONFIG_MSG_MAX];
	const char *v;
	size_t len = 0;
	int i;

	if (config_setting_type(s) == CONFIG_TYPE_STRING) {
		v = config_setting_get_string(s);
		for (i = 0; k->names[i] != NULL; i++) {
			if (strcmp(v, k->names[i]) == 0) {
				config_store_enum(cfg, k, i);
				return;
			}
		}
	}
	want[0] = '\0';
	for (i = 0; k->names[i] != NULL && len < sizeof(want); i++) {
		len += snprintf(want + len, sizeof(want) - len, "%s\"%s\"",
		                i == 0 ? "" : ", ", k->names[i]);
	}
	config_error(r, s, "%s must be one of %s", k->name, want);
}

static void
config_set_list(struct config_report *r, struct config *cfg,
                const config_setting_t *s, const struct config_key *k)
{
	const config_setting_t *e;
	int i, n, bad = 0;

	if (config_setting_type(s) != CONFIG_TYPE_ARRAY &&
	    config_setting_type(s) != CONFIG_TYPE_LIST) {
		config_error(r, s, "%s must be a list of strings", k->name);
		return;
	}
	n = config_setting_length(s);
	if (n < k->min || n > k->max) {
		config_error(r, s,
		             "%s must have between %" PRId64 " and %" PRId64
		             " entries (not %d)",
		             k->name, k->min, k->max, n);
		return;
	}
	for (i = 0; i < n; i++) {
		/* Errors name the list's line: libconfig gives an element
		 * the line of the token after it, which may be the next. */
		e = config_setting_get_elem(s, (unsigned)i);
		if (config_setting_type(e) != CONFIG_TYPE_STRING) {
			config_error(r, s, "%s must be a list of strings",
			             k->name);
			bad = 1;
		} else if (config_check_str(r, s, k,
		                            config_setting_get_string(e)) != 0)
			bad = 1;
	}
	if (bad)
		return;
	for (i = 0; i < n; i++)
		config_store_str(cfg, k, (size_t)i,
		                 config_setting_get_string_elem(s, i));
	*(int *)((char *)cfg + k->count_off) = n;
}

const char *
config_role_name(enum config_role role)
{
	return config_roles[role];
}

/* One field of a users entry: a string, or an error (0 or -1). The
 * password's value is never part of an error. */
static int
config_user_str(struct config_report *r, const config_setting_t *f,
                const char *field, size_t size, char *out)
{
	const char *v;

	if (config_setting_type(f) != CONFIG_TYPE_STRING) {
		config_error(r, f, "users: %s must be a string", field);
		return -1;
	}
	v = config_setting_get_string(f);
	if (*v == '\0' || strlen(v) >= size) {
		config_error(r, f, "users: %s must be 1 to %zu bytes", field,
		             size - 1);
		return -1;
	}
	memcpy(out, v, strlen(v) + 1);
	return 0;
}

/* Whether s is one glob of ids: bytes of ids and of glob patterns. */
static int
config_id_glob_ok(const char *s)
{
	size_t len = strlen(s), i;

	if (len == 0 || len >= CONFIG_ID_GLOB_MAX)
		return 0;
	for (i = 0; i < len; i++)
		if (!isalnum((unsigned char)s[i]) &&
		    strchr("._:@-*?[]^\\", s[i]) == NULL)
			return 0;
	return 1;
}

/* A user's ids: a string or a list of strings, each a glob (auth.h). */
static int
config_user_ids(struct config_report *r, const config_setting_t *f,
                struct config_user *u)
{
	const config_setting_t *g;
	const char *v;
	int i, n,
	    list = config_setting_type(f) == CONFIG_TYPE_LIST ||
	           config_setting_type(f) == CONFIG_TYPE_ARRAY;

	n = list ? config_setting_length(f) : 1;
	if (n < 1 || n > CONFIG_IDS_MAX) {
		config_error(r, f, "users: ids must have 1 to %d entries",
		             CONFIG_IDS_MAX);
		return 1;
	}
	for (i = 0; i < n; i++) {
		g = list ? config_setting_get_elem(f, (unsigned)i) : f;
		v = config_setting_type(g) == CONFIG_TYPE_STRING
		        ? config_setting_get_string(g)
		        : NULL;
		if (v == NULL || !config_id_glob_ok(v)) {
			config_error(r, g,
			             "users: ids must be ids or globs of ids "
			             "(\"agent-7\", \"team-a-*\"), 1 to %d "
			             "bytes of [A-Za-z0-9._:@-] and *?[]^\\",
			             CONFIG_ID_GLOB_MAX - 1);
			return 1;
		}
		memcpy(u->ids[i], v, strlen(v) + 1);
	}
	u->nids = n;
	return 0;
}

/* The fields of one users entry into u; 0, or -1 with the errors told. */
static int
config_user(struct config_report *r, const config_setting_t *e,
            struct config_user *u)
{
	const config_setting_t *f;
	const char *field, *v;
	int i, n, bad = 0, have = 0, role;

	n = config_setting_length(e);
	for (i = 0; i < n; i++) {
		f = config_setting_get_elem(e, (unsigned)i);
		field = config_setting_name(f);
		if (strcmp(field, "name") == 0) {
			bad |= config_user_str(r, f, field, sizeof(u->name),
			                       u->name);
			if (u->name[0] != '\0' &&
			    !csq_valid_id(u->name, strlen(u->name))) {
				config_error(
				    r, f,
				    "users: name \"%s\" is not 1 to 64 "
				    "bytes of [A-Za-z0-9._:@-]",
				    u->name);
				bad = 1;
			} else if (strcasecmp(u->name, "default") == 0) {
				config_error(
				    r, f,
				    "users: \"default\" is the user of "
				    "requirepass");
				bad = 1;
			}
			have |= 1;
		} else if (strcmp(field, "password") == 0) {
			bad |= config_user_str(r, f, field, sizeof(u->password),
			                       u->password);
			have |= 2;
		} else if (strcmp(field, "role") == 0) {
			v = config_setting_type(f) == CONFIG_TYPE_STRING
			        ? config_setting_get_string(f)
			        : "";
			for (role = 0; config_roles[role] != NULL; role++)
				if (strcmp(v, config_roles[role]) == 0)
					break;
			if (config_roles[role] == NULL) {
				config_error(r, f,
				             "users: role must be one of "
				             "\"frontend\", \"servicer\", "
				             "\"admin\"");
				bad = 1;
			} else
				u->role = (enum config_role)role;
			have |= 4;
		} else if (strcmp(field, "ids") == 0) {
			bad |= config_user_ids(r, f, u);
			have |= 8;
		} else if (strcmp(field, "token") == 0) {
			/* A token alone logs in: too short is guessed. */
			if (config_user_str(r, f, field, sizeof(u->token),
			                    u->token) != 0)
				bad = 1;
			else if (strlen(u->token) < CONFIG_TOKEN_MIN) {
				config_error(r, f,
				             "users: token must be %d to %d "
				             "bytes",
				             CONFIG_TOKEN_MIN,
				             CONFIG_STR_MAX - 1);
				bad = 1;
			}
		} else {
			config_error(r, f, "users: unknown key %s", field);
			bad = 1;
		}
	}
	if ((have & 7) != 7) {
		config_error(r, e,
		             "users: an entry needs a name, a password "
		             "and a role");
		bad = 1;
	}
	if ((have & 8) && (have & 4) && u->role == CONFIG_ROLE_ADMIN) {
		config_error(
		    r, e,
		    "users: ids bind a frontend or a servicer user; an "
		    "admin acts for every id");
		bad = 1;
	}
	return bad ? -1 : 0;
}

/* users = ( { name = "…"; password = "…"; role = "…"; }, … ); */
static void
config_set_users(struct config_report *r, struct config *cfg,
                 const config_setting_t *s, const struct config_key *k)
{
	const config_setting_t *e;
	struct config_user *u;
	int i, j, n, bad = 0;

	(void)k;
	if (config_setting_type(s) != CONFIG_TYPE_LIST) {
		config_error(r, s, "users must be a list of groups, ( { … } )");
		return;
	}
	n = config_setting_length(s);
	if (n > CONFIG_USERS_MAX) {
		config_error(r, s,
		             "users must have at most %d entries (not %d)",
		             CONFIG_USERS_MAX, n);
		return;
	}
	for (i = 0; i < n; i++) {
		e = config_setting_get_elem(s, (unsigned)i);
		u = &cfg->users[i];
		memset(u, 0, sizeof(*u));
		if (config_setting_type(e) != CONFIG_TYPE_GROUP) {
			config_error(r, e,
			             "users must be a list of groups, "
			             "( { … } )");
			bad = 1;
			continue;
		}
		if (config_user(r, e, u) != 0) {
			bad = 1;
			continue;
		}
		for (j = 0; j < i; j++)
			if (strcmp(cfg->users[j].name, u->name) == 0) {
				config_error(r, e, "users: \"%s\" twice",
				             u->name);
				bad = 1;
			} else if (u->token[0] != '\0' &&
			           strcmp(cfg->users[j].token, u->token) == 0) {
				config_error(r, e,
				             "users: \"%s\" has the token of "
				             "\"%s\"",
				             u->name, cfg->users[j].name);
				bad = 1;
			}
	}
	cfg->nusers = bad ? 0 : n;
}

/* One string of a webhooks entry into out (size bytes); 0 or -1. */
static int
config_webhook_str(struct config_report *r, const config_setting_t *f,
                   const char *field, int empty_ok, size_t size, char *out)
{
	const char *v;

	if (config_setting_type(f) != CONFIG_TYPE_STRING) {
		config_error(r, f, "webhooks: %s must be a string", field);
		return -1;
	}
	v = config_setting_get_string(f);
	if ((*v == '\0' && !empty_ok) || strlen(v) >= size) {
		config_error(r, f, "webhooks: %s must be %d to %zu bytes",
		             field, empty_ok ? 0 : 1, size - 1);
		return -1;
	}
	memcpy(out, v, strlen(v) + 1);
	return 0;
}

/* One integer of a webhooks entry, in [lo, hi]; 0 or -1. */
static int
config_webhook_int(struct config_report *r, const config_setting_t *f,
                   const char *field, int64_t lo, int64_t hi, int64_t *out)
{
	int t = config_setting_type(f);

	if ((t != CONFIG_TYPE_INT && t != CONFIG_TYPE_INT64) ||
	    config_setting_get_int64(f) < lo ||
	    config_setting_get_int64(f) > hi) {
		config_error(r, f,
		             "webhooks: %s must be an integer between %" PRId64
		             " and %" PRId64,
		             field, lo, hi);
		return -1;
	}
	*out = config_setting_get_int64(f);
	return 0;
}

/* The keys of one webhooks entry into h; 0, or -1 with the errors told. */
static int
config_webhook(struct config_report *r, const config_setting_t *e,
               struct config_webhook *h)
{
	const config_setting_t *f;
	const char *field, *why;
	int i, n, bad = 0;

	snprintf(h->channels, sizeof(h->channels), "*");
	h->max_backlog = 10000;
	h->timeout_ms = 5000;
	n = config_setting_length(e);
	for (i = 0; i < n; i++) {
		f = config_setting_get_elem(e, (unsigned)i);
		field = config_setting_name(f);
		if (strcmp(field, "url") == 0) {
			if (config_webhook_str(r, f, field, 0, sizeof(h->url),
			                       h->url) != 0)
				bad = 1;
			else if ((why = webhooks_check_url(h->url)) != NULL) {
				config_error(r, f, "webhooks: url \"%s\": %s",
				             h->url, why);
				bad = 1;
			}
		} else if (strcmp(field, "channels") == 0)
			bad |= -config_webhook_str(
			    r, f, field, 0, sizeof(h->channels), h->channels);
		else if (strcmp(field, "secret") == 0)
			bad |= -config_webhook_str(
			    r, f, field, 1, sizeof(h->secret), h->secret);
		else if (strcmp(field, "ca") == 0)
			bad |= -config_webhook_str(r, f, field, 0,
			                           sizeof(h->ca), h->ca);
		else if (strcmp(field, "max_backlog") == 0)
			bad |= -config_webhook_int(r, f, field, 1,
			                           CONFIG_WEBHOOK_BACKLOG_MAX,
			                           &h->max_backlog);
		else if (strcmp(field, "timeout_ms") == 0)
			bad |= -config_webhook_int(r, f, field, 1,
			                           CONFIG_WEBHOOK_TIMEOUT_MAX,
			                           &h->timeout_ms);
		else {
			config_error(r, f, "webhooks: unknown key %s", field);
			bad = 1;
		}
	}
	if (config_setting_get_member(e, "url") == NULL) {
		config_error(r, e, "webhooks: an entry needs a url");
		bad = 1;
	} else if (h->ca[0] != '\0' &&
	           strncasecmp(h->url, "https://", 8) != 0) {
		config_error(r, e, "webhooks: ca is for an https:// url");
		bad = 1;
	} else if (h->ca[0] != '\0' && access(h->ca, R_OK) != 0) {
		/* Here, so that a reload with a bad one keeps the running
		 * webhooks rather than stop csqd. */
		config_error(r, e, "webhooks: ca \"%s\": %s", h->ca,
		             strerror(errno));
		bad = 1;
	}
	return bad ? -1 : 0;
}

/* webhooks = ( { url = "http://…"; channels = "queue:*"; … }, … ); */
static void
config_set_webhooks(struct config_report *r, struct config *cfg,
                    const config_setting_t *s, const struct config_key *k)
{
	const config_setting_t *e;
	int i, n, bad = 0;

	(void)k;
	if (config_setting_type(s) != CONFIG_TYPE_LIST) {
		config_error(r, s,
		             "webhooks must be a list of groups, ( { … } )");
		return;
	}
	n = config_setting_length(s);
	if (n > CONFIG_WEBHOOKS_MAX) {
		config_error(r, s,
		             "webhooks must have at most %d entries (not %d)",
		             CONFIG_WEBHOOKS_MAX, n);
		return;
	}
	for (i = 0; i < n; i++) {
		e = config_setting_get_elem(s, (unsigned)i);
		memset(&cfg->webhooks[i], 0, sizeof(cfg->webhooks[i]));
		if (config_setting_type(e) != CONFIG_TYPE_GROUP) {
			config_error(r, e,
			             "webhooks must be a list of groups, "
			             "( { … } )");
			bad = 1;
			continue;
		}
		if (config_webhook(r, e, &cfg->webhooks[i]) != 0)
			bad = 1;
	}
	cfg->nwebhooks = bad ? 0 : n;
}

/* The integer keys of a queues entry, each with its range and field. */
struct config_queue_int {
	const char *name;
	int64_t min, max;
	size_t off;  /* in struct csq_policy */
	int field;   /* CONFIG_F_U32 or CONFIG_F_U64 */
	size_t flag; /* its has_ flag, or (size_t)-1 */
};

#define POLICY_OFF(m) offsetof(struct csq_policy, m)
#define NO_FLAG       ((size_t)-1)

static const struct config_queue_int config_queue_ints[] = {
    {"max_length", 1, CSQ_QUEUE_LENGTH_MAX, POLICY_OFF(max_length),
     CONFIG_F_U64, POLICY_OFF(has_max_length)},
    {"overflow_after", 1, CSQ_POLICY_SECONDS_MAX, POLICY_OFF(overflow_after_s),
     CONFIG_F_U32, NO_FLAG},
    {"aging_every", 1, CSQ_POLICY_SECONDS_MAX, POLICY_OFF(aging_every_s),
     CONFIG_F_U32, NO_FLAG},
    {"aging_max_tier", 0, CSQ_TIER_LIMIT, POLICY_OFF(aging_max_tier),
     CONFIG_F_U32, POLICY_OFF(has_aging_max_tier)},
    {"service_level", 1, CSQ_POLICY_SECONDS_MAX, POLICY_OFF(service_level_s),
     CONFIG_F_U32, NO_FLAG},
};

/* A string key of a queues entry that holds a queue id. 0 when valid. */
static int
config_queue_id(struct config_report *r, const config_setting_t *f,
                const char *key, char out[CSQ_ID_MAX + 1])
{
	const char *v = config_setting_type(f) == CONFIG_TYPE_STRING
	                    ? config_setting_get_string(f)
	                    : NULL;

	if (v == NULL || !csq_valid_id(v, strlen(v))) {
		config_error(r, f,
		             "queues: %s must be a queue id, 1 to 64 bytes of "
		             "[A-Za-z0-9._:@-]",
		             key);
		return -1;
	}
	memcpy(out, v, strlen(v) + 1);
	return 0;
}

/* One integer key of a queues entry, by the table. 0 when valid. */
static int
config_queue_int(struct config_report *r, const config_setting_t *f,
                 const struct config_queue_int *k, struct csq_policy *p)
{
	char *at = (char *)p + k->off;
	long long v;

	if (!config_is_int(f)) {
		config_error(r, f, "queues: %s must be an integer", k->name);
		return -1;
	}
	v = config_setting_get_int64(f);
	if (v < k->min || v > k->max) {
		config_error(r, f,
		             "queues: %s must be between %" PRId64
		             " and %" PRId64 " (not %lld)",
		             k->name, k->min, k->max, v);
		return -1;
	}
	if (k->field == CONFIG_F_U64)
		*(uint64_t *)(void *)at = (uint64_t)v;
	else
		*(uint32_t *)(void *)at = (uint32_t)v;
	if (k->flag != NO_FLAG)
		*(int *)(void *)((char *)p + k->flag) = 1;
	return 0;
}

/* A key of a queues entry's group (config_queue_group): 0 when valid,
 * -1 when bad (reported), 1 when the group has no such key. */
typedef int config_group_key_fn(struct config_report *,
                                const config_setting_t *f, const char *key,
                                void *out);

/*
 * A group of a queues entry, name (a relax step, hours, nobody:
 * protocol.md 3c): a group, else "queues: <name> must be <form>" and
 * nothing is read; then *on (when not NULL) is set and each of its keys
 * goes to fn, "queues: <name>: unknown key <key>" for one it does not
 * know. 0 when every key is valid.
 */
static int
config_queue_group(struct config_report *r, const config_setting_t *g,
                   const char *name, const char *form, uint32_t *on,
                   config_group_key_fn *fn, void *out)
{
	const config_setting_t *f;
	int i, n, rc, bad = 0;

	if (config_setting_type(g) != CONFIG_TYPE_GROUP) {
		config_error(r, g, "queues: %s must be %s", name, form);
		return -1;
	}
	if (on != NULL)
		*on = 1;
	n = config_setting_length(g);
	for (i = 0; i < n; i++) {
		f = config_setting_get_elem(g, (unsigned)i);
		rc = fn(r, f, config_setting_name(f), out);
		if (rc > 0)
			config_error(r, f, "queues: %s: unknown key %s", name,
			             config_setting_name(f));
		bad |= rc != 0;
	}
	return bad ? -1 : 0;
}

/* A key of a queues entry's group whose value is one of two or three
 * names; its index is stored at off, a uint32_t of the group's struct. */
struct config_group_enum {
	const char *key, *names[4];
	size_t off;
};

/* field when it is one of the n enums: 0 with the value's index stored
 * in the group's struct at base, -1 (reported) when the value is none of
 * the names; 1 when field is none of the enums. */
static int
config_group_enum(struct config_report *r, const config_setting_t *f,
                  const char *name, const char *field,
                  const struct config_group_enum *enums, size_t n, void *base)
{
	const char *v = config_setting_type(f) == CONFIG_TYPE_STRING
	                    ? config_setting_get_string(f)
	                    : "";
	const struct config_group_enum *e;
	size_t j;
	int k;

	for (j = 0; j < n && strcmp(field, enums[j].key) != 0; j++)
		;
	if (j == n)
		return 1;
	e = &enums[j];
	for (k = 0; e->names[k] != NULL; k++)
		if (strcmp(v, e->names[k]) == 0) {
			*(uint32_t *)(void *)((char *)base + e->off) =
			    (uint32_t)k;
			return 0;
		}
	config_error(r, f, "queues: %s: %s must be \"%s\", \"%s\"%s%s%s", name,
	             field, e->names[0], e->names[1],
	             e->names[2] != NULL ? " or \"" : "",
	             e->names[2] != NULL ? e->names[2] : "",
	             e->names[2] != NULL ? "\"" : "");
	return -1;
}

/* fallback and move_to of a queues entry's group name: a queue id. */
static int
config_group_queue(struct config_report *r, const config_setting_t *f,
                   const char *name, const char *key, char out[CSQ_ID_MAX + 1])
{
	char label[32];

	snprintf(label, sizeof(label), "%s: %s", name, key);
	return config_queue_id(r, f, label, out);
}

/* A key of a relax step: after, lower or drop. */
static int
config_relax_key(struct config_report *r, const config_setting_t *f,
                 const char *field, void *out)
{
	struct csq_relax_step *step = out;
	struct csq_skill_list l;
	const char *v = config_setting_type(f) == CONFIG_TYPE_STRING
	                    ? config_setting_get_string(f)
	                    : NULL;
	long long n = config_is_int(f) ? config_setting_get_int64(f) : -1;

	if (strcmp(field, "after") == 0) {
		if (n < 1 || n > CSQ_POLICY_SECONDS_MAX) {
			config_error(r, f,
			             "queues: relax after must be between 1 "
			             "and %d",
			             CSQ_POLICY_SECONDS_MAX);
			return -1;
		}
		step->after_s = (uint32_t)n;
	} else if (strcmp(field, "lower") == 0) {
		if (n < 1 || n > CSQ_SKILL_LEVEL_MAX) {
			config_error(r, f,
			             "queues: relax lower must be between 1 "
			             "and %d",
			             CSQ_SKILL_LEVEL_MAX);
			return -1;
		}
		step->lower = (uint32_t)n;
	} else if (strcmp(field, "drop") == 0) {
		if (v != NULL && strcmp(v, "*") == 0)
			step->drop_all = 1;
		else if (v == NULL || v[0] == '\0' || strchr(v, ':') ||
		         strlen(v) >= sizeof(step->drop) ||
		         csq_skills_parse(v, CSQ_USER_NEEDS, &l) != CSQ_OK) {
			config_error(r, f,
			             "queues: relax drop must be \"*\" or 1 "
			             "to %d skill names, comma-separated, at "
			             "most %d bytes",
			             CSQ_USER_NEEDS, CSQ_RELAX_DROP_MAX - 1);
			return -1;
		} else
			snprintf(step->drop, sizeof(step->drop), "%s", v);
	} else
		return 1;
	return 0;
}

/* One step of a queues entry's relax (protocol.md 3c). 0 when valid. */
static int
config_relax_step(struct config_report *r, const config_setting_t *e,
                  struct csq_relax_step *step)
{
	memset(step, 0, sizeof(*step));
	if (config_queue_group(r, e, "relax",
	                       "a list of groups, ( { after = …; drop = …; } )",
	                       NULL, config_relax_key, step) != 0)
		return -1;
	if (step->after_s == 0) {
		config_error(r, e, "queues: a relax step needs after");
		return -1;
	}
	if (step->lower == 0 && !step->drop_all && step->drop[0] == '\0') {
		config_error(r, e, "queues: a relax step needs drop or lower");
		return -1;
	}
	return 0;
}

/* relax: a list of steps, their times growing. 0 when valid. */
static int
config_relax(struct config_report *r, const config_setting_t *f,
             struct csq_policy *p)
{
	int i, n = config_setting_length(f), bad = 0;

	if (config_setting_type(f) != CONFIG_TYPE_LIST || n < 1 ||
	    n > CSQ_RELAX_STEPS) {
		config_error(r, f,
		             "queues: relax must be a list of 1 to %d steps, "
		             "( { after = …; drop = …; } )",
		             CSQ_RELAX_STEPS);
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (config_relax_step(r,
		                      config_setting_get_elem(f, (unsigned)i),
		                      &p->relax[i]) != 0) {
			bad = 1;
			continue;
		}
		if (i > 0 && !bad &&
		    p->relax[i].after_s <= p->relax[i - 1].after_s) {
			config_error(r, config_setting_get_elem(f, (unsigned)i),
			             "queues: relax steps' after must grow");
			bad = 1;
		}
	}
	p->nrelax = (uint32_t)n;
	return bad ? -1 : 0;
}

/* A key of nobody: counts, when_nobody, at_nobody, fallback, move_to
 * or grace. */
static int
config_nobody_key(struct config_report *r, const config_setting_t *f,
                  const char *field, void *out)
{
	static const struct config_group_enum enums[] = {
	    {"counts",
	     {"logged_in", "ready", NULL, NULL},
	     offsetof(struct csq_nobody_policy, counts)},
	    {"when_nobody",
	     {"wait", "refuse", "fallback", NULL},
	     offsetof(struct csq_nobody_policy, when_nobody)},
	    {"at_nobody",
	     {"keep", "move", "release", NULL},
	     offsetof(struct csq_nobody_policy, at_nobody)},
	};
	struct csq_nobody_policy *b = out;
	long long secs;
	int rc;

	rc = config_group_enum(r, f, "nobody", field, enums,
	                       sizeof(enums) / sizeof(enums[0]), b);
	if (rc <= 0)
		return rc;
	if (strcmp(field, "fallback") == 0 || strcmp(field, "move_to") == 0)
		return config_group_queue(r, f, "nobody", field,
		                          field[0] == 'f' ? b->fallback
		                                          : b->move_to);
	if (strcmp(field, "grace") != 0)
		return 1;
	secs = config_is_int(f) ? config_setting_get_int64(f) : -1;
	if (secs < 1 || secs > CSQ_POLICY_SECONDS_MAX) {
		config_error(r, f,
		             "queues: nobody: grace must be an integer of "
		             "seconds, 1..%d",
		             CSQ_POLICY_SECONDS_MAX);
		return -1;
	}
	b->grace_s = (uint32_t)secs;
	return 0;
}

/*
 * nobody = { counts; when_nobody; fallback; at_nobody; grace; move_to; }
 * (protocol.md 3c, "Nobody there"): each key known and of its type;
 * what they say together (fallback with "fallback", grace with "move" or
 * "release", a cycle) is libcsq's check, at config_check_queues.
 */
static int
config_nobody(struct config_report *r, const config_setting_t *g,
              struct csq_nobody_policy *b)
{
	memset(b, 0, sizeof(*b));
	return config_queue_group(r, g, "nobody",
	                          "a group, { when_nobody = \"refuse\"; … }",
	                          &b->on, config_nobody_key, b);
}

/*
 * Business hours (protocol.md 3c): the zone's TZif file, read from the
 * system's database ($TZDIR, else /usr/share/zoneinfo) and parsed by
 * libcsq, which keeps what it needs in the policy.
 */
#define CONFIG_ZONEINFO "/usr/share/zoneinfo"
#define CONFIG_TZIF_MAX (256 * 1024) /* no zone file is near this */

static int
config_zone(struct config_report *r, const config_setting_t *f,
            struct csq_tz *z)
{
	const char *v = config_setting_type(f) == CONFIG_TYPE_STRING
	                    ? config_setting_get_string(f)
	                    : NULL;
	const char *dir = getenv("TZDIR"), *err = "";
	static uint8_t buf[CONFIG_TZIF_MAX];
	char path[PATH_MAX];
	size_t len = 0;
	FILE *fp;

	if (v == NULL || !csq_tz_valid_name(v)) {
		config_error(r, f,
		             "queues: hours: zone must be a zone name such as "
		             "\"Europe/Berlin\"");
		return -1;
	}
	if (dir == NULL || dir[0] == '\0')
		dir = CONFIG_ZONEINFO;
	snprintf(path, sizeof(path), "%s/%s", dir, v);
	if ((fp = fopen(path, "rb")) == NULL) {
		config_error(r, f, "queues: hours: zone \"%s\": %s: %s", v,
		             path, strerror(errno));
		return -1;
	}
	len = fread(buf, 1, sizeof(buf), fp);
	fclose(fp);
	if (len == sizeof(buf) || csq_tzif_parse(buf, len, z, &err) != 0) {
		config_error(r, f, "queues: hours: zone \"%s\": %s: %s", v,
		             path, len == sizeof(buf) ? "too large" : err);
		return -1;
	}
	memcpy(z->name, v, strlen(v) + 1);
	return 0;
}

/* hours as its keys are read: whether zone and week were there. */
struct config_hours_read {
	struct csq_hours *h;
	int zone, week;
};

/* hours' closed: a list of dates. 0 when valid. */
static int
config_hours_closed(struct config_report *r, const config_setting_t *f,
                    struct csq_hours *h)
{
	const config_setting_t *d;
	const char *v;
	int j, k = config_setting_length(f), bad = 0;
	int32_t day;

	if ((config_setting_type(f) != CONFIG_TYPE_ARRAY &&
	     config_setting_type(f) != CONFIG_TYPE_LIST) ||
	    k > CSQ_HOURS_CLOSED) {
		config_error(r, f,
		             "queues: hours: closed must be a list of at most "
		             "%d dates, [\"2026-12-25\", …]",
		             CSQ_HOURS_CLOSED);
		return -1;
	}
	for (j = 0; j < k; j++) {
		d = config_setting_get_elem(f, (unsigned)j);
		v = config_setting_type(d) == CONFIG_TYPE_STRING
		        ? config_setting_get_string(d)
		        : "";
		if (csq_hours_parse_date(v, &day) != 0 ||
		    csq_hours_add_closed(h, day) != 0) {
			config_error(r, d,
			             "queues: hours: closed: \"%s\" is not a "
			             "date YYYY-MM-DD, or is there twice",
			             v);
			bad = 1;
		}
	}
	return bad ? -1 : 0;
}

/* A key of hours: zone, week, closed, when_closed, at_close, fallback
 * or move_to. */
static int
config_hours_key(struct config_report *r, const config_setting_t *f,
                 const char *field, void *out)
{
	static const struct config_group_enum enums[] = {
	    {"when_closed",
	     {"wait", "refuse", "fallback", NULL},
	     offsetof(struct csq_hours, when_closed)},
	    {"at_close",
	     {"keep", "move", "release", NULL},
	     offsetof(struct csq_hours, at_close)},
	};
	struct config_hours_read *rd = out;
	struct csq_hours *h = rd->h;
	const char *v = config_setting_type(f) == CONFIG_TYPE_STRING
	                    ? config_setting_get_string(f)
	                    : NULL;
	const char *err;
	int rc;

	rc = config_group_enum(r, f, "hours", field, enums,
	                       sizeof(enums) / sizeof(enums[0]), h);
	if (rc <= 0)
		return rc;
	if (strcmp(field, "zone") == 0) {
		rd->zone = 1;
		return config_zone(r, f, &h->tz) != 0 ? -1 : 0;
	}
	if (strcmp(field, "week") == 0) {
		rd->week = 1;
		if (v == NULL || csq_hours_parse_week(v, h, &err) != 0) {
			config_error(r, f, "queues: hours: week: %s",
			             v == NULL ? "a string, such as "
			                         "\"mon-fri 09:00-17:00\""
			                       : err);
			return -1;
		}
		return 0;
	}
	if (strcmp(field, "closed") == 0)
		return config_hours_closed(r, f, h);
	if (strcmp(field, "fallback") == 0 || strcmp(field, "move_to") == 0)
		return config_group_queue(r, f, "hours", field,
		                          field[0] == 'f' ? h->fallback
		                                          : h->move_to);
	return 1;
}

/* hours = { zone; week; closed; when_closed; fallback; at_close;
 * move_to; }: 0 when valid. */
static int
config_hours(struct config_report *r, const config_setting_t *g,
             struct csq_hours *h)
{
	struct config_hours_read rd = {h, 0, 0};

	memset(h, 0, sizeof(*h));
	if (config_queue_group(r, g, "hours",
	                       "a group, { zone = …; week = …; }", &h->on,
	                       config_hours_key, &rd) != 0)
		return -1;
	if (!rd.zone || !rd.week) {
		config_error(r, g, "queues: hours needs zone and week");
		return -1;
	}
	return 0;
}

/* One entry of queues: every key known and in range. 0 when valid. */
static int
config_queue(struct config_report *r, const config_setting_t *e,
             struct csq_policy *p)
{
	const config_setting_t *f;
	const char *field, *v;
	size_t j;
	int i, n, bad = 0, st;

	memset(p, 0, sizeof(*p));
	n = config_setting_length(e);
	for (i = 0; i < n; i++) {
		f = config_setting_get_elem(e, (unsigned)i);
		field = config_setting_name(f);
		for (j = 0; j < sizeof(config_queue_ints) /
		                    sizeof(config_queue_ints[0]);
		     j++)
			if (strcmp(field, config_queue_ints[j].name) == 0)
				break;
		if (j <
		    sizeof(config_queue_ints) / sizeof(config_queue_ints[0])) {
			bad |= config_queue_int(r, f, &config_queue_ints[j],
			                        p) != 0;
		} else if (strcmp(field, "name") == 0) {
			bad |= config_queue_id(r, f, field, p->name) != 0;
		} else if (strcmp(field, "overflow_to") == 0) {
			bad |=
			    config_queue_id(r, f, field, p->overflow_to) != 0;
		} else if (strcmp(field, "strategy") == 0) {
			v = config_setting_type(f) == CONFIG_TYPE_STRING
			        ? config_setting_get_string(f)
			        : "";
			for (st = 0; config_strategies[st] != NULL; st++)
				if (strcmp(v, config_strategies[st]) == 0)
					break;
			if (config_strategies[st] == NULL) {
				config_error(r, f,
				             "queues: strategy must be "
				             "\"longest_idle\" or "
				             "\"least_busy\"");
				bad = 1;
			} else {
				p->has_strategy = 1;
				p->strategy = (enum csq_strategy)st;
			}
		} else if (strcmp(field, "relax") == 0) {
			bad |= config_relax(r, f, p) != 0;
		} else if (strcmp(field, "hours") == 0) {
			bad |= config_hours(r, f, &p->hours) != 0;
		} else if (strcmp(field, "nobody") == 0) {
			bad |= config_nobody(r, f, &p->nobody) != 0;
		} else if (strcmp(field, "skill_order") == 0) {
			/* Section 3c: which eligible servicer first. */
			v = config_setting_type(f) == CONFIG_TYPE_STRING
			        ? config_setting_get_string(f)
			        : "";
			if (strcmp(v, "strategy") == 0)
				p->skill_order = CSQ_SKILL_ORDER_STRATEGY;
			else if (strcmp(v, "level") == 0)
				p->skill_order = CSQ_SKILL_ORDER_LEVEL;
			else {
				config_error(r, f,
				             "queues: skill_order must be "
				             "\"strategy\" or \"level\"");
				bad = 1;
			}
		} else {
			config_error(r, f, "queues: unknown key %s", field);
			bad = 1;
		}
	}
	if (p->name[0] == '\0' && !bad) {
		config_error(r, e, "queues: an entry needs a name");
		bad = 1;
	}
	return bad ? -1 : 0;
}

/*
 * queues: a list of groups, each a queue's policy. Each entry's keys are
 * checked here; what concerns several entries or other keys (a name
 * twice, a cycle of overflow_to, overflow_after without overflow_to,
 * aging_max_tier above max_tier, the engine) once the whole file is
 * read, config_check_queues.
 */
static void
config_set_queues(struct config_report *r, struct config *cfg,
                  const config_setting_t *s, const struct config_key *k)
{
	const config_setting_t *e;
	int i, n;

	(void)k;
	if (config_setting_type(s) != CONFIG_TYPE_LIST) {
		config_error(r, s,
		             "queues must be a list of groups, ( { … } )");
		return;
	}
	n = config_setting_length(s);
	if (n > CSQ_POLICIES_MAX) {
		config_error(r, s,
		             "queues must have at most %d entries (not %d)",
		             CSQ_POLICIES_MAX, n);
		return;
	}
	/* An entry in error keeps no name: config_check_queues passes it
	 * over, and judges the others together. */
	for (i = 0; i < n; i++) {
		e = config_setting_get_elem(s, (unsigned)i);
		memset(&cfg->policies[i], 0, sizeof(cfg->policies[i]));
		if (config_setting_type(e) != CONFIG_TYPE_GROUP) {
			config_error(r, e,
			             "queues must be a list of groups, "
			             "( { … } )");
			continue;
		}
		if (config_queue(r, e, &cfg->policies[i]) != 0)
			cfg->policies[i].name[0] = '\0';
	}
	cfg->npolicies = n;
}

/* Checks and stores every setting under group g, whose path is prefix. */
static void
config_walk(struct config_report *r, struct config *cfg,
            const config_setting_t *g, const char *prefix)
{
	const struct config_key *k;
	const config_setting_t *s;
	char path[CONFIG_MSG_MAX];
	int i, n;

	n = config_setting_length(g);
	for (i = 0; i < n; i++) {
		s = config_setting_get_elem(g, (unsigned)i);
		snprintf(path, sizeof(path), "%s%s%s", prefix,
		         *prefix != '\0' ? "." : "", config_setting_name(s));
		if ((k = config_find(path)) != NULL) {
			switch (k->type) {
			case CONFIG_T_INT:
				config_set_int(r, cfg, s, k);
				break;
			case CONFIG_T_STRING:
				config_set_string(r, cfg, s, k);
				break;
			case CONFIG_T_ENUM:
				config_set_enum(r, cfg, s, k);
				break;
			case CONFIG_T_LIST:
				config_set_list(r, cfg, s, k);
				break;
			case CONFIG_T_CUSTOM:
				k->load(r, cfg, s, k);
				break;
			case CONFIG_T_BOOL:
				if (config_setting_type(s) != CONFIG_TYPE_BOOL)
					config_error(r, s,
					             "%s must be true or false",
					             k->name);
				else
					config_store_int(
					    cfg, k, config_setting_get_bool(s));
				break;
			}
		} else if (config_is_group(path)) {
			if (config_setting_type(s) != CONFIG_TYPE_GROUP)
				config_error(r, s, "%s must be a group", path);
			else
				config_walk(r, cfg, s, path);
		} else
			config_error(r, s, "unknown key %s", path);
	}
}

/* What one key cannot say alone: TLS needs a certificate and its key,
 * and verify_clients the CAs to verify with. */
static void
config_check_tls(struct config_report *r, const struct config *cfg,
                 config_t *lc)
{
	const config_setting_t *tls = config_lookup(lc, "tls");
	int used = cfg->ntls_listen > 0 || cfg->http_tls;

	if (used && (cfg->tls_cert[0] == '\0' || cfg->tls_key[0] == '\0'))
		config_error(r, tls != NULL ? tls : config_lookup(lc, "http"),
		             "tls: cert and key are needed for %s",
		             cfg->ntls_listen > 0 ? "tls.listen" : "http.tls");
	if (cfg->tls_verify_clients && cfg->tls_ca[0] == '\0')
		config_error(r, tls, "tls: verify_clients needs ca");
}

/*
 * What concerns the queues entries together, once each is valid (libcsq's
 * own check, csq_policies_check, the one the engine applies): reported at
 * the line of the entry it finds.
 */
static void
config_check_queues(struct config_report *r, const struct config *cfg,
                    config_t *lc)
{
	static struct csq_policy ok[CSQ_POLICIES_MAX];
	const config_setting_t *queues = config_lookup(lc, "queues");
	size_t n = 0, i, at[CSQ_POLICIES_MAX];
	enum csq_policy_error e;

	for (i = 0; i < (size_t)cfg->npolicies; i++)
		if (cfg->policies[i].name[0] != '\0') {
			at[n] = i;
			ok[n++] = cfg->policies[i];
		}
	if (cfg->npolicies == 0)
		return;
	for (i = 0; i < n; i++) {
		e = csq_policy_check_entry(ok, n, i, &cfg->limits);
		if (e != CSQ_POLICY_OK)
			config_error(
			    r, config_setting_get_elem(queues, (unsigned)at[i]),
			    "queues: \"%s\": %s", ok[i].name,
			    csq_policy_error_text(e));
	}
}

/* Applies a parsed tree, or reports why it could not be parsed. */
static int
config_apply(struct config *cfg, config_t *lc, int ok, const char *name,
             const char *text, FILE *err)
{
	struct config_report r = {err, name, 0, text, NULL, NULL};
	const char *file;

	config_default(cfg);
	if (!ok) {
		file = config_error_file(lc);
		if (err != NULL && config_error_type(lc) == CONFIG_ERR_FILE_IO)
			fprintf(err, "%s: cannot read: %s\n", name,
			        errno != 0 ? strerror(errno)
			                   : config_error_text(lc));
		else if (err != NULL)
			fprintf(err, "%s:%d: %s\n", file != NULL ? file : name,
			        config_error_line(lc), config_error_text(lc));
		return 1;
	}
	config_walk(&r, cfg, config_root_setting(lc), "");
	/* The one rule between keys: a master's name and where to ask for
	 * it come together (once each is valid on its own). */
	if (r.errors == 0 &&
	    (cfg->nsentinels > 0) != (cfg->redis_master[0] != '\0'))
		config_error(&r, config_lookup(lc, "redis"),
		             "redis.sentinels and redis.master go together: "
		             "give both or neither");
	/* The Lua engine is gone (issue 34): engine "redis" is csq.so, and
	 * redis.module stays only as true, for configurations that set it. */
	if (r.errors == 0 && !cfg->redis_module &&
	    strcmp(cfg->engine, "redis") == 0)
		config_error(
		    &r, config_lookup(lc, "redis.module"),
		    "redis.module = false: the Lua engine is gone; "
		    "engine \"redis\" runs on csq.so, which "
		    "redis-server must load (`loadmodule " CSQ_MODULE_PATH
		    "`, docs/operations.md): remove the key");
	if (r.errors == 0)
		config_check_tls(&r, cfg, lc);
	config_check_queues(&r, cfg, lc);
	free(r.file_text);
	free(r.file_name);
	return r.errors;
}

int
config_load(struct config *cfg, const char *path, FILE *err)
{
	config_t lc;
	int ok, n;

	config_init(&lc);
	errno = 0;
	ok = config_read_file(&lc, path) == CONFIG_TRUE;
	n = config_apply(cfg, &lc, ok, path, NULL, err);
	config_destroy(&lc);
	return n;
}

int
config_load_string(struct config *cfg, const char *text, const char *name,
                   FILE *err)
{
	config_t lc;
	int ok, n;

	config_init(&lc);
	ok = config_read_string(&lc, text) == CONFIG_TRUE;
	n = config_apply(cfg, &lc, ok, name, text, err);
	config_destroy(&lc);
	return n;
}

/* Parses a strict decimal port, 1..65535. */
static int
config_parse_port(const char *s)
{
	size_t i, len = strlen(s);
	int port = 0;

	if (len == 0 || len > CONFIG_PORT_DIGITS)
		return -1;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		port = port * 10 + (s[i] - '0');
	}
	return port >= 1 && port <= CONFIG_PORT_MAX ? port : -1;
}

/* A host name or IPv4 address: letters, digits, '-', '.' and '_'. */
static int
config_valid_host(const char *h, size_t len)
{
	size_t i;

	if (len == 0)
		return 0;
	for (i = 0; i < len; i++) {
		if (!((h[i] >= 'a' && h[i] <= 'z') ||
		      (h[i] >= 'A' && h[i] <= 'Z') ||
		      (h[i] >= '0' && h[i] <= '9') || h[i] == '-' ||
		      h[i] == '.' || h[i] == '_'))
			return 0;
	}
	return 1;
}

int
config_parse_addr(const char *s, struct config_addr *out)
{
	struct in6_addr in6;
	const char *host, *end, *colon;
	size_t len;
	int port;

	memset(out, 0, sizeof(*out));
	if (s == NULL || *s == '\0')
		return -1;
	if (strncmp(s, "unix:", 5) == 0) {
		host = s + 5;
		len = strlen(host);
		if (host[0] != '/' || len >= CONFIG_SUN_PATH_SIZE ||
		    len >= sizeof(out->host))
			return -1;
		out->is_unix = 1;
		memcpy(out->host, host, len + 1);
		return 0;
	}
	if (*s == '[') {
		host = s + 1;
		if ((end = strchr(host, ']')) == NULL || end[1] != ':')
			return -1;
		colon = end + 1;
	} else {
		if ((colon = strrchr(s, ':')) == NULL)
			return -1;
		host = s;
		end = colon;
		if (!config_valid_host(host, (size_t)(end - host)))
			return -1;
	}
	len = (size_t)(end - host);
	if (len == 0 || len >= sizeof(out->host))
		return -1;
	if ((port = config_parse_port(colon + 1)) < 0)
		return -1;
	memcpy(out->host, host, len);
	out->host[len] = '\0';
	if (*s == '[' && inet_pton(AF_INET6, out->host, &in6) != 1) {
		memset(out, 0, sizeof(*out));
		return -1;
	}
	out->port = port;
	return 0;
}

static const char *
config_check_listen(const char *s)
{
	struct config_addr a;

	if (config_parse_addr(s, &a) != 0)
		return "not host:port, [ipv6]:port or unix:/path";
	return NULL;
}

static const char *
config_check_http(const char *s)
{
	struct config_addr a;

	if (*s == '\0')
		return NULL;
	if (config_parse_addr(s, &a) != 0 || a.is_unix)
		return "not host:port or [ipv6]:port";
	return NULL;
}

static const char *
config_check_sentinel(const char *s)
{
	struct config_addr a;

	if (config_parse_addr(s, &a) != 0 || a.is_unix)
		return "not host:port or [ipv6]:port";
	return NULL;
}

/* An Origin as browsers send it: "http://" or "https://", a host and
 * maybe a port, nothing after; no wildcard, since the answers it gets
 * carry credentials. */
static const char *
config_check_origin(const char *s)
{
	const char *host;

	if (strncmp(s, "https://", 8) == 0)
		host = s + 8;
	else if (strncmp(s, "http://", 7) == 0)
		host = s + 7;
	else
		return "not an origin: http://host[:port] or "
		       "https://host[:port]";
	if (*host == '\0' || strpbrk(host, "/?#*@ \t") != NULL)
		return "not an origin: a host and a port at most, no path, no "
		       "wildcard";
	return NULL;
}

static const char *
config_check_nonempty(const char *s)
{
	return *s == '\0' ? "must not be empty" : NULL;
}

/* Keys are "{prefix}:...", a hash tag that a brace inside would cut short. */
static const char *
config_check_prefix(const char *s)
{
	if (*s == '\0')
		return "must not be empty";
	if (strpbrk(s, "{}") != NULL)
		return "must not contain '{' or '}'";
	return NULL;
}
