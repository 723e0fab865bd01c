/*
 * Webhooks: see webhook.h. Each URL has its own connection (evhttp's
 * client), a FIFO of events waiting and at most one request in flight; the
 * event in flight leaves the FIFO and stays held until a 2xx answers it,
 * so a retry sends the same event again and order holds.
 *
 * The connection is kept between POSTs (HTTP/1.1 keep-alive), over TLS
 * too, where a handshake per event would cost the receiver and csqd more
 * than the event: evhttp 2.1 reconnects a plain connection by itself, but
 * cannot connect an OpenSSL bufferevent again once it closed, so an https
 * hook makes a new connection when the one before closed (the receiver
 * closed it, idle or after "Connection: close") or failed.
 */
#include "webhook.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <inttypes.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "csq.h"
#include "glob.h"
#include "log.h"

#define WEBHOOK_BACKOFF_MIN_MS 100
#define WEBHOOK_BACKOFF_MAX_MS 10000
#define WEBHOOK_JSON_MAX       8192

struct webhook_item {
	TAILQ_ENTRY(webhook_item) link;
	uint64_t id;
	size_t len;
	char body[]; /* the event's JSON */
};
TAILQ_HEAD(webhook_fifo, webhook_item);

struct webhook {
	struct webhooks *all;
	struct config_webhook cfg;
	char host[CONFIG_STR_MAX];
	char path[CONFIG_STR_MAX];
	int port;
	/* https: the client context; the connection, kept until it
	 * closes or fails (stale), then made anew (webhook_connect). */
	SSL_CTX *tls;
	struct evhttp_connection *conn;
	int stale;
	struct event *retry_ev;
	struct webhook_fifo fifo; /* waiting, oldest first */
	size_t nfifo;
	struct webhook_item *cur; /* in flight, or waiting for its retry */
	int in_flight;
	uint64_t backoff_ms;
	uint64_t streak; /* failed attempts in a row */
	int dropping;    /* a drop was logged since the last delivery */
	uint64_t delivered, failed, dropped;
};

/* Each hook on its own, so that a reload can hand one over to the next
 * set as it is (its connection, its backlog, the callbacks that point at
 * it). */
struct webhooks {
	struct event_base *base;
	int n;
	struct webhook *hooks[CONFIG_WEBHOOKS_MAX];
};

const char *
webhooks_check_url(const char *url)
{
	struct evhttp_uri *u;
	const char *why = NULL, *scheme;

	if ((u = evhttp_uri_parse(url)) == NULL)
		return "not a URL, http(s)://host[:port]/path";
	scheme = evhttp_uri_get_scheme(u);
	if (scheme == NULL || (strcasecmp(scheme, "http") != 0 &&
	                       strcasecmp(scheme, "https") != 0))
		why = "only http:// and https:// URLs are supported";
	else if (evhttp_uri_get_host(u) == NULL ||
	         evhttp_uri_get_host(u)[0] == '\0')
		why = "the URL has no host";
	else if (evhttp_uri_get_userinfo(u) != NULL)
		why = "the URL may not carry user:password@";
	else if (evhttp_uri_get_fragment(u) != NULL)
		why = "the URL may not have a #fragment";
	evhttp_uri_free(u);
	return why;
}

static void webhook_send(struct webhook *);
static int webhook_connect(struct webhook *);

static void
webhook_retry_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	webhook_send(arg);
}

static void
webhook_failed(struct webhook *h, const char *why)
{
	struct timeval tv;

	h->failed++;
	h->streak++;
	if (h->streak == 1)
		log_warnx("webhook %s: delivery of event %" PRIu64
		          " failed (%s); retrying with backoff",
		          h->cfg.url, h->cur->id, why);
	h->backoff_ms =
	    h->backoff_ms == 0 ? WEBHOOK_BACKOFF_MIN_MS : h->backoff_ms * 2;
	if (h->backoff_ms > WEBHOOK_BACKOFF_MAX_MS)
		h->backoff_ms = WEBHOOK_BACKOFF_MAX_MS;
	tv.tv_sec = (time_t)(h->backoff_ms / 1000);
	tv.tv_usec = (suseconds_t)(h->backoff_ms % 1000) * 1000;
	evtimer_add(h->retry_ev, &tv);
}

static void
webhook_done_cb(struct evhttp_request *req, void *arg)
{
	struct webhook *h = arg;
	int code = req != NULL ? evhttp_request_get_response_code(req) : 0;
	char why[64];

	h->in_flight = 0;
	/* No answer: whatever the connection's state, a new one for the
	 * retry (https; evhttp reconnects a plain one itself). */
	if (code == 0)
		h->stale = 1;
	if (code < 200 || code > 299) {
		if (code == 0)
			snprintf(why, sizeof(why), "no answer");
		else
			snprintf(why, sizeof(why), "status %d", code);
		webhook_failed(h, why);
		return;
	}
	if (h->streak > 0)
		log_info("webhook %s: delivering again after %" PRIu64
		         " failed attempt%s",
		         h->cfg.url, h->streak, h->streak == 1 ? "" : "s");
	h->delivered++;
	h->streak = 0;
	h->backoff_ms = 0;
	h->dropping = 0;
	free(h->cur);
	h->cur = NULL;
	/* https: the next POST may need a new connection (this one closes
	 * after its answer), which may not be made inside this one's
	 * callback: from the loop, at once. */
	if (h->tls != NULL)
		event_active(h->retry_ev, EV_TIMEOUT, 0);
	else
		webhook_send(h);
}

/* An https hook's connection closed (the receiver, idle or after its
 * answer; or evhttp, after a failure): the next POST makes a new one.
 * Inside evhttp's code: only a flag here. */
static void
webhook_closed_cb(struct evhttp_connection *conn, void *arg)
{
	struct webhook *h = arg;

	(void)conn;
	h->stale = 1;
}

/* Sends the held event, or the next one, unless one is in flight. */
static void
webhook_send(struct webhook *h)
{
	struct evhttp_request *req;
	struct evkeyvalq *hd;
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0, i;
	char sig[7 + 2 * EVP_MAX_MD_SIZE + 1], id[24];
	evutil_socket_t fd;
	int one = 1;

	if (h->in_flight || evtimer_pending(h->retry_ev, NULL))
		return;
	if (h->cur == NULL) {
		if ((h->cur = TAILQ_FIRST(&h->fifo)) == NULL)
			return;
		TAILQ_REMOVE(&h->fifo, h->cur, link);
		h->nfifo--;
	}
	if (h->tls != NULL && (h->conn == NULL || h->stale) &&
	    webhook_connect(h) != 0) {
		webhook_failed(h, "cannot set up TLS");
		return;
	}
	if ((req = evhttp_request_new(webhook_done_cb, h)) == NULL) {
		webhook_failed(h, "out of memory");
		return;
	}
	hd = evhttp_request_get_output_headers(req);
	evhttp_add_header(hd, "Host", h->host);
	evhttp_add_header(hd, "Content-Type", "application/json");
	evhttp_add_header(hd, "User-Agent", "csqd/" CSQ_VERSION);
	snprintf(id, sizeof(id), "%" PRIu64, h->cur->id);
	evhttp_add_header(hd, "X-Csq-Event-Id", id);
	if (h->cfg.secret[0] != '\0') {
		HMAC(EVP_sha256(), h->cfg.secret, (int)strlen(h->cfg.secret),
		     (const unsigned char *)h->cur->body, h->cur->len, md,
		     &mdlen);
		memcpy(sig, "sha256=", 7);
		for (i = 0; i < mdlen; i++)
			snprintf(sig + 7 + 2 * i, 3, "%02x", md[i]);
		sig[7 + 2 * mdlen] = '\0';
		evhttp_add_header(hd, "X-Csq-Signature", sig);
	}
	evbuffer_add(evhttp_request_get_output_buffer(req), h->cur->body,
	             h->cur->len);
	if (evhttp_make_request(h->conn, req, EVHTTP_REQ_POST, h->path) != 0) {
		/* evhttp_make_request frees req on failure. */
		webhook_failed(h, "cannot make the request");
		return;
	}
	h->in_flight = 1;
	/* On a kept connection the request's head and body go out as two
	 * writes (two TLS records), and Nagle would hold the second until
	 * the receiver's delayed ACK, 40 ms a POST. The socket exists once
	 * the request is made (connecting, or connected). */
	fd = bufferevent_getfd(evhttp_connection_get_bufferevent(h->conn));
	if (fd >= 0)
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
		                 sizeof(one));
}

/* The client context of an https hook: TLS 1.2 and later, the
 * receiver's certificate checked against c's CAs (or the system's). */
static SSL_CTX *
webhook_tls_ctx(const struct config_webhook *c)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());

	if (ctx == NULL)
		return NULL;
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	if ((c->ca[0] != '\0' ? SSL_CTX_load_verify_locations(ctx, c->ca, NULL)
	                      : SSL_CTX_set_default_verify_paths(ctx)) != 1) {
		log_warnx("webhook %s: cannot load the CA certificates%s%s",
		          c->url, c->ca[0] != '\0' ? " of " : "", c->ca);
		SSL_CTX_free(ctx);
		return NULL;
	}
	return ctx;
}

/*
 * A new connection for the next POST of an https hook, the one before
 * (closed or failed) freed: its POST is answered, nothing of it runs any
 * more, and this runs from the loop, never inside its callbacks. The name in
 * the URL is sent (SNI) and must be the certificate's, as a browser
 * checks it (an IP address, its IP).
 */
static int
webhook_connect(struct webhook *h)
{
	struct bufferevent *bev;
	struct in6_addr ip;
	struct timeval tv;
	SSL *ssl;

	if (h->conn != NULL)
		evhttp_connection_free(h->conn);
	h->conn = NULL;
	if ((ssl = SSL_new(h->tls)) == NULL)
		return -1;
	if (inet_pton(AF_INET, h->host, &ip) == 1 ||
	    inet_pton(AF_INET6, h->host, &ip) == 1)
		X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), h->host);
	else {
		SSL_set_tlsext_host_name(ssl, h->host);
		SSL_set1_host(ssl, h->host);
	}
	bev = bufferevent_openssl_socket_new(
	    h->all->base, -1, ssl, BUFFEREVENT_SSL_CONNECTING,
	    BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
	if (bev == NULL) {
		SSL_free(ssl);
		return -1;
	}
	/* A receiver that closes without close_notify has still answered:
	 * its answer is whole by its length. */
	bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
	h->conn = evhttp_connection_base_bufferevent_new(
	    h->all->base, NULL, bev, h->host, (unsigned short)h->port);
	if (h->conn == NULL) {
		bufferevent_free(bev);
		return -1;
	}
	tv.tv_sec = (time_t)(h->cfg.timeout_ms / 1000);
	tv.tv_usec = (suseconds_t)(h->cfg.timeout_ms % 1000) * 1000;
	evhttp_connection_set_timeout_tv(h->conn, &tv);
	evhttp_connection_set_retries(h->conn, 0);
	evhttp_connection_set_closecb(h->conn, webhook_closed_cb, h);
	h->stale = 0;
	log_debug("webhook %s: a new connection", h->cfg.url);
	return 0;
}

static int
webhook_init(struct webhooks *w, struct webhook *h,
             const struct config_webhook *c)
{
	struct evhttp_uri *u;
	const char *p, *q;
	struct timeval tv;
	int https;

	h->all = w;
	h->cfg = *c;
	TAILQ_INIT(&h->fifo);
	if ((u = evhttp_uri_parse(c->url)) == NULL)
		return -1;
	snprintf(h->host, sizeof(h->host), "%s", evhttp_uri_get_host(u));
	https = strcasecmp(evhttp_uri_get_scheme(u), "https") == 0;
	h->port = evhttp_uri_get_port(u) > 0 ? evhttp_uri_get_port(u)
	          : https                    ? 443
	                                     : 80;
	p = evhttp_uri_get_path(u);
	q = evhttp_uri_get_query(u);
	snprintf(h->path, sizeof(h->path), "%s%s%s",
	         p != NULL && p[0] != '\0' ? p : "/", q != NULL ? "?" : "",
	         q != NULL ? q : "");
	evhttp_uri_free(u);
	h->retry_ev = evtimer_new(w->base, webhook_retry_cb, h);
	if (h->retry_ev == NULL)
		return -1;
	if (https) /* a connection per POST (webhook_connect) */
		return (h->tls = webhook_tls_ctx(c)) != NULL ? 0 : -1;
	h->conn = evhttp_connection_base_new(w->base, NULL, h->host,
	                                     (unsigned short)h->port);
	if (h->conn == NULL)
		return -1;
	tv.tv_sec = (time_t)(c->timeout_ms / 1000);
	tv.tv_usec = (suseconds_t)(c->timeout_ms % 1000) * 1000;
	evhttp_connection_set_timeout_tv(h->conn, &tv);
	evhttp_connection_set_retries(h->conn, 0);
	return 0;
}

/* A hook of entry c, or a fatal error (config.c checked its URL). */
static struct webhook *
webhook_new(struct webhooks *w, const struct config_webhook *c)
{
	struct webhook *h = calloc(1, sizeof(*h));

	if (h == NULL)
		fatal("calloc");
	if (webhook_init(w, h, c) != 0)
		fatalx("webhook %s: cannot set up its connection", c->url);
	log_info("webhook %s: events of channels \"%s\"", c->url, c->channels);
	return h;
}

/* Frees h, a request in flight without its callback, and its backlog. */
static void
webhook_free(struct webhook *h)
{
	struct webhook_item *it;

	if (h->conn != NULL)
		evhttp_connection_free(h->conn);
	if (h->retry_ev != NULL)
		event_free(h->retry_ev);
	if (h->tls != NULL)
		SSL_CTX_free(h->tls);
	while ((it = TAILQ_FIRST(&h->fifo)) != NULL) {
		TAILQ_REMOVE(&h->fifo, it, link);
		free(it);
	}
	free(h->cur);
	free(h);
}

struct webhooks *
webhooks_new(struct event_base *base, const struct config *cfg)
{
	struct webhooks *w;
	int i;

	if (cfg->nwebhooks == 0)
		return NULL;
	if ((w = calloc(1, sizeof(*w))) == NULL)
		fatal("calloc");
	w->base = base;
	for (i = 0; i < cfg->nwebhooks; i++) {
		w->n = i + 1;
		w->hooks[i] = webhook_new(w, &cfg->webhooks[i]);
	}
	return w;
}

struct webhooks *
webhooks_reload(struct webhooks *old, struct event_base *base,
                const struct config *cfg)
{
	struct webhooks *w;
	struct webhook *h;
	int i, j;

	if ((w = calloc(1, sizeof(*w))) == NULL)
		fatal("calloc");
	w->base = base;
	for (i = 0; i < cfg->nwebhooks; i++) {
		h = NULL;
		/* An entry the reload did not change goes on as it was:
		 * its backlog, its event in flight, its counters. */
		for (j = 0; old != NULL && j < old->n && h == NULL; j++)
			if (old->hooks[j] != NULL &&
			    memcmp(&old->hooks[j]->cfg, &cfg->webhooks[i],
			           sizeof(cfg->webhooks[i])) == 0) {
				h = old->hooks[j];
				old->hooks[j] = NULL;
				h->all = w;
			}
		w->hooks[i] = h != NULL ? h : webhook_new(w, &cfg->webhooks[i]);
		w->n = i + 1;
	}
	/* The others go, with what they still held. */
	for (j = 0; old != NULL && j < old->n; j++)
		if ((h = old->hooks[j]) != NULL) {
			if (h->nfifo + (h->cur != NULL) > 0)
				log_warnx("webhook %s: removed by the reload, "
				          "%zu event(s) undelivered",
				          h->cfg.url,
				          h->nfifo + (h->cur != NULL));
			else
				log_info("webhook %s: removed by the reload",
				         h->cfg.url);
			webhook_free(h);
			old->hooks[j] = NULL;
		}
	free(old);
	if (w->n == 0) {
		free(w);
		return NULL;
	}
	return w;
}

void
webhooks_free(struct webhooks *w)
{
	int i;

	if (w == NULL)
		return;
	for (i = 0; i < w->n; i++)
		if (w->hooks[i] != NULL)
			webhook_free(w->hooks[i]);
	free(w);
}

static int
webhook_wants(const struct webhook *h,
              char channels[CSQ_EVENT_CHANNELS][CSQ_CHANNEL_MAX], int n)
{
	size_t plen = strlen(h->cfg.channels);
	int i;

	for (i = 0; i < n; i++)
		if (csq_glob(h->cfg.channels, plen, channels[i],
		             strlen(channels[i])))
			return 1;
	return 0;
}

void
webhooks_event(struct webhooks *w, const struct csq_event *ev)
{
	char channels[CSQ_EVENT_CHANNELS][CSQ_CHANNEL_MAX];
	char json[WEBHOOK_JSON_MAX];
	struct webhook_item *it;
	struct webhook *h;
	int i, n, len = -1;

	if (w == NULL)
		return;
	n = csq_event_channels(ev, channels);
	for (i = 0; i < w->n; i++) {
		h = w->hooks[i];
		if (!webhook_wants(h, channels, n))
			continue;
		if (len < 0) {
			len = csq_event_json(ev, json, sizeof(json));
			if (len < 0 || (size_t)len >= sizeof(json)) {
				log_warnx("event %s too long for a webhook",
				          csq_event_name(ev->type));
				return;
			}
		}
		if (h->nfifo >= (size_t)h->cfg.max_backlog) {
			it = TAILQ_FIRST(&h->fifo);
			TAILQ_REMOVE(&h->fifo, it, link);
			h->nfifo--;
			free(it);
			h->dropped++;
			if (!h->dropping)
				log_warnx("webhook %s: backlog full "
				          "(max_backlog %" PRId64
				          "); dropping the oldest events",
				          h->cfg.url, h->cfg.max_backlog);
			h->dropping = 1;
		}
		if ((it = malloc(sizeof(*it) + (size_t)len)) == NULL)
			fatal("malloc");
		it->id = ev->id;
		it->len = (size_t)len;
		memcpy(it->body, json, (size_t)len);
		TAILQ_INSERT_TAIL(&h->fifo, it, link);
		h->nfifo++;
		webhook_send(h);
	}
}

/* A label value: backslash, quote and newline escaped. */
static void
webhook_label(struct evbuffer *out, const char *s)
{
	for (; *s != '\0'; s++) {
		if (*s == '\\' || *s == '"')
			evbuffer_add_printf(out, "\\%c", *s);
		else if (*s == '\n')
			evbuffer_add(out, "\\n", 2);
		else
			evbuffer_add(out, s, 1);
	}
}

static void
webhook_family(const struct webhooks *w, struct evbuffer *out, const char *name,
               const char *type, const char *help, size_t field)
{
	const struct webhook *h;
	int i;

	evbuffer_add_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help,
	                    name, type);
	for (i = 0; i < w->n; i++) {
		h = w->hooks[i];
		evbuffer_add_printf(out, "%s{url=\"", name);
		webhook_label(out, h->cfg.url);
		evbuffer_add_printf(
		    out, "\"} %" PRIu64 "\n",
		    field == (size_t)-1
		        ? (uint64_t)h->nfifo + (h->cur != NULL)
		        : *(const uint64_t *)((const char *)h + field));
	}
}

void
webhooks_render(const struct webhooks *w, struct evbuffer *out)
{
	if (w == NULL)
		return;
	webhook_family(w, out, "csq_webhook_delivered_total", "counter",
	               "Events a webhook's URL answered with a 2xx.",
	               offsetof(struct webhook, delivered));
	webhook_family(w, out, "csq_webhook_failed_attempts_total", "counter",
	               "POSTs to a webhook's URL that failed (no connection, "
	               "timeout, not 2xx); each is retried.",
	               offsetof(struct webhook, failed));
	webhook_family(w, out, "csq_webhook_dropped_total", "counter",
	               "Events dropped undelivered because the URL's backlog "
	               "was full (max_backlog), the oldest first.",
	               offsetof(struct webhook, dropped));
	webhook_family(w, out, "csq_webhook_backlog", "gauge",
	               "Events waiting for a webhook's URL, the one in flight "
	               "included.",
	               (size_t)-1);
}
