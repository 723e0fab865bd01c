/* Channels, patterns and the delivery of messages to subscribers. */
#include "pubsub.h"

#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "client.h"
#include "dict.h"
#include "glob.h"
#include "resp.h"
#include "util.h"

/* One subscription: to a channel (ch set) or to a pattern (name). */
struct pubsub_sub {
	TAILQ_ENTRY(pubsub_sub) mine;  /* in its client's list */
	TAILQ_ENTRY(pubsub_sub) peers; /* in its channel's, or all patterns */
	struct client *client;
	struct pubsub_channel *ch;
	size_t len;
	int prefix;  /* a pattern that is a prefix and '*' (pubsub_glob) */
	char name[]; /* a pattern's; a channel's is ch->name */
};

struct pubsub_channel {
	struct pubsub_sub_list subs; /* in order of subscribing */
	size_t len;
	char name[];
};

struct pubsub {
	uint64_t seed; /* of every table here: random, so that no client can
	                  choose names that all fall in one bucket */
	struct csq_dict *channels;
	struct pubsub_sub_list patterns;
	size_t npatterns;
};

struct pubsub *
pubsub_new(uint64_t seed)
{
	struct pubsub *ps = csq_xcalloc(1, sizeof(*ps));

	ps->seed = seed;
	ps->channels = csq_dict_new(ps->seed);
	TAILQ_INIT(&ps->patterns);
	return ps;
}

/* Every client has forgotten its subscriptions before this. */
void
pubsub_free(struct pubsub *ps)
{
	if (ps == NULL)
		return;
	csq_dict_free(ps->channels);
	free(ps);
}

/* A client's subscriptions are set up at its first. */
static struct pubsub_subs *
subs_of(struct pubsub *ps, struct client *c)
{
	struct pubsub_subs *subs = client_subs(c);

	if (subs->bychannel == NULL) {
		TAILQ_INIT(&subs->channels);
		TAILQ_INIT(&subs->patterns);
		subs->bychannel = csq_dict_new(ps->seed);
		subs->bypattern = csq_dict_new(ps->seed);
	}
	return subs;
}

int
pubsub_subscribe(struct pubsub *ps, struct client *c, const char *name,
                 size_t len)
{
	struct pubsub_subs *subs = subs_of(ps, c);
	struct pubsub_channel *ch;
	struct pubsub_sub *sub;

	if (csq_dict_get(subs->bychannel, name, len) != NULL)
		return 0;
	if ((ch = csq_dict_get(ps->channels, name, len)) == NULL) {
		ch = csq_xcalloc(1, sizeof(*ch) + len + 1);
		TAILQ_INIT(&ch->subs);
		ch->len = len;
		memcpy(ch->name, name, len);
		csq_dict_put(ps->channels, ch->name, len, ch);
	}
	sub = csq_xcalloc(1, sizeof(*sub));
	sub->client = c;
	sub->ch = ch;
	sub->len = len;
	TAILQ_INSERT_TAIL(&ch->subs, sub, peers);
	TAILQ_INSERT_TAIL(&subs->channels, sub, mine);
	csq_dict_put(subs->bychannel, ch->name, len, sub);
	subs->nchannels++;
	return 1;
}

static void
channel_drop(struct pubsub *ps, struct pubsub_subs *subs,
             struct pubsub_sub *sub)
{
	struct pubsub_channel *ch = sub->ch;

	csq_dict_del(subs->bychannel, ch->name, ch->len);
	TAILQ_REMOVE(&subs->channels, sub, mine);
	subs->nchannels--;
	TAILQ_REMOVE(&ch->subs, sub, peers);
	free(sub);
	if (TAILQ_EMPTY(&ch->subs)) {
		csq_dict_del(ps->channels, ch->name, ch->len);
		free(ch);
	}
}

int
pubsub_unsubscribe(struct pubsub *ps, struct client *c, const char *name,
                   size_t len)
{
	struct pubsub_subs *subs = client_subs(c);
	struct pubsub_sub *sub;

	/* (A client that never subscribed has no tables to look in.) */
	if (subs->bychannel == NULL ||
	    (sub = csq_dict_get(subs->bychannel, name, len)) == NULL)
		return 0;
	channel_drop(ps, subs, sub);
	return 1;
}

int
pubsub_psubscribe(struct pubsub *ps, struct client *c, const char *pat,
                  size_t len)
{
	struct pubsub_subs *subs = subs_of(ps, c);
	struct pubsub_sub *sub;

	if (csq_dict_get(subs->bypattern, pat, len) != NULL)
		return 0;
	sub = csq_xcalloc(1, sizeof(*sub) + len + 1);
	sub->client = c;
	sub->len = len;
	sub->prefix = pubsub_glob_prefix(pat, len);
	memcpy(sub->name, pat, len);
	TAILQ_INSERT_TAIL(&ps->patterns, sub, peers);
	ps->npatterns++;
	TAILQ_INSERT_TAIL(&subs->patterns, sub, mine);
	csq_dict_put(subs->bypattern, sub->name, len, sub);
	subs->npatterns++;
	return 1;
}

static void
pattern_drop(struct pubsub *ps, struct pubsub_subs *subs,
             struct pubsub_sub *sub)
{
	csq_dict_del(subs->bypattern, sub->name, sub->len);
	TAILQ_REMOVE(&subs->patterns, sub, mine);
	subs->npatterns--;
	TAILQ_REMOVE(&ps->patterns, sub, peers);
	ps->npatterns--;
	free(sub);
}

int
pubsub_punsubscribe(struct pubsub *ps, struct client *c, const char *pat,
                    size_t len)
{
	struct pubsub_subs *subs = client_subs(c);
	struct pubsub_sub *sub;

	/* (A client that never subscribed has no tables to look in.) */
	if (subs->bypattern == NULL ||
	    (sub = csq_dict_get(subs->bypattern, pat, len)) == NULL)
		return 0;
	pattern_drop(ps, subs, sub);
	return 1;
}

void
pubsub_forget(struct pubsub *ps, struct client *c)
{
	struct pubsub_subs *subs = client_subs(c);
	struct pubsub_sub *sub;

	if (subs->bychannel == NULL)
		return;
	while ((sub = TAILQ_FIRST(&subs->channels)) != NULL)
		channel_drop(ps, subs, sub);
	while ((sub = TAILQ_FIRST(&subs->patterns)) != NULL)
		pattern_drop(ps, subs, sub);
	csq_dict_free(subs->bychannel);
	csq_dict_free(subs->bypattern);
	memset(subs, 0, sizeof(*subs));
}

int
pubsub_has_pattern(const struct pubsub_subs *subs, const char *pat, size_t len)
{
	return subs->bypattern != NULL &&
	       csq_dict_get(subs->bypattern, pat, len) != NULL;
}

size_t
pubsub_count(const struct pubsub_subs *subs)
{
	return subs->nchannels + subs->npatterns;
}

const char *
pubsub_first(const struct pubsub_subs *subs, int pattern, size_t *len)
{
	const struct pubsub_sub *sub;

	if (subs->bychannel == NULL)
		return NULL;
	sub = TAILQ_FIRST(pattern ? &subs->patterns : &subs->channels);
	if (sub == NULL)
		return NULL;
	*len = sub->len;
	return pattern ? sub->name : sub->ch->name;
}

int
pubsub_glob_prefix(const char *pat, size_t len)
{
	size_t i;

	if (len == 0 || pat[len - 1] != '*')
		return 0;
	for (i = 0; i + 1 < len; i++)
		if (pat[i] == '*' || pat[i] == '?' || pat[i] == '[' ||
		    pat[i] == '\\')
			return 0;
	return 1;
}

int
pubsub_glob(const char *pat, size_t plen, int prefix, const char *s,
            size_t slen)
{
	/* (Redis: the empty string matches the empty pattern alone.) */
	if (prefix)
		return slen > 0 && slen >= plen - 1 &&
		       memcmp(pat, s, plen - 1) == 0;
	return csq_glob(pat, plen, s, slen);
}

/* The message in pieces, as it was written before pubsub_message_frame:
 * for one that does not fit in a struct resp_buf. */
static void
message_pieces(struct evbuffer *out, int proto, const char *pat, size_t patlen,
               const char *name, size_t len, const char *msg, size_t msglen)
{
	resp_push(out, proto, pat != NULL ? 4 : 3);
	if (pat != NULL) {
		resp_bulk(out, "pmessage", 8);
		resp_bulk(out, pat, patlen);
	} else
		resp_bulk(out, "message", 7);
	resp_bulk(out, name, len);
	resp_bulk(out, msg, msglen);
}

void
pubsub_message_frame(struct resp_buf *f, const char *pat, size_t patlen,
                     const char *name, size_t len, const char *msg,
                     size_t msglen)
{
	static const char pmessage[] = "*4\r\n$8\r\npmessage\r\n",
	                  message[] = "*3\r\n$7\r\nmessage\r\n";

	resp_buf_init(f, NULL);
	if (pat != NULL) {
		resp_buf_raw(f, pmessage, sizeof(pmessage) - 1);
		resp_buf_bulk(f, pat, patlen);
	} else
		resp_buf_raw(f, message, sizeof(message) - 1);
	resp_buf_bulk(f, name, len);
	resp_buf_bulk(f, msg, msglen);
}

void
pubsub_message_send(struct resp_buf *f, struct evbuffer *out, int proto,
                    const char *pat, size_t patlen, const char *name,
                    size_t len, const char *msg, size_t msglen)
{
	if (f->over) {
		message_pieces(out, proto, pat, patlen, name, len, msg, msglen);
		return;
	}
	f->buf[0] = proto == 3 ? '>' : '*'; /* resp_push's type */
	evbuffer_add(out, f->buf, f->len);
}

/*
 * Each subscriber's message is written whole and added to its output at
 * once (about 100 instructions an evbuffer_add, where the pieces took four
 * or five); a channel's is written once for all its subscribers.
 */
void
pubsub_publish(struct pubsub *ps, const char *name, size_t len, const char *msg,
               size_t msglen)
{
	struct pubsub_channel *ch;
	struct pubsub_sub *sub;
	struct evbuffer *out;
	struct resp_buf f;
	int made = 0;

	if ((ch = csq_dict_get(ps->channels, name, len)) != NULL) {
		TAILQ_FOREACH(sub, &ch->subs, peers) {
			if ((out = client_push_begin(sub->client)) == NULL)
				continue;
			if (!made) {
				pubsub_message_frame(&f, NULL, 0, name, len,
				                     msg, msglen);
				made = 1;
			}
			pubsub_message_send(&f, out, sub->client->proto, NULL,
			                    0, name, len, msg, msglen);
			client_push_end(sub->client);
		}
	}
	TAILQ_FOREACH(sub, &ps->patterns, peers) {
		if (!pubsub_glob(sub->name, sub->len, sub->prefix, name, len))
			continue;
		if ((out = client_push_begin(sub->client)) == NULL)
			continue;
		pubsub_message_frame(&f, sub->name, sub->len, name, len, msg,
		                     msglen);
		pubsub_message_send(&f, out, sub->client->proto, sub->name,
		                    sub->len, name, len, msg, msglen);
		client_push_end(sub->client);
	}
}

int
pubsub_wanted(const struct pubsub *ps, const char *name, size_t len)
{
	return ps->npatterns > 0 ||
	       csq_dict_get(ps->channels, name, len) != NULL;
}

size_t
pubsub_nchannels(const struct pubsub *ps)
{
	return csq_dict_len(ps->channels);
}

size_t
pubsub_npatterns(const struct pubsub *ps)
{
	return ps->npatterns;
}
