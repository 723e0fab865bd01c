/*
 * The admin page (protocol-v2 section 11): GET / and the files it loads,
 * from web/admin/, built into csqd by web/embed.cmake.
 */
#ifndef CSQD_ADMIN_PAGE_H
#define CSQD_ADMIN_PAGE_H

#include <stddef.h>

struct evhttp_request;

/* A file of web/admin/: its path there, its bytes. */
struct admin_asset {
	const char *path;
	const unsigned char *data;
	size_t len;
};

/* Every file, in path order; the last entry's path is NULL. */
extern const struct admin_asset admin_assets[];

/* The page (path "/"), one of its files ("/assets/<path>"), or the last
 * day's report ("/report", admin_page_set_report): 1 when answered, 0
 * when path names none of them. */
int admin_page_serve(struct evhttp_request *, const char *path);
/* The file /report serves (record.report: csq-day report's HTML page);
 * "" for none. Copied. */
void admin_page_set_report(const char *path);

#endif
