/*
 * An ordered set of names: the queues by name, so that a view of every
 * queue can be made in slices from a cursor (resume after a name) and
 * needs no sort (issue 37: the sort of 100,000 names was 16 % of a
 * snapshot). A skiplist without spans (the model is line.c's); adding
 * and removing are O(log n) string comparisons, finding the name after
 * a cursor too. Names and values are borrowed: the caller keeps each
 * alive while it is in the set.
 */
#ifndef CSQ_NAMESET_H
#define CSQ_NAMESET_H

#include <stddef.h>
#include <stdint.h>

struct csq_nameset;
struct csq_nameset_node;

/* Dies on out of memory. seed: of the nodes' levels (csq_new's). */
struct csq_nameset *csq_nameset_new(uint64_t seed);
void csq_nameset_free(struct csq_nameset *);
size_t csq_nameset_len(const struct csq_nameset *);
/* Adds name (not present yet: the caller's table says so) with value. */
void csq_nameset_add(struct csq_nameset *, const char *name, void *value);
/* Removes name; nothing when absent. */
void csq_nameset_del(struct csq_nameset *, const char *name);
/* The node of the first name that sorts after name (strcmp; "" or NULL:
 * the first of all), NULL when there is none. */
struct csq_nameset_node *csq_nameset_after(const struct csq_nameset *,
                                           const char *name);
struct csq_nameset_node *csq_nameset_next(const struct csq_nameset_node *);
const char *csq_nameset_name(const struct csq_nameset_node *);
void *csq_nameset_value(const struct csq_nameset_node *);
/* 0 when every level is in order and the length is right (tests). */
int csq_nameset_check(const struct csq_nameset *);

#endif
