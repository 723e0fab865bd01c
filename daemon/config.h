/*
 * The configuration of csqd: one table of typed keys (name, type, range,
 * default) in config.c, read with libconfig. Every key is optional; an
 * unknown key, a wrong type or a value out of range is an error.
 */
#ifndef CSQD_CONFIG_H
#define CSQD_CONFIG_H

#include <stdint.h>
#include <stdio.h>

#include "csq.h"
#include "log.h"

#define CONFIG_LISTEN_MAX        16
#define CONFIG_SENTINELS_MAX     16
#define CONFIG_PORT_MAX          65535
#define CONFIG_REPLICAS_MAX      16    /* redis.wait_replicas */
#define CONFIG_WAIT_TIMEOUT_MAX  60000 /* ms, redis.wait_timeout_ms */
#define CONFIG_STR_MAX           256
#define CONFIG_TOKEN_MIN         16          /* bytes of a user's token */
#define CONFIG_BUSY_POLL_MAX     10000       /* us */
#define CONFIG_OUTPUT_MEMORY_MAX (1LL << 40) /* bytes */
#define CONFIG_INPUT_MEMORY_MAX  (1LL << 40) /* bytes */
#define CONFIG_CHANNEL_MAX       65536       /* max_channel_length */
#define CONFIG_HISTORY_MAX       1000000     /* http.event_history */
#define CONFIG_STREAMS_MAX       10000       /* http.max_event_streams */
#define CONFIG_STREAM_BUFFER_MIN (1LL << 20) /* http.event_stream_buffer */
#define CONFIG_TIMEOUT_MAX       3600        /* s, the *_timeout of clients */
#define CONFIG_UNAUTH_OUTPUT_MIN 1024        /* max_unauth_output */
#define CONFIG_PATTERNS_MAX      1000000     /* max_client_patterns */
#define CONFIG_RESERVED_FDS_MAX  10000       /* reserved_fds */
#define CONFIG_CACHE_MS_MAX      60000       /* http.cache_ms */
#define CONFIG_CORS_MAX          16          /* http.cors_origins */

#define CONFIG_KEEP_DAYS_MAX 36500 /* record.keep_days */

#define CONFIG_USERS_MAX        64     /* entries of users */
#define CONFIG_IDS_MAX          16     /* globs of a user's ids */
#define CONFIG_ID_GLOB_MAX      129    /* bytes of one, with its NUL */
#define CONFIG_QUEUE_LABELS_MAX 100000 /* metrics_max_queues at most */

/* The roles of protocol-v2 section 9; the order of config.c's names. */
enum config_role {
	CONFIG_ROLE_FRONTEND,
	CONFIG_ROLE_SERVICER,
	CONFIG_ROLE_ADMIN
};

/* An entry of users: AUTH <name> <password> gives its role. */
struct config_user {
	char name[CSQ_ID_MAX + 1];
	char password[CONFIG_STR_MAX];
	/* The HTTP API's bearer token (http_api.h); "": none. */
	char token[CONFIG_STR_MAX];
	enum config_role role;
	/* The ids it may act for (auth.h): servicer ids for a servicer,
	 * user ids for a frontend, as globs; none: any (as before). */
	int nids;
	char ids[CONFIG_IDS_MAX][CONFIG_ID_GLOB_MAX];
};

#define CONFIG_WEBHOOKS_MAX        16      /* entries of webhooks */
#define CONFIG_WEBHOOK_BACKLOG_MAX 1000000 /* webhooks: max_backlog */
#define CONFIG_WEBHOOK_TIMEOUT_MAX 600000  /* ms, webhooks: timeout_ms */

/* An entry of webhooks (webhook.h). */
struct config_webhook {
	char url[CONFIG_STR_MAX];      /* http:// or https:// */
	char channels[CONFIG_STR_MAX]; /* a glob; default "*" */
	/* https: the CA certificates (PEM) the receiver's is checked
	 * against; "": the system's. */
	char ca[CONFIG_STR_MAX];
	char secret[CONFIG_STR_MAX]; /* "": no signature */
	int64_t max_backlog;         /* events waiting, in flight aside */
	int64_t timeout_ms;          /* of one POST */
};

enum config_fsync {
	CONFIG_FSYNC_ALWAYS,
	CONFIG_FSYNC_EVERYSEC,
	CONFIG_FSYNC_NO
};

struct config {
	int nlisten;
	char listen[CONFIG_LISTEN_MAX]
	           [CONFIG_STR_MAX]; /* host:port, [v6]:port, unix:/path */
	char requirepass[CONFIG_STR_MAX];
	int nusers; /* 0: none; else AUTH is required, by name or default */
	struct config_user users[CONFIG_USERS_MAX];
	/* The queue policies (protocol-v2 section 4), as listed. */
	int npolicies;
	struct csq_policy policies[CSQ_POLICIES_MAX];
	/* /metrics: queues with series of their own; the rest are summed
	 * under queue="_other". */
	int64_t metrics_max_queues;
	char engine[16]; /* "memory" or "redis" */
	struct csq_limits
	    limits; /* servicer_ttl, user_ttl, max_tier, max_queue_length */
	int64_t max_clients;
	int64_t busy_poll_us; /* loop.h; 0: sleep as soon as nothing is ready */
	/* All clients' unsent output together (client.h); 0: no cap. */
	int64_t max_output_memory;
	/* All clients' unparsed and held input together (client.c); 0: no
	 * cap. */
	int64_t max_input_memory;
	/* Longest channel or pattern a client may subscribe to (pubsub.h). */
	int64_t max_channel_length;
	/* MULTI: commands queued, and their arguments' bytes (multi.h). */
	int64_t max_multi_commands;
	int64_t max_multi_memory;
	/* What a connection may cost before it has authenticated (and, on
	 * a TLS port, finished its handshake): seconds, and unsent output
	 * (client.c). */
	int64_t auth_timeout;
	int64_t max_unauth_output;
	/* Patterns one connection may hold (command_pubsub.c). */
	int64_t max_client_patterns;
	/* Descriptors kept for RESP connections: HTTP takes none of the
	 * last reserved_fds under RLIMIT_NOFILE (http.c). */
	int64_t reserved_fds;
	char journal[CONFIG_STR_MAX];
	enum config_fsync fsync;
	/* The record of the day (event_record.h); "" = none. */
	char record_path[CONFIG_STR_MAX];
	enum config_fsync record_fsync;
	int64_t record_rotate_size; /* bytes; 0: by day only */
	int record_rotate_daily;
	int64_t record_keep_days; /* rotated files; 0: kept for ever */
	char record_report[CONFIG_STR_MAX]; /* served at /report; "" none */
	char redis_host[CONFIG_STR_MAX];
	int64_t redis_port;
	char redis_password[CONFIG_STR_MAX];
	int64_t redis_db;
	char redis_prefix[CONFIG_STR_MAX];
	/* Sentinel: the master's name and where to ask for it (host:port);
	 * none: redis.host and redis.port name the server. */
	int nsentinels;
	char redis_sentinels[CONFIG_SENTINELS_MAX][CONFIG_STR_MAX];
	char redis_master[CONFIG_STR_MAX];
	/* WAIT after each call that may write: this many replicas, at most
	 * this long; 0 replicas: no WAIT. */
	int64_t redis_wait_replicas;
	int64_t redis_wait_timeout_ms;
	/* Always 1 with engine "redis": the Redis engine is csq.so (the Lua
	 * engine that 0 chose is gone; config.c refuses it). */
	int redis_module;
	char http_listen[CONFIG_STR_MAX]; /* "" = off */
	int http_tls; /* the HTTP endpoint over TLS, with tls's certificate */
	/* TLS (protocol-v2 section 10): the same protocol on tls_listen. */
	int ntls_listen; /* 0: no TLS port */
	char tls_listen[CONFIG_LISTEN_MAX][CONFIG_STR_MAX];
	char tls_cert[CONFIG_STR_MAX]; /* PEM chain, reread by SIGHUP */
	char tls_key[CONFIG_STR_MAX];  /* PEM key, reread by SIGHUP */
	char tls_ca[CONFIG_STR_MAX];   /* PEM CAs for client certificates */
	int tls_verify_clients;        /* a client certificate is required */
	/* The admin view's event stream (admin_events.h): events kept for a
	 * resume, streams at once, and bytes unsent to one stream. */
	int64_t http_event_history;
	int64_t http_max_event_streams;
	int64_t http_event_stream_buffer;
	/* HTTP connections at once, and the seconds a connection has to
	 * send a whole request (http.c). */
	int64_t http_max_connections;
	int64_t http_request_timeout;
	/* ms an answer of /metrics or /api/snapshot is shared (http_cache.h);
	 * 0: only with the requests that came while it was made. */
	int64_t http_cache_ms;
	/* The admin chart's samples across a restart (admin_history.h); "":
	 * beside memory.journal when the memory engine has one, else none. */
	char http_history[CONFIG_STR_MAX];
	/* The origins whose browsers may call /api/v1/ (http_api.h's CORS),
	 * each "scheme://host[:port]" as a browser's Origin header has it. */
	int ncors_origins;
	char cors_origins[CONFIG_CORS_MAX][CONFIG_STR_MAX];
	int nwebhooks;
	struct config_webhook webhooks[CONFIG_WEBHOOKS_MAX];
	enum log_level log_level;
	enum log_format log_format;
	int log_audit; /* a line per match and release */
};

/* The built-in defaults of protocol.md. */
void config_default(struct config *);

/*
 * Reads path into cfg (starting from the defaults). On errors returns their
 * count and prints each to err as "path:line: message"; cfg is then
 * unspecified and must not be used.
 */
int config_load(struct config *cfg, const char *path, FILE *err);
/* The same for configuration text; name stands for the file in errors. */
int config_load_string(struct config *cfg, const char *text, const char *name,
                       FILE *err);

/* "frontend", "servicer" or "admin". */
const char *config_role_name(enum config_role);

/* Splits "host:port", "[v6]:port" or "unix:/path". 0 when valid. */
struct config_addr {
	int is_unix;
	char host[CONFIG_STR_MAX]; /* or the socket path */
	int port;
};
int config_parse_addr(const char *s, struct config_addr *out);

#endif
