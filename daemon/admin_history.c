/*
 * The samples of the admin view's chart: a timer asks the engine for
 * STATS, as a command would, and keeps the answer in a ring of the last
 * hour. A sample the engine cannot give (Redis down) is a gap.
 */
#include "admin_history.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "engine.h"
#include "log.h"
#include "server.h"
#include "util.h"

#define ADMIN_HISTORY_STEP_S 10                          /* between samples */
#define ADMIN_HISTORY_MINUTE (60 / ADMIN_HISTORY_STEP_S) /* samples */
#define ADMIN_HISTORY_POINTS (3600 / ADMIN_HISTORY_STEP_S + 1)

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
};

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
admin_history_new(struct event_base *base, struct csq_engine *engine)
{
	struct admin_history *h = csq_xcalloc(1, sizeof(*h));
	struct timeval step = {ADMIN_HISTORY_STEP_S, 0};

	h->engine = engine;
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
		/* A Redis state that went back makes the totals go back. */
		evbuffer_add_printf(b, "%" PRIu64 "]",
		                    s->matched_total >= before->matched_total
		                        ? s->matched_total -
		                              before->matched_total
		                        : 0);
	}
	evbuffer_add(b, "]", 1);
}
