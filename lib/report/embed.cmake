# Writes a file's bytes as a C array: cmake -DIN=FILE -DOUT=FILE.c -DNAME=ident -P embed.cmake
# (the report's script and style live in files of their own, readable and
# checkable as JavaScript and CSS, and reach the binary through this).
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" n)
math(EXPR bytes "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" body "${body}")
file(WRITE ${OUT} "/* Generated from ${IN} by embed.cmake: do not edit. */\n#include <stddef.h>\n"
  "const char ${NAME}[] = {\n${body}0x00};\nconst size_t ${NAME}_len = ${bytes};\n")
