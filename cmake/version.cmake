# Writes OUT (a header defining TT_VERSION: the project version, plus
# `git describe` of SRC when it is a git checkout with git on the PATH), and
# only when its text changes, so that app/app.c recompiles when the checkout
# moves to another commit or becomes dirty, and not otherwise.
#   cmake -DVERSION=0.1.0 -DSRC=<source dir> -DGIT=<git or empty> -DOUT=<header> -P version.cmake
set(text "${VERSION}")
if(GIT AND EXISTS "${SRC}/.git")
  execute_process(COMMAND "${GIT}" describe --always --dirty --tags
    WORKING_DIRECTORY "${SRC}" OUTPUT_VARIABLE describe
    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
  if(rc EQUAL 0 AND describe)
    set(text "${VERSION} (git ${describe})")
  endif()
endif()
set(header "/* written by cmake/version.cmake at build time */\n#define TT_VERSION \"${text}\"\n")
set(old "")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL header)
  file(WRITE "${OUT}" "${header}")
endif()
