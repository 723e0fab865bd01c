/* The small things every scenario uses: clock, messages, samples. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"

#define SAMPLES_FIRST 4096

uint64_t
bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * BENCH_NS_PER_S + (uint64_t)ts.tv_nsec;
}

/* Progress for the person at the terminal; stdout stays machine-readable. */
void
bench_say(const char *fmt, ...)
{
	va_list ap;

	fputs("csq-bench: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void
bench_fatalx(const char *fmt, ...)
{
	va_list ap;

	fputs("csq-bench: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/*
 * Sets word n of cmd from a format and makes it the last word, so a command
 * is built left to right: bench_cmd_set(c, 0, "ENQUEUE"), then word 1.
 */
void
bench_cmd_set(struct bench_cmd *cmd, int n, const char *fmt, ...)
{
	va_list ap;
	int len;

	if (n < 0 || n >= BENCH_ARGV_MAX)
		bench_fatalx("command word %d out of range", n);
	va_start(ap, fmt);
	len = vsnprintf(cmd->words[n], BENCH_WORD_MAX, fmt, ap);
	va_end(ap);
	if (len < 0 || len >= BENCH_WORD_MAX)
		bench_fatalx("command word too long");
	cmd->argv[n] = cmd->words[n];
	cmd->argvlen[n] = (size_t)len;
	cmd->argc = n + 1;
}

void
bench_samples_add(struct bench_samples *s, uint64_t ns)
{
	uint64_t *v;
	size_t cap;

	if (s->n == s->cap) {
		cap = s->cap == 0 ? SAMPLES_FIRST : s->cap * 2;
		if ((v = realloc(s->v, cap * sizeof(*v))) == NULL)
			bench_fatalx("out of memory");
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = ns;
	s->sorted = 0;
}

static int
samples_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The pct-th percentile in microseconds, nearest rank: the smallest sample
 * that at least pct percent of the samples do not exceed. 0 without samples.
 */
double
bench_samples_pct_us(struct bench_samples *s, double pct)
{
	size_t rank;

	if (s->n == 0)
		return 0;
	if (!s->sorted) {
		qsort(s->v, s->n, sizeof(*s->v), samples_cmp);
		s->sorted = 1;
	}
	rank = (size_t)((pct / 100.0) * (double)s->n + 0.999999);
	if (rank < 1)
		rank = 1;
	if (rank > s->n)
		rank = s->n;
	return (double)s->v[rank - 1] / (double)BENCH_NS_PER_US;
}

void
bench_samples_free(struct bench_samples *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}
