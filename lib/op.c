/* The table of operations, read at run time (op.h). */
#include "engine.h"

#include <string.h>
#include <strings.h>

#define DEF_ROW(code, name, number, arity, roles, id, mutates, record, check,  \
                reply)                                                         \
	[CSQ_OP_##code] = {#name,          arity,   roles,                     \
	                   CSQ_ID_OF_##id, mutates, CSQ_REPLY_##reply},

static const struct csq_op_def op_defs[] = {CSQ_OPS(DEF_ROW)};

/* Every number from 0 to CSQ_OP_COUNT - 1 has its row: none skipped,
 * none beyond (a duplicate is -Woverride-init's error). */
_Static_assert(sizeof(op_defs) / sizeof(op_defs[0]) == CSQ_OP_COUNT,
               "the operations' numbers are 0 to CSQ_OP_COUNT - 1");

const struct csq_op_def *
csq_op_def(enum csq_opcode code)
{
	return (unsigned)code < CSQ_OP_COUNT ? &op_defs[code] : NULL;
}

int
csq_op_lookup(const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < CSQ_OP_COUNT; i++)
		if (op_defs[i].arity != 0 && strlen(op_defs[i].name) == len &&
		    strncasecmp(op_defs[i].name, name, len) == 0)
			return (int)i;
	return -1;
}

/* An unknown number mutates: nothing unknown skips the journal. */
int
csq_op_mutates(enum csq_opcode code)
{
	const struct csq_op_def *d = csq_op_def(code);

	return d == NULL || d->mutates;
}
