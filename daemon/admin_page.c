/*
 * The admin page's files, as built in. The page loads nothing from
 * elsewhere: the security policy sent with it says so to the browser too.
 */
#include "admin_page.h"

#include <string.h>

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "http.h"
#include "log.h"

#define ADMIN_PAGE_INDEX  "index.html"
#define ADMIN_PAGE_ASSETS "/assets/"
/* Everything from csqd itself; uPlot sets styles through the DOM, which
 * style-src does not govern. */
#define ADMIN_PAGE_CSP                                                         \
	"default-src 'self'; img-src 'self' data:; object-src 'none'; "        \
	"base-uri 'none'; frame-ancestors 'none'"

static const struct {
	const char *ext;
	const char *type;
} admin_types[] = {
    {".html", "text/html; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},
    {".png", "image/png"},
    {".svg", "image/svg+xml"},
};

static const char *
admin_type(const char *path)
{
	size_t i, len = strlen(path), elen;

	for (i = 0; i < sizeof(admin_types) / sizeof(admin_types[0]); i++) {
		elen = strlen(admin_types[i].ext);
		if (len > elen &&
		    strcmp(path + len - elen, admin_types[i].ext) == 0)
			return admin_types[i].type;
	}
	return "text/plain; charset=utf-8";
}

static const struct admin_asset *
admin_find(const char *path)
{
	const struct admin_asset *a;

	for (a = admin_assets; a->path != NULL; a++)
		if (strcmp(a->path, path) == 0)
			return a;
	return NULL;
}

int
admin_page_serve(struct evhttp_request *req, const char *path)
{
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);
	const struct admin_asset *a = NULL;
	struct evbuffer *b;

	if (strcmp(path, "/") == 0)
		a = admin_find(ADMIN_PAGE_INDEX);
	else if (strncmp(path, ADMIN_PAGE_ASSETS, strlen(ADMIN_PAGE_ASSETS)) ==
	         0)
		a = admin_find(path + strlen(ADMIN_PAGE_ASSETS));
	if (a == NULL)
		return 0;
	if ((b = evbuffer_new()) == NULL)
		fatalx("out of memory for an HTTP answer");
	/* The bytes are the binary's own: referenced, not copied. */
	evbuffer_add_reference(b, a->data, a->len, NULL, NULL);
	evhttp_add_header(h, "Content-Security-Policy", ADMIN_PAGE_CSP);
	evhttp_add_header(h, "X-Content-Type-Options", "nosniff");
	http_reply(req, HTTP_OK, "OK", admin_type(a->path), b);
	evbuffer_free(b);
	return 1;
}
