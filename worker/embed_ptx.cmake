# Writes the PTX file IN into the C source OUT as the NUL-terminated byte
# array NAME (and NAME_len, its length without the NUL), for cuModuleLoadData.
#   cmake -DIN=gen_kernels.ptx -DOUT=gen_kernels_ptx.c -DNAME=kv_cugen_ptx -P embed_ptx.cmake
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" digits)
math(EXPR len "${digits} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
string(REPEAT "0x[0-9a-f][0-9a-f]," 24 row)
string(REGEX REPLACE "(${row})" "\\1\n" body "${body}")
file(WRITE "${OUT}.tmp"
  "/* Generated from ${IN} by worker/embed_ptx.cmake: do not edit. */\n"
  "#include <stddef.h>\n"
  "extern const unsigned char ${NAME}[];\n"
  "extern const size_t ${NAME}_len;\n"
  "const unsigned char ${NAME}[] = {\n${body}0x00};\n"
  "const size_t ${NAME}_len = ${len};\n")
file(RENAME "${OUT}.tmp" "${OUT}")
