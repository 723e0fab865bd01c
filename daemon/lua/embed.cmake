# Writes the Lua script of the Redis engine into a C file, as one string
# constant, and as it is into a .lua file beside it (to read, or to load by
# hand): cmake -DDIR=<lua dir> -DOUT=<file.c> -DNAMES=a,b,c -P embed.cmake
#
# The script is common.lua, then make_op(name), which holds each of NAMES
# (the operations) in one branch, then batch.lua; the file defines
# redis_lua_source (daemon/redis_scripts.h). Lua 5.1 builds a function's
# closure, with all its upvalues, each time the script runs: wrapped so,
# an operation's function is built only by a call that runs it, and its
# upvalues are copied from make_op's instead of looked up one by one.
set(script "")
file(READ ${DIR}/common.lua body)
string(APPEND script "${body}")
string(APPEND script
       "\n-- The operations, each built at its first use in a call (embed.cmake).\n"
       "local function make_op(name)\n"
       "if name == nil then\n")
string(REPLACE "," ";" names "${NAMES}")
foreach(name ${names})
  file(READ ${DIR}/${name}.lua body)
  string(APPEND script "elseif name == '${name}' then\n${body}")
endforeach()
string(APPEND script "end\nend\n")
file(READ ${DIR}/batch.lua body)
string(APPEND script "${body}")

string(REGEX REPLACE "\\.c$" ".lua" lua_out "${OUT}")
file(WRITE ${lua_out} "${script}")

string(REPLACE "\\" "\\\\" lit "${script}")
string(REPLACE "\"" "\\\"" lit "${lit}")
string(REPLACE "\n" "\\n\"\n    \"" lit "${lit}")
set(out "/* Generated from daemon/lua by embed.cmake: do not edit. */\n")
string(APPEND out "#include \"redis_scripts.h\"\n\n")
string(APPEND out "const char redis_lua_source[] =\n    \"${lit}\";\n")
file(WRITE ${OUT} "${out}")
