/*
 * The OpenSSL context of csqd's TLS listeners. A reload builds a whole
 * new context and swaps it in only when the files loaded: a renewed
 * certificate takes effect for new connections, a broken one changes
 * nothing. Each connection holds a reference to the context it began
 * with, so the old one lives as long as they do.
 */
#include "tls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "config.h"
#include "log.h"
#include "util.h"

#define TLS_ERROR_MAX 256

struct tls {
	SSL_CTX *ctx;
};

/* The reason of OpenSSL's last error, emptying its queue. */
static const char *
tls_reason(char *buf, size_t len)
{
	unsigned long e, last = 0;

	while ((e = ERR_get_error()) != 0)
		last = e;
	if (last == 0)
		snprintf(buf, len, "no detail");
	else
		ERR_error_string_n(last, buf, len);
	return buf;
}

/* A context for cfg, or NULL with the reason logged. */
static SSL_CTX *
tls_context(const struct config *cfg)
{
	char why[TLS_ERROR_MAX];
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	const char *step = "context";

	if (ctx == NULL)
		goto fail;
	step = "TLS 1.2 at least";
	if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1)
		goto fail;
	/* Renegotiation lets a client make csqd redo the handshake's
	 * work at will. */
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION |
	                             SSL_OP_CIPHER_SERVER_PREFERENCE);
	step = cfg->tls_cert;
	if (SSL_CTX_use_certificate_chain_file(ctx, cfg->tls_cert) != 1)
		goto fail;
	step = cfg->tls_key;
	if (SSL_CTX_use_PrivateKey_file(ctx, cfg->tls_key, SSL_FILETYPE_PEM) !=
	    1)
		goto fail;
	step = "the key does not match the certificate";
	if (SSL_CTX_check_private_key(ctx) != 1)
		goto fail;
	if (cfg->tls_ca[0] != '\0') {
		step = cfg->tls_ca;
		if (SSL_CTX_load_verify_locations(ctx, cfg->tls_ca, NULL) != 1)
			goto fail;
	}
	if (cfg->tls_verify_clients)
		SSL_CTX_set_verify(
		    ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
		    NULL);
	return ctx;
fail:
	log_warnx("tls: %s: %s", step, tls_reason(why, sizeof(why)));
	SSL_CTX_free(ctx);
	return NULL;
}

struct tls *
tls_new(const struct config *cfg)
{
	SSL_CTX *ctx = tls_context(cfg);
	struct tls *t;

	if (ctx == NULL)
		return NULL;
	t = csq_xcalloc(1, sizeof(*t));
	t->ctx = ctx;
	return t;
}

int
tls_reload(struct tls *t, const struct config *cfg)
{
	SSL_CTX *ctx = tls_context(cfg);

	if (ctx == NULL) {
		log_warnx("tls: reload failed; keeping the certificate in use");
		return -1;
	}
	SSL_CTX_free(t->ctx); /* connections hold their own reference */
	t->ctx = ctx;
	return 0;
}

void
tls_free(struct tls *t)
{
	if (t == NULL)
		return;
	SSL_CTX_free(t->ctx);
	free(t);
}

struct bufferevent *
tls_accept(struct tls *t, struct event_base *base, evutil_socket_t fd)
{
	SSL *ssl = SSL_new(t->ctx);
	struct bufferevent *bev;

	if (ssl == NULL)
		return NULL;
	bev = bufferevent_openssl_socket_new(
	    base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
	if (bev == NULL) {
		SSL_free(ssl);
		return NULL;
	}
	/* A peer that closes without close_notify ends its connection
	 * as an EOF, as a plain one does. */
	bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
	return bev;
}

void
tls_close_notify(struct bufferevent *bev)
{
	SSL *ssl = bufferevent_openssl_get_ssl(bev);

	if (ssl != NULL && SSL_is_init_finished(ssl))
		(void)SSL_shutdown(ssl);
	ERR_clear_error();
}

const char *
tls_last_error(struct bufferevent *bev, char *buf, size_t len)
{
	unsigned long e, last = 0;

	while ((e = bufferevent_get_openssl_error(bev)) != 0)
		last = e;
	if (last == 0) {
		snprintf(buf, len, "%s", "");
		return buf;
	}
	ERR_error_string_n(last, buf, len);
	return buf;
}
