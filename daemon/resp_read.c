/*
 * The RESP codec of csqd: reading requests (resp_write.c writes replies).
 *
 * hiredis 0.14's redisReader has no limits of its own: it would happily
 * allocate whatever a "*N" or "$N" header asks for. So every byte goes
 * through a small scanner first. The scanner keeps its state across calls,
 * looks at each new byte once, judges every header line before hiredis sees
 * it, and hands the reader only canonical, already validated framing
 * ("*N\r\n", "$N\r\n", payload, "\r\n"). What the scanner has looked at is
 * drained from the input at once, so nothing is rescanned and the only
 * buffers are hiredis's (the current request) and the inline line (at most
 * RESP_INLINE_MAX + 1 bytes). The reader is asked for a reply only when the
 * scanner has seen a request end, and builds argv through our own object
 * functions, so no redisReply tree is made and converted.
 *
 * Inline requests never reach hiredis (it cannot parse them): they are split
 * here with the quoting rules of Redis's sdssplitargs().
 */
#include "resp.h"

#include <sys/types.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <hiredis/read.h>

#include "util.h"

/* Bytes of a header line kept for parsing: type byte, sign, 19 digits; a
 * longer line cannot hold a valid length anyway, only its size is counted. */
#define RESP_HDR_KEEP 22
/* Canonical "*N\r\n" or "$N\r\n" handed to hiredis. */
#define RESP_HDR_OUT 32
/* Room for the protocol error text. */
#define RESP_ERROR_SIZE 128
/* First allocation of the inline line buffer; it doubles up to the limit. */
#define RESP_LINE_INITIAL 256
/* First allocation of an inline request's argv; it doubles as needed. */
#define RESP_ARGV_INITIAL 8
/* hiredis keeps the buffer of the largest request it has read until more
 * comes its way, and csqd's common requests never reach it (resp_fast):
 * after a request larger than this the reader is made anew, so that a
 * client that sent one big bulk does not hold its size for good. */
#define RESP_READER_KEEP (1024 * 1024)

enum resp_state {
	RESP_ST_START,       /* before the first byte of a request */
	RESP_ST_INLINE,      /* inside an inline line, before its '\n' */
	RESP_ST_COUNT,       /* inside the "*N" line, before its '\r' */
	RESP_ST_COUNT_LF,    /* the '\n' after the "*N" line */
	RESP_ST_BULK_HDR,    /* inside a "$N" line, before its '\r' */
	RESP_ST_BULK_HDR_LF, /* the '\n' after a "$N" line */
	RESP_ST_BULK_DATA,   /* inside a bulk payload */
	RESP_ST_BULK_CR,     /* the '\r' after a payload */
	RESP_ST_BULK_LF,     /* the '\n' after a payload */
	RESP_ST_ERROR,       /* a protocol error happened; nothing more */
};

enum resp_step {
	RESP_STEP_MORE,    /* every byte given was consumed, no request yet */
	RESP_STEP_REQUEST, /* p->build holds a complete request */
	RESP_STEP_ERROR,
};

struct resp_parser {
	enum resp_state state;
	redisReader *reader;

	/* The header line being scanned: its first bytes and its length. */
	char hdr[RESP_HDR_KEEP];
	size_t hdrlen;
	int hdrbad; /* '\r' not followed by '\n' */

	long long elements; /* bulks still to come in this array */
	long long bulkleft; /* payload bytes still to come in this bulk */
	size_t fed;         /* bytes fed to hiredis for this request */
	int unauth;         /* the tighter limits before AUTH apply */

	/* The inline line being collected. */
	char *line;
	size_t linelen;
	size_t linesize;

	/* The request being built, handed over to the caller when complete. */
	struct resp_request build;
	size_t buildcap;

	char error[RESP_ERROR_SIZE];
};

static void *resp_reader_array(const redisReadTask *, int);
static void *resp_reader_string(const redisReadTask *, char *, size_t);
static void resp_reader_free(void *);

/* Integers and nils never reach the reader: the scanner lets only bulk
 * strings through, so those functions are left to hiredis's defaults. */
static redisReplyObjectFunctions resp_reader_functions = {
    .createString = resp_reader_string,
    .createArray = resp_reader_array,
    .freeObject = resp_reader_free,
};

static void resp_fail(struct resp_parser *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
resp_reader_new(struct resp_parser *p)
{
	p->reader = redisReaderCreateWithFunctions(&resp_reader_functions);
	if (p->reader == NULL) {
		fprintf(stderr, "csqd: out of memory creating a RESP reader\n");
		abort();
	}
	p->reader->privdata = p;
	p->fed = 0;
}

/* Gives hiredis's buffer back when it grew past RESP_READER_KEEP. */
static void
resp_reader_trim(struct resp_parser *p)
{
	if (p->fed > RESP_READER_KEEP) {
		redisReaderFree(p->reader);
		resp_reader_new(p);
	}
	p->fed = 0;
}

static void
resp_fail(struct resp_parser *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p->error, sizeof(p->error), fmt, ap);
	va_end(ap);
	resp_request_clear(&p->build);
	p->buildcap = 0;
	p->state = RESP_ST_ERROR;
	/* Nothing more is parsed: what the reader holds can go now, not
	 * when the connection's linger ends. */
	resp_reader_trim(p);
}

/* Called by hiredis for the array: the root object is the parser itself. */
static void *
resp_reader_array(const redisReadTask *task, int n)
{
	struct resp_parser *p = task->privdata;

	if (task->parent != NULL || n <= 0)
		return NULL; /* the scanner lets neither through */
	resp_request_clear(&p->build);
	p->build.argv = csq_xcalloc(n, sizeof(*p->build.argv));
	p->build.argvlen = csq_xcalloc(n, sizeof(*p->build.argvlen));
	p->buildcap = n;
	return p;
}

static void *
resp_reader_string(const redisReadTask *task, char *s, size_t len)
{
	struct resp_parser *p = task->privdata;
	struct resp_request *b = &p->build;

	if (task->parent == NULL || task->idx < 0 ||
	    (size_t)task->idx >= p->buildcap || task->idx != b->argc)
		return NULL;
	b->argv[b->argc] = csq_xstrndup(s, len);
	b->argvlen[b->argc] = len;
	b->argc++;
	return p;
}

/* hiredis frees only the root of a reply it gives up on. */
static void
resp_reader_free(void *obj)
{
	struct resp_parser *p = obj;

	resp_request_clear(&p->build);
	p->buildcap = 0;
}

struct resp_parser *
resp_parser_new(void)
{
	struct resp_parser *p = csq_xcalloc(1, sizeof(*p));

	resp_reader_new(p);
	p->state = RESP_ST_START;
	return p;
}

void
resp_parser_set_authed(struct resp_parser *p, int authed)
{
	p->unauth = !authed;
}

size_t
resp_parser_held(const struct resp_parser *p)
{
	return p->fed + p->linelen;
}

void
resp_parser_free(struct resp_parser *p)
{
	if (p == NULL)
		return;
	redisReaderFree(p->reader);
	resp_request_clear(&p->build);
	free(p->line);
	free(p);
}

const char *
resp_parser_error(const struct resp_parser *p)
{
	return p->error;
}

void
resp_request_clear(struct resp_request *req)
{
	int i;

	if (!req->packed) {
		for (i = 0; i < req->argc; i++)
			free(req->argv[i]);
		free(req->argvlen);
	}
	free(req->argv);
	req->packed = 0;
	req->argc = 0;
	req->argv = NULL;
	req->argvlen = NULL;
}

static int
resp_feed(struct resp_parser *p, const char *buf, size_t len)
{
	if (redisReaderFeed(p->reader, buf, len) != REDIS_OK) {
		resp_fail(p, "%s", p->reader->errstr);
		return -1;
	}
	p->fed += len;
	return 0;
}

/* Feeds hiredis the header "<type><n>\r\n", n >= 0. */
static int
resp_feed_hdr(struct resp_parser *p, char type, long long n)
{
	char out[RESP_HDR_OUT], *q = out + sizeof(out);

	*--q = '\n';
	*--q = '\r';
	q = resp_digits(q, (uint64_t)n);
	*--q = type;
	return resp_feed(p, q, (size_t)(out + sizeof(out) - q));
}

/* Redis's string2ll: optional '-', then "0" or a digit 1-9 and digits; no
 * '+', no spaces, no leading zeros, no overflow. */
static int
resp_strict_ll(const char *s, size_t len, long long *out)
{
	long long v = 0;
	int neg = 0;
	size_t i;

	if (len > 0 && s[0] == '-') {
		neg = 1;
		s++;
		len--;
	}
	if (len == 0)
		return -1;
	if (len == 1 && s[0] == '0' && !neg) {
		*out = 0;
		return 0;
	}
	if (s[0] < '1' || s[0] > '9')
		return -1;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		if (v > (INT64_MAX - (s[i] - '0')) / 10)
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	*out = neg ? -v : v;
	return 0;
}

/* The number of the header line just ended, or -1 if it holds none. */
static int
resp_hdr_number(const struct resp_parser *p, long long *v)
{
	if (p->hdrbad || p->hdrlen < 1 || p->hdrlen > RESP_HDR_KEEP)
		return -1;
	return resp_strict_ll(p->hdr + 1, p->hdrlen - 1, v);
}

/*
 * Scans header line bytes up to its '\r'. Returns how many bytes were
 * consumed, or -1 on a line over the limit; *ended tells whether the '\r'
 * was among them.
 */
static ssize_t
resp_hdr_scan(struct resp_parser *p, const char *buf, size_t len, int *ended,
              const char *toobig)
{
	const char *cr = memchr(buf, '\r', len);
	size_t seg = cr != NULL ? (size_t)(cr - buf) : len;
	size_t keep;

	if (seg > RESP_INLINE_MAX || p->hdrlen + seg > RESP_INLINE_MAX) {
		resp_fail(p, "%s", toobig);
		return -1;
	}
	if (p->hdrlen < RESP_HDR_KEEP) {
		keep = RESP_HDR_KEEP - p->hdrlen;
		if (keep > seg)
			keep = seg;
		memcpy(p->hdr + p->hdrlen, buf, keep);
	}
	p->hdrlen += seg;
	*ended = cr != NULL;
	return cr != NULL ? (ssize_t)seg + 1 : (ssize_t)seg;
}

static void
resp_hdr_reset(struct resp_parser *p)
{
	p->hdrlen = 0;
	p->hdrbad = 0;
}

/* The "*N" line ended: start the array, skip an empty one, or fail. */
static int
resp_count_done(struct resp_parser *p)
{
	long long n;

	if (resp_hdr_number(p, &n) != 0 || n > RESP_ARGS_MAX) {
		resp_fail(p, "invalid multibulk length");
		return -1;
	}
	if (p->unauth && n > RESP_UNAUTH_ARGS_MAX) {
		resp_fail(p, "unauthenticated multibulk length");
		return -1;
	}
	resp_hdr_reset(p);
	if (n <= 0) {
		/* "*0" and "*-1" are nothing at all, as in Redis. */
		p->state = RESP_ST_START;
		return 0;
	}
	if (resp_feed_hdr(p, '*', n) != 0)
		return -1;
	p->elements = n;
	p->state = RESP_ST_BULK_HDR;
	return 0;
}

/* A "$N" line ended: start the payload or fail. */
static int
resp_bulk_hdr_done(struct resp_parser *p)
{
	char type = p->hdrlen > 0 ? p->hdr[0] : '\r';
	long long n;

	if (type != '$') {
		resp_fail(p, "expected '$', got '%c'", type);
		return -1;
	}
	if (resp_hdr_number(p, &n) != 0 || n < 0 || n > RESP_BULK_MAX) {
		resp_fail(p, "invalid bulk length");
		return -1;
	}
	if (p->unauth && n > RESP_UNAUTH_BULK_MAX) {
		resp_fail(p, "unauthenticated bulk length");
		return -1;
	}
	resp_hdr_reset(p);
	if (resp_feed_hdr(p, '$', n) != 0)
		return -1;
	p->bulkleft = n;
	p->state = n > 0 ? RESP_ST_BULK_DATA : RESP_ST_BULK_CR;
	return 0;
}

/* The last "\r\n" of the array was fed: let hiredis build the request. */
static int
resp_array_done(struct resp_parser *p)
{
	void *reply = NULL;

	if (redisReaderGetReply(p->reader, &reply) != REDIS_OK) {
		resp_fail(p, "%s", p->reader->errstr);
		return -1;
	}
	if (reply != p || p->build.argc <= 0) {
		resp_fail(p, "incomplete request");
		return -1;
	}
	p->buildcap = 0;
	p->state = RESP_ST_START;
	resp_reader_trim(p);
	return 0;
}

static int
resp_isspace(int c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' ||
	       c == '\r';
}

static int
resp_hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static void
resp_build_push(struct resp_parser *p, const char *s, size_t len)
{
	struct resp_request *b = &p->build;

	if ((size_t)b->argc == p->buildcap) {
		p->buildcap = p->buildcap ? p->buildcap * 2 : RESP_ARGV_INITIAL;
		b->argv = csq_xrealloc(b->argv, p->buildcap * sizeof(*b->argv));
		b->argvlen =
		    csq_xrealloc(b->argvlen, p->buildcap * sizeof(*b->argvlen));
	}
	b->argv[b->argc] = csq_xstrndup(s, len);
	b->argvlen[b->argc] = len;
	b->argc++;
}

/* The byte a backslash escape inside "double quotes" stands for. */
static char
resp_unescape(char c)
{
	switch (c) {
	case 'n':
		return '\n';
	case 'r':
		return '\r';
	case 't':
		return '\t';
	case 'b':
		return '\b';
	case 'a':
		return '\a';
	default:
		return c;
	}
}

/* A closing quote must be followed by a space or nothing at all. */
static int
resp_quote_closes(const char *s, size_t len, size_t i)
{
	return i + 1 == len || resp_isspace((unsigned char)s[i + 1]);
}

/*
 * One step inside "double quotes" at s[*i], writing at s[*w]. Returns 1 at
 * the closing quote, 0 to go on, -1 on unbalanced quotes.
 */
static int
resp_dquote_step(char *s, size_t len, size_t *i, size_t *w)
{
	size_t k = *i;
	int hi, lo;

	if (k == len)
		return -1;
	if (s[k] == '\\' && k + 3 < len && s[k + 1] == 'x' &&
	    (hi = resp_hexval((unsigned char)s[k + 2])) >= 0 &&
	    (lo = resp_hexval((unsigned char)s[k + 3])) >= 0) {
		s[(*w)++] = (char)(hi * 16 + lo);
		*i += 4;
	} else if (s[k] == '\\' && k + 1 < len) {
		s[(*w)++] = resp_unescape(s[k + 1]);
		*i += 2;
	} else if (s[k] == '"') {
		if (!resp_quote_closes(s, len, k))
			return -1;
		*i += 1;
		return 1;
	} else
		s[(*w)++] = s[(*i)++];
	return 0;
}

/* The same inside 'single quotes', where only \' is an escape. */
static int
resp_squote_step(char *s, size_t len, size_t *i, size_t *w)
{
	size_t k = *i;

	if (k == len)
		return -1;
	if (s[k] == '\\' && k + 1 < len && s[k + 1] == '\'') {
		s[(*w)++] = '\'';
		*i += 2;
	} else if (s[k] == '\'') {
		if (!resp_quote_closes(s, len, k))
			return -1;
		*i += 1;
		return 1;
	} else
		s[(*w)++] = s[(*i)++];
	return 0;
}

/*
 * Splits an inline line into p->build with the rules of Redis's
 * sdssplitargs(), but binary safe (a NUL is an ordinary byte). Tokens are
 * decoded in place: an escape never makes a token longer than its source,
 * so the write position never passes the read position.
 */
static int
resp_inline_split(struct resp_parser *p, char *s, size_t len)
{
	size_t i = 0, w, start;
	int quote, r;

	for (;;) {
		while (i < len && resp_isspace((unsigned char)s[i]))
			i++;
		if (i == len)
			return 0;
		quote = 0;
		start = w = i;
		for (;;) {
			if (quote != 0) {
				r = quote == '"'
				        ? resp_dquote_step(s, len, &i, &w)
				        : resp_squote_step(s, len, &i, &w);
				if (r < 0)
					return -1;
				if (r > 0)
					break;
				continue;
			}
			if (i == len)
				break;
			if (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' ||
			    s[i] == '\t') {
				i++;
				break;
			}
			if (s[i] == '"' || s[i] == '\'')
				quote = s[i];
			else
				s[w++] = s[i];
			i++;
		}
		resp_build_push(p, s + start, w - start);
	}
}

/* Appends bytes of the inline line, within the limit: RESP_INLINE_MAX bytes,
 * not counting a '\r' that may turn out to end the line. */
static int
resp_line_add(struct resp_parser *p, const char *buf, size_t len)
{
	size_t need = p->linelen + len, size;

	if (len == 0)
		return 0;
	if (len > RESP_INLINE_MAX + 1 || need > RESP_INLINE_MAX + 1 ||
	    (need == RESP_INLINE_MAX + 1 && buf[len - 1] != '\r')) {
		resp_fail(p, "too big inline request");
		return -1;
	}
	if (need > p->linesize) {
		size = p->linesize ? p->linesize : RESP_LINE_INITIAL;
		while (size < need)
			size *= 2;
		if (size > RESP_INLINE_MAX + 1)
			size = RESP_INLINE_MAX + 1;
		p->line = csq_xrealloc(p->line, size);
		p->linesize = size;
	}
	memcpy(p->line + p->linelen, buf, len);
	p->linelen = need;
	return 0;
}

/* The '\n' of an inline line arrived. Returns 1 for a request, 0 for an
 * empty line, -1 on error. */
static int
resp_inline_done(struct resp_parser *p)
{
	size_t len = p->linelen;

	if (len > 0 && p->line[len - 1] == '\r')
		len--;
	p->linelen = 0;
	p->state = RESP_ST_START;
	if (resp_inline_split(p, p->line, len) != 0) {
		resp_fail(p, "unbalanced quotes in request");
		return -1;
	}
	if (p->build.argc == 0)
		return 0;
	p->buildcap = 0;
	return 1;
}

/*
 * Runs the scanner over buf. *used tells how many bytes it consumed, all of
 * them unless a request ended or an error happened inside buf.
 */
static enum resp_step
resp_step(struct resp_parser *p, const char *buf, size_t len, size_t *used)
{
	size_t i = 0, k;
	ssize_t n;
	const char *nl;
	int ended, r;

	while (i < len) {
		switch (p->state) {
		case RESP_ST_START:
			resp_hdr_reset(p);
			if (buf[i] == '*') {
				p->hdr[0] = '*';
				p->hdrlen = 1;
				p->state = RESP_ST_COUNT;
				i++;
			} else {
				p->linelen = 0;
				p->state = RESP_ST_INLINE;
			}
			break;
		case RESP_ST_INLINE:
			nl = memchr(buf + i, '\n', len - i);
			k = nl != NULL ? (size_t)(nl - (buf + i)) : len - i;
			if (resp_line_add(p, buf + i, k) != 0)
				goto error;
			i += k;
			if (nl == NULL)
				break;
			i++;
			r = resp_inline_done(p);
			if (r < 0)
				goto error;
			if (r > 0)
				goto request;
			break;
		case RESP_ST_COUNT:
		case RESP_ST_BULK_HDR:
			n = resp_hdr_scan(p, buf + i, len - i, &ended,
			                  p->state == RESP_ST_COUNT
			                      ? "too big mbulk count string"
			                      : "too big bulk count string");
			if (n < 0)
				goto error;
			i += n;
			if (ended)
				p->state = p->state == RESP_ST_COUNT
				               ? RESP_ST_COUNT_LF
				               : RESP_ST_BULK_HDR_LF;
			break;
		case RESP_ST_COUNT_LF:
			if (buf[i++] != '\n')
				p->hdrbad = 1;
			if (resp_count_done(p) != 0)
				goto error;
			break;
		case RESP_ST_BULK_HDR_LF:
			if (buf[i++] != '\n')
				p->hdrbad = 1;
			if (resp_bulk_hdr_done(p) != 0)
				goto error;
			break;
		case RESP_ST_BULK_DATA:
			k = len - i;
			if ((long long)k > p->bulkleft)
				k = (size_t)p->bulkleft;
			if (resp_feed(p, buf + i, k) != 0)
				goto error;
			i += k;
			p->bulkleft -= k;
			if (p->bulkleft == 0)
				p->state = RESP_ST_BULK_CR;
			break;
		case RESP_ST_BULK_CR:
		case RESP_ST_BULK_LF:
			if (buf[i++] !=
			    (p->state == RESP_ST_BULK_CR ? '\r' : '\n')) {
				resp_fail(p, "bulk string not followed by "
				             "CRLF");
				goto error;
			}
			if (p->state == RESP_ST_BULK_CR) {
				p->state = RESP_ST_BULK_LF;
				break;
			}
			if (resp_feed(p, "\r\n", 2) != 0)
				goto error;
			if (--p->elements > 0) {
				p->state = RESP_ST_BULK_HDR;
				break;
			}
			if (resp_array_done(p) != 0)
				goto error;
			goto request;
		case RESP_ST_ERROR:
			goto error;
		}
	}
	*used = i;
	return RESP_STEP_MORE;
request:
	*used = i;
	return RESP_STEP_REQUEST;
error:
	*used = i;
	return RESP_STEP_ERROR;
}

/*
 * The common case, without the scanner and hiredis: a whole, well-formed
 * multibulk request of a few small bulks in buf. Anything else (a partial
 * request, a bad or unusual header, a big count or bulk, an empty array)
 * returns 0 and is left to resp_step, which alone knows the errors: so the
 * result is always the one resp_step would give. Returns the bytes of the
 * request and fills req.
 */
#define RESP_FAST_ARGS 64
#define RESP_FAST_BULK 65536

/* A "<type><n>\r\n" line at *i with 0 <= n <= max, strict as string2ll;
 * -1 otherwise. */
static long long
resp_fast_hdr(const char *buf, size_t len, size_t *i, char type, long long max)
{
	size_t j = *i;
	long long n = 0;

	if (j >= len || buf[j++] != type || j >= len)
		return -1;
	if (buf[j] == '0') {
		j++;
	} else {
		if (buf[j] < '1' || buf[j] > '9')
			return -1;
		while (j < len && buf[j] >= '0' && buf[j] <= '9') {
			n = n * 10 + (buf[j++] - '0');
			if (n > max)
				return -1;
		}
	}
	if (j + 2 > len || buf[j] != '\r' || buf[j + 1] != '\n')
		return -1;
	*i = j + 2;
	return n;
}

static size_t
resp_fast(const struct resp_parser *p, const char *buf, size_t len,
          struct resp_request *req)
{
	size_t off[RESP_FAST_ARGS], blen[RESP_FAST_ARGS], i = 0, size;
	long long n, k, a;
	long long args_max = p->unauth ? RESP_UNAUTH_ARGS_MAX : RESP_FAST_ARGS;
	long long bulk_max = p->unauth ? RESP_UNAUTH_BULK_MAX : RESP_FAST_BULK;
	char *str;

	if ((n = resp_fast_hdr(buf, len, &i, '*', args_max)) < 1)
		return 0;
	for (a = 0; a < n; a++) {
		if ((k = resp_fast_hdr(buf, len, &i, '$', bulk_max)) < 0 ||
		    len - i < (size_t)k + 2 || buf[i + k] != '\r' ||
		    buf[i + k + 1] != '\n')
			return 0;
		off[a] = i;
		blen[a] = (size_t)k;
		i += (size_t)k + 2;
	}
	/* One allocation: argv, argvlen, then the NUL-terminated strings. */
	size = (size_t)n * (sizeof(*req->argv) + sizeof(*req->argvlen));
	for (a = 0; a < n; a++)
		size += blen[a] + 1;
	req->argv = csq_xmalloc(size);
	req->argvlen = (size_t *)(void *)(req->argv + n);
	str = (char *)(req->argvlen + n);
	for (a = 0; a < n; a++) {
		memcpy(str, buf + off[a], blen[a]);
		str[blen[a]] = '\0';
		req->argv[a] = str;
		req->argvlen[a] = blen[a];
		str += blen[a] + 1;
	}
	req->argc = (int)n;
	req->packed = 1;
	return i;
}

enum resp_parse
resp_parse(struct resp_parser *p, struct evbuffer *in, struct resp_request *req)
{
	struct evbuffer_iovec v;
	enum resp_step step;
	size_t used;

	resp_request_clear(req);
	while (p->state != RESP_ST_ERROR) {
		if (evbuffer_get_length(in) == 0 ||
		    evbuffer_peek(in, -1, NULL, &v, 1) < 1 || v.iov_len == 0)
			return RESP_PARSE_NEED;
		if (p->state == RESP_ST_START &&
		    (used = resp_fast(p, v.iov_base, v.iov_len, req)) > 0) {
			evbuffer_drain(in, used);
			return RESP_PARSE_OK;
		}
		used = 0;
		step = resp_step(p, v.iov_base, v.iov_len, &used);
		evbuffer_drain(in, used);
		if (step == RESP_STEP_REQUEST) {
			*req = p->build;
			memset(&p->build, 0, sizeof(p->build));
			return RESP_PARSE_OK;
		}
		if (step == RESP_STEP_ERROR)
			break;
	}
	return RESP_PARSE_ERROR;
}
