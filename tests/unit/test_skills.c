/*
 * Skills (protocol.md section 3c), with the fake clock: the lists and how
 * they are refused, the rule (every need at its level), the order among
 * the users a servicer may take and among the servicers that may take a
 * user, positions over a queue's lines, changes of skills and needs,
 * the bound on need-sets, and a randomized run that checks every
 * invariant (csq_check: no free room of a servicer beside a user it may
 * take, the need-lines' heaps) after each operation.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fixture.h"
#include "snapshot.h"
#include "scale.h"

/* HEARTBEAT with QUEUES and SKILLS (NULL: left out). */
static enum csq_status
hbs(struct fixture *f, const char *sid, uint32_t capacity, const char *queue,
    const char *skills)
{
	struct csq_heartbeat_args a;
	char buf[CSQ_ID_MAX + 1];

	hb_args(&a, sid, capacity, queue, buf, sizeof(buf));
	a.has_skills = skills != NULL;
	a.skills = skills;
	a.has_ttl = 1; /* not lost while the clock runs */
	a.ttl_s = CSQ_TTL_MAX;
	return hb_run(f, &a, NULL);
}

/* ENQUEUE with NEEDS (NULL: left out); out may be NULL. */
static enum csq_status
enqn(struct fixture *f, const char *uid, const char *queue, int tier,
     const char *needs, struct csq_user_info *out)
{
	struct csq_enqueue_args a;

	enq_args(&a, uid, queue, tier);
	a.has_needs = needs != NULL;
	a.needs = needs;
	a.has_ttl = 1; /* never gone while the clock runs */
	return enq_run(f, &a, out);
}

static const char *
room_of(struct fixture *f, const char *uid)
{
	static struct csq_user_info u;

	where(f, uid, &u);
	return u.state == CSQ_USER_ASSIGNED ? u.room : "";
}

static void
test_lists(void **state)
{
	struct csq_skill_list l;
	char text[CSQ_SKILLS_TEXT_MAX], big[2048];
	const char *bad[] = {
	    ",",      "de,",   ",de",
	    "de,,en", "de:",   "de:0",
	    "de:101", "de:01", "de:+1",
	    "de:1:2", "d e",   "de,de:2",
	    ":3",     "é",     "123456789012345678901234567890123"};
	size_t i, off = 0;

	(void)state;
	assert_int_equal(csq_skills_parse("", CSQ_USER_NEEDS, &l), CSQ_OK);
	assert_int_equal(l.n, 0);
	assert_int_equal(
	    csq_skills_parse("de,billing:2,a.b_c-d:100", CSQ_USER_NEEDS, &l),
	    CSQ_OK);
	csq_skills_text(&l, text);
	assert_string_equal(text, "a.b_c-d:100,billing:2,de:1");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (csq_skills_parse(bad[i], CSQ_SERVICER_SKILLS, &l) !=
		    CSQ_ESKILL)
			fail_msg("\"%s\" taken for a skill list", bad[i]);
	assert_int_equal(csq_skills_parse(NULL, 1, &l), CSQ_ESKILL);
	/* Counts: 8 needs, 32 skills; one more is refused. */
	assert_int_equal(csq_skills_parse("a,b,c,d,e,f,g,h", 8, &l), CSQ_OK);
	assert_int_equal(csq_skills_parse("a,b,c,d,e,f,g,h,i", 8, &l),
	                 CSQ_ESKILL);
	for (i = 0; i < 33; i++)
		off += (size_t)snprintf(big + off, sizeof(big) - off, "%ss%zu",
		                        i ? "," : "", i);
	assert_int_equal(csq_skills_parse(big, 32, &l), CSQ_ESKILL);
	/* A text longer than any list is refused before it is read. */
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(csq_skills_parse(big, 32, &l), CSQ_ESKILL);
}

/* Bad lists change nothing: no servicer, no user, no event. */
static void
test_bad_lists_change_nothing(void **state)
{
	struct fixture *f = *state;
	struct csq_transfer_args t;
	struct csq_user_info u;
	struct csq_stats st;

	assert_int_equal(hbs(f, "s1", 1, "q", "de:0"), CSQ_ESKILL);
	assert_int_equal(enqn(f, "u1", "q", -1, "de,,en", NULL), CSQ_ESKILL);
	csq_stats(f->csq, &st);
	assert_int_equal(st.servicers + st.waiting, 0);
	assert_int_equal(f->nevents, 0);
	assert_int_equal(hbs(f, "s1", 1, "q", "de"), CSQ_OK);
	assert_int_equal(enqn(f, "u1", "q", -1, "de", &u), CSQ_OK);
	assert_string_equal(u.room, "s1/0");
	memset(&t, 0, sizeof(t));
	t.room = "s1/0";
	t.queue = "q";
	t.has_needs = 1;
	t.needs = "x:1000";
	assert_int_equal(csq_transfer(f->csq, f->now, &t, &u), CSQ_ESKILL);
	assert_string_equal(room_of(f, "u1"), "s1/0");
}

/* Every need at its level or higher; no needs: anyone. */
static void
test_rule(void **state)
{
	struct fixture *f = *state;
	struct csq_user_info u;

	hbs(f, "plain", 1, "q", NULL);
	hbs(f, "de5", 1, "q", "de:5,billing:3");
	enqn(f, "u1", "q", -1, "de:6", &u); /* nobody has de at 6 */
	assert_int_equal(u.state, CSQ_USER_WAITING);
	assert_string_equal(u.needs, "de:6");
	enqn(f, "u2", "q", -1, "billing,de:5", &u);
	assert_string_equal(u.room, "de5/0");
	assert_string_equal(u.needs, "billing:1,de:5");
	enqn(f, "u3", "q", -1, "billing", &u); /* plain has no billing */
	assert_int_equal(u.state, CSQ_USER_WAITING);
	enqn(f, "u4", "q", -1, NULL, &u); /* passes u1 and u3 over */
	assert_string_equal(u.room, "plain/0");
	assert_string_equal(u.needs, "");
	/* de5 frees its room: u3 (billing) is its best, u1 stays. */
	assert_int_equal(release(f, "de5/0"), 1);
	assert_string_equal(room_of(f, "u3"), "de5/0");
	assert_string_equal(room_of(f, "u1"), "");
}

/* A user with needs waiting beside free rooms that may not take it has
 * no estimate (-1), not 0 (protocol.md 3c); without free rooms, the
 * queue's; a plain user beside a free room is never waiting. */
static void
test_estimate_beside_free_rooms(void **state)
{
	struct fixture *f = *state;
	struct csq_user_info u;

	hbs(f, "plain", 2, "q", NULL);
	enqn(f, "u1", "q", -1, "fr", &u); /* nobody has fr */
	assert_int_equal(u.state, CSQ_USER_WAITING);
	assert_int_equal(u.eta_ms, -1);
	where(f, "u1", &u);
	assert_int_equal(u.eta_ms, -1);
	/* Both rooms busy (and a hold learned): the queue's estimate. */
	enqn(f, "p1", "q", -1, NULL, &u);
	assert_string_equal(u.room, "plain/0");
	f->now += 60000;
	assert_int_equal(release(f, "plain/0"), 1);
	enqn(f, "p2", "q", -1, NULL, &u);
	enqn(f, "p3", "q", -1, NULL, &u);
	assert_int_equal(u.state, CSQ_USER_ASSIGNED);
	where(f, "u1", &u);
	assert_int_equal(u.state, CSQ_USER_WAITING);
	assert_true(u.eta_ms > 0);
	/* A room frees: plain still may not take u1, which is again
	 * without an estimate; a servicer with fr takes it. */
	assert_int_equal(release(f, "plain/0"), 1);
	where(f, "u1", &u);
	assert_int_equal(u.eta_ms, -1);
	hbs(f, "fr", 1, "q", "fr:1");
	assert_string_equal(room_of(f, "u1"), "fr/0");
}

/* A servicer takes the best user it may take, in today's order. */
static void
test_order_among_eligible(void **state)
{
	struct fixture *f = *state;
	struct csq_user_info u;

	enqn(f, "a", "q", -1, "fr", NULL);
	f->now += 10;
	enqn(f, "b", "q", -1, "de", NULL);
	f->now += 10;
	enqn(f, "c", "q", -1, NULL, NULL);
	f->now += 10;
	enqn(f, "d", "q", 2, "de:2", NULL);
	/* The queue's order is the lines merged: d (tier 2), a, b, c. */
	assert_string_equal(line_of(f, "q"), "d,a,b,c");
	where(f, "b", &u);
	assert_int_equal(u.position, 3);
	where(f, "c", &u);
	assert_int_equal(u.position, 4);
	uint64_t len;
	assert_int_equal(csq_qlen(f->csq, "q", &len), CSQ_OK);
	assert_int_equal(len, 4);
	/* de:1 may take b and c, not d (de:2) nor a: b came first. */
	hbs(f, "s1", 1, "q", "de:1");
	assert_string_equal(room_of(f, "b"), "s1/0");
	assert_string_equal(line_of(f, "q"), "d,a,c");
	/* de:3 may take d, b, c: d's tier first. */
	hbs(f, "s2", 2, "q", "de:3");
	assert_string_equal(room_of(f, "d"), "s2/0");
	assert_string_equal(room_of(f, "c"), "s2/1");
	assert_string_equal(line_of(f, "q"), "a");
	/* QUEUE pages over the lines merged. */
	enqn(f, "e", "q", -1, "fr:2", NULL);
	enqn(f, "g", "q", -1, "xx", NULL);
	struct csq_queue_entry e[4];
	size_t n;
	assert_int_equal(csq_queue_range(f->csq, f->now, "q", 1, 2, e, &n),
	                 CSQ_OK);
	assert_int_equal(n, 2);
	assert_string_equal(e[0].user, "e");
	assert_string_equal(e[1].user, "g");
	assert_int_equal(csq_queue_range(f->csq, f->now, "q", 3, 2, e, &n),
	                 CSQ_OK);
	assert_int_equal(n, 0);
}

/* Among the servicers that may take a user: the strategy, or with
 * skill_order "level" the highest levels first. */
static void
test_servicer_order(void **state)
{
	struct fixture *f = *state;
	struct csq_policy p;

	hbs(f, "low", 2, "q", "de:2");
	f->now++;
	hbs(f, "high", 2, "q", "de:9");
	f->now++;
	hbs(f, "none", 2, "q", NULL);
	enqn(f, "u1", "q", -1, "de", NULL); /* longest idle: low */
	assert_string_equal(room_of(f, "u1"), "low/0");
	memset(&p, 0, sizeof(p));
	strcpy(p.name, "q");
	p.skill_order = CSQ_SKILL_ORDER_LEVEL;
	set_policies(f, &p, 1);
	check(f);
	enqn(f, "u2", "q", -1, "de", NULL);
	assert_string_equal(room_of(f, "u2"), "high/0");
	enqn(f, "u3", "q", -1, "de", NULL); /* high again: its level */
	assert_string_equal(room_of(f, "u3"), "high/1");
	enqn(f, "u4", "q", -1, "de", NULL);
	assert_string_equal(room_of(f, "u4"), "low/1");
	enqn(f, "u5", "q", -1, "de", NULL);
	assert_string_equal(room_of(f, "u5"), "");
	enqn(f, "u6", "q", -1, NULL, NULL); /* without needs: anyone */
	assert_string_equal(room_of(f, "u6"), "none/0");
	p.skill_order = 2;
	assert_int_equal(csq_set_policies(f->csq, f->now, &p, 1), CSQ_ERANGE);
}

/* SKILLS changed, NEEDS changed: matches at once, places kept. */
static void
test_changes(void **state)
{
	struct fixture *f = *state;
	struct csq_user_info u;
	struct csq_servicer_info *sv;
	size_t n;

	hbs(f, "s1", 1, "q", "en");
	enqn(f, "a", "q", -1, "de", NULL);
	f->now += 5;
	enqn(f, "b", "q", -1, "de", NULL);
	/* b no longer needs de: s1 takes it, a keeps waiting. */
	enqn(f, "b", NULL, -1, "", &u);
	assert_string_equal(u.room, "s1/0");
	/* a needs fr now, and keeps its place before c. */
	enqn(f, "c", "q", -1, NULL, NULL);
	enqn(f, "a", NULL, -1, "fr", &u);
	assert_int_equal(u.position, 1);
	assert_string_equal(line_of(f, "q"), "a,c");
	/* s1 learns fr (SKILLS kept otherwise: left out keeps them). */
	assert_int_equal(release(f, "s1/0"), 1); /* c, no needs */
	assert_string_equal(room_of(f, "c"), "s1/0");
	hbs(f, "s1", 2, NULL, NULL);
	assert_string_equal(room_of(f, "a"), "");
	hbs(f, "s1", 0, NULL, "fr:3,en");
	assert_string_equal(room_of(f, "a"), "s1/1");
	sv = csq_servicers(f->csq, f->now, &n);
	assert_int_equal(n, 1);
	assert_string_equal(sv[0].skills, "en:1,fr:3");
	free(sv);
	hbs(f, "s1", 0, NULL, "");
	sv = csq_servicers(f->csq, f->now, &n);
	assert_string_equal(sv[0].skills, "");
	free(sv);
}

/*
 * A servicer's list of the need-lines it may take (needline.c,
 * csq_needline_takes: what a room set free reads instead of every
 * need-line of its queue) follows what changes it: a need-line made
 * after the list, its skills, its queues. A stale list would leave the
 * user it may take waiting beside its free room, or give it one it may
 * not take; and csq_check, after each step, compares a list it keeps
 * with the need-lines it satisfies.
 */
static void
test_takes_follow_changes(void **state)
{
	struct fixture *f = *state;

	hbs(f, "s1", 1, "q", "de:5");
	enqn(f, "a", "q", -1, NULL, NULL);
	assert_string_equal(room_of(f, "a"), "s1/0");
	enqn(f, "b", "q", -1, "en", NULL);
	enqn(f, "c", "q", -1, "de", NULL);
	assert_int_equal(release(f, "s1/0"), 1); /* its list made: de */
	assert_string_equal(room_of(f, "c"), "s1/0");
	/* A need-line made after the list, that s1 may take. */
	enqn(f, "d", "q", -1, "de:3", NULL);
	assert_int_equal(release(f, "s1/0"), 1);
	assert_string_equal(room_of(f, "d"), "s1/0");
	assert_string_equal(room_of(f, "b"), "");
	/* Its skills change: en, no de; e (de) waits on. */
	enqn(f, "e", "q", -1, "de", NULL);
	hbs(f, "s1", 0, NULL, "en");
	assert_int_equal(release(f, "s1/0"), 1);
	assert_string_equal(room_of(f, "b"), "s1/0");
	assert_string_equal(room_of(f, "e"), "");
	/* Its queue changes: q2's need-lines, not q's. */
	hbs(f, "s1", 0, "q2", NULL);
	enqn(f, "g", "q2", -1, "en", NULL);
	enqn(f, "h", "q", -1, "en", NULL);
	assert_int_equal(release(f, "s1/0"), 1);
	assert_string_equal(room_of(f, "g"), "s1/0");
	assert_string_equal(room_of(f, "h"), "");
	/* And back to q: its list of q is made again. */
	hbs(f, "s1", 0, "q", NULL);
	assert_int_equal(release(f, "s1/0"), 1);
	assert_string_equal(room_of(f, "h"), "s1/0");
}

/* A requeued user keeps its needs; a transfer may change them. */
static void
test_requeue_and_transfer(void **state)
{
	struct fixture *f = *state;
	struct csq_transfer_args t;
	struct csq_user_info u;
	uint64_t n;

	hbs(f, "s1", 1, "q", "de");
	enqn(f, "u1", "q", -1, "de", NULL);
	assert_int_equal(csq_logout(f->csq, f->now, "s1", &n), CSQ_OK);
	check(f);
	where(f, "u1", &u);
	assert_int_equal(u.state, CSQ_USER_WAITING);
	assert_string_equal(u.needs, "de:1");
	hbs(f, "s2", 1, "q", NULL); /* no de: nothing */
	assert_string_equal(room_of(f, "u1"), "");
	hbs(f, "s3", 1, "q", "de:4");
	assert_string_equal(room_of(f, "u1"), "s3/0");
	/* Transferred with other needs, into a queue s2 serves. */
	memset(&t, 0, sizeof(t));
	t.room = "s3/0";
	t.queue = "q";
	t.has_needs = 1;
	t.needs = "";
	assert_int_equal(csq_transfer(f->csq, f->now, &t, &u), CSQ_OK);
	check(f);
	assert_string_equal(u.room, "s2/0");
	assert_string_equal(u.needs, "");
	t.room = "s2/0";
	t.needs = "de:5";
	assert_int_equal(csq_transfer(f->csq, f->now, &t, &u), CSQ_OK);
	check(f);
	assert_int_equal(u.state, CSQ_USER_WAITING);
	assert_string_equal(u.needs, "de:5");
	/* Without NEEDS: kept. */
	hbs(f, "s3", 0, NULL, "de:5");
	assert_string_equal(room_of(f, "u1"), "s3/0");
	t.room = "s3/0";
	t.has_needs = 0;
	assert_int_equal(csq_transfer(f->csq, f->now, &t, &u), CSQ_OK);
	check(f);
	assert_string_equal(u.needs, "de:5");
}

/* PREFER opens a window only with a servicer that may take the user. */
static void
test_prefer_needs_skills(void **state)
{
	struct fixture *f = *state;
	struct csq_enqueue_args a;
	struct csq_user_info u;

	hbs(f, "s1", 1, "q", NULL);
	hbs(f, "s2", 1, "q", "de");
	enqn(f, "x", "q", -1, NULL, NULL);
	enqn(f, "y", "q", -1, NULL, NULL); /* both busy now */
	memset(&a, 0, sizeof(a));
	a.user = "u1";
	a.has_queue = 1;
	a.queue = "q";
	a.has_needs = 1;
	a.needs = "de";
	a.prefer.has_prefer = 1;
	a.prefer.servicer = "s1";
	a.prefer.seconds = 60;
	assert_int_equal(csq_enqueue(f->csq, f->now, &a, &u), CSQ_OK);
	check(f);
	assert_string_equal(u.prefer, "");
	a.user = "u2";
	a.prefer.servicer = "s2";
	assert_int_equal(csq_enqueue(f->csq, f->now, &a, &u), CSQ_OK);
	check(f);
	assert_string_equal(u.prefer, "s2");
}

/* At most CSQ_NEEDSETS_MAX need-sets held at once; one that no user
 * holds gives its slot. */
static void
test_needset_bound(void **state)
{
	struct fixture *f = *state;
	char uid[16], needs[32];
	int i, known;

	for (i = 0; i < CSQ_NEEDSETS_MAX; i++) {
		snprintf(uid, sizeof(uid), "u%d", i);
		snprintf(needs, sizeof(needs), "k%d", i);
		assert_int_equal(enqn(f, uid, "q", -1, needs, NULL), CSQ_OK);
	}
	assert_int_equal(enqn(f, "more", "q", -1, "other", NULL),
	                 CSQ_ENEEDSETS);
	/* A need-set already held is no new one. */
	assert_int_equal(enqn(f, "more", "q", -1, "k3", NULL), CSQ_OK);
	assert_int_equal(csq_leave(f->csq, f->now, "u7", &known), CSQ_OK);
	check(f);
	/* k7 was u7's alone: its slot goes to the new need-set. */
	assert_int_equal(enqn(f, "late", "q", -1, "other", NULL), CSQ_OK);
	assert_int_equal(enqn(f, "later", "q", -1, "k7", NULL), CSQ_ENEEDSETS);
	assert_int_equal(enqn(f, "later", "q", -1, "", NULL), CSQ_OK);
}

/* A queue's relax steps, as the example: drop billing at 30 s,
 * lower every level by 2 at 60 s, need nothing at 120 s. */
static void
relax_policy(struct csq_policy *p, const char *name)
{
	memset(p, 0, sizeof(*p));
	strcpy(p->name, name);
	p->nrelax = 3;
	p->relax[0].after_s = 30;
	strcpy(p->relax[0].drop, "billing");
	p->relax[1].after_s = 60;
	p->relax[1].lower = 2;
	p->relax[2].after_s = 120;
	p->relax[2].drop_all = 1;
}

static const struct csq_event *
event_of(struct fixture *f, size_t from, enum csq_event_type type,
         const char *user)
{
	size_t i;

	for (i = from; i < f->nevents; i++)
		if (f->events[i].type == type &&
		    strcmp(f->events[i].user, user) == 0)
			return &f->events[i];
	return NULL;
}

/* The steps, each a deadline: the event says what went; the user keeps
 * its place; a step that lets a free room take it ends in matched. */
static void
test_relax_steps(void **state)
{
	struct fixture *f = *state;
	const struct csq_event *ev;
	struct csq_user_info u;
	struct csq_policy p;
	size_t from;

	relax_policy(&p, "q");
	set_policies(f, &p, 1);
	hbs(f, "s1", 1, "q", "de:3");
	enqn(f, "a", "q", -1, "de:5,billing:2", &u);
	assert_int_equal(u.relax_ms, 30000);
	f->now += 1;
	enqn(f, "b", "q", -1, "fr", NULL);
	f->now += 1;
	enqn(f, "c", "q", -1, "zz:9", NULL);
	where(f, "a", &u);
	assert_int_equal(u.relax_ms, 29998);
	assert_int_equal(csq_next_deadline(f->csq), T0 + 30000);
	f->now = T0 + 30000;
	from = f->nevents;
	csq_expire(f->csq, f->now);
	check(f);
	assert_string_equal(events_since(f, from), "relaxed");
	ev = event_of(f, from, CSQ_EV_RELAXED, "a");
	assert_string_equal(ev->needs, "de:5");
	assert_string_equal(ev->dropped, "billing");
	assert_int_equal(ev->lowered, 0);
	assert_int_equal(ev->position, 1);
	where(f, "a", &u);
	assert_string_equal(u.needs, "de:5");
	assert_int_equal(u.position, 1);
	assert_int_equal(u.relax_ms, 30000);
	/* b and c had nothing to drop at 30 s: no event. */
	f->now = T0 + 60000;
	from = f->nevents;
	csq_expire(f->csq, f->now);
	check(f);
	/* a at 60 s: de:3, which s1 has: relaxed, then matched. */
	assert_string_equal(events_since(f, from), "relaxed,matched");
	f->now = T0 + 60002;
	csq_expire(f->csq, f->now);
	check(f);
	assert_string_equal(events_since(f, from), "relaxed,matched,relaxed");
	ev = event_of(f, from, CSQ_EV_RELAXED, "a");
	assert_string_equal(ev->needs, "de:3");
	assert_string_equal(ev->dropped, "");
	assert_int_equal(ev->lowered, 2);
	assert_string_equal(room_of(f, "a"), "s1/0");
	ev = event_of(f, from, CSQ_EV_RELAXED, "c"); /* fr:1 stays fr:1 */
	assert_string_equal(ev->needs, "zz:7");
	assert_null(event_of(f, from, CSQ_EV_RELAXED, "b"));
	/* Assigned, a keeps the needs in force. */
	where(f, "a", &u);
	assert_string_equal(u.needs, "de:3");
	assert_int_equal(u.relax_ms, -1);
	/* 120 s: nothing needed; a free room without skills takes them,
	 * in their order. */
	hbs(f, "s2", 2, "q", NULL);
	f->now = T0 + 122000;
	from = f->nevents;
	csq_expire(f->csq, f->now);
	check(f);
	assert_string_equal(events_since(f, from),
	                    "relaxed,matched,relaxed,matched");
	ev = event_of(f, from, CSQ_EV_RELAXED, "b");
	assert_string_equal(ev->needs, "");
	assert_string_equal(ev->dropped, "fr");
	assert_string_equal(room_of(f, "b"), "s2/0");
	assert_string_equal(room_of(f, "c"), "s2/1");
}

/* A relaxed event names what it dropped in name order, whatever order
 * the skills were first seen in (their ids; a state restored from a
 * snapshot numbers them its own way: fuzz_csq saw "fr,de" against
 * "de,fr"). */
static void
test_relax_drop_order(void **state)
{
	struct fixture *f = *state;
	const struct csq_event *ev;
	struct csq_policy p;
	size_t from;

	memset(&p, 0, sizeof(p));
	strcpy(p.name, "q");
	p.nrelax = 1;
	p.relax[0].after_s = 30;
	p.relax[0].drop_all = 1;
	set_policies(f, &p, 1);
	hbs(f, "s1", 1, "other", "zz:1"); /* zz is seen first */
	hbs(f, "s2", 1, "other", "mm:1,aa:1");
	enqn(f, "a", "q", -1, "aa,zz,mm", NULL);
	f->now = T0 + 30000;
	from = f->nevents;
	csq_expire(f->csq, f->now);
	check(f);
	ev = event_of(f, from, CSQ_EV_RELAXED, "a");
	assert_non_null(ev);
	assert_string_equal(ev->dropped, "aa,mm,zz");
	assert_string_equal(ev->needs, "");
}

/* Relaxation and overflow combine: each step and each hop its own
 * deadline; in the new queue its steps, from the first. */
static void
test_relax_and_overflow(void **state)
{
	struct fixture *f = *state;
	struct csq_user_info u;
	struct csq_policy p[2];

	relax_policy(&p[0], "a");
	p[0].overflow_after_s = 45;
	strcpy(p[0].overflow_to, "b");
	relax_policy(&p[1], "b");
	set_policies(f, p, 2);
	enqn(f, "u", "a", -1, "billing:4,de:4", NULL);
	f->now = T0 + 30000;
	csq_expire(f->csq, f->now);
	check(f);
	where(f, "u", &u);
	assert_string_equal(u.needs, "de:4");
	f->now = T0 + 45000;
	csq_expire(f->csq, f->now);
	check(f);
	where(f, "u", &u);
	assert_string_equal(u.queue, "b");
	assert_string_equal(u.needs, "de:4"); /* kept: none asked again */
	assert_int_equal(u.relax_ms, 30000);  /* b's first step */
	f->now = T0 + 45000 + 60000;
	csq_expire(f->csq, f->now);
	check(f);
	where(f, "u", &u);
	assert_string_equal(u.needs, "de:2");
	/* A reload measures the new steps from when it joined b. */
	p[1].relax[2].after_s = 61;
	set_policies(f, p, 2);
	check(f);
	csq_expire(f->csq, f->now + 1000);
	check(f);
	where(f, "u", &u);
	assert_string_equal(u.needs, "");
	/* NEEDS again, when it had no clock left: the steps from the
	 * first, measured from now. */
	enqn(f, "u", NULL, -1, "billing:9", &u);
	assert_string_equal(u.needs, "billing:9");
	assert_int_equal(u.relax_ms, 30000);
	csq_expire(f->csq, f->now + 61000);
	check(f);
	where(f, "u", &u);
	assert_string_equal(u.needs, "");
}

/*
 * A step that an operation leaves due acts inside that operation: a NEEDS
 * that starts the steps again (measured from when the user joined its
 * line), a reload that shortens them. Before, such a step waited for the
 * next pass of the deadlines, so what came of it (a match, its position)
 * depended on when that pass ran: on the memory engine at the next DEBUG
 * CLOCK, on csq.so when csqd's reaper or the module's timer came, and the
 * two engines of the differential test parted.
 */
static void
test_relax_due_in_operation(void **state)
{
	struct fixture *f = *state;
	const struct csq_event *ev;
	struct csq_user_info u;
	struct csq_policy p[2];
	size_t from;

	relax_policy(&p[0], "q");
	p[0].aging_every_s = 1000; /* u has its clock without needs */
	memset(&p[1], 0, sizeof(p[1]));
	strcpy(p[1].name, "r");
	p[1].aging_every_s = 1000; /* v's clock runs from its ENQUEUE */
	set_policies(f, p, 2);
	enqn(f, "u", "q", -1, NULL, NULL);
	enqn(f, "v", "r", -1, "billing:2,de:5", NULL);
	hbs(f, "s1", 1, "r", "de:5");
	f->now = T0 + 35000;
	csq_expire(f->csq, f->now);
	/* NEEDS at 35 s: the 30 s step is due, and acts in the ENQUEUE. */
	from = f->nevents;
	enqn(f, "u", NULL, -1, "billing:2,de:5", &u);
	ev = event_of(f, from, CSQ_EV_RELAXED, "u");
	assert_non_null(ev);
	assert_string_equal(ev->dropped, "billing");
	assert_string_equal(u.needs, "de:5");
	assert_int_equal(u.relax_ms, 25000);
	assert_true(csq_next_deadline(f->csq) > f->now);
	/* A reload that gives r the steps: v's first is due, acts in the
	 * reload, and s1 (de:5) takes v at once. */
	relax_policy(&p[1], "r");
	p[1].aging_every_s = 1000;
	from = f->nevents;
	set_policies(f, p, 2);
	check(f);
	assert_string_equal(events_since(f, from), "relaxed,matched");
	assert_string_equal(room_of(f, "v"), "s1/0");
	assert_true(csq_next_deadline(f->csq) > f->now);
	/* A reload that makes q overflow at once moves u in it. */
	p[0].overflow_after_s = 20;
	strcpy(p[0].overflow_to, "r");
	from = f->nevents;
	set_policies(f, p, 2);
	check(f);
	assert_non_null(event_of(f, from, CSQ_EV_OVERFLOWED, "u"));
	assert_true(csq_next_deadline(f->csq) > f->now);
}

/* A snapshot's item into another state. */
static void
restore_into(void *arg, const struct csq_snap_item *it)
{
	assert_int_equal(csq_restore(arg, it), 0);
}

/*
 * Past every relax step with needs still in force, in a queue with no
 * other clock: its wait goes, and it must not look as if it had passed
 * none (csq_check said "in line without its clocks", and a snapshot of
 * it was refused at restore, so a restart on the journal failed). A
 * return to a line starts the steps again; a NEEDS too.
 */
static void
test_relax_done(void **state)
{
	struct fixture *f = *state;
	struct csq_user_info u;
	struct csq_policy p;
	struct csq_limits l;
	struct csq *b;
	size_t from;

	relax_policy(&p, "q");
	p.nrelax = 2; /* drop billing, lower 2: de:3 stays */
	set_policies(f, &p, 1);
	enqn(f, "u", "q", -1, "de:5,billing:2", NULL);
	f->now += 60000;
	csq_expire(f->csq, f->now);
	check(f);
	where(f, "u", &u);
	assert_string_equal(u.needs, "de:3");
	assert_int_equal(u.relax_ms, -1);
	/* The state as a restart's snapshot takes it, and restores it. */
	csq_limits_default(&l);
	b = csq_new(&l, 7, NULL, NULL);
	assert_int_equal(csq_set_policies(b, f->now, &p, 1), CSQ_OK);
	csq_snapshot(f->csq, restore_into, b);
	assert_int_equal(csq_restore_end(b), 0);
	assert_int_equal(csq_where(b, f->now, "u", &u), CSQ_OK);
	assert_string_equal(u.needs, "de:3");
	assert_int_equal(u.relax_ms, -1);
	csq_free(b);
	/* A servicer that takes it, and gives it back: the steps again,
	 * from the needs in force. */
	hbs(f, "s", 1, "q", "de:3");
	where(f, "u", &u);
	assert_int_equal(u.state, CSQ_USER_ASSIGNED);
	assert_int_equal(csq_logout(f->csq, f->now, "s", &(uint64_t){0}),
	                 CSQ_OK);
	check(f);
	where(f, "u", &u);
	assert_int_equal(u.relax_ms, 30000); /* the first step, again */
	from = f->nevents;
	f->now += 60000;
	csq_expire(f->csq, f->now);
	check(f);
	assert_string_equal(events_since(f, from), "relaxed");
	where(f, "u", &u);
	assert_string_equal(u.needs, "de:1");
	/* NEEDS again, with no clock left to measure from: every step,
	 * from now (as test_relax_and_overflow's). */
	enqn(f, "u", NULL, -1, "billing:4", &u);
	assert_string_equal(u.needs, "billing:4");
	assert_int_equal(u.relax_ms, 30000);
}

/* The randomized run: skills, needs, transfers, policies and the clock,
 * every invariant after each operation. */
#define RAND_OPS      20000
#define RAND_OPS_MIN  2000
#define RAND_SERVICER 6
#define RAND_USER     60

static uint64_t rng = 88172645463325252ULL;

static uint32_t
rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

static void
test_randomized(void **state)
{
	static const char *queues[] = {"default", "q1", "q2"};
	static const char *skills[] = {"",     "de:5,billing:3", "de:2",
	                               "en:4", "billing,en:2",   "fr"};
	static const char *needs[] = {"",   "de", "billing:2", "de:3,billing",
	                              "en", "fr", "de:9"};
	struct fixture *f = *state;
	struct csq_heartbeat_args h;
	struct csq_enqueue_args a;
	struct csq_transfer_args t;
	struct csq_servicer_info si;
	struct csq_user_info u;
	struct csq_policy p[2];
	char sid[16], uid[16], room[32], why[256];
	uint64_t n64;
	int op, known, ops = (int)scale_steps(RAND_OPS, RAND_OPS_MIN);
	unsigned matched_needs = 0, relaxed = 0;
	size_t seen = 0;

	for (op = 0; op < ops; op++) {
		snprintf(sid, sizeof(sid), "s%u", rnd(RAND_SERVICER));
		snprintf(uid, sizeof(uid), "u%u", rnd(RAND_USER));
		snprintf(room, sizeof(room), "%s/%u", sid, rnd(3));
		switch (rnd(10)) {
		case 0:
			memset(&h, 0, sizeof(h));
			h.servicer = sid;
			h.has_capacity = rnd(2);
			h.capacity = 1 + rnd(3);
			h.has_ttl = 1;
			h.ttl_s = 1 + rnd(5);
			h.has_queues = rnd(2);
			h.nqueues = 1 + rnd(2);
			h.queues[0] = queues[rnd(3)];
			h.queues[1] = queues[rnd(3)];
			h.has_skills = rnd(2);
			h.skills = skills[rnd(6)];
			h.has_offer = rnd(5) == 0;
			h.offer_s = rnd(2);
			assert_int_equal(csq_heartbeat(f->csq, f->now, &h, &si),
			                 CSQ_OK);
			break;
		case 1:
		case 2:
			memset(&a, 0, sizeof(a));
			a.user = uid;
			a.has_queue = rnd(2);
			a.queue = queues[rnd(3)];
			a.has_tier = rnd(2);
			a.tier = rnd(3);
			a.has_needs = rnd(3) != 0;
			a.needs = needs[rnd(7)];
			a.has_ttl = 1;
			a.ttl_s = rnd(8);
			assert_int_equal(csq_enqueue(f->csq, f->now, &a, &u),
			                 CSQ_OK);
			matched_needs +=
			    u.state == CSQ_USER_ASSIGNED && u.needs[0] != '\0';
			break;
		case 3:
			csq_release(f->csq, f->now, room, &known);
			break;
		case 4:
			csq_leave(f->csq, f->now, uid, &known);
			break;
		case 5:
			if (rnd(3) == 0)
				csq_logout(f->csq, f->now, sid, &n64);
			else if (rnd(2))
				csq_pause(f->csq, f->now, sid);
			else
				csq_resume(f->csq, f->now, sid);
			break;
		case 6:
			memset(&t, 0, sizeof(t));
			t.room = room;
			t.queue = queues[rnd(3)];
			t.has_needs = rnd(2);
			t.needs = needs[rnd(7)];
			csq_transfer(f->csq, f->now, &t, &u);
			break;
		case 7:
			f->now += rnd(2000);
			csq_expire(f->csq, f->now);
			break;
		case 8:
			csq_accept(f->csq, f->now, room, &known);
			break;
		case 9:
			memset(p, 0, sizeof(p));
			strcpy(p[0].name, "q1");
			p[0].skill_order = rnd(2);
			p[0].has_strategy = 1;
			p[0].strategy = rnd(2) ? CSQ_STRATEGY_LEAST_BUSY
			                       : CSQ_STRATEGY_LONGEST_IDLE;
			strcpy(p[1].name, "q2");
			p[1].aging_every_s = 1 + rnd(2);
			p[1].skill_order = rnd(2);
			if (rnd(2)) {
				relax_policy(&p[0], "q1");
				p[0].relax[0].after_s = 1 + rnd(2);
				p[0].relax[1].after_s = 3;
				p[0].relax[2].after_s = 4 + rnd(3);
				p[0].overflow_after_s = rnd(2) ? 0 : 4;
				strcpy(p[0].overflow_to,
				       p[0].overflow_after_s ? "q2" : "");
			}
			if (rnd(2)) {
				p[1].nrelax = 1;
				p[1].relax[0].after_s = 1 + rnd(3);
				p[1].relax[0].lower = 1 + rnd(4);
			}
			if (rnd(10) == 0)
				assert_int_equal(
				    csq_set_policies(f->csq, f->now, p, 2),
				    CSQ_OK);
			break;
		}
		if (csq_check(f->csq, why, sizeof(why)) != 0)
			fail_msg("after operation %d: %s", op, why);
		/* Every operation runs at a time the pass has reached (case
		 * 7): none may leave a deadline due for the next pass. */
		if (csq_next_deadline(f->csq) <= f->now)
			fail_msg("after operation %d: a deadline left due", op);
		/* The fixture keeps the first events: count them, then
		 * forget them. */
		for (; seen < f->nevents; seen++)
			relaxed += f->events[seen].type == CSQ_EV_RELAXED;
		f->nevents = seen = 0;
	}
	assert_true(matched_needs > 0);
	assert_true(relaxed > 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_lists),
	    cmocka_unit_test_setup_teardown(test_estimate_beside_free_rooms,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bad_lists_change_nothing,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_rule, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_order_among_eligible, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_servicer_order, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_changes, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_takes_follow_changes, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_requeue_and_transfer, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_prefer_needs_skills, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_needset_bound, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_relax_drop_order, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_relax_steps, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_relax_and_overflow, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_relax_due_in_operation, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_relax_done, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_randomized, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
