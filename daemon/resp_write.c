/*
 * The RESP codec of csqd: writing replies (resp_read.c reads requests).
 */
#include "resp.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <event2/buffer.h>

/* Writes the digits of v so that they end at end; returns their start. */
char *
resp_digits(char *end, uint64_t v)
{
	do {
		*--end = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	return end;
}

/*
 * The writers build each reply piece in a small buffer with memcpy
 * and a hand-made decimal formatter, then add it in one evbuffer_add:
 * printf was half of the instructions of an ENQUEUE.
 */
#define RESP_SMALL 256 /* a bulk up to this long goes out in one add */
#define RESP_NUM   24  /* type, sign, 20 digits, CRLF */

/* "<type><n>\r\n", n signed, written at the end of buf: its first byte. */
static char *
resp_number_text(char buf[RESP_NUM], char type, int64_t n)
{
	char *p = buf + RESP_NUM;

	*--p = '\n';
	*--p = '\r';
	p = resp_digits(p, n < 0 ? -(uint64_t)n : (uint64_t)n);
	if (n < 0)
		*--p = '-';
	*--p = type;
	return p;
}

/* "<type><n>\r\n", n signed. */
static void
resp_number(struct evbuffer *out, char type, int64_t n)
{
	char buf[RESP_NUM], *p = resp_number_text(buf, type, n);

	evbuffer_add(out, p, (size_t)(buf + sizeof(buf) - p));
}

/* "<type>s\r\n" */
static void
resp_line(struct evbuffer *out, char type, const char *s, size_t len)
{
	char buf[RESP_SMALL + 3];

	if (len > RESP_SMALL) {
		evbuffer_add(out, &type, 1);
		evbuffer_add(out, s, len);
		evbuffer_add(out, "\r\n", 2);
		return;
	}
	buf[0] = type;
	memcpy(buf + 1, s, len);
	memcpy(buf + 1 + len, "\r\n", 2);
	evbuffer_add(out, buf, len + 3);
}

void
resp_simple(struct evbuffer *out, const char *s)
{
	resp_line(out, '+', s, strlen(s));
}

/* Formats straight into reserved space of the output buffer; a CR or LF in
 * the text would end the reply early, so they become spaces. */
void
resp_error(struct evbuffer *out, const char *fmt, ...)
{
	struct evbuffer_iovec v;
	va_list ap, ap2;
	char *s;
	int n, i;

	va_start(ap, fmt);
	va_copy(ap2, ap);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		va_end(ap2);
		evbuffer_add(out, "-ERR\r\n", 6);
		return;
	}
	/* '-', the text, its NUL (replaced by "\r\n" with the next byte). */
	if (evbuffer_reserve_space(out, (ev_ssize_t)n + 3, &v, 1) != 1 ||
	    v.iov_len < (size_t)n + 3) {
		va_end(ap2);
		evbuffer_add(out, "-ERR\r\n", 6);
		return;
	}
	s = v.iov_base;
	s[0] = '-';
	vsnprintf(s + 1, (size_t)n + 1, fmt, ap2);
	va_end(ap2);
	for (i = 1; i <= n; i++) {
		if (s[i] == '\r' || s[i] == '\n')
			s[i] = ' ';
	}
	s[n + 1] = '\r';
	s[n + 2] = '\n';
	v.iov_len = (size_t)n + 3;
	evbuffer_commit_space(out, &v, 1);
}

void
resp_integer(struct evbuffer *out, int64_t n)
{
	resp_number(out, ':', n);
}

void
resp_bulk(struct evbuffer *out, const char *s, size_t len)
{
	char buf[RESP_NUM + RESP_SMALL + 2], *p;

	if (len > RESP_SMALL) {
		resp_number(out, '$', (int64_t)len);
		evbuffer_add(out, s, len);
		evbuffer_add(out, "\r\n", 2);
		return;
	}
	/* The header is formatted backwards to end where s begins. */
	p = buf + RESP_NUM;
	*--p = '\n';
	*--p = '\r';
	p = resp_digits(p, len);
	*--p = '$';
	memcpy(buf + RESP_NUM, s, len);
	memcpy(buf + RESP_NUM + len, "\r\n", 2);
	evbuffer_add(out, p, (size_t)(buf + RESP_NUM + len + 2 - p));
}

void
resp_bulk_str(struct evbuffer *out, const char *s)
{
	if (s == NULL)
		resp_null(out);
	else
		resp_bulk(out, s, strlen(s));
}

void
resp_bulk_u64(struct evbuffer *out, uint64_t v)
{
	char digits[RESP_NUM], *p = resp_digits(digits + sizeof(digits), v);

	resp_bulk(out, p, (size_t)(digits + sizeof(digits) - p));
}

void
resp_null(struct evbuffer *out)
{
	evbuffer_add(out, "$-1\r\n", 5);
}

void
resp_array(struct evbuffer *out, int64_t n)
{
	resp_number(out, '*', n);
}

/*
 * What differs in RESP3 (HELLO 3): a null has a type of its own, a
 * description of a thing is a map, and what the server sends unasked (a
 * pub/sub message, a subscription's confirmation) is a push, which a
 * client can tell from a reply wherever it comes.
 */
void
resp_nil(struct evbuffer *out, int proto)
{
	if (proto == 3)
		evbuffer_add(out, "_\r\n", 3);
	else
		resp_null(out);
}

void
resp_map(struct evbuffer *out, int proto, int64_t pairs)
{
	if (proto == 3)
		resp_number(out, '%', pairs);
	else
		resp_number(out, '*', pairs * 2);
}

void
resp_push(struct evbuffer *out, int proto, int64_t n)
{
	resp_number(out, proto == 3 ? '>' : '*', n);
}

void
resp_verbatim(struct evbuffer *out, int proto, const char *s, size_t len)
{
	if (proto != 3) {
		resp_bulk(out, s, len);
		return;
	}
	resp_number(out, '=', (int64_t)len + 4);
	evbuffer_add(out, "txt:", 4);
	evbuffer_add(out, s, len);
	evbuffer_add(out, "\r\n", 2);
}

void
resp_buf_init(struct resp_buf *b, struct evbuffer *out)
{
	b->out = out;
	b->len = 0;
	b->over = 0;
}

void
resp_buf_flush(struct resp_buf *b)
{
	if (b->out != NULL && b->len > 0)
		evbuffer_add(b->out, b->buf, b->len);
	if (b->out != NULL)
		b->len = 0;
}

void
resp_buf_raw(struct resp_buf *b, const void *p, size_t n)
{
	if (b->over)
		return;
	if (n > sizeof(b->buf) - b->len) {
		if (b->out == NULL) {
			b->over = 1;
			return;
		}
		resp_buf_flush(b);
		if (n > sizeof(b->buf)) {
			evbuffer_add(b->out, p, n);
			return;
		}
	}
	memcpy(b->buf + b->len, p, n);
	b->len += n;
}

/* "<type><n>\r\n", n signed, as resp_number. */
static void
resp_buf_number(struct resp_buf *b, char type, int64_t n)
{
	char buf[RESP_NUM], *p = resp_number_text(buf, type, n);

	resp_buf_raw(b, p, (size_t)(buf + sizeof(buf) - p));
}

/* The decimal digits of v. */
static size_t
resp_ndigits(uint64_t v)
{
	size_t n = 1;

	while (v >= 10) {
		v /= 10;
		n++;
	}
	return n;
}

void
resp_buf_bulk(struct resp_buf *b, const char *s, size_t len)
{
	size_t nd = resp_ndigits(len), hlen = nd + 3; /* "$<len>\r\n" */
	char *p;

	/* Written in place when the whole bulk fits, the usual case. */
	if (!b->over && hlen + len + 2 <= sizeof(b->buf) - b->len) {
		p = b->buf + b->len;
		p[0] = '$';
		resp_digits(p + 1 + nd, len);
		p[1 + nd] = '\r';
		p[2 + nd] = '\n';
		memcpy(p + hlen, s, len);
		p[hlen + len] = '\r';
		p[hlen + len + 1] = '\n';
		b->len += hlen + len + 2;
		return;
	}
	resp_buf_number(b, '$', (int64_t)len);
	resp_buf_raw(b, s, len);
	resp_buf_raw(b, "\r\n", 2);
}

void
resp_buf_integer(struct resp_buf *b, int64_t n)
{
	resp_buf_number(b, ':', n);
}

void
resp_buf_simple(struct resp_buf *b, const char *s)
{
	resp_buf_raw(b, "+", 1);
	resp_buf_raw(b, s, strlen(s));
	resp_buf_raw(b, "\r\n", 2);
}

void
resp_buf_array(struct resp_buf *b, int64_t n)
{
	resp_buf_number(b, '*', n);
}

void
resp_buf_map(struct resp_buf *b, int proto, int64_t pairs)
{
	if (proto == 3)
		resp_buf_number(b, '%', pairs);
	else
		resp_buf_number(b, '*', pairs * 2);
}

void
resp_buf_push(struct resp_buf *b, int proto, int64_t n)
{
	resp_buf_number(b, proto == 3 ? '>' : '*', n);
}
