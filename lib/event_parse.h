/*
 * The other way of csq_event_json: one line of JSON, as csqd publishes an
 * event and writes it to the record of the day, back into a struct
 * csq_event. Fields it does not know (a newer csqd's) are skipped, and so
 * is an event type it does not know, which it reports as such: a reader of
 * records keeps going over what a newer csqd wrote. An id field left out,
 * or "" in user, queue, from_queue, servicer and room (as csq_event_json
 * writes an event without one), is none: every line that parses prints
 * into one that parses to the same event (fuzz/fuzz_event.c).
 */
#ifndef CSQ_EVENT_PARSE_H
#define CSQ_EVENT_PARSE_H

#include <stddef.h>

#include "csq.h"

enum csq_event_parse {
	CSQ_PARSE_OK = 0,
	CSQ_PARSE_UNKNOWN = 1, /* well formed, of a type this csq lacks */
	CSQ_PARSE_ERROR = -1,  /* not an event: why in err */
};

#define CSQ_PARSE_ERR_MAX 96

/*
 * Parses line (len bytes, no newline needed) into ev (zeroed first).
 * CSQ_PARSE_UNKNOWN leaves id and ts set and the type unspecified. err (at
 * least CSQ_PARSE_ERR_MAX bytes) says why a line is refused, with the
 * byte offset.
 */
enum csq_event_parse csq_event_parse(const char *line, size_t len,
                                     struct csq_event *ev, char *err);

#endif
