#!/bin/bash
# cmake --install into a temporary prefix: the installed tunetop reports its
# version, tunes a tiny task with the installed tunetop-worker (found next to
# the installed binary: a wrapper in its place records that it ran), and the
# man page and bash completion are installed and name every command of
# tunetop --help.
set -euo pipefail
build="${TT_BINARY_DIR:?}"
tmp="$(mktemp -d /tmp/tt_install_XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.out" 2>&1 || { cat "$tmp/install.out"; fail "cmake --install"; }
bin="$tmp/prefix/bin"
man="$tmp/prefix/share/man/man1/tunetop.1"
comp="$tmp/prefix/share/bash-completion/completions/tunetop"
for f in "$bin/tunetop" "$bin/tunetop-worker"; do [ -x "$f" ] || fail "$f not installed"; done
for f in "$man" "$comp"; do [ -s "$f" ] || fail "$f not installed"; done

version="$("$bin/tunetop" --version)"
echo "version: $version"
[[ "$version" =~ ^tunetop\ [0-9]+\.[0-9]+\.[0-9]+ ]] || fail "--version printed '$version'"

# the installed worker, wrapped so the test sees it was the one used
mv "$bin/tunetop-worker" "$bin/tunetop-worker.real"
printf '#!/bin/sh\necho ran >>"%s"\nexec "%s" "$@"\n' "$tmp/worker-ran" "$bin/tunetop-worker.real" >"$bin/tunetop-worker"
chmod +x "$bin/tunetop-worker"
(cd "$tmp" && env -u TUNETOP_WORKER "$bin/tunetop" tune --headless --tuner random --seed 1 --trials 4 --round-size 4 \
  --task dense:m=2,n=16,k=16 --log "$tmp/t.log") >"$tmp/tune.out" 2>&1 || { cat "$tmp/tune.out"; fail "installed tune"; }
[ -s "$tmp/worker-ran" ] || { cat "$tmp/tune.out"; fail "the installed tunetop did not run the installed worker"; }
"$bin/tunetop" best "$tmp/t.log" | grep -q "dense" || fail "no best record after the installed tune"

# every command of tunetop --help in the man page and the completion
cmds="$("$bin/tunetop" --help | sed -n '/^usage:/,/^examples:/p' | awk '/^  [a-z]+ /{print $1}')"
[ -n "$cmds" ] || fail "no commands in tunetop --help"
for c in $cmds; do
  grep -q "^\.SS $c\$" "$man" || fail "man page has no section for $c"
  grep -q "^        $c) opts=" "$comp" || fail "completion has no case for $c"
  "$bin/tunetop" "$c" --help >/dev/null || fail "$c --help"
done
grep -q -- '--trials' "$comp" || fail "completion lacks tune's --trials"
bash -n "$comp" || fail "completion is not valid bash"
if command -v man >/dev/null; then
  man -l "$man" 2>/dev/null | grep -q "tunetop" || fail "man cannot render $man"
fi
# the completion completes a command and an option
out="$(bash -c "source '$comp'; COMP_WORDS=(tunetop tu); COMP_CWORD=1; _tunetop; echo \"\${COMPREPLY[*]}\"")"
[ "$out" = "tune" ] || fail "completing 'tu' gave '$out'"
out="$(bash -c "source '$comp'; COMP_WORDS=(tunetop distill --ke); COMP_CWORD=2; _tunetop; echo \"\${COMPREPLY[*]}\"")"
[ "$out" = "--keep" ] || fail "completing 'distill --ke' gave '$out'"
echo "installed: $(cd "$tmp/prefix" && find . -type f | sort | tr '\n' ' ')"
echo "commands: $(echo $cmds)"
echo "ok"
