/*
 * What an administrator's overview reads: the queues that exist with the
 * length of their lines and their longest wait (QUEUES), and the rooms of
 * a servicer with who is in them (ROOMS). Reads only; nothing changes.
 */
#include <stdlib.h>
#include <string.h>

#include "orderkey.h"
#include "state.h"
#include "util.h"

static uint64_t
overview_elapsed(uint64_t now, uint64_t then)
{
	return now > then ? now - then : 0;
}

/*
 * The longest wait in q's line, and whose. The line is in tier order, then
 * arrival order, so the user who has waited longest is the first of its
 * tier: one seek per tier present, not a walk of the line.
 */
static void overview_oldest_in(const struct csq_line *, uint64_t *first,
                               const struct csq_user **oldest);

static void
overview_oldest(const struct csq_queue *q, uint64_t now,
                struct csq_queue_info *out)
{
	const struct csq_user *oldest = NULL;
	uint64_t first = UINT64_MAX;
	struct csq_line *l;
	uint32_t i;

	/* Each line of the queue (one per need-set) the same way. */
	for (i = 0; (l = csq_needline_line(q, i)) != NULL; i++)
		overview_oldest_in(l, &first, &oldest);
	if (oldest == NULL)
		return;
	out->oldest_wait_ms = overview_elapsed(now, oldest->arrival_ms);
	memcpy(out->oldest_user, oldest->id, csq_user_idlen(oldest) + 1);
}

static void
overview_oldest_in(const struct csq_line *l, uint64_t *firstp,
                   const struct csq_user **oldestp)
{
	struct csq_line_node *n = csq_line_first(l);
	const struct csq_user *oldest = *oldestp;
	uint64_t first = *firstp;
	struct csq_key k;

	while (n != NULL) {
		/* The one who came first: the lowest sequence, which orders
		 * arrivals within a millisecond too. */
		csq_key_unpack(csq_line_node_key(n), &k);
		if (k.seq < first) {
			first = k.seq;
			oldest = csq_line_node_value(n);
		}
		if (k.tier == 0)
			break;
		/* The first key of the tier below: sequence 0 is never
		 * handed out, so every user of that tier sorts after it. */
		k.tier--;
		k.seq = 0;
		n = csq_line_seek(l, csq_key_pack(&k));
	}
	*firstp = first;
	*oldestp = oldest;
}

static void
overview_queue(const struct csq_queue *q, uint64_t now,
               struct csq_queue_info *out)
{
	memcpy(out->name, q->name, q->namelen + 1);
	/* As QLEN counts them: in line, and held for a preferred servicer
	 * (who are in no line of the queue's, so not in QUEUE's pages). */
	out->waiting = csq_needline_count(q) + q->preferring;
	out->preferring = q->preferring;
	out->oldest_wait_ms = 0;
	out->oldest_user[0] = '\0';
	overview_oldest(q, now, out);
}

enum csq_status
csq_queue_info(struct csq *c, uint64_t now, const char *name,
               struct csq_queue_info *out)
{
	const struct csq_queue *q;
	size_t len = strlen(name);

	memset(out, 0, sizeof(*out));
	if (!csq_valid_id(name, len))
		return CSQ_EQUEUE;
	memcpy(out->name, name, len + 1);
	if ((q = csq_queue_get(c, name, len, 0)) != NULL)
		overview_queue(q, now, out);
	return CSQ_OK;
}

/*
 * A queue exists while something refers to it, but an assigned user does
 * not make it one that QUEUES lists: a waiting user (in its line, or held
 * for a preferred servicer), a servicer serving it, or a policy does
 * (protocol-v2 section 6); the default queue always.
 */
static int
overview_listed(const struct csq_queue *q)
{
	return csq_needline_count(q) > 0 || q->preferring > 0 ||
	       q->nservicers > 0 || q->policy != NULL ||
	       strcmp(q->name, CSQ_DEFAULT_QUEUE) == 0;
}

/* From the set of names, in their order: no sort. */
struct csq_queue_info *
csq_queues_slice(struct csq *c, uint64_t now, const char *after, size_t count,
                 size_t *n, const char **next)
{
	const struct csq_nameset_node *node;
	const struct csq_queue *q = NULL;
	struct csq_queue_info *out;
	size_t cap = csq_nameset_len(c->queue_names), seen = 0;

	if (count > 0 && count < cap)
		cap = count;
	out = csq_xmalloc((cap + 1) * sizeof(*out));
	*n = 0;
	*next = NULL;
	for (node = csq_nameset_after(c->queue_names, after); node != NULL;
	     node = csq_nameset_next(node)) {
		if (count > 0 && seen == count) {
			*next = q->name;
			break;
		}
		q = csq_nameset_value(node);
		seen++;
		if (overview_listed(q))
			overview_queue(q, now, &out[(*n)++]);
	}
	return out;
}

struct csq_queue_info *
csq_queues(struct csq *c, uint64_t now, size_t *n)
{
	const char *next;

	return csq_queues_slice(c, now, NULL, 0, n, &next);
}

/* Appends the rooms of s to the n of *out (cap of them, grown). */
static void
overview_rooms_of(const struct csq *c, const struct csq_servicer *s,
                  uint64_t now, struct csq_room_info **out, size_t *n,
                  size_t *cap)
{
	const struct csq_room *room;
	struct csq_room_info *r;
	uint32_t i;

	for (i = 0; i < s->nrooms; i++) {
		if (!csq_room_exists(s, i))
			continue;
		if (*n == *cap) {
			*cap = *cap ? 2 * *cap : 16;
			*out = csq_xrealloc(*out, *cap * sizeof(**out));
		}
		r = &(*out)[(*n)++];
		memset(r, 0, sizeof(*r));
		csq_room_name(s, i, r->room);
		if ((room = s->rooms[i]) == NULL) {
			r->state = CSQ_ROOM_FREE;
			r->paused_by = csq_servicer_paused_by(c, s);
			r->resting_ms = csq_servicer_resting_ms(s, now);
			continue;
		}
		r->state = room->state;
		if (room->user != NULL) {
			memcpy(r->user, room->user->id,
			       csq_user_idlen(room->user) + 1);
			strcpy(r->needs,
			       csq_needset_text(c, room->user->needs));
		}
		r->since_ms = overview_elapsed(now, room->since_ms);
	}
}

void
csq_rooms_slice(struct csq *c, uint64_t now, const char *after, size_t count,
                struct csq_room_info **out, size_t *n, const char **next)
{
	const struct csq_nameset_node *node;
	const struct csq_servicer *s = NULL;
	size_t cap = 0, seen = 0;

	*out = NULL;
	*n = 0;
	*next = NULL;
	for (node = csq_nameset_after(c->servicer_ids, after); node != NULL;
	     node = csq_nameset_next(node)) {
		if (count > 0 && seen == count) {
			*next = s->id;
			break;
		}
		s = csq_nameset_value(node);
		seen++;
		overview_rooms_of(c, s, now, out, n, &cap);
	}
}

enum csq_status
csq_rooms(struct csq *c, uint64_t now, const char *sid,
          struct csq_room_info **out, size_t *n)
{
	const struct csq_servicer *s;
	const char *next;
	size_t cap = 0;

	*out = NULL;
	*n = 0;
	if (sid == NULL) {
		csq_rooms_slice(c, now, NULL, 0, out, n, &next);
		return CSQ_OK;
	}
	if (!csq_valid_id(sid, strlen(sid)))
		return CSQ_ESERVICER;
	if ((s = csq_dict_get(c->servicers, sid, strlen(sid))) == NULL)
		return CSQ_ENOTFOUND;
	overview_rooms_of(c, s, now, out, n, &cap);
	return CSQ_OK;
}
