# cmake/docs.cmake: the man page (tunetop.1) and the bash completion
# (tunetop.bash), generated at build time from the built binary: `tunetop
# --help` lists the commands, `tunetop COMMAND --help` gives each command's
# text, `tunetop --options COMMAND` the options its parser accepts (with the
# values to offer) and `tunetop --keys` the UI's key table, so neither the page
# nor the completion can drift from the program.
#   cmake -DTUNETOP=path/to/tunetop -DMAN=out/tunetop.1 -DCOMPLETION=out/tunetop.bash -P docs.cmake
if(NOT TUNETOP OR NOT MAN OR NOT COMPLETION)
  message(FATAL_ERROR "usage: cmake -DTUNETOP=... -DMAN=... -DCOMPLETION=... -P docs.cmake")
endif()

execute_process(COMMAND ${TUNETOP} --help OUTPUT_VARIABLE top RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${TUNETOP} --help failed (${rc})")
endif()
execute_process(COMMAND ${TUNETOP} --version OUTPUT_VARIABLE version OUTPUT_STRIP_TRAILING_WHITESPACE)

# roff: escape backslashes, and a line starting with . or ' must not be read as a request.
function(roff_escape in out)
  string(REPLACE "\\" "\\e" t "${in}")
  string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" t "${t}")
  string(REPLACE "-" "\\-" t "${t}")
  set(${out} "${t}" PARENT_SCOPE)
endfunction()

# The commands: the indented "  name  summary" lines between the usage line and "examples:".
string(REGEX MATCH "usage:[^\n]*\n\n(.*)\nexamples:" _ "${top}")
set(table "${CMAKE_MATCH_1}")
string(REGEX MATCHALL "\n  [a-z]+ " names "\n${table}")
set(commands)
foreach(n ${names})
  string(STRIP "${n}" n)
  list(APPEND commands ${n})
endforeach()
if(NOT commands)
  message(FATAL_ERROR "no commands found in ${TUNETOP} --help")
endif()

string(TIMESTAMP today "%Y-%m-%d" UTC)
roff_escape("${top}" top_roff)
set(man ".TH TUNETOP 1 \"${today}\" \"${version}\" \"User Commands\"\n")
string(APPEND man ".SH NAME\ntunetop \\- an auto\\-tuner for tensor kernels with a live terminal front end\n")
string(APPEND man ".SH SYNOPSIS\n.B tunetop\n\\fICOMMAND\\fR [\\fIoptions\\fR]\n.br\n.B tunetop help\n\\fICOMMAND\\fR\n.br\n.B tunetop\n\\-\\-help | \\-\\-version\n")
string(APPEND man ".SH DESCRIPTION\n.nf\n${top_roff}.fi\n.SH COMMANDS\n")

# The completion: `tunetop --options CMD` prints, per option the command accepts,
# "--NAME<TAB>VALUES" (- no value, @file, @dir, empty: a value with nothing to
# offer, else the words to offer), from the same table its parser uses.
set(completion_cases "")
set(value_cases "")
foreach(c ${commands})
  execute_process(COMMAND ${TUNETOP} ${c} --help OUTPUT_VARIABLE help RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${TUNETOP} ${c} --help failed (${rc})")
  endif()
  roff_escape("${help}" help_roff)
  string(APPEND man ".SS ${c}\n.nf\n${help_roff}.fi\n")
  execute_process(COMMAND ${TUNETOP} --options ${c} OUTPUT_VARIABLE optlist RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${TUNETOP} --options ${c} failed (${rc})")
  endif()
  string(REPLACE "\n" ";" lines "${optlist}")
  set(opts "")
  set(values "")
  foreach(l ${lines})
    if(NOT l MATCHES "^(--[a-z0-9-]+)\t(.*)$")
      continue()
    endif()
    set(name "${CMAKE_MATCH_1}")
    set(v "${CMAKE_MATCH_2}")
    list(APPEND opts ${name})
    if(v STREQUAL "-")
      continue()
    elseif(v STREQUAL "@file")
      string(APPEND values "            ${name}) COMPREPLY=(\$(compgen -f -- \"\$cur\")); return ;;\n")
    elseif(v STREQUAL "@dir")
      string(APPEND values "            ${name}) COMPREPLY=(\$(compgen -d -- \"\$cur\")); return ;;\n")
    elseif(v STREQUAL "")
      string(APPEND values "            ${name}) return ;;\n")
    else()
      string(APPEND values "            ${name}) COMPREPLY=(\$(compgen -W \"${v}\" -- \"\$cur\")); return ;;\n")
    endif()
  endforeach()
  list(JOIN opts " " opts)
  string(APPEND completion_cases "        ${c}) opts=\"${opts}\" ;;\n")
  string(APPEND value_cases "        ${c})\n            case \"\$prev\" in\n${values}            esac ;;\n")
endforeach()

# The UI's keys, from the key table the UI runs on (tunetop --keys).
execute_process(COMMAND ${TUNETOP} --keys OUTPUT_VARIABLE keys RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${TUNETOP} --keys failed (${rc})")
endif()
string(APPEND man ".SH KEYS\nIn the terminal UI of \\fBtune\\fR and \\fBview\\fR (\\fB?\\fR shows the same table):\n")
string(REPLACE "\n" ";" klines "${keys}")
foreach(l ${klines})
  if(l MATCHES "^([^\t]*)\t(.*)$")
    roff_escape("${CMAKE_MATCH_1}" k)
    roff_escape("${CMAKE_MATCH_2}" h)
    string(APPEND man ".TP\n.B ${k}\n${h}\n")
  endif()
endforeach()

string(APPEND man ".SH EXIT STATUS\n.TP\n.B 0\ndone\n.TP\n.B 1\nan error (a damaged or unreadable log, no device, a failed build)\n"
  ".TP\n.B 2\na usage error: a bad option or value; one line on stderr starting with \"tunetop COMMAND:\"\n"
  ".TP\n.B 3\nthe record log could not be written (tune): the records in it are kept, results measured after the failure were lost\n"
  ".TP\n.B 130, 143\nstopped by Ctrl\\-C or SIGTERM (128 + the signal); \\fBq\\fR in the UI is a normal exit\n")
string(APPEND man ".SH ENVIRONMENT\n"
  ".TP\n.B NO_COLOR\nwhen set, the UI is monochrome (as \\-\\-no\\-color)\n"
  ".TP\n.B XDG_CACHE_HOME\nwhere the cpu target's measured machine figures are cached (default ~/.cache)\n"
  ".TP\n.B TMPDIR\nwhere builds and measurements keep their temporary files (default /tmp)\n"
  ".TP\n.B TUNETOP_WORKER\nthe tunetop\\-worker executable to use (default: the one beside tunetop)\n"
  ".TP\n.B CUDA_VISIBLE_DEVICES\nthe CUDA devices a rank may use (cuda target)\n"
  ".TP\n.B TUNETOP_OPENCL_DEVICE\nthe number of the OpenCL device to open (default 0)\n")
string(APPEND man ".SH FILES\n"
  ".TP\n.I tunetop.log\nthe record log of tune (\\-\\-log FILE): append\\-only msgpack records, one per measurement; an existing log is resumed\n"
  ".TP\n.I LOG.tsv\nbeside a log: one line per scheduler round (time, trials, estimated latency)\n"
  ".TP\n.I LOG.recovered\na copy of a log that was deleted or replaced while a session wrote it\n"
  ".TP\n.I $XDG_CACHE_HOME/tunetop/machine\\-cpu.txt\nthe cpu target's measured peak and bandwidths (tunetop devices \\-\\-remeasure measures again)\n")
string(APPEND man ".SH SEE ALSO\nREADME.md and docs/ in the tunetop source tree.\n")
file(WRITE ${MAN} "${man}")

list(JOIN commands " " command_words)
file(WRITE ${COMPLETION} "# bash completion for tunetop (${version}), generated from its option tables (tunetop --options CMD).
_tunetop() {
    local cur=\"\${COMP_WORDS[COMP_CWORD]}\" prev=\"\${COMP_WORDS[COMP_CWORD - 1]}\" cmd=\"\" opts=\"\"
    if ((COMP_CWORD == 1)); then
        COMPREPLY=(\$(compgen -W \"${command_words} help --help --version\" -- \"\$cur\"))
        return
    fi
    cmd=\"\${COMP_WORDS[1]}\"
    if [[ \"\$cmd\" == help ]]; then
        ((COMP_CWORD == 2)) && COMPREPLY=(\$(compgen -W \"${command_words}\" -- \"\$cur\"))
        return
    fi
    case \"\$cmd\" in
${value_cases}        *) return ;;
    esac
    case \"\$cmd\" in
${completion_cases}        *) return ;;
    esac
    if [[ \"\$cur\" == -* ]]; then
        COMPREPLY=(\$(compgen -W \"\$opts\" -- \"\$cur\"))
    else
        COMPREPLY=(\$(compgen -f -- \"\$cur\"))
    fi
}
complete -o filenames -F _tunetop tunetop
")
