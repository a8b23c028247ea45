# cmake/docs.cmake: the man page (tunetop.1) and the bash completion
# (tunetop.bash), generated at build time from the built binary's own help:
# `tunetop --help` lists the commands, `tunetop COMMAND --help` gives each
# command's text and options, so the page and the completion cannot drift
# from what --help prints.
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
string(APPEND man ".SH SYNOPSIS\n.B tunetop\n\\fICOMMAND\\fR [\\fIoptions\\fR]\n.br\n.B tunetop\n\\-\\-help | \\-\\-version\n")
string(APPEND man ".SH DESCRIPTION\n.nf\n${top_roff}.fi\n.SH COMMANDS\n")
set(completion_cases "")
foreach(c ${commands})
  execute_process(COMMAND ${TUNETOP} ${c} --help OUTPUT_VARIABLE help RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${TUNETOP} ${c} --help failed (${rc})")
  endif()
  roff_escape("${help}" help_roff)
  string(APPEND man ".SS ${c}\n.nf\n${help_roff}.fi\n")
  # options: every --long-name the command's help mentions
  string(REGEX MATCHALL "--[a-z][a-z0-9-]*" opts "${help}")
  list(REMOVE_DUPLICATES opts)
  list(APPEND opts --help)
  list(REMOVE_DUPLICATES opts)
  list(SORT opts)
  list(JOIN opts " " opts)
  string(APPEND completion_cases "        ${c}) opts=\"${opts}\" ;;\n")
endforeach()
string(APPEND man ".SH SEE ALSO\nThe README of the tunetop source tree.\n")
file(WRITE ${MAN} "${man}")

list(JOIN commands " " command_words)
file(WRITE ${COMPLETION} "# bash completion for tunetop (${version}), generated from its --help.
_tunetop() {
    local cur=\"\${COMP_WORDS[COMP_CWORD]}\" cmd=\"\" opts=\"\" i
    for ((i = 1; i < COMP_CWORD; i++)); do
        case \"\${COMP_WORDS[i]}\" in -*) ;; *) cmd=\"\${COMP_WORDS[i]}\"; break ;; esac
    done
    if [[ -z \"\$cmd\" ]]; then
        COMPREPLY=(\$(compgen -W \"${command_words} --help --version\" -- \"\$cur\"))
        return
    fi
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
