/*
 * The admin page's files, as built in. The page loads nothing from
 * elsewhere: the security policy sent with it says so to the browser too.
 */
#include "admin_page.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "http.h"
#include "log.h"

#define ADMIN_PAGE_INDEX  "index.html"
#define ADMIN_PAGE_REPORT "/report"
/* csq-day's page: one file, its styles inline, nothing to load. */
#define ADMIN_REPORT_CSP                                                       \
	"default-src 'none'; style-src 'unsafe-inline'; img-src data:; "       \
	"base-uri 'none'; frame-ancestors 'none'"
#define ADMIN_REPORT_MAX  (64 << 20) /* bytes: a report, not a disk */
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

/* record.report, as the configuration in force has it. */
static char admin_report[256];

void
admin_page_set_report(const char *path)
{
	snprintf(admin_report, sizeof(admin_report), "%s", path);
}

/*
 * The last day's report: the file record.report names, as it is now (a
 * timer's csq-day report rewrites it), read with one sendfile-able
 * reference; 404 with what to do when there is none.
 */
static void
admin_page_report(struct evhttp_request *req)
{
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);
	struct evbuffer *b;
	struct stat st;
	char why[512];
	int fd = -1;

	if (admin_report[0] == '\0' ||
	    (fd = open(admin_report, O_RDONLY | O_CLOEXEC)) < 0 ||
	    fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    st.st_size > ADMIN_REPORT_MAX) {
		snprintf(
		    why, sizeof(why),
		    "no report%s%s%s: csq-day report -f html -o FILE "
		    "writes one, and record.report names it (docs/day.md)\n",
		    admin_report[0] != '\0' ? " in " : "", admin_report,
		    admin_report[0] != '\0' && fd < 0 ? " yet" : "");
		if (fd >= 0)
			close(fd);
		http_text(req, HTTP_NOTFOUND, "Not Found", why);
		return;
	}
	if ((b = evbuffer_new()) == NULL)
		fatalx("out of memory for an HTTP answer");
	/* The buffer owns fd from here, also when it fails. */
	if (evbuffer_add_file(b, fd, 0, st.st_size) != 0) {
		evbuffer_free(b);
		http_text(req, HTTP_INTERNAL, "Internal Server Error",
		          "the report could not be read\n");
		return;
	}
	evhttp_add_header(h, "Content-Security-Policy", ADMIN_REPORT_CSP);
	evhttp_add_header(h, "X-Content-Type-Options", "nosniff");
	http_reply(req, HTTP_OK, "OK", "text/html; charset=utf-8", b);
	evbuffer_free(b);
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

	if (strcmp(path, ADMIN_PAGE_REPORT) == 0) {
		admin_page_report(req);
		return 1;
	}
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
