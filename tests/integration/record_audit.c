/* record_audit.h: csq-day audit's work, inside a test. */
#include "record_audit.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "event_parse.h"
#include "harness.h"

unsigned long long
record_audit_at(const char *file, int line, const char *path, ...)
{
	struct csq_audit *a = csq_audit_new();
	const struct csq_audit_summary *s;
	const struct csq_audit_finding *f;
	char err[CSQ_PARSE_ERR_MAX], *buf = NULL;
	size_t cap = 0, n, i;
	unsigned long long events, bad = 0, fails = 0;
	ssize_t len;
	va_list ap;
	FILE *fp;

	va_start(ap, path);
	for (; path != NULL; path = va_arg(ap, const char *)) {
		if ((fp = fopen(path, "r")) == NULL)
			continue; /* not written: no events */
		while ((len = getline(&buf, &cap, fp)) > 0) {
			if (buf[len - 1] == '\n')
				len--;
			if (csq_audit_line(a, buf, (size_t)len, err) != 0) {
				fprintf(stderr, "%s: not an event: %s\n", path,
				        err);
				bad++;
			}
		}
		fclose(fp);
	}
	va_end(ap);
	free(buf);
	csq_audit_end(a);
	s = csq_audit_summary(a);
	f = csq_audit_findings(a, &n);
	fails = n;
	for (i = 0; i < n; i++)
		fprintf(stderr,
		        "audit: %s: events %" PRIu64 " %" PRIu64 ": %s\n",
		        csq_audit_kind_name(f[i].kind), f[i].ids[0],
		        f[i].nids > 1 ? f[i].ids[1] : 0, f[i].text);
	fprintf(stderr,
	        "audit: %" PRIu64 " events, %" PRIu64 " arrivals, %" PRIu64
	        " matched, %" PRIu64 " checked for order, %zu findings\n",
	        s->events, s->arrivals, s->matched, s->checked, n);
	for (i = 0; i < CSQ_EXCUSES; i++)
		if (s->excused[i] > 0)
			fprintf(
			    stderr,
			    "audit: %" PRIu64 " overtakes excused: %s\n",
			    s->excused[i],
			    csq_audit_excuse_name((enum csq_audit_excuse)i));
	events = s->events;
	csq_audit_free(a);
	if (fails > 0 || bad > 0)
		_fail(file, line);
	return events;
}
