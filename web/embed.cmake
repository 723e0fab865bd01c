# Writes the files of the admin page (web/admin/) into a C file, as bytes,
# so that csqd serves them from its binary: nothing is read or fetched at
# run time, and no Node is needed to build.
# cmake -DDIR=<web/admin> -DOUT=<file.c> -P embed.cmake
#
# Each file becomes an entry of admin_assets[] (admin_page.h): its path
# under DIR and its bytes. The files are listed in the order of their
# paths, so that two builds of the same tree write the same C.
file(GLOB_RECURSE files RELATIVE ${DIR} ${DIR}/*)
list(SORT files)
set(out "/* Generated from web/admin by web/embed.cmake: do not edit. */\n")
string(APPEND out "#include \"admin_page.h\"\n\n")
set(table "")
set(i 0)
foreach(path ${files})
  file(READ ${DIR}/${path} hex HEX)
  string(LENGTH "${hex}" hexlen)
  math(EXPR len "${hexlen} / 2")
  # Sixteen bytes a line: "0x..," each.
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  string(REGEX REPLACE "((0x[0-9a-f][0-9a-f],){16})" "\\1\n    " bytes
         "${bytes}")
  string(APPEND out "static const unsigned char asset_${i}[] = {\n    "
         "${bytes}0x00};\n\n")
  string(APPEND table "    {\"${path}\", asset_${i}, ${len}},\n")
  math(EXPR i "${i} + 1")
endforeach()
string(APPEND out "const struct admin_asset admin_assets[] = {\n${table}")
string(APPEND out "    {0, 0, 0},\n};\n")
file(WRITE ${OUT} "${out}")
