/*
 * The Lua scripts of the Redis engine, compiled into csqd from daemon/lua/
 * by daemon/lua/embed.cmake. Each script is redis_lua_common followed by
 * one operation; the order here is the order of REDIS_SCRIPTS in
 * daemon/CMakeLists.txt.
 */
#ifndef CSQD_REDIS_SCRIPTS_H
#define CSQD_REDIS_SCRIPTS_H

enum redis_script {
	REDIS_HEARTBEAT,
	REDIS_STATUS, /* PAUSE and RESUME */
	REDIS_LOGOUT,
	REDIS_RELEASE,
	REDIS_ENQUEUE,
	REDIS_TOUCH,
	REDIS_LEAVE,
	REDIS_WHERE,
	REDIS_QUEUE,
	REDIS_QLEN,
	REDIS_SERVICERS,
	REDIS_STATS,
	REDIS_EXPIRE, /* the reaper */
	REDIS_PEEK,   /* the earliest deadline: the health check */
	REDIS_NSCRIPTS
};

extern const char redis_lua_common[];
extern const char *const redis_lua[REDIS_NSCRIPTS];

#endif
