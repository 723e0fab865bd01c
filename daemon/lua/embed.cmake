# Writes the Lua of the Redis engine into a C file, in two forms, and each
# as it is into a .lua file beside it (to read, or to load by hand):
# cmake -DDIR=<lua dir> -DOUT=<file.c> -DNAMES=a,b,c -P embed.cmake
#
# The body is common.lua, then make_op(name), whose makers hold each of
# NAMES (the operations) in one branch, then batch.lua, which defines
# call().
# - redis_lua_library (<out>.library.lua): the body as a function library
#   for FUNCTION LOAD (Redis 7), named csq_<hash of the body>, with one
#   function of the same name, call. Its top level runs once, when Redis
#   loads it; a call runs call() only.
# - redis_lua_source (<out>.lua): the body as a script, for EVALSHA, ending
#   in "return call(KEYS, ARGV)". Lua 5.1 builds every function of a script
#   again on each call: wrapped in make_op, an operation's function is
#   built only by a call that runs it.
# Two builds of the same text have the same name, and a changed text a new
# one, so daemons of two versions on one Redis never call each other's.
set(body "")
file(READ ${DIR}/common.lua part)
string(APPEND body "${part}")
# The makers go in groups of OPS_PER_MAKER: Lua 5.1 allows a function 60
# upvalues, and a maker's are those of all the operations it holds.
set(OPS_PER_MAKER 4)
string(APPEND body
       "\n-- The operations, each built at its first use (embed.cmake).\n")
string(REPLACE "," ";" names "${NAMES}")
set(group 0)
set(in_group 0)
set(makers "")
foreach(name ${names})
  if(in_group EQUAL 0)
    math(EXPR group "${group} + 1")
    string(APPEND body "local function make_op_${group}(name)\n"
                       "if name == nil then\n")
    list(APPEND makers make_op_${group})
  endif()
  file(READ ${DIR}/${name}.lua part)
  string(APPEND body "elseif name == '${name}' then\n${part}")
  math(EXPR in_group "${in_group} + 1")
  if(in_group EQUAL OPS_PER_MAKER)
    string(APPEND body "end\nend\n")
    set(in_group 0)
  endif()
endforeach()
if(NOT in_group EQUAL 0)
  string(APPEND body "end\nend\n")
endif()
string(APPEND body "local function make_op(name)\n")
foreach(maker ${makers})
  string(APPEND body "${maker}(name)\n")
endforeach()
string(APPEND body "end\n")
file(READ ${DIR}/batch.lua part)
string(APPEND body "${part}")

string(SHA1 hash "${body}")
string(SUBSTRING "${hash}" 0 16 hash)
set(fname "csq_${hash}")
set(script "${body}\nreturn call(KEYS, ARGV)\n")
set(library "#!lua name=${fname}\n${body}\n")
string(APPEND library "redis.register_function('${fname}', call)\n")

string(REGEX REPLACE "\\.c$" "" base "${OUT}")
file(WRITE ${base}.lua "${script}")
file(WRITE ${base}.library.lua "${library}")

function(c_literal text var)
  string(REPLACE "\\" "\\\\" lit "${text}")
  string(REPLACE "\"" "\\\"" lit "${lit}")
  string(REPLACE "\n" "\\n\"\n    \"" lit "${lit}")
  set(${var} "${lit}" PARENT_SCOPE)
endfunction()
c_literal("${script}" script_lit)
c_literal("${library}" library_lit)
set(out "/* Generated from daemon/lua by embed.cmake: do not edit. */\n")
string(APPEND out "#include \"redis_scripts.h\"\n\n")
string(APPEND out "const char redis_lua_source[] =\n    \"${script_lit}\";\n\n")
string(APPEND out "const char redis_lua_library[] =\n    \"${library_lit}\";\n\n")
string(APPEND out "const char redis_lua_function[] = \"${fname}\";\n")
file(WRITE ${OUT} "${out}")
