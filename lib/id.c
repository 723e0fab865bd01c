/* Identifiers, room names, status texts and the default limits. */
#include "csq.h"

#include <string.h>

#define ROOM_INDEX_DIGITS 9 /* more: no room (the index below 2^32) */

/* The id alphabet, [A-Za-z0-9._:@-], as a table: an id is checked two
 * or three times on its way in (csqd's parser, csq_op_validate, libcsq),
 * and a look-up is half the instructions a byte of the ranges'
 * comparisons. */
static const unsigned char id_chars[256] = {
    ['-'] = 1, ['.'] = 1, ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1,
    ['5'] = 1, ['6'] = 1, ['7'] = 1, ['8'] = 1, ['9'] = 1, [':'] = 1, ['@'] = 1,
    ['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1, ['E'] = 1, ['F'] = 1, ['G'] = 1,
    ['H'] = 1, ['I'] = 1, ['J'] = 1, ['K'] = 1, ['L'] = 1, ['M'] = 1, ['N'] = 1,
    ['O'] = 1, ['P'] = 1, ['Q'] = 1, ['R'] = 1, ['S'] = 1, ['T'] = 1, ['U'] = 1,
    ['V'] = 1, ['W'] = 1, ['X'] = 1, ['Y'] = 1, ['Z'] = 1, ['_'] = 1, ['a'] = 1,
    ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1, ['g'] = 1, ['h'] = 1,
    ['i'] = 1, ['j'] = 1, ['k'] = 1, ['l'] = 1, ['m'] = 1, ['n'] = 1, ['o'] = 1,
    ['p'] = 1, ['q'] = 1, ['r'] = 1, ['s'] = 1, ['t'] = 1, ['u'] = 1, ['v'] = 1,
    ['w'] = 1, ['x'] = 1, ['y'] = 1, ['z'] = 1};

/* Four bytes a step, their look-ups ANDed without a branch each: an id
 * is short (CSQ_ID_MAX), and most ids checked are valid, so stopping at
 * the first bad byte saves less than a branch a byte costs. */
int
csq_valid_id(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	unsigned ok = 1;
	size_t i = 0;

	if (s == NULL || len == 0 || len > CSQ_ID_MAX)
		return 0;
	for (; i + 4 <= len; i += 4)
		ok &= id_chars[p[i]] & id_chars[p[i + 1]] & id_chars[p[i + 2]] &
		      id_chars[p[i + 3]];
	for (; i < len; i++)
		ok &= id_chars[p[i]];
	return (int)ok;
}

/*
 * A room is "<servicer>/<index>" with index a strict decimal: no sign, no
 * leading zero, no spaces. Whether it exists (index below the capacity) is
 * the caller's question: "s/5000" is well formed, and so is an index of
 * ten digits or more, which is read as UINT32_MAX, above every capacity.
 */
int
csq_parse_room(const char *s, size_t len, char sid[CSQ_ID_MAX + 1],
               uint32_t *index)
{
	const char *slash;
	size_t idlen, i;
	uint32_t v = 0;

	if (s == NULL || (slash = memchr(s, '/', len)) == NULL)
		return -1;
	idlen = (size_t)(slash - s);
	if (!csq_valid_id(s, idlen))
		return -1;
	i = idlen + 1;
	if (i == len)
		return -1;
	if (s[i] == '0' && len - i > 1)
		return -1;
	if (len - i > ROOM_INDEX_DIGITS)
		v = UINT32_MAX;
	for (; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		if (v != UINT32_MAX)
			v = v * 10 + (uint32_t)(s[i] - '0');
	}
	memcpy(sid, s, idlen);
	sid[idlen] = '\0';
	*index = v;
	return 0;
}

const char *
csq_status_text(enum csq_status st)
{
	switch (st) {
	case CSQ_OK:
		return "OK";
	case CSQ_EUSER:
		return "ERR invalid user id";
	case CSQ_ESERVICER:
		return "ERR invalid servicer id";
	case CSQ_EQUEUE:
		return "ERR invalid queue id";
	case CSQ_EROOM:
		return "ERR invalid room id";
	case CSQ_ERANGE:
		return "ERR value is not an integer or out of range";
	case CSQ_ENOTFOUND:
		return "NOTFOUND no such servicer or room";
	case CSQ_EFULL:
		return "FULL queue is at its maximum length";
	case CSQ_ETRYAGAIN:
		return "TRYAGAIN engine unavailable, nothing was changed";
	case CSQ_EEXHAUSTED:
		return "ERR order key sequence exhausted";
	case CSQ_EUNSURE:
		return "TRYAGAIN engine unavailable, the command may have been "
		       "applied; it is safe to send again";
	case CSQ_ENOCONV:
		return "ERR no conversation in room";
	case CSQ_ESKILL:
		return "ERR invalid skill list";
	case CSQ_ENEEDSETS:
		return "ERR too many distinct need-sets (at most 256)";
	case CSQ_EUNSUPPORTED:
		return "ERR SKILLS and NEEDS need the memory engine";
	case CSQ_EQUEUES:
		return "FULL too many queues (max_queues)";
	case CSQ_ENOBODY:
		return "NOBODY nobody serves the queue now";
	case CSQ_ECLOSED: /* csqd says when it opens (section 3c) */
		return "CLOSED queue is closed";
	case CSQ_EOOM:
		return "TRYAGAIN Redis is over its maxmemory, nothing was "
		       "changed (reads are answered)";
	}
	return "ERR unknown status";
}

void
csq_limits_default(struct csq_limits *l)
{
	l->servicer_ttl_s = 30;
	l->user_ttl_s = 120;
	l->max_tier = 9;
	l->max_queue_length = 100000;
	l->offer_timeout_s = 0;
	l->offer_max_missed = CSQ_DEFAULT_MAX_MISSED;
	l->offer_retry_s = CSQ_DEFAULT_RETRY;
	l->wrapup_s = 0;
	l->strategy = CSQ_STRATEGY_LONGEST_IDLE;
	l->max_queues = CSQ_DEFAULT_MAX_QUEUES;
}
