/*
 * Redis's glob patterns (PSUBSCRIBE, KEYS): '*' any run of bytes, '?' any
 * byte, "[abc]", "[^abc]", "[a-z]" (its ends either way round), '\\' takes
 * the next byte as it is, inside a class too. Bytes, not characters; a
 * NUL is a byte like any other; an unclosed '[' runs to the pattern's end;
 * a range compares bytes as signed chars and the empty string matches only
 * the empty pattern, both as Redis 7.0 does on x86-64. The same answers as
 * Redis's stringmatchlen, but the cost is at most the pattern's length
 * times the string's, never exponential in the number of stars.
 */
#ifndef CSQ_GLOB_H
#define CSQ_GLOB_H

#include <stddef.h>

/* 1 when the string s (slen bytes) matches pat (plen bytes). */
int csq_glob(const char *pat, size_t plen, const char *s, size_t slen);

#endif
