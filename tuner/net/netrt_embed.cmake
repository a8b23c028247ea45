# Turns tuner/net/netrt.h and tuner/net/netrt.c into tuner/net/netrt_text.h: two C string
# constants, so that generated network programs carry the very runtime that
# the unit tests check. Run as: cmake -DIN_H=... -DIN_C=... -DOUT=... -P netrt_embed.cmake
function(to_c_string path var)
  file(READ ${path} text)
  string(REPLACE "\\" "\\\\" text "${text}")
  string(REPLACE "\"" "\\\"" text "${text}")
  string(REPLACE "\n" "\\n\"\n\"" text "${text}")
  set(${var} "\"${text}\"" PARENT_SCOPE)
endfunction()
to_c_string(${IN_H} header)
to_c_string(${IN_C} source)
file(WRITE ${OUT}.tmp "/* generated from tuner/net/netrt.h and tuner/net/netrt.c by tuner/net/netrt_embed.cmake */\n"
  "static const char NETRT_HEADER_TEXT[] = ${header};\n\n"
  "static const char NETRT_SOURCE_TEXT[] = \"#define TTRT_EMBEDDED 1\\n#include \\\"netrt.h\\\"\\n\" ${source};\n")
file(RENAME ${OUT}.tmp ${OUT})
