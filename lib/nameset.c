/*
 * An ordered set of names (nameset.h). A node's level is drawn from an
 * xorshift generator seeded by the caller, with p = 1/4 per level as in
 * Redis's t_zset.c; the levels change no answer, only the speed.
 */
#include "nameset.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

#define NAMESET_MAX_LEVEL 24 /* 4^24 names before a level is short */
#define NAMESET_SEED      0x6a09e667f3bcc909ULL

struct csq_nameset_node {
	const char *name;
	void *value;
	int level;
	struct csq_nameset_node *next[];
};

struct csq_nameset {
	struct csq_nameset_node *head; /* NAMESET_MAX_LEVEL links, no name */
	int level;                     /* the highest in use */
	size_t len;
	uint64_t rng;
};

static struct csq_nameset_node *
nameset_node_new(int level, const char *name, void *value)
{
	struct csq_nameset_node *n =
	    csq_xmalloc(sizeof(*n) + (size_t)level * sizeof(n->next[0]));

	n->name = name;
	n->value = value;
	n->level = level;
	memset(n->next, 0, (size_t)level * sizeof(n->next[0]));
	return n;
}

struct csq_nameset *
csq_nameset_new(uint64_t seed)
{
	struct csq_nameset *s = csq_xmalloc(sizeof(*s));

	s->head = nameset_node_new(NAMESET_MAX_LEVEL, "", NULL);
	s->level = 1;
	s->len = 0;
	/* xorshift's one state it never leaves is 0. */
	s->rng = seed ^ NAMESET_SEED;
	if (s->rng == 0)
		s->rng = NAMESET_SEED;
	return s;
}

void
csq_nameset_free(struct csq_nameset *s)
{
	struct csq_nameset_node *n, *next;

	if (s == NULL)
		return;
	for (n = s->head; n != NULL; n = next) {
		next = n->next[0];
		free(n);
	}
	free(s);
}

size_t
csq_nameset_len(const struct csq_nameset *s)
{
	return s->len;
}

static int
nameset_level(struct csq_nameset *s)
{
	uint64_t x;
	int level = 1;

	s->rng ^= s->rng << 13;
	s->rng ^= s->rng >> 7;
	s->rng ^= s->rng << 17;
	for (x = s->rng; level < NAMESET_MAX_LEVEL && (x & 3) == 0; x >>= 2)
		level++;
	return level;
}

/* The last node of each level whose name sorts before name. */
static void
nameset_path(const struct csq_nameset *s, const char *name,
             struct csq_nameset_node **path)
{
	struct csq_nameset_node *x = s->head;
	int i;

	for (i = s->level - 1; i >= 0; i--) {
		while (x->next[i] != NULL && strcmp(x->next[i]->name, name) < 0)
			x = x->next[i];
		path[i] = x;
	}
}

void
csq_nameset_add(struct csq_nameset *s, const char *name, void *value)
{
	struct csq_nameset_node *path[NAMESET_MAX_LEVEL], *n;
	int level = nameset_level(s), i;

	nameset_path(s, name, path);
	for (i = s->level; i < level; i++)
		path[i] = s->head;
	if (level > s->level)
		s->level = level;
	n = nameset_node_new(level, name, value);
	for (i = 0; i < level; i++) {
		n->next[i] = path[i]->next[i];
		path[i]->next[i] = n;
	}
	s->len++;
}

void
csq_nameset_del(struct csq_nameset *s, const char *name)
{
	struct csq_nameset_node *path[NAMESET_MAX_LEVEL], *n;
	int i;

	nameset_path(s, name, path);
	n = path[0]->next[0];
	if (n == NULL || strcmp(n->name, name) != 0)
		return;
	for (i = 0; i < s->level && path[i]->next[i] == n; i++)
		path[i]->next[i] = n->next[i];
	while (s->level > 1 && s->head->next[s->level - 1] == NULL)
		s->level--;
	free(n);
	s->len--;
}

struct csq_nameset_node *
csq_nameset_after(const struct csq_nameset *s, const char *name)
{
	const struct csq_nameset_node *x = s->head;
	int i;

	if (name == NULL || name[0] == '\0')
		return s->head->next[0];
	for (i = s->level - 1; i >= 0; i--)
		while (x->next[i] != NULL &&
		       strcmp(x->next[i]->name, name) <= 0)
			x = x->next[i];
	return x->next[0];
}

struct csq_nameset_node *
csq_nameset_next(const struct csq_nameset_node *n)
{
	return n->next[0];
}

const char *
csq_nameset_name(const struct csq_nameset_node *n)
{
	return n->name;
}

void *
csq_nameset_value(const struct csq_nameset_node *n)
{
	return n->value;
}

int
csq_nameset_check(const struct csq_nameset *s)
{
	const struct csq_nameset_node *x;
	size_t n = 0;
	int i;

	for (i = 0; i < s->level; i++) {
		for (x = s->head->next[i]; x != NULL; x = x->next[i]) {
			if (x->next[i] != NULL &&
			    strcmp(x->name, x->next[i]->name) >= 0)
				return -1;
			if (i == 0)
				n++;
		}
	}
	return n == s->len ? 0 : -1;
}
