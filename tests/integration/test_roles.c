/*
 * Access control (protocol-v2 section 9): the users of the configuration
 * and their roles (frontend, servicer, admin), AUTH name password, HELLO
 * AUTH, RESET, the NOPERM texts, channel permissions for SUBSCRIBE and
 * PSUBSCRIBE, unknown commands before NOPERM, no anonymous user when
 * users are set, and a SIGHUP that changes users while connections keep
 * the role they have. On both engines: the roles live in the daemon.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define USERS                                                                  \
	"users = (\n"                                                          \
	"  { name = \"frontend\"; password = \"f-secret-1\"; "                 \
	"role = \"frontend\"; },\n"                                            \
	"  { name = \"agents\"; password = \"a-secret-2\"; "                   \
	"role = \"servicer\"; },\n"                                            \
	"  { name = \"ops\"; password = \"o-secret-3\"; role = \"admin\"; }\n" \
	");\n"
#define NOPERM_CHANNELS                                                        \
	"-NOPERM this user has no permissions to access one of the channels "  \
	"used as arguments"

static int
setup_users(void **state)
{
	return csqd_fx_setup(state, "requirepass = \"d-secret-0\";\n" USERS);
}

static int
setup_users_only(void **state)
{
	return csqd_fx_setup(state, USERS);
}

/* The NOPERM of a command, as Redis words it (a static buffer). */
static const char *
noperm(const char *name)
{
	static char want[160];

	snprintf(want, sizeof(want),
	         "-NOPERM this user has no permissions to run the '%s' "
	         "command",
	         name);
	return want;
}
#define CHECK_NOPERM(c, name, ...)                                             \
	check_at(__FILE__, __LINE__, (c), noperm(name), __VA_ARGS__)

/* A command whose reply is not an error. */
#define CHECK_OK(c, ...)                                                       \
	do {                                                                   \
		redisReply *r_ = cmd_at(__FILE__, __LINE__, (c), __VA_ARGS__); \
		if (r_->type == REDIS_REPLY_ERROR)                             \
			fail_at(__FILE__, __LINE__, "error: %s", r_->str);     \
		freeReplyObject(r_);                                           \
	} while (0)

/* The commands every role may run. */
static void
check_everyone(redisContext *c)
{
	CHECK(c, "+PONG", "PING");
	CHECK_OK(c, "INFO");
	CHECK(c, "+OK", "CLIENT SETNAME app");
	CHECK(c, "'app'", "CLIENT GETNAME");
	CHECK_OK(c, "CLIENT ID");
	CHECK(c, "+OK", "CLIENT SETINFO lib-name x");
	CHECK(c, "+OK", "SELECT 0");
	CHECK_OK(c, "COMMAND");
	CHECK_OK(c, "COMMAND COUNT");
	CHECK(c, "['unsubscribe',nil,:0]", "UNSUBSCRIBE");
	CHECK(c, "['punsubscribe',nil,:0]", "PUNSUBSCRIBE");
}

/*
 * INFO for a role other than admin (issue 37: a frontend read the
 * counters that STATS refuses it, the pid and the paths): the server
 * section without the pid and the configuration's path, csq's engine and
 * engine_up only, no other section whatever it asks for. admin: all.
 */
static void
check_info(redisContext *c, int admin)
{
	static const char *const secret[] = {
	    "process_id:", "config_file:", "enqueued_total:", "waiting:",
	    "# Clients",   "# Memory",     "# Persistence",   "# Stats",
	    "# Keyspace",  "# CPU",        "cmdstat_",        "journal",
	};
	static const char *const asks[] = {"INFO", "INFO everything",
	                                   "INFO csq", "INFO server stats"};
	redisReply *r;
	size_t i, k;

	for (k = 0; k < sizeof(asks) / sizeof(asks[0]); k++) {
		r = CMD(c, asks[k]);
		assert_int_equal(r->type, REDIS_REPLY_STRING);
		if (k != 2)
			assert_non_null(strstr(r->str, "redis_version:"));
		if (k < 3)
			assert_non_null(strstr(r->str, "engine_up:1"));
		/* An admin's INFO everything has them all; another role's
		 * answer has none, whatever it asked. */
		for (i = 0; i < sizeof(secret) / sizeof(secret[0]); i++)
			if ((admin ? k == 1 : 1) &&
			    admin != (strstr(r->str, secret[i]) != NULL))
				fail_msg("%s as %s: %s %s", asks[k],
				         admin ? "admin" : "another role",
				         secret[i],
				         admin ? "missing" : "shown");
		freeReplyObject(r);
	}
}

/* The frontend: ENQUEUE, TOUCH, LEAVE, WHERE, QLEN; user: and queue:
 * channels; nothing of servicers, nothing of the admin. */
static void
role_frontend(void **state)
{
	struct csqd_fx *fx = *state;
	redisContext *c = csqd_connect(fx->d), *admin = fx->c;

	CHECK(admin, "+OK", "AUTH ops o-secret-3");
	CHECK_OK(admin, "HEARTBEAT s1 CAPACITY 1 QUEUES busy");
	CHECK(c, "+OK", "AUTH frontend f-secret-1");
	CHECK_OK(c, "ENQUEUE u1");
	CHECK(c, ":1", "TOUCH u1");
	CHECK_OK(c, "WHERE u1");
	CHECK(c, ":1", "QLEN default");
	CHECK(c, ":1", "LEAVE u1");
	CHECK_OK(c, "ENQUEUE u2 QUEUE busy");
	CHECK_NOPERM(c, "heartbeat", "HEARTBEAT s2");
	CHECK_NOPERM(c, "release", "RELEASE s1/0");
	CHECK_NOPERM(c, "pause", "PAUSE s1");
	CHECK_NOPERM(c, "resume", "RESUME s1");
	CHECK_NOPERM(c, "logout", "LOGOUT s1");
	CHECK_NOPERM(c, "queue", "QUEUE default");
	CHECK_NOPERM(c, "servicers", "SERVICERS");
	CHECK_NOPERM(c, "stats", "STATS");
	CHECK_NOPERM(c, "echo", "ECHO hi");
	/* Nothing was changed by the refused commands. */
	CHECK(admin, ":1", "RELEASE s1/0");
	check_everyone(c);
	check_info(c, 0);
	check_info(admin, 1);
	/* Unknown commands and wrong arities come first, as in Redis. */
	CHECK(c, "-ERR unknown command 'NOSUCH'", "NOSUCH a");
	CHECK(c, "-ERR wrong number of arguments for 'heartbeat' command",
	      "HEARTBEAT");
	CHECK(c, "-ERR unknown subcommand 'nope'. Try CLIENT HELP.",
	      "CLIENT nope");
	/* Channels: user: and queue:, by name or by a pattern whose literal
	 * prefix is one of them. */
	CHECK(c, NOPERM_CHANNELS, "SUBSCRIBE user:u2 events");
	CHECK(c, NOPERM_CHANNELS, "SUBSCRIBE servicer:s1");
	CHECK(c, NOPERM_CHANNELS, "PSUBSCRIBE *");
	CHECK(c, NOPERM_CHANNELS, "PSUBSCRIBE user*");
	CHECK(c, NOPERM_CHANNELS, "PSUBSCRIBE us?r:*");
	CHECK(c, NOPERM_CHANNELS, "PSUBSCRIBE user:* servicer:*");
	CHECK(c, "+PONG", "PING"); /* none of them subscribed */
	CHECK(c, "['subscribe','user:u2',:1]", "SUBSCRIBE user:u2");
	CHECK(c, "['subscribe','queue:busy',:2]", "SUBSCRIBE queue:busy");
	CHECK(c, "['psubscribe','queue:[ab]*',:3]", "PSUBSCRIBE queue:[ab]*");
	CHECK(c, "['psubscribe','user:*',:4]", "PSUBSCRIBE user:*");
	CHECK(c, NOPERM_CHANNELS, "SUBSCRIBE events");
	redisFree(c);
}

/* The servicer: its commands and servicer: and queue: channels. */
static void
role_servicer(void **state)
{
	struct csqd_fx *fx = *state;
	redisContext *c = fx->c;

	CHECK(c, "+OK", "AUTH agents a-secret-2");
	CHECK_OK(c, "HEARTBEAT s1 CAPACITY 2");
	CHECK(c, "+OK", "PAUSE s1");
	CHECK(c, "+OK", "RESUME s1");
	CHECK(c, ":0", "RELEASE s1/0");
	CHECK_OK(c, "WHERE u1");
	CHECK(c, "[]", "QUEUE default");
	CHECK(c, ":0", "QLEN default");
	CHECK(c, ":0", "LOGOUT s1");
	CHECK_NOPERM(c, "enqueue", "ENQUEUE u1");
	CHECK_NOPERM(c, "touch", "TOUCH u1");
	CHECK_NOPERM(c, "leave", "LEAVE u1");
	CHECK_NOPERM(c, "servicers", "SERVICERS");
	CHECK_NOPERM(c, "stats", "STATS");
	check_everyone(c);
	check_info(c, 0);
	CHECK(c, NOPERM_CHANNELS, "SUBSCRIBE user:u1");
	CHECK(c, NOPERM_CHANNELS, "PSUBSCRIBE user:*");
	CHECK(c, "['subscribe','servicer:s1',:1]", "SUBSCRIBE servicer:s1");
	CHECK(c, "['psubscribe','queue:*',:2]", "PSUBSCRIBE queue:*");
}

/* The admin, by name or as requirepass's default user: everything. */
static void
role_admin(void **state)
{
	struct csqd_fx *fx = *state;
	redisContext *c = csqd_connect(fx->d);

	CHECK(fx->c, "+OK", "AUTH ops o-secret-3");
	CHECK(c, "+OK", "AUTH d-secret-0");
	CHECK(c, "+OK", "AUTH default d-secret-0");
	CHECK_OK(fx->c, "HEARTBEAT s1");
	CHECK_OK(fx->c, "ENQUEUE u1");
	CHECK_OK(c, "SERVICERS");
	CHECK_OK(c, "STATS");
	CHECK(c, "'hi'", "ECHO hi");
	check_everyone(c);
	CHECK(c, "['subscribe','events',:1]", "SUBSCRIBE events");
	CHECK(fx->c, "['psubscribe','*',:1]", "PSUBSCRIBE *");
	redisFree(c);
}

/*
 * Wrong pairs, a failed AUTH that leaves the connection as it was (as in
 * Redis), a second AUTH that changes the role, HELLO AUTH, RESET.
 */
static void
auth_switches(void **state)
{
	struct csqd_fx *fx = *state;
	redisContext *c = fx->c;
	redisReply *r;

	CHECK(c, "-NOAUTH Authentication required.", "ENQUEUE u1");
	CHECK(c, "-WRONGPASS invalid username-password pair",
	      "AUTH frontend a-secret-2");
	CHECK(c, "-WRONGPASS invalid username-password pair",
	      "AUTH nobody f-secret-1");
	CHECK(c, "-WRONGPASS invalid username-password pair",
	      "AUTH f-secret-1");
	CHECK(c, "-NOAUTH Authentication required.", "ENQUEUE u1");
	CHECK(c, "+OK", "AUTH frontend f-secret-1");
	CHECK(c, "-WRONGPASS invalid username-password pair",
	      "AUTH agents wrong");
	CHECK_OK(c, "ENQUEUE u1"); /* still the frontend */
	CHECK(c, "+OK", "AUTH agents a-secret-2");
	CHECK_NOPERM(c, "enqueue", "ENQUEUE u1");
	CHECK_OK(c, "HEARTBEAT s1");
	/* HELLO with AUTH: its reply, then the role. */
	r = CMD(c, "HELLO 2 AUTH frontend f-secret-1");
	assert_int_equal(r->type, REDIS_REPLY_ARRAY);
	freeReplyObject(r);
	CHECK_OK(c, "ENQUEUE u2");
	CHECK_NOPERM(c, "heartbeat", "HEARTBEAT s1");
	CHECK(c, "-WRONGPASS invalid username-password pair",
	      "HELLO 2 AUTH agents nope");
	CHECK_NOPERM(c, "heartbeat", "HEARTBEAT s1");
	/* RESET: as a new connection, which must authenticate. */
	CHECK(c, "+RESET", "RESET");
	CHECK(c, "-NOAUTH Authentication required.", "ENQUEUE u3");
	CHECK(c, "-NOAUTH Authentication required.", "HEARTBEAT s1");
	r = CMD(c, "HELLO 2 AUTH ops o-secret-3");
	assert_int_equal(r->type, REDIS_REPLY_ARRAY);
	freeReplyObject(r);
	CHECK_OK(c, "STATS");
}

/* HELLO 3 AUTH (hiredis 0.14 reads no RESP3: a raw socket): the map,
 * then the frontend's role. */
static void
hello3_auth(void **state)
{
	struct csqd_fx *fx = *state;
	char buf[2048];
	int fd = raw_connect(fx->d->port), closed;

	raw_sends(fd, "HELLO 3 AUTH frontend f-secret-1\r\nHEARTBEAT s1\r\n"
	              "QLEN default\r\n");
	raw_read_until(fd, buf, sizeof(buf), "command\r\n:0\r\n", 500, &closed);
	assert_memory_equal(buf, "%7\r\n", 4);
	assert_non_null(strstr(buf, "-NOPERM this user has no permissions to "
	                            "run the 'heartbeat' command\r\n:0\r\n"));
	close(fd);
}

/* users without requirepass: no anonymous user, no default user. */
static void
no_anonymous(void **state)
{
	struct csqd_fx *fx = *state;
	redisContext *c = fx->c;

	CHECK(c, "-NOAUTH Authentication required.", "PING");
	CHECK(c, "-WRONGPASS invalid username-password pair", "AUTH anything");
	CHECK(c, "-WRONGPASS invalid username-password pair",
	      "AUTH default anything");
	CHECK(c, "-WRONGPASS invalid username-password pair",
	      "AUTH default ''");
	CHECK(c, "-NOAUTH Authentication required.", "QLEN default");
	CHECK(c, "+OK", "AUTH agents a-secret-2");
	CHECK(c, ":0", "QLEN default");
}

/*
 * SIGHUP with users changed: a connection keeps the role it has until it
 * authenticates again; new logins use the new users. Passwords never
 * reach the log, wrong or right, nor does the reload name them.
 */
static void
reload_users(void **state)
{
	struct csqd_fx *fx = *state;
	redisContext *fe = fx->c, *c;

	CHECK(fe, "+OK", "AUTH frontend f-secret-1");
	CHECK(fe, "-WRONGPASS invalid username-password pair",
	      "AUTH frontend wrong-pw-leak-4");
	csqd_rewrite_conf(fx->d,
	                  "users = (\n"
	                  "  { name = \"frontend\"; password = \"f-new-5\"; "
	                  "role = \"servicer\"; },\n"
	                  "  { name = \"ops\"; password = \"o-secret-3\"; "
	                  "role = \"admin\"; }\n"
	                  ");\n");
	kill(fx->d->pid, SIGHUP);
	csqd_wait_log(fx->d, "changed=\"requirepass, users\"");
	/* Still the frontend it logged in as. */
	CHECK_OK(fe, "ENQUEUE u1");
	CHECK_NOPERM(fe, "heartbeat", "HEARTBEAT s1");
	c = csqd_connect(fx->d);
	CHECK(c, "-NOAUTH Authentication required.", "PING");
	CHECK(c, "-WRONGPASS invalid username-password pair",
	      "AUTH frontend f-secret-1");
	CHECK(c, "-WRONGPASS invalid username-password pair",
	      "AUTH agents a-secret-2");
	CHECK(c, "-WRONGPASS invalid username-password pair",
	      "AUTH d-secret-0");
	CHECK(c, "+OK", "AUTH frontend f-new-5");
	CHECK_OK(c, "HEARTBEAT s1");
	CHECK_NOPERM(c, "enqueue", "ENQUEUE u2");
	/* The old connection takes the new role when it logs in again. */
	CHECK(fe, "+OK", "AUTH frontend f-new-5");
	CHECK_NOPERM(fe, "enqueue", "ENQUEUE u3");
	redisFree(c);
	assert_false(file_contains(fx->d->log_path, "secret"));
	assert_false(file_contains(fx->d->log_path, "wrong-pw-leak"));
	assert_false(file_contains(fx->d->log_path, "f-new-5"));
}

/* A pipeline mixing allowed and refused commands: each reply in order,
 * the refused ones changing nothing. */
static void
pipeline_mixed(void **state)
{
	struct csqd_fx *fx = *state;
	redisContext *c = fx->c;
	redisReply *r;
	int i;

	CHECK(c, "+OK", "AUTH frontend f-secret-1");
	for (i = 0; i < 100; i++)
		if (i % 2 == 0)
			redisAppendCommand(c, "ENQUEUE p%d", i);
		else
			redisAppendCommand(c, "HEARTBEAT s%d", i);
	for (i = 0; i < 100; i++) {
		assert_int_equal(redisGetReply(c, (void **)&r), REDIS_OK);
		if (i % 2 == 0)
			assert_int_equal(r->type, REDIS_REPLY_ARRAY);
		else
			assert_reply_error(r, "NOPERM this user has no "
			                      "permissions to run the "
			                      "'heartbeat' command");
		freeReplyObject(r);
	}
	CHECK(c, ":50", "QLEN default");
	CHECK(c, "+OK", "AUTH ops o-secret-3");
	CHECK(c, "[]", "SERVICERS");
}

/*
 * MULTI: a command outside the role is refused when it is queued, and
 * the block is aborted (protocol-v2 section 9); a block of allowed
 * commands runs.
 */
static void
multi_checked_when_queued(void **state)
{
	struct csqd_fx *fx = *state;
	redisContext *c = fx->c;

	CHECK(c, "+OK", "AUTH frontend f-secret-1");
	CHECK(c, "+OK", "MULTI");
	CHECK(c, "+QUEUED", "ENQUEUE m1");
	CHECK_NOPERM(c, "heartbeat", "HEARTBEAT s1");
	CHECK(c, "+QUEUED", "ENQUEUE m2");
	CHECK(c, "-EXECABORT Transaction discarded because of previous errors.",
	      "EXEC");
	CHECK(c, ":0", "QLEN default");
	CHECK(c, "+OK", "MULTI");
	CHECK(c, "+QUEUED", "ENQUEUE m1");
	CHECK(c, "+QUEUED", "QLEN default");
	CHECK_OK(c, "EXEC");
	CHECK(c, ":1", "QLEN default");
	CHECK(c, "+OK", "MULTI");
	CHECK(c, "+OK", "DISCARD");
}

/* Users bound to ids (issue 37): a servicer credential acted for every
 * servicer, a frontend's for every user. */
#define BOUND_USERS                                                            \
	"users = (\n"                                                          \
	"  { name = \"web\"; password = \"w-1\"; role = \"frontend\"; "        \
	"ids = \"web-*\"; },\n"                                                \
	"  { name = \"alice\"; password = \"a-1\"; role = \"servicer\"; "      \
	"ids = [ \"alice\", \"alice-[0-9]\" ]; },\n"                           \
	"  { name = \"bob\"; password = \"b-1\"; role = \"servicer\"; "        \
	"ids = \"bob\"; },\n"                                                  \
	"  { name = \"agents\"; password = \"g-1\"; role = \"servicer\"; },\n" \
	"  { name = \"ops\"; password = \"o-1\"; role = \"admin\"; }\n"        \
	");\n"

static int
setup_bound(void **state)
{
	return csqd_fx_setup(state, BOUND_USERS);
}

/* The NOPERM of an id (a static buffer). */
static const char *
noperm_id(const char *id)
{
	static char want[160];

	snprintf(want, sizeof(want),
	         "-NOPERM this user has no permissions to act for the id "
	         "'%s'",
	         id);
	return want;
}
#define CHECK_NOPERM_ID(c, id, ...)                                            \
	check_at(__FILE__, __LINE__, (c), noperm_id(id), __VA_ARGS__)

/*
 * A servicer user bound to its ids: alice (alice, alice-0..9) cannot
 * accept, release, transfer, pause or log out bob, nor his room, nor hear
 * his channel; the refusals change nothing, alone, in a pipeline or in
 * MULTI. An unbound servicer user acts for anyone, as before.
 */
static void
bound_servicer(void **state)
{
	struct csqd_fx *fx = *state;
	redisContext *ops = fx->c, *alice = csqd_connect(fx->d),
	             *bob = csqd_connect(fx->d), *any = csqd_connect(fx->d);
	static const char *const on_bob[] = {"RELEASE bob/0",
	                                     "ACCEPT bob/0",
	                                     "DECLINE bob/0",
	                                     "READY bob/0",
	                                     "TRANSFER bob/0 other",
	                                     "PAUSE bob",
	                                     "RESUME bob",
	                                     "LOGOUT bob",
	                                     "ROOMS bob",
	                                     "HEARTBEAT bob CAPACITY 1000",
	                                     "RELEASE bob",
	                                     "HEARTBEAT alice-10",
	                                     "HEARTBEAT xalice"};
	redisReply *r;
	size_t i;

	CHECK(ops, "+OK", "AUTH ops o-1");
	CHECK(alice, "+OK", "AUTH alice a-1");
	CHECK(bob, "+OK", "AUTH bob b-1");
	CHECK(any, "+OK", "AUTH agents g-1");
	CHECK_OK(bob, "HEARTBEAT bob QUEUES q");
	CHECK_OK(ops, "ENQUEUE u1 QUEUE q");
	CHECK_OK(alice, "HEARTBEAT alice QUEUES other");
	CHECK_OK(alice, "HEARTBEAT alice-2 QUEUES other");
	for (i = 0; i < sizeof(on_bob) / sizeof(on_bob[0]); i++) {
		const char *id = strchr(on_bob[i], ' ') + 1;
		char want[80];

		snprintf(want, sizeof(want), "%.*s", (int)strcspn(id, " "), id);
		CHECK_NOPERM_ID(alice, want, on_bob[i]);
	}
	/* Nothing changed: u1 is still in bob's room, bob still serves. */
	r = CMD(ops, "WHERE u1");
	assert_string_equal(FIELD_STR(r, "room"), "bob/0");
	freeReplyObject(r);
	/* A pipeline: each reply in order, the refused one changing
	 * nothing. */
	redisAppendCommand(alice, "HEARTBEAT alice-3 QUEUES other");
	redisAppendCommand(alice, "LOGOUT bob");
	redisAppendCommand(alice, "ROOMS alice-3");
	r = GET_REPLY(alice);
	assert_int_equal(r->type, REDIS_REPLY_ARRAY);
	freeReplyObject(r);
	r = GET_REPLY(alice);
	assert_reply_error(r, noperm_id("bob") + 1);
	freeReplyObject(r);
	r = GET_REPLY(alice);
	assert_int_equal(r->type, REDIS_REPLY_ARRAY);
	freeReplyObject(r);
	/* MULTI: refused when queued, the block aborted. */
	CHECK(alice, "+OK", "MULTI");
	CHECK(alice, "+QUEUED", "LOGOUT alice-3");
	CHECK_NOPERM_ID(alice, "bob/0", "RELEASE bob/0");
	CHECK(alice,
	      "-EXECABORT Transaction discarded because of previous errors.",
	      "EXEC");
	CHECK_OK(alice, "ROOMS alice-3"); /* not logged out */
	r = CMD(ops, "WHERE u1");
	assert_string_equal(FIELD_STR(r, "room"), "bob/0");
	freeReplyObject(r);
	/* Its own channel and its own glob; not bob's, nor every one. */
	CHECK(alice, NOPERM_CHANNELS, "SUBSCRIBE servicer:bob");
	CHECK(alice, NOPERM_CHANNELS, "PSUBSCRIBE servicer:*");
	CHECK(alice, NOPERM_CHANNELS, "PSUBSCRIBE servicer:b*");
	CHECK(alice, "['subscribe','servicer:alice',:1]",
	      "SUBSCRIBE servicer:alice");
	CHECK(alice, "['psubscribe','servicer:alice-[0-9]',:2]",
	      "PSUBSCRIBE servicer:alice-[0-9]");
	CHECK(alice, "['subscribe','queue:q',:3]", "SUBSCRIBE queue:q");
	/* Bob acts for bob; the unbound user for anyone, as before. */
	CHECK(bob, ":1", "RELEASE bob/0");
	CHECK_OK(any, "HEARTBEAT alice-3 CAPACITY 2 QUEUES other");
	CHECK(any, ":0", "LOGOUT alice-3");
	redisFree(alice);
	redisFree(bob);
	redisFree(any);
}

/*
 * A frontend user bound to "web-*": it enqueues, touches, removes and
 * asks about its users only, and hears only their channels; queues are
 * anyone's.
 */
static void
bound_frontend(void **state)
{
	struct csqd_fx *fx = *state;
	redisContext *ops = fx->c, *web = csqd_connect(fx->d);

	CHECK(ops, "+OK", "AUTH ops o-1");
	CHECK(web, "+OK", "AUTH web w-1");
	CHECK_OK(ops, "ENQUEUE u1 QUEUE q");
	CHECK_OK(web, "ENQUEUE web-1 QUEUE q");
	CHECK_OK(web, "ENQUEUE web-2 QUEUE q PREFER bob 60");
	CHECK(web, ":1", "TOUCH web-1");
	CHECK_OK(web, "WHERE web-2");
	CHECK_NOPERM_ID(web, "u1", "ENQUEUE u1 QUEUE other");
	CHECK_NOPERM_ID(web, "u1", "TOUCH u1");
	CHECK_NOPERM_ID(web, "u1", "LEAVE u1");
	CHECK_NOPERM_ID(web, "u1", "WHERE u1");
	CHECK_NOPERM_ID(web, "xweb-1", "ENQUEUE xweb-1");
	CHECK(web, ":3", "QLEN q");
	CHECK(web, ":1", "LEAVE web-2");
	CHECK(ops, ":2", "QLEN q");
	/* The user moved by no one: still in q. */
	CHECK(ops, ":1", "LEAVE u1");
	CHECK(web, NOPERM_CHANNELS, "SUBSCRIBE user:u1");
	CHECK(web, NOPERM_CHANNELS, "PSUBSCRIBE user:*");
	CHECK(web, NOPERM_CHANNELS, "PSUBSCRIBE user:web-1*");
	CHECK(web, "['subscribe','user:web-1',:1]", "SUBSCRIBE user:web-1");
	CHECK(web, "['psubscribe','user:web-*',:2]", "PSUBSCRIBE user:web-*");
	CHECK(web, "['subscribe','queue:q',:3]", "SUBSCRIBE queue:q");
	redisFree(web);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(role_frontend, setup_users,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(role_servicer, setup_users,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(role_admin, setup_users,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(auth_switches, setup_users,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(hello3_auth, setup_users,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(no_anonymous, setup_users_only,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(reload_users, setup_users,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(pipeline_mixed, setup_users,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(multi_checked_when_queued,
	                                    setup_users, csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(bound_servicer, setup_bound,
	                                    csqd_fx_teardown),
	    cmocka_unit_test_setup_teardown(bound_frontend, setup_bound,
	                                    csqd_fx_teardown),
	};

	csqd_init(argc, argv);
	return cmocka_run_group_tests_name("roles", tests, NULL, NULL);
}
