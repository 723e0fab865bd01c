/*
 * Skills (protocol.md section 3c): the skill lists of SKILLS and NEEDS,
 * the interned skill names, servicers' skills, and need-sets. A servicer
 * may take a user when it has every skill the user needs at the level
 * needed or higher; both lists are sorted by the interned name's
 * pointer, so that the test is one merge of at most 32 + 8 entries.
 *
 * Need-sets are interned and numbered 1..CSQ_NEEDSETS_MAX: a user holds
 * the number of its own (16 bits that struct csq_user had as padding).
 * One that no user holds any more stays, with its need-lines, until a
 * new need-set wants its slot: so that a stream of single arrivals of a
 * rare need-set does not build its need-lines anew each time.
 */
#include "state.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEED_SKILLS   UINT64_C(0x6a09e667f3bcc908)
#define SEED_NEEDSETS UINT64_C(0xbb67ae8584caa73b)

static int
skill_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	       (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-';
}

/* Strict decimal 1..CSQ_SKILL_LEVEL_MAX, no sign, no leading zero. */
static int
skill_level(const char *s, size_t len, uint32_t *out)
{
	uint32_t v = 0;
	size_t i;

	if (len == 0 || len > 3 || s[0] == '0')
		return -1;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (uint32_t)(s[i] - '0');
	}
	if (v < 1 || v > CSQ_SKILL_LEVEL_MAX)
		return -1;
	*out = v;
	return 0;
}

static int
skill_entry_cmp(const void *a, const void *b)
{
	return strcmp(a, b); /* name is the entry's first member */
}

enum csq_status
csq_skills_parse(const char *s, uint32_t max, struct csq_skill_list *out)
{
	size_t len, start = 0, end, colon, i;
	uint32_t n = 0;

	out->n = 0;
	if (s == NULL)
		return CSQ_ESKILL;
	len = strnlen(s, CSQ_SKILLS_TEXT_MAX);
	if (len >= CSQ_SKILLS_TEXT_MAX || max > CSQ_SERVICER_SKILLS)
		return CSQ_ESKILL;
	if (len == 0)
		return CSQ_OK;
	for (;;) {
		for (end = start; end < len && s[end] != ','; end++)
			;
		for (colon = start; colon < end && s[colon] != ':'; colon++)
			;
		if (n == max || colon == start ||
		    colon - start > CSQ_SKILL_NAME_MAX)
			return CSQ_ESKILL;
		for (i = start; i < colon; i++)
			if (!skill_char(s[i]))
				return CSQ_ESKILL;
		out->v[n].level = 1;
		if (colon < end && skill_level(s + colon + 1, end - colon - 1,
		                               &out->v[n].level) != 0)
			return CSQ_ESKILL;
		memcpy(out->v[n].name, s + start, colon - start);
		out->v[n].name[colon - start] = '\0';
		n++;
		if (end == len)
			break;
		start = end + 1;
	}
	qsort(out->v, n, sizeof(out->v[0]), skill_entry_cmp);
	for (i = 1; i < n; i++)
		if (strcmp(out->v[i - 1].name, out->v[i].name) == 0)
			return CSQ_ESKILL;
	out->n = n;
	return CSQ_OK;
}

/* "name:level" at out; returns the bytes written (no NUL). Hot: every
 * ENQUEUE with NEEDS writes its need-set's text, so no printf. */
static size_t
skill_entry_text(char *out, const char *name, size_t len, uint32_t level)
{
	size_t n = len;

	memcpy(out, name, len);
	out[n++] = ':';
	if (level >= 100)
		out[n++] = (char)('0' + level / 100);
	if (level >= 10)
		out[n++] = (char)('0' + level / 10 % 10);
	out[n++] = (char)('0' + level % 10);
	return n;
}

void
csq_skills_text(const struct csq_skill_list *l, char out[CSQ_SKILLS_TEXT_MAX])
{
	size_t off = 0;
	uint32_t i;

	for (i = 0; i < l->n; i++) {
		if (i > 0)
			out[off++] = ',';
		off += skill_entry_text(out + off, l->v[i].name,
		                        strlen(l->v[i].name), l->v[i].level);
	}
	out[off] = '\0';
}

void
csq_skills_init(struct csq *c)
{
	c->skill_names = csq_dict_new(c->seed ^ SEED_SKILLS);
	c->needset_texts = csq_dict_new(c->seed ^ SEED_NEEDSETS);
}

static const struct csq_skill_name *
skill_name_hold(struct csq *c, const char *name)
{
	size_t len = strlen(name);
	struct csq_skill_name *sn = csq_dict_get(c->skill_names, name, len);

	if (sn == NULL) {
		sn = csq_xcalloc(1, sizeof(*sn));
		sn->len = (uint32_t)len;
		memcpy(sn->name, name, len + 1);
		csq_dict_put(c->skill_names, sn->name, len, sn);
	}
	sn->refs++;
	return sn;
}

static void
skill_name_release(struct csq *c, const struct csq_skill_name *name)
{
	struct csq_skill_name *sn =
	    csq_dict_get(c->skill_names, name->name, name->len);

	if (sn == NULL || --sn->refs > 0)
		return;
	csq_dict_del(c->skill_names, sn->name, sn->len);
	free(sn);
}

static int
skill_ptr_cmp(const void *a, const void *b)
{
	const struct csq_skill *x = a, *y = b;

	return x->name < y->name ? -1 : x->name > y->name;
}

/* list's entries as interned skills, sorted by pointer. */
static uint32_t
skills_intern(struct csq *c, const struct csq_skill_list *l,
              struct csq_skill *out)
{
	uint32_t i;

	for (i = 0; i < l->n; i++) {
		out[i].name = skill_name_hold(c, l->v[i].name);
		out[i].level = l->v[i].level;
	}
	qsort(out, l->n, sizeof(*out), skill_ptr_cmp);
	return l->n;
}

void
csq_servicer_skills_free(struct csq *c, struct csq_servicer *s)
{
	uint32_t i;

	for (i = 0; i < s->nskills; i++)
		skill_name_release(c, s->skills[i].name);
	s->nskills = 0;
}

void
csq_servicer_sat_free(struct csq_servicer *s)
{
	free(s->sat);
	s->sat = NULL;
}

/* Between unaccount and account: the need-lines' heaps follow. */
void
csq_servicer_set_skills(struct csq *c, struct csq_servicer *s,
                        const struct csq_skill_list *l)
{
	struct csq_skill v[CSQ_SERVICER_SKILLS];
	uint32_t n = skills_intern(c, l, v);

	csq_servicer_skills_free(c, s);
	memcpy(s->skills, v, n * sizeof(v[0]));
	s->nskills = n;
	if (n > 0 && s->sat == NULL)
		s->sat = csq_xcalloc(CSQ_NEEDSETS_MAX + 1, sizeof(*s->sat));
	else if (s->sat != NULL) /* what it may take is to learn again */
		memset(s->sat, 0, (CSQ_NEEDSETS_MAX + 1) * sizeof(*s->sat));
	csq_needline_takes_forget(s);
}

static int
skill_name_cmp(const void *a, const void *b)
{
	const struct csq_skill *x = a, *y = b;

	return strcmp(x->name->name, y->name->name);
}

/* Skills sorted by pointer, written sorted by name. */
static void
skills_text(const struct csq_skill *v, uint32_t n, char *out, size_t cap)
{
	struct csq_skill sorted[CSQ_SERVICER_SKILLS];
	size_t off = 0;
	uint32_t i;

	memcpy(sorted, v, n * sizeof(*v));
	qsort(sorted, n, sizeof(*sorted), skill_name_cmp);
	(void)cap; /* CSQ_SKILLS_TEXT_MAX holds 32 of the longest */
	for (i = 0; i < n; i++) {
		if (i > 0)
			out[off++] = ',';
		off += skill_entry_text(out + off, sorted[i].name->name,
		                        sorted[i].name->len, sorted[i].level);
	}
	out[off] = '\0';
}

void
csq_servicer_skills_text(const struct csq_servicer *s,
                         char out[CSQ_SKILLS_TEXT_MAX])
{
	skills_text(s->skills, s->nskills, out, CSQ_SKILLS_TEXT_MAX);
}

static int skills_merge(const struct csq_servicer *, const struct csq_needset *,
                        uint32_t *sum);

/* The answer of the merge below, remembered per need-set while the
 * servicer's skills and the need-set stay (a servicer's list of the
 * need-lines it may take asks it for each of the queue's). */
int
csq_skills_satisfy(const struct csq_servicer *s, const struct csq_needset *n,
                   uint32_t *sum)
{
	uint32_t *memo = s->sat != NULL ? &s->sat[n->index] : NULL;
	int ok;

	if (sum == NULL && memo != NULL && *memo >> 1 == n->gen)
		return (int)(*memo & 1);
	ok = skills_merge(s, n, sum);
	if (memo != NULL)
		*memo = n->gen << 1 | (uint32_t)ok;
	return ok;
}

static int
skills_merge(const struct csq_servicer *s, const struct csq_needset *n,
             uint32_t *sum)
{
	uint32_t i = 0, j = 0, total = 0;

	while (j < n->n) {
		while (i < s->nskills && s->skills[i].name < n->v[j].name)
			i++;
		if (i == s->nskills || s->skills[i].name != n->v[j].name ||
		    s->skills[i].level < n->v[j].level)
			return 0;
		total += s->skills[i].level;
		j++;
	}
	if (sum != NULL)
		*sum = total;
	return 1;
}

/* An interned need-set that no user holds: its need-lines go, its
 * names are released, its slot is free. */
static void
needset_evict(struct csq *c, struct csq_needset *ns)
{
	uint32_t i;

	while (ns->lines != NULL)
		csq_needline_free(c, ns->lines);
	for (i = 0; i < ns->n; i++)
		skill_name_release(c, ns->v[i].name);
	csq_dict_del(c->needset_texts, ns->text, ns->textlen);
	c->needsets[ns->index] = NULL;
	free(ns);
}

enum csq_status
csq_needset_get(struct csq *c, const struct csq_skill_list *l, uint16_t *index)
{
	char text[CSQ_SKILLS_TEXT_MAX];
	struct csq_skill_list sorted;
	struct csq_needset *ns;
	size_t len;
	uint32_t i, slot = 0;

	*index = 0;
	if (l->n == 0)
		return CSQ_OK;
	if (l->n > CSQ_USER_NEEDS)
		return CSQ_ESKILL;
	sorted = *l; /* by name, for its text (a relaxed set's is not) */
	qsort(sorted.v, sorted.n, sizeof(sorted.v[0]), skill_entry_cmp);
	l = &sorted;
	csq_skills_text(l, text);
	len = strlen(text);
	if ((ns = csq_dict_get(c->needset_texts, text, len)) != NULL) {
		*index = ns->index;
		return CSQ_OK;
	}
	/* A free slot, else one that no user holds (at most 256 looks). */
	for (i = 1; i <= CSQ_NEEDSETS_MAX && slot == 0; i++)
		if (c->needsets[i] == NULL)
			slot = i;
	for (i = 1; i <= CSQ_NEEDSETS_MAX && slot == 0; i++)
		if (c->needsets[i]->refs == 0) {
			slot = i;
			needset_evict(c, c->needsets[i]);
		}
	if (slot == 0)
		return CSQ_ENEEDSETS;
	ns = csq_xcalloc(1, sizeof(*ns));
	ns->index = (uint16_t)slot;
	/* 31 bits, never 0 (an empty memo): a wrap after 2^31 need-sets
	 * made starts again at 1, and a memo that old is long gone. */
	if (++c->needset_gen >= UINT32_C(1) << 31)
		c->needset_gen = 1;
	ns->gen = c->needset_gen;
	ns->n = skills_intern(c, l, ns->v);
	ns->textlen = len;
	memcpy(ns->text, text, len + 1);
	csq_dict_put(c->needset_texts, ns->text, len, ns);
	c->needsets[slot] = ns;
	*index = (uint16_t)slot;
	return CSQ_OK;
}

/* An entry of the memo that still names its need-set. */
static int
needs_memo_live(const struct csq *c, const struct csq_needs_memo *m)
{
	return m->gen != 0 && c->needsets[m->index] != NULL &&
	       c->needsets[m->index]->gen == m->gen;
}

/*
 * The memo's two slots of text (len bytes), from one hash: a text
 * is in one of the two. With one slot a text, two texts of the same slot
 * sent in turn evicted each other: the bench's 50 texts in 256 slots
 * sent 8 % of the ENQUEUEs with NEEDS to the parse (docs/benchmarks.md).
 */
static void
needs_memo_slots(struct csq *c, const char *text, size_t len,
                 struct csq_needs_memo *m[2])
{
	uint64_t h = UINT64_C(14695981039346656037), w;
	size_t i;

	/* FNV-1a eight bytes at a time (a NEEDS text is 5 to 40 bytes),
	 * then a finalizer, so that every byte reaches the slots' bits. */
	for (i = 0; i + 8 <= len; i += 8) {
		memcpy(&w, text + i, 8);
		h = (h ^ w) * UINT64_C(1099511628211);
	}
	for (; i < len; i++)
		h = (h ^ (uint8_t)text[i]) * UINT64_C(1099511628211);
	h ^= h >> 33;
	h *= UINT64_C(0xff51afd7ed558ccd);
	h ^= h >> 33;
	m[0] = &c->needs_memo[h % CSQ_NEEDS_MEMO];
	m[1] = &c->needs_memo[(h >> 32) % CSQ_NEEDS_MEMO];
}

/*
 * NEEDS text as sent to its need-set. A text seen before, whose need-set
 * is still the one in that slot (its gen), skips the parse; the answer
 * is the same either way, so nothing depends on what the memo holds.
 */
enum csq_status
csq_needs_resolve(struct csq *c, const char *text, uint16_t *index)
{
	struct csq_needs_memo *m[2] = {NULL, NULL}, *to;
	struct csq_skill_list l;
	enum csq_status st;
	size_t len;
	int i;

	*index = 0;
	len = text != NULL ? strnlen(text, CSQ_NEEDS_MEMO_TEXT) : 0;
	if (text != NULL && len < CSQ_NEEDS_MEMO_TEXT) {
		needs_memo_slots(c, text, len, m);
		for (i = 0; i < 2; i++)
			if (m[i]->len == len &&
			    memcmp(m[i]->text, text, len) == 0 &&
			    needs_memo_live(c, m[i])) {
				*index = m[i]->index;
				return CSQ_OK;
			}
	}
	if ((st = csq_skills_parse(text, CSQ_USER_NEEDS, &l)) != CSQ_OK)
		return st;
	if ((st = csq_needset_get(c, &l, index)) != CSQ_OK || *index == 0 ||
	    m[0] == NULL)
		return st;
	/* The first slot unless it holds a live text and the second not:
	 * two texts of one first slot then keep a slot each. */
	to =
	    needs_memo_live(c, m[0]) && !needs_memo_live(c, m[1]) ? m[1] : m[0];
	to->gen = c->needsets[*index]->gen;
	to->index = *index;
	to->len = (uint8_t)len;
	memcpy(to->text, text, len);
	return CSQ_OK;
}

void
csq_needset_hold(struct csq *c, uint16_t index)
{
	if (index != 0)
		c->needsets[index]->refs++;
}

void
csq_needset_release(struct csq *c, uint16_t index)
{
	if (index != 0)
		c->needsets[index]->refs--;
}

const char *
csq_needset_text(const struct csq *c, uint16_t index)
{
	return index != 0 ? c->needsets[index]->text : "";
}

static void
skill_name_free(void *arg, const char *key, size_t len, void *val)
{
	(void)arg, (void)key, (void)len;
	free(val);
}

/* After the queues (their need-lines) and the servicers are gone. */
void
csq_skills_free(struct csq *c)
{
	uint32_t i;

	for (i = 1; i <= CSQ_NEEDSETS_MAX; i++)
		if (c->needsets[i] != NULL) {
			c->needsets[i]->refs = 0;
			needset_evict(c, c->needsets[i]);
		}
	csq_dict_free(c->needset_texts);
	/* What the servicers freed without a release held. */
	csq_dict_each(c->skill_names, skill_name_free, NULL);
	csq_dict_free(c->skill_names);
}
