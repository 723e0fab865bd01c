/*
 * The RESP codec of csqd: requests in (RESP2 arrays of bulk strings, parsed
 * with hiredis's redisReader, and inline lines), replies out, written straight
 * into a libevent evbuffer.
 *
 * Limits are checked before anything large is allocated: a bulk string over
 * RESP_BULK_MAX, an array over RESP_ARGS_MAX elements, an inline line or a
 * header line over RESP_INLINE_MAX bytes is a protocol error.
 */
#ifndef CSQD_RESP_H
#define CSQD_RESP_H

#include <stddef.h>
#include <stdint.h>

struct evbuffer;

#define RESP_BULK_MAX   (512LL * 1024 * 1024)
#define RESP_ARGS_MAX   (1024 * 1024)
#define RESP_INLINE_MAX (64 * 1024)
/* Before AUTH, as Redis (CVE-2021-32675): a client that has not proved
 * who it is may not make csqd hold more than a few kilobytes. */
#define RESP_UNAUTH_ARGS_MAX 10
#define RESP_UNAUTH_BULK_MAX (16 * 1024)

/* One parsed request: argc arguments, each argv[i] of argvlen[i] bytes and
 * NUL-terminated (a bulk may contain NULs; argvlen is the truth). */
struct resp_request {
	int argc;
	char **argv;
	size_t *argvlen;
	int packed; /* argv, argvlen and the strings are one allocation */
};

struct resp_parser;

enum resp_parse {
	RESP_PARSE_OK,    /* *req holds a request; call again for the next */
	RESP_PARSE_NEED,  /* all input consumed, no complete request */
	RESP_PARSE_ERROR, /* protocol error: reply with error text, close */
};

struct resp_parser *resp_parser_new(void);
void resp_parser_free(struct resp_parser *);
/*
 * Takes bytes from in (draining what it consumes) and returns the next
 * request in req, which stays valid until the next call or
 * resp_request_clear(). An empty inline line or an empty array is skipped,
 * as Redis does. On RESP_PARSE_ERROR, error() gives the text after
 * "-ERR Protocol error: ".
 */
enum resp_parse resp_parse(struct resp_parser *, struct evbuffer *in,
                           struct resp_request *req);
const char *resp_parser_error(const struct resp_parser *);
/*
 * Whether the connection is authenticated: until it is, arrays over
 * RESP_UNAUTH_ARGS_MAX elements and bulks over RESP_UNAUTH_BULK_MAX bytes
 * are protocol errors. Takes effect from the next request on (the parser
 * never looks past the end of the request it returns). New parsers are
 * authenticated.
 */
void resp_parser_set_authed(struct resp_parser *, int authed);
/* Bytes of input the parser holds: the request being read, in hiredis's
 * buffer or the inline line. */
size_t resp_parser_held(const struct resp_parser *);
void resp_request_clear(struct resp_request *);

/* Replies. */
void resp_simple(struct evbuffer *, const char *s);      /* +s */
void resp_error(struct evbuffer *, const char *fmt, ...) /* -fmt */
    __attribute__((format(printf, 2, 3)));
void resp_integer(struct evbuffer *, int64_t);                /* :n */
void resp_bulk(struct evbuffer *, const char *s, size_t len); /* $len */
void resp_bulk_str(struct evbuffer *, const char *s);
void resp_bulk_u64(struct evbuffer *, uint64_t); /* decimal as bulk */
void resp_null(struct evbuffer *);               /* $-1 */
void resp_array(struct evbuffer *, int64_t n);   /* *n */
/* By the connection's protocol, 2 or 3 (HELLO). */
void resp_nil(struct evbuffer *, int proto);                /* _ or $-1 */
void resp_map(struct evbuffer *, int proto, int64_t pairs); /* %n or *2n */
void resp_push(struct evbuffer *, int proto, int64_t n);    /* >n or *n */
/* Text for a person (INFO): =n txt:… or a bulk string. */
void resp_verbatim(struct evbuffer *, int proto, const char *, size_t);

/*
 * A reply, or a pub/sub message, written into a buffer of its own and
 * added to out in one evbuffer_add (at resp_buf_flush, or when the buffer
 * is full): each evbuffer_add is about 100 instructions, and a reply of a
 * map of strings, or a message of three or four bulk strings, made a
 * dozen or four of them a match (docs/benchmarks.md, "csqd's replies and
 * messages written in one piece"). The bytes are the writers' above, the
 * same in the same order. With out NULL nothing is ever added: what does
 * not fit sets over, and the buffer is the caller's to send or not.
 */
#define RESP_BUF_SIZE 1024
struct resp_buf {
	struct evbuffer *out;
	size_t len;
	int over;
	char buf[RESP_BUF_SIZE];
};
void resp_buf_init(struct resp_buf *, struct evbuffer *out);
/* n bytes of RESP written elsewhere, as they are. */
void resp_buf_raw(struct resp_buf *, const void *p, size_t n);
void resp_buf_bulk(struct resp_buf *, const char *s, size_t len);
void resp_buf_integer(struct resp_buf *, int64_t);
void resp_buf_simple(struct resp_buf *, const char *s);
void resp_buf_array(struct resp_buf *, int64_t n);
void resp_buf_map(struct resp_buf *, int proto, int64_t pairs);
void resp_buf_push(struct resp_buf *, int proto, int64_t n);
/* What is in the buffer goes to out (nothing when out is NULL). */
void resp_buf_flush(struct resp_buf *);

/* The reader's and the writer's: writes the digits of v so that they end
 * at end (no NUL); returns their start. */
char *resp_digits(char *end, uint64_t v);

#endif
