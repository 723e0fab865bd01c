/*
 * csqd's configuration loader (daemon/config.c over libconfig) on any
 * text. It must either refuse the text, saying why in at least one line
 * that names the file, or accept it, say nothing, and leave every value in
 * the range of its key (the rest of csqd relies on that and checks no
 * further).
 *
 * A text with "@include" is skipped: libconfig would read the file it
 * names, and a fuzzer can name /dev/zero.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "fuzz.h"
#include "util.h"

#define FUZZ_CONF_NAME "fuzz.conf"

static void
check_string(const char *what, const char *s, size_t size)
{
	if (memchr(s, '\0', size) == NULL)
		fuzz_fail("%s is not NUL-terminated", what);
}

/* What an accepted configuration must hold, key by key. */
static void
check_config(const struct config *c)
{
	struct config_addr addr;
	int i;

	if (c->nlisten < 1 || c->nlisten > CONFIG_LISTEN_MAX)
		fuzz_fail("%d listen addresses", c->nlisten);
	for (i = 0; i < c->nlisten; i++) {
		check_string("listen", c->listen[i], sizeof(c->listen[i]));
		if (config_parse_addr(c->listen[i], &addr) != 0)
			fuzz_fail("listen \"%s\" accepted", c->listen[i]);
	}
	check_string("http.listen", c->http_listen, sizeof(c->http_listen));
	if (c->http_listen[0] != '\0' &&
	    (config_parse_addr(c->http_listen, &addr) != 0 || addr.is_unix))
		fuzz_fail("http.listen \"%s\" accepted", c->http_listen);
	check_string("engine", c->engine, sizeof(c->engine));
	if (strcmp(c->engine, "memory") != 0 && strcmp(c->engine, "redis") != 0)
		fuzz_fail("engine \"%s\" accepted", c->engine);
	if (c->limits.servicer_ttl_s < 1 ||
	    c->limits.servicer_ttl_s > CSQ_TTL_MAX ||
	    c->limits.user_ttl_s > CSQ_TTL_MAX ||
	    c->limits.max_tier > CSQ_TIER_LIMIT ||
	    c->limits.max_queue_length < 1)
		fuzz_fail("limits out of range accepted");
	if (c->max_clients < 1 || c->busy_poll_us < 0 ||
	    c->busy_poll_us > CONFIG_BUSY_POLL_MAX ||
	    c->max_output_memory < 0 ||
	    c->max_output_memory > CONFIG_OUTPUT_MEMORY_MAX)
		fuzz_fail("a server setting out of range accepted");
	if (c->redis_port < 1 || c->redis_port > 65535 || c->redis_db < 0)
		fuzz_fail("a redis setting out of range accepted");
	check_string("redis.host", c->redis_host, sizeof(c->redis_host));
	check_string("redis.prefix", c->redis_prefix, sizeof(c->redis_prefix));
	if (c->redis_host[0] == '\0' || c->redis_prefix[0] == '\0' ||
	    strpbrk(c->redis_prefix, "{}") != NULL)
		fuzz_fail(
		    "redis.host or redis.prefix accepted empty or braced");
	check_string("requirepass", c->requirepass, sizeof(c->requirepass));
	check_string("memory.journal", c->journal, sizeof(c->journal));
	if (c->fsync != CONFIG_FSYNC_ALWAYS &&
	    c->fsync != CONFIG_FSYNC_EVERYSEC && c->fsync != CONFIG_FSYNC_NO)
		fuzz_fail("memory.fsync %d", (int)c->fsync);
	if (c->log_level < LOG_LVL_DEBUG || c->log_level > LOG_LVL_ERROR)
		fuzz_fail("log.level %d", (int)c->log_level);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct config cfg; /* large: not on the stack */
	char *text, *errs = NULL;
	size_t errlen = 0;
	FILE *err;
	int n;

	if (memmem(data, size, "@include", 8) != NULL)
		return 0;
	text = csq_xmalloc(size + 1);
	memcpy(text, data, size);
	text[size] = '\0';
	if ((err = open_memstream(&errs, &errlen)) == NULL)
		fuzz_fail("open_memstream");
	n = config_load_string(&cfg, text, FUZZ_CONF_NAME, err);
	fclose(err);
	if (n < 0)
		fuzz_fail("%d errors", n);
	if (n == 0 && errlen != 0)
		fuzz_fail("accepted, but said: %s", errs);
	if (n > 0 &&
	    strncmp(errs, FUZZ_CONF_NAME ":", strlen(FUZZ_CONF_NAME) + 1) != 0)
		fuzz_fail("%d errors, said: %s", n, errs);
	if (n == 0)
		check_config(&cfg);
	free(errs);
	free(text);
	return 0;
}
