# Turns the sources of the model runtime (N-D tensors, the model, its file,
# the executor and every op) into tuner/net/runtime_text.h: an array of
# {path, text}, so that an exported model program carries the very op
# definitions that the conformance test checks.
# Run as: cmake -DSRC=<source root> -DFILES=a,b,... -DOUT=... -P runtime_embed.cmake
string(REPLACE "," ";" FILES "${FILES}")
set(body "")
foreach(rel ${FILES})
  file(READ ${SRC}/${rel} text)
  string(REPLACE "\\" "\\\\" text "${text}")
  string(REPLACE "\"" "\\\"" text "${text}")
  string(REPLACE "\n" "\\n\"\n\"" text "${text}")
  string(APPEND body "    {\"${rel}\",\n\"${text}\"},\n")
endforeach()
file(WRITE ${OUT}.tmp "/* generated from the model runtime's sources by tuner/net/runtime_embed.cmake */\n"
  "typedef struct NetRuntimeFile {\n    const char *path, *text;\n} NetRuntimeFile;\n"
  "static const NetRuntimeFile NET_RUNTIME_FILES[] = {\n${body}};\n"
  "#define NET_RUNTIME_N_FILES (sizeof NET_RUNTIME_FILES / sizeof NET_RUNTIME_FILES[0])\n")
file(RENAME ${OUT}.tmp ${OUT})
