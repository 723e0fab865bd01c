/*
 * The configuration table: defaults, the sample file, every key, every kind
 * of error with its line, and listen addresses. Also the log line formats.
 */
#include <sys/stat.h>

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "log.h"

#ifndef CSQ_SOURCE_DIR
#define CSQ_SOURCE_DIR "."
#endif

/* What the last load() printed. */
static char errout[65536];

static int
load(struct config *cfg, const char *text)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int n;

	f = open_memstream(&buf, &len);
	assert_non_null(f);
	n = config_load_string(cfg, text, "t.conf", f);
	fclose(f);
	snprintf(errout, sizeof(errout), "%s", buf != NULL ? buf : "");
	free(buf);
	return n;
}

static int
count_lines(const char *s)
{
	int n = 0;

	for (; *s != '\0'; s++)
		n += *s == '\n';
	return n;
}

static void
assert_printed(const char *needle)
{
	if (strstr(errout, needle) == NULL)
		fail_msg("expected \"%s\" in:\n%s", needle, errout);
}

/* Exactly one error, printed with this text. */
static void
assert_one_error(const char *text, const char *needle)
{
	static struct config cfg; /* large: not on the stack */
	int n = load(&cfg, text);

	if (n != 1)
		fail_msg("%d errors for:\n%s\nprinted:\n%s", n, text, errout);
	assert_int_equal(count_lines(errout), 1);
	assert_printed(needle);
}

static void
test_defaults(void **state)
{
	static struct config cfg; /* large: not on the stack */

	(void)state;
	config_default(&cfg);
	assert_int_equal(cfg.nlisten, 1);
	assert_string_equal(cfg.listen[0], "127.0.0.1:7878");
	assert_string_equal(cfg.requirepass, "");
	assert_string_equal(cfg.engine, "memory");
	assert_int_equal(cfg.limits.servicer_ttl_s, 30);
	assert_int_equal(cfg.limits.user_ttl_s, 120);
	assert_int_equal(cfg.limits.max_tier, 9);
	assert_int_equal(cfg.limits.max_queue_length, 100000);
	assert_int_equal(cfg.limits.max_queues, 100000);
	assert_int_equal(cfg.max_clients, 10000);
	assert_int_equal(cfg.busy_poll_us, 50);
	assert_string_equal(cfg.journal, "");
	assert_int_equal(cfg.fsync, CONFIG_FSYNC_EVERYSEC);
	assert_string_equal(cfg.redis_host, "127.0.0.1");
	assert_int_equal(cfg.redis_port, 6379);
	assert_string_equal(cfg.redis_password, "");
	assert_int_equal(cfg.redis_db, 0);
	assert_string_equal(cfg.redis_prefix, "csq");
	assert_string_equal(cfg.http_listen, "127.0.0.1:7879");
	assert_int_equal(cfg.log_level, LOG_LVL_INFO);
}

static void
test_defaults_match_libcsq(void **state)
{
	struct csq_limits l;
	static struct config cfg; /* large: not on the stack */

	(void)state;
	memset(&l, 0, sizeof(l)); /* the padding too */
	csq_limits_default(&l);
	config_default(&cfg);
	assert_memory_equal(&l, &cfg.limits, sizeof(l));
}

static void
test_empty_is_defaults(void **state)
{
	static struct config def, cfg; /* large: not on the stack */

	(void)state;
	config_default(&def);
	memset(&cfg, 0xa5, sizeof(cfg));
	assert_int_equal(load(&cfg, ""), 0);
	assert_string_equal(errout, "");
	assert_memory_equal(&cfg, &def, sizeof(cfg));
	assert_int_equal(load(&cfg, "# only a comment\n\n"), 0);
	assert_memory_equal(&cfg, &def, sizeof(cfg));
}

static void
test_sample_file(void **state)
{
	static struct config def, cfg; /* large: not on the stack */
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int n;

	(void)state;
	config_default(&def);
	f = open_memstream(&buf, &len);
	assert_non_null(f);
	n = config_load(&cfg, CSQ_SOURCE_DIR "/conf/csqd.conf", f);
	fclose(f);
	if (n != 0)
		fail_msg("conf/csqd.conf: %d errors:\n%s", n, buf);
	free(buf);
	assert_memory_equal(&cfg, &def, sizeof(cfg));
}

static void
test_every_key(void **state)
{
	static struct config cfg; /* large: not on the stack */

	(void)state;
	assert_int_equal(
	    load(&cfg, "listen = [ \"0.0.0.0:1\", \"[::1]:2\","
	               " \"unix:/run/csq.sock\", \"localhost:65535\" ];\n"
	               "requirepass = \"s3cret\";\n"
	               "engine = \"redis\";\n"
	               "servicer_ttl = 45;\n"
	               "user_ttl = 0;\n"
	               "max_tier = 3;\n"
	               "max_queue_length = 7;\n"
	               "max_clients = 12;\n"
	               "memory: { journal = \"/var/lib/csq/journal\";"
	               " fsync = \"always\"; };\n"
	               "redis: { host = \"redis.example\"; port = 6380;"
	               " password = \"pw\"; db = 4; prefix = \"q1\"; };\n"
	               "http: { listen = \"\"; };\n"
	               "log: { level = \"debug\"; };\n"),
	    0);
	assert_string_equal(errout, "");
	assert_int_equal(cfg.nlisten, 4);
	assert_string_equal(cfg.listen[0], "0.0.0.0:1");
	assert_string_equal(cfg.listen[1], "[::1]:2");
	assert_string_equal(cfg.listen[2], "unix:/run/csq.sock");
	assert_string_equal(cfg.listen[3], "localhost:65535");
	assert_string_equal(cfg.requirepass, "s3cret");
	assert_string_equal(cfg.engine, "redis");
	assert_int_equal(cfg.limits.servicer_ttl_s, 45);
	assert_int_equal(cfg.limits.user_ttl_s, 0);
	assert_int_equal(cfg.limits.max_tier, 3);
	assert_int_equal(cfg.limits.max_queue_length, 7);
	assert_int_equal(cfg.max_clients, 12);
	assert_string_equal(cfg.journal, "/var/lib/csq/journal");
	assert_int_equal(cfg.fsync, CONFIG_FSYNC_ALWAYS);
	assert_string_equal(cfg.redis_host, "redis.example");
	assert_int_equal(cfg.redis_port, 6380);
	assert_string_equal(cfg.redis_password, "pw");
	assert_int_equal(cfg.redis_db, 4);
	assert_string_equal(cfg.redis_prefix, "q1");
	assert_string_equal(cfg.http_listen, "");
	assert_int_equal(cfg.log_level, LOG_LVL_DEBUG);
}

/* The record of the day: its defaults, every key, and bad values. */
static void
test_record_keys(void **state)
{
	static struct config cfg; /* large: not on the stack */

	(void)state;
	assert_int_equal(load(&cfg, ""), 0);
	assert_string_equal(cfg.record_path, "");
	assert_int_equal(cfg.record_fsync, CONFIG_FSYNC_EVERYSEC);
	assert_int_equal(cfg.record_rotate_size, 256LL << 20);
	assert_int_equal(cfg.record_rotate_daily, 1);
	assert_int_equal(cfg.record_keep_days, 30);
	assert_int_equal(load(&cfg, "record: { path = \"/var/lib/csq/day\";"
	                            " fsync = \"always\"; rotate_size = 0;"
	                            " rotate_daily = false; keep_days = 0; };"),
	                 0);
	assert_string_equal(cfg.record_path, "/var/lib/csq/day");
	assert_int_equal(cfg.record_fsync, CONFIG_FSYNC_ALWAYS);
	assert_int_equal(cfg.record_rotate_size, 0);
	assert_int_equal(cfg.record_rotate_daily, 0);
	assert_int_equal(cfg.record_keep_days, 0);
	assert_one_error("record: { fsync = \"sometimes\"; };", "fsync");
	assert_one_error("record: { rotate_size = -1; };", "rotate_size");
	assert_one_error("record: { keep_days = 36501; };", "keep_days");
	assert_one_error("record: { path = 3; };", "path");
	assert_one_error("record: { paht = \"x\"; };", "paht");
}

/* Routing's keys (protocol-v2 sections 1 to 3): ranges, the strategy's
 * values, and the Redis engine, which has none of them yet. */
static void
test_routing_keys(void **state)
{
	static struct config cfg; /* large: not on the stack */

	(void)state;
	assert_int_equal(load(&cfg, "offer_timeout = 600;\n"
	                            "offer_max_missed = 1000;\n"
	                            "offer_retry = 0;\n"
	                            "wrapup = 3600;\n"
	                            "strategy = \"least_busy\";\n"),
	                 0);
	assert_int_equal(cfg.limits.offer_timeout_s, 600);
	assert_int_equal(cfg.limits.offer_max_missed, 1000);
	assert_int_equal(cfg.limits.offer_retry_s, 0);
	assert_int_equal(cfg.limits.wrapup_s, 3600);
	assert_int_equal(cfg.limits.strategy, CSQ_STRATEGY_LEAST_BUSY);
	assert_int_equal(load(&cfg, "strategy = \"longest_idle\";\n"), 0);
	assert_int_equal(cfg.limits.strategy, CSQ_STRATEGY_LONGEST_IDLE);
	assert_int_equal(load(&cfg, "offer_timeout = 601;\n"
	                            "offer_max_missed = 1001;\n"
	                            "offer_retry = 3601;\n"
	                            "wrapup = -1;\n"
	                            "strategy = \"round_robin\";\n"),
	                 5);
	assert_int_equal(count_lines(errout), 5);
	assert_printed("t.conf:5:");
	/* The Redis engine has them too. */
	assert_int_equal(load(&cfg, "engine = \"redis\";\n"
	                            "offer_timeout = 5;\n"
	                            "strategy = \"least_busy\";\n"),
	                 0);
	assert_int_equal(cfg.limits.offer_timeout_s, 5);
	assert_int_equal(cfg.limits.strategy, CSQ_STRATEGY_LEAST_BUSY);
}

static void
test_list_syntax(void **state)
{
	static struct config cfg; /* large: not on the stack */

	(void)state;
	/* A libconfig list ( ) is as good as an array [ ]. */
	assert_int_equal(load(&cfg, "listen = ( \"a:1\", \"b:2\" );"), 0);
	assert_int_equal(cfg.nlisten, 2);
	assert_string_equal(cfg.listen[1], "b:2");
}

static void
test_enum_values(void **state)
{
	static const struct {
		const char *text;
		int fsync, level;
	} cases[] = {
	    {"memory: { fsync = \"always\"; };", CONFIG_FSYNC_ALWAYS, -1},
	    {"memory: { fsync = \"everysec\"; };", CONFIG_FSYNC_EVERYSEC, -1},
	    {"memory: { fsync = \"no\"; };", CONFIG_FSYNC_NO, -1},
	    {"log: { level = \"debug\"; };", -1, LOG_LVL_DEBUG},
	    {"log: { level = \"info\"; };", -1, LOG_LVL_INFO},
	    {"log: { level = \"warning\"; };", -1, LOG_LVL_WARNING},
	    {"log: { level = \"error\"; };", -1, LOG_LVL_ERROR},
	};
	static struct config cfg; /* large: not on the stack */
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(load(&cfg, cases[i].text), 0);
		if (cases[i].fsync >= 0)
			assert_int_equal(cfg.fsync, cases[i].fsync);
		if (cases[i].level >= 0)
			assert_int_equal(cfg.log_level, cases[i].level);
	}
	assert_int_equal(load(&cfg, "engine = \"memory\";"), 0);
	assert_string_equal(cfg.engine, "memory");
}

static const struct int_key {
	const char *name;
	long long min, max;
} int_keys[] = {
    {"servicer_ttl", 1, 86400},
    {"user_ttl", 0, 86400},
    {"max_tier", 0, 15},
    {"max_queue_length", 1, 100000000},
    {"max_queues", 1, 100000000},
    {"max_clients", 1, 1000000},
    {"redis.port", 1, 65535},
    {"redis.db", 0, 1000000},
    {"busy_poll_us", 0, 10000},
    {"redis.wait_replicas", 0, 16},
    {"redis.wait_timeout_ms", 1, 60000},
};

static long long
int_value(const struct config *cfg, const char *name)
{
	if (strcmp(name, "servicer_ttl") == 0)
		return cfg->limits.servicer_ttl_s;
	if (strcmp(name, "user_ttl") == 0)
		return cfg->limits.user_ttl_s;
	if (strcmp(name, "max_tier") == 0)
		return cfg->limits.max_tier;
	if (strcmp(name, "max_queue_length") == 0)
		return (long long)cfg->limits.max_queue_length;
	if (strcmp(name, "max_queues") == 0)
		return (long long)cfg->limits.max_queues;
	if (strcmp(name, "max_clients") == 0)
		return cfg->max_clients;
	if (strcmp(name, "redis.port") == 0)
		return cfg->redis_port;
	if (strcmp(name, "redis.db") == 0)
		return cfg->redis_db;
	if (strcmp(name, "busy_poll_us") == 0)
		return cfg->busy_poll_us;
	if (strcmp(name, "redis.wait_replicas") == 0)
		return cfg->redis_wait_replicas;
	if (strcmp(name, "redis.wait_timeout_ms") == 0)
		return cfg->redis_wait_timeout_ms;
	fail_msg("no key %s", name);
	return -1;
}

/* "a.b" = v as "a: { b = v; };" on line 2. */
static void
int_text(char *buf, size_t size, const char *name, const char *value)
{
	const char *dot = strchr(name, '.');

	if (dot == NULL)
		snprintf(buf, size, "\n%s = %s;\n", name, value);
	else
		snprintf(buf, size, "%.*s:\n{\n  %s = %s;\n};\n",
		         (int)(dot - name), name, dot + 1, value);
}

static void
test_int_edges(void **state)
{
	char text[256], value[64], range[128];
	static struct config cfg; /* large: not on the stack */
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(int_keys) / sizeof(int_keys[0]); i++) {
		const struct int_key *k = &int_keys[i];
		const char *line =
		    strchr(k->name, '.') ? "t.conf:3: " : "t.conf:2: ";

		snprintf(range, sizeof(range),
		         "%s must be between %lld and %lld", k->name, k->min,
		         k->max);

		snprintf(value, sizeof(value), "%lld", k->min);
		int_text(text, sizeof(text), k->name, value);
		assert_int_equal(load(&cfg, text), 0);
		assert_int_equal(int_value(&cfg, k->name), k->min);

		snprintf(value, sizeof(value), "%lld", k->max);
		int_text(text, sizeof(text), k->name, value);
		assert_int_equal(load(&cfg, text), 0);
		assert_int_equal(int_value(&cfg, k->name), k->max);

		snprintf(value, sizeof(value), "%lld", k->min - 1);
		int_text(text, sizeof(text), k->name, value);
		assert_one_error(text, range);
		assert_printed(line);

		snprintf(value, sizeof(value), "%lld", k->max + 1);
		int_text(text, sizeof(text), k->name, value);
		assert_one_error(text, range);
		assert_printed(line);

		/* Wrong types: a string, a float and a bool. */
		snprintf(range, sizeof(range), "%s must be an integer",
		         k->name);
		int_text(text, sizeof(text), k->name, "\"5\"");
		assert_one_error(text, range);
		int_text(text, sizeof(text), k->name, "5.0");
		assert_one_error(text, range);
		int_text(text, sizeof(text), k->name, "true");
		assert_one_error(text, range);
	}
}

static void
test_int64(void **state)
{
	static struct config cfg; /* large: not on the stack */

	(void)state;
	/* Integers written as 64-bit (L suffix, or too big for int) count. */
	assert_int_equal(load(&cfg, "max_queue_length = 100000000L;"), 0);
	assert_int_equal(cfg.limits.max_queue_length, 100000000);
	assert_int_equal(load(&cfg, "servicer_ttl = 60L;"), 0);
	assert_int_equal(cfg.limits.servicer_ttl_s, 60);
	assert_one_error(
	    "max_queue_length = 5000000000;",
	    "t.conf:1: max_queue_length must be between 1 and 100000000");
	assert_one_error("max_clients = -5000000000L;",
	                 "max_clients must be between 1 and 1000000");
	assert_int_equal(load(&cfg, "max_tier = 0xf;"), 0);
	assert_int_equal(cfg.limits.max_tier, 15);
}

/* Writes text to a new file made from template path (mkstemp). */
static void
write_temp(char *path, const char *text)
{
	int fd = mkstemp(path);
	FILE *f;

	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/*
 * Integers beyond 32 bits written without an L suffix. libconfig 1.5
 * (Debian 12's) keeps them in 32 bits without a word, so that each key's
 * minimum plus 2^32 read as the minimum and passed: csqd reads the text
 * again. Tried to fool it with the same name in a string and in comments,
 * a value on another line, and hex.
 */
static void
test_int_wrapped(void **state)
{
	char text[256], value[64], want[160];
	static struct config cfg; /* large: not on the stack */
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(int_keys) / sizeof(int_keys[0]); i++) {
		const struct int_key *k = &int_keys[i];

		snprintf(value, sizeof(value), "%lld", k->min + 4294967296LL);
		snprintf(want, sizeof(want),
		         "%s must be between %lld and %lld (not %s)", k->name,
		         k->min, k->max, value);
		int_text(text, sizeof(text), k->name, value);
		assert_one_error(text, want);

		snprintf(value, sizeof(value), "%lld", k->max - 4294967296LL);
		snprintf(want, sizeof(want), "(not %s)", value);
		int_text(text, sizeof(text), k->name, value);
		assert_one_error(text, want);
	}
	assert_one_error("max_tier = 0x100000003;",
	                 "t.conf:1: max_tier must be between 0 and 15 "
	                 "(not 0x100000003)");
	assert_one_error("max_clients = 99999999999999999999999;",
	                 "(not 99999999999999999999999)");
	assert_one_error("\nmax_tier\n  =\n  4294967299;\n",
	                 "t.conf:2: max_tier must be between 0 and 15 "
	                 "(not 4294967299)");
	assert_one_error("redis: { host = \"port = 1\"; port = 4294967297; };",
	                 "redis.port must be between 1 and 65535 "
	                 "(not 4294967297)");

	/* The same digits in a comment or a string are not the value. */
	assert_int_equal(load(&cfg, "max_tier = 3; # 4294967299\n"
	                            "max_clients = /* 4294967297 */ 7;\n"
	                            "// max_queue_length = 4294967297;\n"
	                            "redis: { host = \"db = 4294967296\"; "
	                            "db = 2; };\n"),
	                 0);
	assert_int_equal(cfg.limits.max_tier, 3);
	assert_int_equal(cfg.max_clients, 7);
	assert_int_equal(cfg.redis_db, 2);
	/* 64-bit integers as libconfig reads them are still the value. */
	assert_int_equal(load(&cfg, "max_queue_length = 100000000L;"), 0);
	assert_int_equal(cfg.limits.max_queue_length, 100000000);
}

/* The same through a file and a file it includes. */
static void
test_int_wrapped_included(void **state)
{
	char main_path[] = "/tmp/csq-test-config-XXXXXX";
	char inc_path[] = "/tmp/csq-test-include-XXXXXX";
	char text[128];
	static struct config cfg; /* large: not on the stack */
	char *buf = NULL;
	size_t len = 0;
	FILE *err;
	int n;

	(void)state;
	write_temp(inc_path, "\nmax_tier = 4294967299;\n");
	snprintf(text, sizeof(text),
	         "max_clients = 4294967297;\n@include \"%s\"\n", inc_path);
	write_temp(main_path, text);

	err = open_memstream(&buf, &len);
	n = config_load(&cfg, main_path, err);
	fclose(err);
	assert_int_equal(n, 2);
	assert_non_null(strstr(buf, ":1: max_clients must be between 1 and "
	                            "1000000 (not 4294967297)"));
	assert_non_null(strstr(buf, inc_path));
	assert_non_null(strstr(buf, ":2: max_tier must be between 0 and 15 "
	                            "(not 4294967299)"));
	free(buf);
	unlink(inc_path);
	unlink(main_path);
}

static void
test_unknown_keys(void **state)
{
	(void)state;
	assert_one_error("servicer_ttl = 5;\nbogus = 1;\n",
	                 "t.conf:2: unknown key bogus");
	assert_one_error(
	    "memory:\n{\n  fsync = \"no\";\n  sync = \"no\";\n};\n",
	    "t.conf:4: unknown key memory.sync");
	/* An unknown group is one error, not one per key inside it. */
	assert_one_error("\n\nextra: { a = 1; b = 2; };\n",
	                 "t.conf:3: unknown key extra");
	/* A group's key at the top level, and the other way round. */
	assert_one_error("fsync = \"no\";", "unknown key fsync");
	assert_one_error("log: { servicer_ttl = 5; };",
	                 "unknown key log.servicer_ttl");
	assert_one_error("memory: { journal: { a = 1; }; };",
	                 "memory.journal must be a string");
}

static void
test_wrong_types(void **state)
{
	(void)state;
	assert_one_error("\nservicer_ttl = \"30\";",
	                 "t.conf:2: servicer_ttl must be an integer");
	assert_one_error("requirepass = 5;", "requirepass must be a string");
	assert_one_error("requirepass = [ \"a\" ];",
	                 "requirepass must be a string");
	assert_one_error("memory = 5;", "t.conf:1: memory must be a group");
	assert_one_error("redis = [ 1 ];", "redis must be a group");
	assert_one_error("listen = \"127.0.0.1:7878\";",
	                 "listen must be a list of strings");
	assert_one_error("listen = [ 7878 ];",
	                 "listen must be a list of strings");
	assert_one_error("listen = ( \"a:1\", 2 );",
	                 "listen must be a list of strings");
	assert_one_error("listen = { a = 1; };",
	                 "listen must be a list of strings");
	assert_one_error("engine = 1;",
	                 "engine must be one of \"memory\", \"redis\"");
	assert_one_error("log: { level = 1; };", "log.level must be one of");
}

static void
test_bad_enums(void **state)
{
	(void)state;
	assert_one_error(
	    "\n\nengine = \"mysql\";",
	    "t.conf:3: engine must be one of \"memory\", \"redis\"");
	assert_one_error(
	    "memory: { fsync = \"sometimes\"; };",
	    "memory.fsync must be one of \"always\", \"everysec\", \"no\"");
	assert_one_error(
	    "log: { level = \"verbose\"; };",
	    "log.level must be one of \"debug\", \"info\", \"warning\", "
	    "\"error\"");
	/* Names are exact: no case folding, no prefixes. */
	assert_one_error("engine = \"Memory\";", "engine must be one of");
	assert_one_error("log: { level = \"warn\"; };", "log.level must be");
	assert_one_error("log: { level = \"\"; };", "log.level must be");
}

static void
test_listen_errors(void **state)
{
	char text[4096];
	static struct config cfg; /* large: not on the stack */
	size_t len;
	int i;

	(void)state;
	/* Elements are reported at the line of the list. */
	assert_one_error(
	    "\nlisten = [\n  \"127.0.0.1:7878\",\n  \"nope\"\n];\n",
	    "t.conf:2: listen: \"nope\": not host:port");
	assert_one_error("listen = [ \"127.0.0.1:0\" ];", "\"127.0.0.1:0\"");
	assert_one_error("listen = [ ];", "listen must have between 1 and 16 "
	                                  "entries (not 0)");

	len = (size_t)snprintf(text, sizeof(text), "\n\nlisten = [");
	for (i = 0; i < CONFIG_LISTEN_MAX + 1; i++)
		len += (size_t)snprintf(text + len, sizeof(text) - len,
		                        "%s\"127.0.0.1:%d\"", i ? ", " : " ",
		                        1000 + i);
	snprintf(text + len, sizeof(text) - len, " ];\n");
	assert_one_error(text, "t.conf:3: listen must have between 1 and 16 "
	                       "entries (not 17)");

	/* Exactly CONFIG_LISTEN_MAX is fine. */
	len = (size_t)snprintf(text, sizeof(text), "listen = [");
	for (i = 0; i < CONFIG_LISTEN_MAX; i++)
		len += (size_t)snprintf(text + len, sizeof(text) - len,
		                        "%s\"127.0.0.1:%d\"", i ? ", " : " ",
		                        1000 + i);
	snprintf(text + len, sizeof(text) - len, " ];\n");
	assert_int_equal(load(&cfg, text), 0);
	assert_int_equal(cfg.nlisten, CONFIG_LISTEN_MAX);
	assert_string_equal(cfg.listen[CONFIG_LISTEN_MAX - 1],
	                    "127.0.0.1:1015");

	/* Each bad entry is its own error. */
	assert_int_equal(load(&cfg, "listen = [ \"a\", \"b:1\", \"c\" ];"), 2);
	assert_printed("\"a\"");
	assert_printed("\"c\"");
}

static void
test_string_checks(void **state)
{
	char text[1024], big[CONFIG_STR_MAX + 1];
	static struct config cfg; /* large: not on the stack */

	(void)state;
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	snprintf(text, sizeof(text), "requirepass = \"%s\";", big);
	assert_one_error(text, "requirepass is too long (at most 255 bytes)");
	big[CONFIG_STR_MAX - 1] = '\0';
	snprintf(text, sizeof(text), "requirepass = \"%s\";", big);
	assert_int_equal(load(&cfg, text), 0);
	assert_int_equal(strlen(cfg.requirepass), CONFIG_STR_MAX - 1);

	assert_one_error("redis: { prefix = \"\"; };",
	                 "redis.prefix: \"\": must not be empty");
	assert_one_error("redis: { prefix = \"a{b\"; };",
	                 "redis.prefix: \"a{b\": must not contain");
	assert_one_error("redis: { prefix = \"ab}\"; };", "redis.prefix");
	assert_one_error("redis: { host = \"\"; };",
	                 "redis.host: \"\": must not be empty");
	assert_one_error("http: { listen = \"7879\"; };", "http.listen");
	assert_one_error("http: { listen = \"unix:/run/h.sock\"; };",
	                 "http.listen");
	assert_int_equal(load(&cfg, "http: { listen = \"[::]:80\"; };"), 0);
	assert_string_equal(cfg.http_listen, "[::]:80");
}

/* Sentinel: none by default; a master's name and where to ask for it go
 * together; a sentinel is a TCP address. */
static void
test_sentinels(void **state)
{
	static struct config cfg; /* large: not on the stack */

	(void)state;
	assert_int_equal(load(&cfg, ""), 0);
	assert_int_equal(cfg.nsentinels, 0);
	assert_string_equal(cfg.redis_master, "");
	assert_int_equal(cfg.redis_wait_replicas, 0);
	assert_int_equal(cfg.redis_wait_timeout_ms, 1000);
	assert_int_equal(load(&cfg, "redis: { sentinels = [ \"10.0.0.1:26379\","
	                            " \"[::1]:26380\" ]; master = \"m\"; };"),
	                 0);
	assert_int_equal(cfg.nsentinels, 2);
	assert_string_equal(cfg.redis_sentinels[0], "10.0.0.1:26379");
	assert_string_equal(cfg.redis_sentinels[1], "[::1]:26380");
	assert_string_equal(cfg.redis_master, "m");
	assert_int_equal(load(&cfg, "redis: { sentinels = []; };"), 0);
	assert_int_equal(cfg.nsentinels, 0);
	assert_one_error("redis: { master = \"m\"; };",
	                 "redis.sentinels and redis.master go together");
	assert_one_error("redis: { sentinels = [ \"h:1\" ]; };",
	                 "redis.sentinels and redis.master go together");
	assert_one_error("redis: { sentinels = [ \"unix:/s\" ]; "
	                 "master = \"m\"; };",
	                 "redis.sentinels");
	assert_one_error("redis: { sentinels = [ \"26379\" ]; "
	                 "master = \"m\"; };",
	                 "redis.sentinels");
}

/* The Redis engine is csq.so: redis.module is true by default, and false
 * is refused on engine "redis" with how to load the module (the Lua
 * engine is gone); the memory engine ignores it, as every redis key. */
static void
test_redis_module(void **state)
{
	static struct config cfg; /* large: not on the stack */

	(void)state;
	assert_int_equal(load(&cfg, "engine = \"redis\";"), 0);
	assert_int_equal(cfg.redis_module, 1);
	assert_int_equal(
	    load(&cfg, "engine = \"redis\"; redis: { module = true; };"), 0);
	assert_one_error("engine = \"redis\";\nredis: { module = false; };",
	                 "t.conf:2: redis.module = false: the Lua engine is "
	                 "gone; engine \"redis\" runs on csq.so, which "
	                 "redis-server must load (`loadmodule ");
	assert_int_equal(load(&cfg, "redis: { module = false; };"), 0);
}

static void
test_syntax_error(void **state)
{
	static struct config cfg; /* large: not on the stack */

	(void)state;
	assert_true(load(&cfg, "servicer_ttl = 5;\nuser_ttl = ;\n") > 0);
	assert_printed("t.conf:2: ");
	assert_true(load(&cfg, "a = 1;\n\n\nmemory: { fsync = \"no\" \n") > 0);
	assert_printed("t.conf:");
	assert_true(load(&cfg, "servicer_ttl = 5; servicer_ttl = 6;") > 0);
	assert_printed("t.conf:1: ");
}

static void
test_many_errors(void **state)
{
	static struct config cfg; /* large: not on the stack */
	int n;

	(void)state;
	n = load(&cfg, "servicer_ttl = 0;\n"
	               "user_ttl = \"x\";\n"
	               "unknown = 1;\n"
	               "max_tier = 16;\n"
	               "memory: {\n"
	               "  fsync = \"never\";\n"
	               "  extra = 1;\n"
	               "};\n"
	               "listen = [ \"bad\" ];\n"
	               "max_clients = 5;\n"
	               "log: { level = \"loud\"; };\n");
	assert_int_equal(n, 8);
	assert_int_equal(count_lines(errout), 8);
	assert_printed("t.conf:1: servicer_ttl must be between 1 and 86400");
	assert_printed("t.conf:2: user_ttl must be an integer");
	assert_printed("t.conf:3: unknown key unknown");
	assert_printed("t.conf:4: max_tier must be between 0 and 15");
	assert_printed("t.conf:6: memory.fsync must be one of");
	assert_printed("t.conf:7: unknown key memory.extra");
	assert_printed(":9: listen: \"bad\"");
	assert_printed("t.conf:11: log.level must be one of");
}

static void
test_load_file(void **state)
{
	char path[] = "/tmp/csq-test-config-XXXXXX";
	static struct config cfg; /* large: not on the stack */
	char *buf = NULL;
	size_t len = 0;
	FILE *err;
	int n;

	(void)state;
	write_temp(path, "servicer_ttl = 7;\n\nmax_tier = 99;\n");

	err = open_memstream(&buf, &len);
	n = config_load(&cfg, path, err);
	fclose(err);
	assert_int_equal(n, 1);
	assert_non_null(strstr(buf, path));
	assert_non_null(strstr(buf, ":3: max_tier must be between 0 and 15"));
	free(buf);
	buf = NULL;

	/* A file that cannot be read is an error too. */
	unlink(path);
	err = open_memstream(&buf, &len);
	n = config_load(&cfg, path, err);
	fclose(err);
	assert_true(n > 0);
	assert_non_null(strstr(buf, path));
	free(buf);
}

static void
test_parse_addr(void **state)
{
	static const struct {
		const char *s;
		int ok, is_unix, port;
		const char *host;
	} cases[] = {
	    {"127.0.0.1:7878", 1, 0, 7878, "127.0.0.1"},
	    {"0.0.0.0:1", 1, 0, 1, "0.0.0.0"},
	    {"localhost:65535", 1, 0, 65535, "localhost"},
	    {"csq-1.example.com:80", 1, 0, 80, "csq-1.example.com"},
	    {"[::1]:7878", 1, 0, 7878, "::1"},
	    {"[::]:7878", 1, 0, 7878, "::"},
	    {"[fe80::1:2]:9", 1, 0, 9, "fe80::1:2"},
	    {"unix:/x", 1, 1, 0, "/x"},
	    {"unix:/run/csq/csqd.sock", 1, 1, 0, "/run/csq/csqd.sock"},
	    {"127.0.0.1", 0, 0, 0, NULL},       /* no port */
	    {"127.0.0.1:", 0, 0, 0, NULL},      /* empty port */
	    {"127.0.0.1:0", 0, 0, 0, NULL},     /* port 0 */
	    {"127.0.0.1:65536", 0, 0, 0, NULL}, /* too big */
	    {"127.0.0.1:100000", 0, 0, 0, NULL},
	    {"127.0.0.1:-1", 0, 0, 0, NULL},
	    {"127.0.0.1:+80", 0, 0, 0, NULL},
	    {"127.0.0.1:80x", 0, 0, 0, NULL},
	    {"127.0.0.1: 80", 0, 0, 0, NULL},
	    {":7878", 0, 0, 0, NULL},     /* no host */
	    {"::1:7878", 0, 0, 0, NULL},  /* IPv6 needs brackets */
	    {"[::1", 0, 0, 0, NULL},      /* unterminated */
	    {"[::1]", 0, 0, 0, NULL},     /* no port */
	    {"[::1]7878", 0, 0, 0, NULL}, /* no colon */
	    {"[]:7878", 0, 0, 0, NULL},
	    {"[nope]:7878", 0, 0, 0, NULL},
	    {"host name:1", 0, 0, 0, NULL},
	    {"unix:", 0, 0, 0, NULL},
	    {"unix:relative", 0, 0, 0, NULL},
	    {"", 0, 0, 0, NULL},
	};
	struct config_addr a;
	char path[200];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = config_parse_addr(cases[i].s, &a);

		if ((rc == 0) != cases[i].ok)
			fail_msg("\"%s\": got %d", cases[i].s, rc);
		if (!cases[i].ok)
			continue;
		assert_int_equal(a.is_unix, cases[i].is_unix);
		assert_int_equal(a.port, cases[i].port);
		assert_string_equal(a.host, cases[i].host);
	}
	assert_int_equal(config_parse_addr(NULL, &a), -1);

	/* sun_path holds 108 bytes with the NUL: 107 characters fit. */
	memset(path, 'p', sizeof(path));
	memcpy(path, "unix:/", 6);
	path[5 + 107] = '\0';
	assert_int_equal(config_parse_addr(path, &a), 0);
	assert_int_equal(strlen(a.host), 107);
	path[5 + 107] = 'p';
	path[5 + 108] = '\0';
	assert_int_equal(config_parse_addr(path, &a), -1);
}

static void
test_log_level_parse(void **state)
{
	enum log_level l;

	(void)state;
	assert_int_equal(log_level_parse("debug", &l), 0);
	assert_int_equal(l, LOG_LVL_DEBUG);
	assert_int_equal(log_level_parse("info", &l), 0);
	assert_int_equal(l, LOG_LVL_INFO);
	assert_int_equal(log_level_parse("warning", &l), 0);
	assert_int_equal(l, LOG_LVL_WARNING);
	assert_int_equal(log_level_parse("error", &l), 0);
	assert_int_equal(l, LOG_LVL_ERROR);
	assert_int_equal(log_level_parse("warn", &l), -1);
	assert_int_equal(log_level_parse("", &l), -1);
}

/* Runs fn with stderr sent to a file and returns what it wrote. */
static void
capture_stderr(void (*fn)(void), int journal, char *out, size_t size)
{
	char path[] = "/tmp/csq-test-log-XXXXXX", env[64];
	struct stat st;
	int fd, saved;
	ssize_t n;

	fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	saved = dup(STDERR_FILENO);
	dup2(fd, STDERR_FILENO);
	assert_int_equal(fstat(fd, &st), 0);
	if (journal) {
		snprintf(env, sizeof(env), "%llu:%llu",
		         (unsigned long long)st.st_dev,
		         (unsigned long long)st.st_ino);
		setenv("JOURNAL_STREAM", env, 1);
	} else
		setenv("JOURNAL_STREAM", "1:2", 1); /* someone else's */
	log_init();
	fn();
	dup2(saved, STDERR_FILENO);
	close(saved);
	unsetenv("JOURNAL_STREAM");
	log_init();
	n = pread(fd, out, size - 1, 0);
	close(fd);
	out[n > 0 ? n : 0] = '\0';
}

static void
log_some(void)
{
	log_set_level(LOG_LVL_INFO);
	log_debug("hidden %d", 1);
	log_info("hello %s", "world");
	errno = ENOENT;
	log_warn("open %s", "x");
	log_warnx("two\nlines");
	log_error("bad");
}

static void
test_log_format(void **state)
{
	char out[4096], *line;

	(void)state;
	capture_stderr(log_some, 0, out, sizeof(out));
	assert_null(strstr(out, "hidden"));
	assert_int_equal(count_lines(out), 4);
	/* 2026-11-22T10:00:00.123Z info: hello world */
	line = out;
	assert_true(strlen(line) > 25);
	assert_int_equal(line[4], '-');
	assert_int_equal(line[10], 'T');
	assert_int_equal(line[19], '.');
	assert_int_equal(line[23], 'Z');
	assert_memory_equal(line + 24, " info: hello world\n", 19);
	assert_non_null(strstr(out, "Z warning: open x: No such file or "
	                            "directory\n"));
	assert_non_null(strstr(out, "Z warning: two lines\n"));
	assert_non_null(strstr(out, "Z error: bad\n"));

	capture_stderr(log_some, 1, out, sizeof(out));
	assert_string_equal(out, "<6>hello world\n"
	                         "<4>open x: No such file or directory\n"
	                         "<4>two lines\n"
	                         "<3>bad\n");
}

static void
log_debug_on(void)
{
	log_set_level(LOG_LVL_DEBUG);
	log_debug("shown");
	log_set_level(LOG_LVL_ERROR);
	log_warnx("hidden");
	log_set_level(LOG_LVL_INFO);
}

static void
test_log_levels(void **state)
{
	char out[4096];

	(void)state;
	capture_stderr(log_debug_on, 1, out, sizeof(out));
	assert_string_equal(out, "<7>shown\n");
}

/* users: three roles, each field checked; errors name the line and
 * never quote a password. */
static void
test_users(void **state)
{
	static struct config cfg; /* large: not on the stack */

	(void)state;
	assert_int_equal(load(&cfg,
	                      "users = (\n"
	                      "  { name = \"frontend\"; password = \"p1\"; "
	                      "role = \"frontend\"; },\n"
	                      "  { name = \"agents\"; password = \"p2\"; "
	                      "role = \"servicer\"; },\n"
	                      "  { name = \"ops\"; password = \"p3\"; "
	                      "role = \"admin\"; }\n"
	                      ");\n"),
	                 0);
	assert_int_equal(cfg.nusers, 3);
	assert_string_equal(cfg.users[1].name, "agents");
	assert_string_equal(cfg.users[1].password, "p2");
	assert_int_equal(cfg.users[0].role, CONFIG_ROLE_FRONTEND);
	assert_int_equal(cfg.users[1].role, CONFIG_ROLE_SERVICER);
	assert_int_equal(cfg.users[2].role, CONFIG_ROLE_ADMIN);
	assert_string_equal(config_role_name(CONFIG_ROLE_SERVICER), "servicer");
	assert_int_equal(load(&cfg, "users = ();"), 0);
	assert_int_equal(cfg.nusers, 0);
	config_default(&cfg);
	assert_int_equal(cfg.nusers, 0);

	assert_int_equal(load(&cfg, "users = ({ name = \"a\"; password = "
	                            "\"hunter2\"; role = \"boss\"; });"),
	                 1);
	assert_printed("t.conf:1: users: role must be one of \"frontend\", "
	               "\"servicer\", \"admin\"");
	assert_null(strstr(errout, "hunter2"));
	assert_int_equal(load(&cfg, "users = (\n{ name = \"a\"; password = "
	                            "\"x\"; role = \"admin\"; colour = 1; "
	                            "},\n{ name = \"a\"; password = \"y\"; "
	                            "role = \"admin\"; });"),
	                 2);
	assert_printed("t.conf:2: users: unknown key colour");
	assert_printed("users: \"a\" twice");
	assert_int_equal(load(&cfg, "users = ({ name = \"a\"; role = "
	                            "\"admin\"; });"),
	                 1);
	assert_printed("users: an entry needs a name, a password and a role");
	assert_int_equal(load(&cfg, "users = ({ name = \"default\"; password "
	                            "= \"x\"; role = \"admin\"; });"),
	                 1);
	assert_printed("users: \"default\" is the user of requirepass");
	assert_int_equal(load(&cfg, "users = ({ name = \"a b\"; password = "
	                            "\"x\"; role = \"admin\"; });"),
	                 1);
	assert_printed("users: name \"a b\" is not 1 to 64 bytes");
	assert_int_equal(load(&cfg, "users = ({ name = \"a\"; password = "
	                            "\"\"; role = \"admin\"; });"),
	                 1);
	assert_printed("users: password must be 1 to 255 bytes");
	assert_int_equal(load(&cfg, "users = ({ name = \"a\"; password = 5; "
	                            "role = \"admin\"; });"),
	                 1);
	assert_printed("users: password must be a string");
	assert_int_equal(load(&cfg, "users = \"ops\";"), 1);
	assert_printed("users must be a list of groups");
	assert_int_equal(load(&cfg, "users = ( \"ops\" );"), 1);
	assert_printed("users must be a list of groups");
	/* ids (issue 37): a glob or a list of them, for a frontend or a
	 * servicer; nothing else. */
	assert_int_equal(load(&cfg, "users = ({ name = \"a\"; password = "
	                            "\"p\"; role = \"servicer\"; ids = "
	                            "[ \"s1\", \"team-[ab]-*\" ]; },\n"
	                            "{ name = \"f\"; password = \"p\"; "
	                            "role = \"frontend\"; ids = \"web-*\"; "
	                            "});"),
	                 0);
	assert_int_equal(cfg.users[0].nids, 2);
	assert_string_equal(cfg.users[0].ids[1], "team-[ab]-*");
	assert_int_equal(cfg.users[1].nids, 1);
	assert_string_equal(cfg.users[1].ids[0], "web-*");
	assert_int_equal(load(&cfg, "users = ({ name = \"a\"; password = "
	                            "\"p\"; role = \"admin\"; ids = \"x\"; "
	                            "});"),
	                 1);
	assert_printed("users: ids bind a frontend or a servicer user");
	assert_int_equal(load(&cfg, "users = ({ name = \"a\"; password = "
	                            "\"p\"; role = \"servicer\"; ids = "
	                            "\"a b\"; });"),
	                 1);
	assert_printed("users: ids must be ids or globs of ids");
	assert_int_equal(load(&cfg, "users = ({ name = \"a\"; password = "
	                            "\"p\"; role = \"servicer\"; ids = "
	                            "[ ]; });"),
	                 1);
	assert_printed("users: ids must have 1 to 16 entries");
	assert_int_equal(load(&cfg, "users = ({ name = \"a\"; password = "
	                            "\"p\"; role = \"servicer\"; ids = "
	                            "[ \"\" ]; });"),
	                 1);
	assert_printed("users: ids must be ids or globs of ids");
	assert_int_equal(load(&cfg, "users = ({ name = \"a\"; password = "
	                            "\"p\"; role = \"servicer\"; ids = 7; "
	                            "});"),
	                 1);
	assert_printed("users: ids must be ids or globs of ids");
	/* token (issue 38): the HTTP API's bearer token, long enough not
	 * to be guessed, no two users the same. */
	assert_int_equal(load(&cfg, "users = ({ name = \"a\"; password = "
	                            "\"p\"; role = \"servicer\"; token = "
	                            "\"0123456789abcdef\"; });"),
	                 0);
	assert_string_equal(cfg.users[0].token, "0123456789abcdef");
	assert_int_equal(load(&cfg, "users = ({ name = \"a\"; password = "
	                            "\"p\"; role = \"servicer\"; token = "
	                            "\"0123456789abcde\"; });"),
	                 1);
	assert_printed("users: token must be 16 to 255 bytes");
	assert_int_equal(load(&cfg, "users = ({ name = \"a\"; password = "
	                            "\"p\"; role = \"servicer\"; token = "
	                            "16; });"),
	                 1);
	assert_printed("users: token must be a string");
	assert_int_equal(load(&cfg, "users = ({ name = \"a\"; password = "
	                            "\"p\"; role = \"servicer\"; token = "
	                            "\"0123456789abcdef\"; },\n"
	                            "{ name = \"b\"; password = \"p\"; "
	                            "role = \"frontend\"; token = "
	                            "\"0123456789abcdef\"; });"),
	                 1);
	assert_printed("users: \"b\" has the token of \"a\"");
}

/* max_queues is libcsq's rule: on both engines, any value in range. */
static void
test_max_queues_engines(void **state)
{
	static struct config cfg; /* large: not on the stack */

	(void)state;
	assert_int_equal(load(&cfg, "max_queues = 5;"), 0);
	assert_int_equal(cfg.limits.max_queues, 5);
	assert_int_equal(load(&cfg, "engine = \"redis\";\nmax_queues = 5;"), 0);
	assert_int_equal(cfg.limits.max_queues, 5);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_defaults),
	    cmocka_unit_test(test_max_queues_engines),
	    cmocka_unit_test(test_users),
	    cmocka_unit_test(test_defaults_match_libcsq),
	    cmocka_unit_test(test_empty_is_defaults),
	    cmocka_unit_test(test_sample_file),
	    cmocka_unit_test(test_every_key),
	    cmocka_unit_test(test_routing_keys),
	    cmocka_unit_test(test_record_keys),
	    cmocka_unit_test(test_list_syntax),
	    cmocka_unit_test(test_enum_values),
	    cmocka_unit_test(test_int_edges),
	    cmocka_unit_test(test_int64),
	    cmocka_unit_test(test_int_wrapped),
	    cmocka_unit_test(test_int_wrapped_included),
	    cmocka_unit_test(test_unknown_keys),
	    cmocka_unit_test(test_wrong_types),
	    cmocka_unit_test(test_bad_enums),
	    cmocka_unit_test(test_listen_errors),
	    cmocka_unit_test(test_string_checks),
	    cmocka_unit_test(test_sentinels),
	    cmocka_unit_test(test_redis_module),
	    cmocka_unit_test(test_syntax_error),
	    cmocka_unit_test(test_many_errors),
	    cmocka_unit_test(test_load_file),
	    cmocka_unit_test(test_parse_addr),
	    cmocka_unit_test(test_log_level_parse),
	    cmocka_unit_test(test_log_format),
	    cmocka_unit_test(test_log_levels),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
