/*
 * The waiting line of one queue: an ordered set of (packed order key, value)
 * with rank, as a skiplist with spans (the model is Redis's t_zset.c). Keys
 * are unique. insert, remove, rank and nth are O(log n); first is O(1).
 */
#ifndef CSQ_LINE_H
#define CSQ_LINE_H

#include <stddef.h>
#include <stdint.h>

struct csq_line;
struct csq_line_node;

/* Dies on out of memory. The line never owns the values. seed: of the
 * nodes' levels (csq_new's). */
struct csq_line *csq_line_new(uint64_t seed);
/* A line that borrows its nodes: they live in the allocations of another
 * line's (csq_line_insert_pair), so it never frees one, on a remove or
 * when it goes. */
struct csq_line *csq_line_new_borrowing(uint64_t seed);
void csq_line_free(struct csq_line *);
uint64_t csq_line_len(const struct csq_line *);

/* Inserts key (not present yet) with value; returns its node. */
struct csq_line_node *csq_line_insert(struct csq_line *, uint64_t key,
                                      void *value);
/* The same, and returns the 1-based rank key got, which the insert's own
 * descent knows: no csq_line_rank needed after it. */
uint64_t csq_line_insert_rank(struct csq_line *, uint64_t key, void *value);
/* Inserts key (in neither yet) with value into l and into b, a borrowing
 * line, with both nodes in one allocation that l's owns: whoever removes
 * key takes it out of b first, as l's remove frees b's node too. Returns
 * the rank key got in b. */
uint64_t csq_line_insert_pair(struct csq_line *l, struct csq_line *b,
                              uint64_t key, void *value);
/* Removes the node with key; returns its value, NULL if absent. */
void *csq_line_remove(struct csq_line *, uint64_t key);
/* 1-based rank of key, 0 when absent. */
uint64_t csq_line_rank(const struct csq_line *, uint64_t key);
/* How many keys are below key (present or not): O(log n). */
uint64_t csq_line_count_below(const struct csq_line *, uint64_t key);
/* Node of the smallest key, NULL when empty. */
struct csq_line_node *csq_line_first(const struct csq_line *);
/* Node of the smallest key >= key, NULL when there is none: O(log n). */
struct csq_line_node *csq_line_seek(const struct csq_line *, uint64_t key);
/* Node at 0-based index, NULL when out of range. */
struct csq_line_node *csq_line_nth(const struct csq_line *, uint64_t index);
/* Following node in order, NULL at the end. */
struct csq_line_node *csq_line_next(const struct csq_line_node *);
uint64_t csq_line_node_key(const struct csq_line_node *);
void *csq_line_node_value(const struct csq_line_node *);

/* Checks the spans and order; 0 when consistent (for tests). */
int csq_line_check(const struct csq_line *);

#endif
