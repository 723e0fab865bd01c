/*
 * The samples of the admin view's chart: a timer asks the engine for
 * STATS, as a command would, and keeps the answer in a ring of the last
 * hour. A sample the engine cannot give (Redis down) is a gap.
 *
 * With a file (http.history, or beside memory.journal), the ring is
 * written there after every sample (a temporary file renamed over it) and
 * read back at the start, so that a restarted csqd's chart still has the
 * hour before: the samples are csqd's own, not part of the state, so a
 * file that cannot be read is a warning and an empty chart, never a
 * refusal to start.
 */
#include "admin_history.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "engine.h"
#include "log.h"
#include "server.h"
#include "util.h"

#define ADMIN_HISTORY_STEP_S  10                          /* between samples */
#define ADMIN_HISTORY_MINUTE  (60 / ADMIN_HISTORY_STEP_S) /* samples */
#define ADMIN_HISTORY_POINTS  (3600 / ADMIN_HISTORY_STEP_S + 1)
#define ADMIN_HISTORY_HOUR_MS 3600000ULL
/* The longest a minute between two samples ADMIN_HISTORY_MINUTE apart may
 * be: longer, a restart or a gap lies between, and the count is unknown. */
#define ADMIN_HISTORY_MINUTE_MS_MAX ((60 + ADMIN_HISTORY_STEP_S / 2) * 1000)
#define ADMIN_HISTORY_MAGIC         "csq-history 1"
#define ADMIN_HISTORY_LINE_MAX      96 /* three numbers and spaces */

struct admin_sample {
	uint64_t t_ms;
	uint64_t waiting, matched_total;
};

/* A STATS call out: the history it is for, NULL once that is freed. */
struct admin_asking {
	struct admin_history *h;
};

struct admin_history {
	struct csq_engine *engine;
	struct event *timer;
	struct admin_sample ring[ADMIN_HISTORY_POINTS];
	size_t head, n;              /* n samples from head, oldest first */
	struct admin_asking *asking; /* the call out, or NULL */
	char *path, *tmp;            /* the file and its next version */
	int write_failed;            /* logged once until a write works */
};

/* One number of a line: digits only, no sign, below 2^64. */
static int
admin_history_number(const char **p, uint64_t *out)
{
	uint64_t v = 0;
	const char *q = *p;

	if (*q < '0' || *q > '9')
		return -1;
	for (; *q >= '0' && *q <= '9'; q++) {
		if (v > (UINT64_MAX - (uint64_t)(*q - '0')) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*q - '0');
	}
	*p = q;
	*out = v;
	return 0;
}

/* Reads h->path's samples of the hour before now into the empty ring; a
 * file that is not one csqd wrote leaves it empty, with a warning. */
static void
admin_history_load(struct admin_history *h, uint64_t now)
{
	char line[ADMIN_HISTORY_LINE_MAX + 2];
	struct admin_sample s, last = {0, 0, 0};
	const char *p, *why = NULL;
	size_t len, nline = 0, kept = 0;
	FILE *f;

	if ((f = fopen(h->path, "r")) == NULL) {
		if (errno != ENOENT) /* absent: a first start */
			log_warn("admin history %s: cannot read it, the chart "
			         "starts empty",
			         h->path);
		return;
	}
	while (why == NULL && fgets(line, sizeof(line), f) != NULL) {
		nline++;
		len = strlen(line);
		if (len == 0 || line[len - 1] != '\n') {
			why = len > ADMIN_HISTORY_LINE_MAX ? "line too long"
			                                   : "line cut short";
			break;
		}
		line[len - 1] = '\0';
		if (nline == 1) {
			if (strcmp(line, ADMIN_HISTORY_MAGIC) != 0)
				why = "not a csq history (first line)";
			continue;
		}
		if (nline - 1 > ADMIN_HISTORY_POINTS) {
			why = "more samples than an hour holds";
			break;
		}
		p = line;
		if (admin_history_number(&p, &s.t_ms) != 0 || *p++ != ' ' ||
		    admin_history_number(&p, &s.waiting) != 0 || *p++ != ' ' ||
		    admin_history_number(&p, &s.matched_total) != 0 ||
		    *p != '\0')
			why = "not three numbers";
		else if (s.t_ms <= last.t_ms)
			why = "times not in order";
		else if (s.t_ms > now)
			why = "a time after now";
		last = s;
		if (why == NULL && s.t_ms + ADMIN_HISTORY_HOUR_MS > now)
			h->ring[kept++] = s; /* the last hour's only */
	}
	if (why == NULL && ferror(f))
		why = strerror(errno);
	if (why == NULL && nline == 0)
		why = "empty";
	fclose(f);
	if (why != NULL) {
		log_warnx("admin history %s: line %zu: %s; the chart starts "
		          "empty and the file is written anew",
		          h->path, nline, why);
		return;
	}
	h->head = 0;
	h->n = kept;
	log_info("admin history %s: kept %zu samples of the last hour", h->path,
	         kept);
}

/* Writes the ring to h->path, whole or not at all (a rename). */
static void
admin_history_save(struct admin_history *h)
{
	const struct admin_sample *s;
	FILE *f;
	size_t i;
	int ok;

	if ((f = fopen(h->tmp, "w")) == NULL)
		ok = 0;
	else {
		fprintf(f, "%s\n", ADMIN_HISTORY_MAGIC);
		for (i = 0; i < h->n; i++) {
			s = &h->ring[(h->head + i) % ADMIN_HISTORY_POINTS];
			fprintf(f, "%" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
			        s->t_ms, s->waiting, s->matched_total);
		}
		ok = !ferror(f);
		ok = fclose(f) == 0 && ok;
		ok = ok && rename(h->tmp, h->path) == 0;
		if (!ok)
			unlink(h->tmp);
	}
	if (!ok && !h->write_failed)
		log_warn("admin history %s: cannot write it (the chart is "
		         "kept in memory; a restart starts it empty)",
		         h->path);
	else if (ok && h->write_failed)
		log_info("admin history %s: written again", h->path);
	h->write_failed = !ok;
}

static void
admin_history_add(struct admin_history *h, const struct csq_stats *st)
{
	struct admin_sample *s;

	if (h->n < ADMIN_HISTORY_POINTS)
		s = &h->ring[(h->head + h->n++) % ADMIN_HISTORY_POINTS];
	else {
		s = &h->ring[h->head];
		h->head = (h->head + 1) % ADMIN_HISTORY_POINTS;
	}
	s->t_ms = server_now_ms();
	s->waiting = st->waiting;
	s->matched_total = st->matched_total;
	if (h->path != NULL)
		admin_history_save(h);
}

static void
admin_history_result(void *arg, const struct csq_result *r)
{
	struct admin_asking *a = arg;

	if (a->h != NULL) {
		a->h->asking = NULL;
		if (r->status == CSQ_OK)
			admin_history_add(a->h, &r->stats);
	}
	free(a);
}

static void
admin_history_tick(evutil_socket_t fd, short what, void *arg)
{
	struct admin_history *h = arg;
	struct admin_asking *a;
	struct csq_op op;

	(void)fd, (void)what;
	if (h->asking != NULL) /* the last one has not answered yet */
		return;
	a = csq_xcalloc(1, sizeof(*a));
	a->h = h;
	h->asking = a;
	memset(&op, 0, sizeof(op));
	op.code = CSQ_OP_STATS;
	op.ttl_s = -1;
	csq_engine_call(h->engine, &op, admin_history_result, a);
}

struct admin_history *
admin_history_new(struct event_base *base, struct csq_engine *engine,
                  const char *path)
{
	struct admin_history *h = csq_xcalloc(1, sizeof(*h));
	struct timeval step = {ADMIN_HISTORY_STEP_S, 0};
	size_t len;

	h->engine = engine;
	if (path != NULL && path[0] != '\0') {
		len = strlen(path);
		h->path = csq_xstrndup(path, len);
		h->tmp = csq_xmalloc(len + sizeof(".tmp"));
		memcpy(h->tmp, path, len);
		memcpy(h->tmp + len, ".tmp", sizeof(".tmp"));
		admin_history_load(h, server_now_ms());
	}
	if ((h->timer = event_new(base, -1, EV_PERSIST, admin_history_tick,
	                          h)) == NULL)
		fatalx("out of memory for the admin view's history");
	event_add(h->timer, &step);
	/* A first sample at once: a page opened now has a point. */
	event_active(h->timer, EV_TIMEOUT, 0);
	return h;
}

void
admin_history_free(struct admin_history *h)
{
	if (h == NULL)
		return;
	if (h->asking != NULL)
		h->asking->h = NULL;
	event_free(h->timer);
	free(h->path);
	free(h->tmp);
	free(h);
}

void
admin_history_json(const struct admin_history *h, struct evbuffer *b)
{
	const struct admin_sample *s, *before;
	size_t i;

	evbuffer_add(b, "[", 1);
	for (i = 0; i < h->n; i++) {
		s = &h->ring[(h->head + i) % ADMIN_HISTORY_POINTS];
		evbuffer_add_printf(b, "%s[%" PRIu64 ",%" PRIu64 ",",
		                    i > 0 ? "," : "", s->t_ms, s->waiting);
		if (i < ADMIN_HISTORY_MINUTE) {
			evbuffer_add(b, "null]", 5);
			continue;
		}
		before = &h->ring[(h->head + i - ADMIN_HISTORY_MINUTE) %
		                  ADMIN_HISTORY_POINTS];
		/* A restart (or a gap) in the minute: not a minute's count. */
		if (s->t_ms - before->t_ms > ADMIN_HISTORY_MINUTE_MS_MAX) {
			evbuffer_add(b, "null]", 5);
			continue;
		}
		/* A Redis state that went back makes the totals go back. */
		evbuffer_add_printf(b, "%" PRIu64 "]",
		                    s->matched_total >= before->matched_total
		                        ? s->matched_total -
		                              before->matched_total
		                        : 0);
	}
	evbuffer_add(b, "]", 1);
}
