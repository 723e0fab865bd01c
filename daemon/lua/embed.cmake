# Writes the Lua script of the Redis engine into a C file, as one string
# constant: cmake -DDIR=<lua dir> -DOUT=<file.c> -DNAMES=a,b,c -P embed.cmake
# The script is common.lua, then each of NAMES (the operations), then
# batch.lua; the file defines redis_lua_source (daemon/redis_scripts.h).
function(csq_lua_literal file var)
  file(READ ${file} body)
  string(REPLACE "\\" "\\\\" body "${body}")
  string(REPLACE "\"" "\\\"" body "${body}")
  string(REPLACE "\n" "\\n\"\n    \"" body "${body}")
  set(${var} "    \"${body}\"" PARENT_SCOPE)
endfunction()

set(out "/* Generated from daemon/lua by embed.cmake: do not edit. */\n")
string(APPEND out "#include \"redis_scripts.h\"\n\n")
string(APPEND out "const char redis_lua_source[] =\n")
string(REPLACE "," ";" names "${NAMES}")
foreach(name common ${names} batch)
  csq_lua_literal(${DIR}/${name}.lua lit)
  string(APPEND out "${lit}\n")
endforeach()
string(APPEND out "    ;\n")
file(WRITE ${OUT} "${out}")
