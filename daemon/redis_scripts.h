/*
 * The Lua of the Redis engine, compiled into csqd from daemon/lua/ by
 * daemon/lua/embed.cmake: common.lua, one file per operation (each adds
 * OPS.<name>), then batch.lua, which runs the operations of one call. The
 * same text twice: as a script (EVALSHA) and as a function library
 * (FUNCTION LOAD, then FCALL of redis_lua_function, which is also the
 * library's name).
 */
#ifndef CSQD_REDIS_SCRIPTS_H
#define CSQD_REDIS_SCRIPTS_H

extern const char redis_lua_source[];
extern const char redis_lua_library[];
extern const char redis_lua_function[];

#endif
