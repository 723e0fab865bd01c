# Writes the Lua scripts of the Redis engine into a C file, as string
# constants: cmake -DDIR=<lua dir> -DOUT=<file.c> -DNAMES=a,b,c -P embed.cmake
# The file defines redis_lua_common and redis_lua[], NAMES in the order of
# enum redis_script (daemon/redis_scripts.h).
function(csq_lua_literal file var)
  file(READ ${file} body)
  string(REPLACE "\\" "\\\\" body "${body}")
  string(REPLACE "\"" "\\\"" body "${body}")
  string(REPLACE "\n" "\\n\"\n    \"" body "${body}")
  set(${var} "    \"${body}\"" PARENT_SCOPE)
endfunction()

set(out "/* Generated from daemon/lua by embed.cmake: do not edit. */\n")
string(APPEND out "#include \"redis_scripts.h\"\n\n")
csq_lua_literal(${DIR}/common.lua lit)
string(APPEND out "const char redis_lua_common[] =\n${lit};\n\n")
set(table "")
string(REPLACE "," ";" names "${NAMES}")
foreach(name ${names})
  csq_lua_literal(${DIR}/${name}.lua lit)
  string(APPEND out "static const char lua_${name}[] =\n${lit};\n\n")
  string(APPEND table "    lua_${name},\n")
endforeach()
string(APPEND out "const char *const redis_lua[REDIS_NSCRIPTS] = {\n${table}};\n")
file(WRITE ${OUT} "${out}")
