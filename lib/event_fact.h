/*
 * An event as a fact: its kind and its fields by position, the compact form
 * in which the Redis engine's scripts tell what happened. The daemon turns
 * a fact into a struct csq_event, and csq_event_json into the one wire
 * format of events, whichever engine made them.
 *
 * The fields of each kind, and their order, are those csq_event_json
 * writes (event_fact.c lists them), so that a script's line reads like the
 * JSON it becomes: event('matched', user, queue, tier, servicer, room,
 * waited_ms, from_queue).
 */
#ifndef CSQ_EVENT_FACT_H
#define CSQ_EVENT_FACT_H

#include <stddef.h>
#include <stdint.h>

#include "csq.h"

/* The most fields a kind has, with room for those of kinds to come; a
 * reader may drop what a fact carries past them. */
#define CSQ_FACT_FIELDS_MAX 16

/* One field of a fact: a string, an integer, or absent (nil or false in
 * the script; a field past the last one given is absent too). */
struct csq_fact_value {
	enum { CSQ_FACT_ABSENT, CSQ_FACT_INT, CSQ_FACT_STR } type;
	int64_t n;
	const char *s; /* not NUL-terminated */
	size_t len;
};

/*
 * Fills ev (id and ts_ms aside, which the caller knows) from the fact of
 * the kind named kind (klen bytes) and its n fields. A string field is an
 * id (csq_valid_id) or, for queues, ids joined by commas; an integer field
 * is an integer >= 0; reason and by name a reason; room is
 * "<servicer>/<index>", or the index alone of the event's servicer.
 * Fields past those of the kind (a newer script's) are left out. Returns
 * 0, or -1 for an unknown kind or a field that is not what its place says
 * (ev is then undefined).
 */
int csq_event_from_fact(struct csq_event *ev, const char *kind, size_t klen,
                        const struct csq_fact_value *v, size_t n);

/*
 * The fact of ev, the inverse of csq_event_from_fact: its kind is
 * csq_event_name(ev->type), and v gets its fields (strings point into ev
 * or are constants); a field ev has not is absent, and those at the end
 * are left out. Returns how many.
 */
size_t csq_event_to_fact(const struct csq_event *ev,
                         struct csq_fact_value v[CSQ_FACT_FIELDS_MAX]);

#endif
