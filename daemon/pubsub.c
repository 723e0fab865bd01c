/* Channels, patterns and the delivery of messages to subscribers. */
#include "pubsub.h"

#include <stdlib.h>
#include <string.h>

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

void
pubsub_publish(struct pubsub *ps, const char *name, size_t len, const char *msg,
               size_t msglen)
{
	struct pubsub_channel *ch;
	struct pubsub_sub *sub;
	struct evbuffer *out;

	if ((ch = csq_dict_get(ps->channels, name, len)) != NULL) {
		TAILQ_FOREACH(sub, &ch->subs, peers) {
			if ((out = client_push_begin(sub->client)) == NULL)
				continue;
			resp_push(out, sub->client->proto, 3);
			resp_bulk(out, "message", 7);
			resp_bulk(out, name, len);
			resp_bulk(out, msg, msglen);
			client_push_end(sub->client);
		}
	}
	TAILQ_FOREACH(sub, &ps->patterns, peers) {
		if (!csq_glob(sub->name, sub->len, name, len))
			continue;
		if ((out = client_push_begin(sub->client)) == NULL)
			continue;
		resp_push(out, sub->client->proto, 4);
		resp_bulk(out, "pmessage", 8);
		resp_bulk(out, sub->name, sub->len);
		resp_bulk(out, name, len);
		resp_bulk(out, msg, msglen);
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
