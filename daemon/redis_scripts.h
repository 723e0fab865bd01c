/*
 * The Lua script of the Redis engine, compiled into csqd from daemon/lua/
 * by daemon/lua/embed.cmake: common.lua, one file per operation (each adds
 * OPS.<name>), then batch.lua, which runs the operations of one call.
 */
#ifndef CSQD_REDIS_SCRIPTS_H
#define CSQD_REDIS_SCRIPTS_H

extern const char redis_lua_source[];

#endif
