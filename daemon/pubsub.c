/* Channels, patterns and the delivery of messages to subscribers. */
#include "pubsub.h"

#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "dict.h"
#include "resp.h"
#include "util.h"

#define PUBSUB_SEED UINT64_C(0x2545f4914f6cdd1d)

struct pubsub_channel {
	struct client **clients;
	size_t nclients, cap;
	size_t len;
	char name[];
};

struct pubsub_pattern {
	struct client *client;
	char *pattern;
};

struct pubsub {
	struct csq_dict *channels;
	struct pubsub_pattern *patterns;
	size_t npatterns, cap;
};

struct pubsub *
pubsub_new(void)
{
	struct pubsub *ps = csq_xcalloc(1, sizeof(*ps));

	ps->channels = csq_dict_new(PUBSUB_SEED);
	return ps;
}

/* Every client has forgotten its subscriptions before this. */
void
pubsub_free(struct pubsub *ps)
{
	if (ps == NULL)
		return;
	csq_dict_free(ps->channels);
	free(ps->patterns);
	free(ps);
}

/* Grows *arr (of elem-sized items) so that one more fits. */
static void
grow(void *arr, size_t *cap, size_t n, size_t elem)
{
	void **p = arr;

	if (n < *cap)
		return;
	*cap = *cap ? *cap * 2 : 4;
	*p = csq_xrealloc(*p, *cap * elem);
}

int
pubsub_subscribe(struct pubsub *ps, struct client *c, const char *name,
                 size_t len)
{
	struct pubsub_subs *subs = client_subs(c);
	struct pubsub_channel *ch;
	size_t i;

	ch = csq_dict_get(ps->channels, name, len);
	if (ch == NULL) {
		ch = csq_xcalloc(1, sizeof(*ch) + len + 1);
		ch->len = len;
		memcpy(ch->name, name, len);
		csq_dict_put(ps->channels, ch->name, len, ch);
	}
	for (i = 0; i < subs->nchannels; i++)
		if (subs->channels[i] == ch)
			return 0;
	grow(&subs->channels, &subs->capchannels, subs->nchannels,
	     sizeof(*subs->channels));
	subs->channels[subs->nchannels++] = ch;
	grow(&ch->clients, &ch->cap, ch->nclients, sizeof(*ch->clients));
	ch->clients[ch->nclients++] = c;
	return 1;
}

static void
channel_drop(struct pubsub *ps, struct pubsub_channel *ch, struct client *c)
{
	size_t i;

	for (i = 0; i < ch->nclients; i++) {
		if (ch->clients[i] == c) {
			/* Keep delivery order stable: shift, don't swap. */
			memmove(&ch->clients[i], &ch->clients[i + 1],
			        (ch->nclients - i - 1) * sizeof(*ch->clients));
			ch->nclients--;
			break;
		}
	}
	if (ch->nclients == 0) {
		csq_dict_del(ps->channels, ch->name, ch->len);
		free(ch->clients);
		free(ch);
	}
}

int
pubsub_unsubscribe(struct pubsub *ps, struct client *c, const char *name,
                   size_t len)
{
	struct pubsub_subs *subs = client_subs(c);
	struct pubsub_channel *ch;
	size_t i;

	if ((ch = csq_dict_get(ps->channels, name, len)) == NULL)
		return 0;
	for (i = 0; i < subs->nchannels; i++) {
		if (subs->channels[i] != ch)
			continue;
		memmove(&subs->channels[i], &subs->channels[i + 1],
		        (subs->nchannels - i - 1) * sizeof(*subs->channels));
		subs->nchannels--;
		channel_drop(ps, ch, c);
		return 1;
	}
	return 0;
}

int
pubsub_psubscribe(struct pubsub *ps, struct client *c, const char *pat,
                  size_t len)
{
	struct pubsub_subs *subs = client_subs(c);
	char *copy;
	size_t i;

	for (i = 0; i < subs->npatterns; i++)
		if (strlen(subs->patterns[i]) == len &&
		    memcmp(subs->patterns[i], pat, len) == 0)
			return 0;
	copy = csq_xstrndup(pat, len);
	grow(&subs->patterns, &subs->cappatterns, subs->npatterns,
	     sizeof(*subs->patterns));
	subs->patterns[subs->npatterns++] = copy;
	grow(&ps->patterns, &ps->cap, ps->npatterns, sizeof(*ps->patterns));
	ps->patterns[ps->npatterns].client = c;
	ps->patterns[ps->npatterns].pattern = copy;
	ps->npatterns++;
	return 1;
}

int
pubsub_punsubscribe(struct pubsub *ps, struct client *c, const char *pat,
                    size_t len)
{
	struct pubsub_subs *subs = client_subs(c);
	char *copy = NULL;
	size_t i;

	for (i = 0; i < subs->npatterns; i++) {
		if (strlen(subs->patterns[i]) != len ||
		    memcmp(subs->patterns[i], pat, len) != 0)
			continue;
		copy = subs->patterns[i];
		memmove(&subs->patterns[i], &subs->patterns[i + 1],
		        (subs->npatterns - i - 1) * sizeof(*subs->patterns));
		subs->npatterns--;
		break;
	}
	if (copy == NULL)
		return 0;
	for (i = 0; i < ps->npatterns; i++) {
		if (ps->patterns[i].pattern != copy)
			continue;
		memmove(&ps->patterns[i], &ps->patterns[i + 1],
		        (ps->npatterns - i - 1) * sizeof(*ps->patterns));
		ps->npatterns--;
		break;
	}
	free(copy);
	return 1;
}

void
pubsub_forget(struct pubsub *ps, struct client *c)
{
	struct pubsub_subs *subs = client_subs(c);

	while (subs->nchannels > 0) {
		struct pubsub_channel *ch = subs->channels[--subs->nchannels];

		channel_drop(ps, ch, c);
	}
	while (subs->npatterns > 0) {
		const char *p = subs->patterns[subs->npatterns - 1];

		pubsub_punsubscribe(ps, c, p, strlen(p));
	}
	free(subs->channels);
	free(subs->patterns);
	memset(subs, 0, sizeof(*subs));
}

size_t
pubsub_count(const struct pubsub_subs *subs)
{
	return subs->nchannels + subs->npatterns;
}

const char *
pubsub_channel_name(const struct pubsub_subs *subs, size_t i, size_t *len)
{
	*len = subs->channels[i]->len;
	return subs->channels[i]->name;
}

void
pubsub_publish(struct pubsub *ps, const char *name, size_t len, const char *msg,
               size_t msglen)
{
	struct pubsub_channel *ch;
	struct evbuffer *out;
	size_t i;

	if ((ch = csq_dict_get(ps->channels, name, len)) != NULL) {
		for (i = 0; i < ch->nclients; i++) {
			if ((out = client_push_begin(ch->clients[i])) == NULL)
				continue;
			resp_array(out, 3);
			resp_bulk(out, "message", 7);
			resp_bulk(out, name, len);
			resp_bulk(out, msg, msglen);
			client_push_end(ch->clients[i]);
		}
	}
	/* Channel names are NUL-free here: csq's channels are made of ids. */
	for (i = 0; i < ps->npatterns; i++) {
		struct pubsub_pattern *p = &ps->patterns[i];

		if (fnmatch(p->pattern, name, 0) != 0)
			continue;
		if ((out = client_push_begin(p->client)) == NULL)
			continue;
		resp_array(out, 4);
		resp_bulk(out, "pmessage", 8);
		resp_bulk_str(out, p->pattern);
		resp_bulk(out, name, len);
		resp_bulk(out, msg, msglen);
		client_push_end(p->client);
	}
}

int
pubsub_wanted(const struct pubsub *ps, const char *name, size_t len)
{
	return ps->npatterns > 0 ||
	       csq_dict_get(ps->channels, name, len) != NULL;
}
