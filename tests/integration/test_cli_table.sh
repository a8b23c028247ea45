#!/usr/bin/env bash
# One grammar for every subcommand, through the real binary: -h, --help and
# `tunetop help CMD` print the same help (exit 0, at most 100 columns); an
# unknown option and an unknown --target are usage errors (exit 2, one line
# starting with "tunetop CMD: "); every option `tunetop --options CMD` offers
# to the completion is one the command's parser accepts. Prints the table.
. "$(dirname "$0")/lib.sh"

cmds=$("$TT" --help | sed -n '/^usage:/,/^examples:/p' | awk '/^  [a-z]+ / { print $1 }')
[ "$(echo "$cmds" | wc -w)" -ge 12 ] && ok "commands: $(echo $cmds)" || fail "commands from --help: '$cmds'"

printf '%-9s %4s %7s %10s %6s %10s %5s\n' command -h --help "help CMD" usage "--target" cols
for c in $cmds; do
  "$TT" "$c" -h >"$WORK/h1" 2>"$WORK/e1"
  r1=$?
  "$TT" "$c" --help >"$WORK/h2" 2>/dev/null
  r2=$?
  "$TT" help "$c" >"$WORK/h3" 2>/dev/null
  r3=$?
  "$TT" "$c" --no-such-option >/dev/null 2>"$WORK/u"
  ru=$?
  rt=-
  if "$TT" --options "$c" | grep -q '^--target'; then
    "$TT" "$c" --target tpu x >/dev/null 2>"$WORK/t" </dev/null
    rt=$?
    [ "$rt" -eq 2 ] && grep -q "^tunetop $c: " "$WORK/t" && [ "$(grep -c . "$WORK/t")" -eq 1 ] ||
      fail "$c --target tpu: exit $rt, $(cat "$WORK/t")"
  fi
  cols=$(awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' "$WORK/h2")
  printf '%-9s %4s %7s %10s %6s %10s %5s\n' "$c" "$r1" "$r2" "$r3" "$ru" "$rt" "$cols"
  [ "$r1" -eq 0 ] && [ "$r2" -eq 0 ] && [ "$r3" -eq 0 ] || fail "$c: -h $r1, --help $r2, help $r3 (want 0)"
  head -1 "$WORK/h2" | grep -q "^usage: tunetop $c" || fail "$c --help does not start with its usage: $(head -1 "$WORK/h2")"
  cmp -s "$WORK/h1" "$WORK/h2" && cmp -s "$WORK/h2" "$WORK/h3" || fail "$c: -h, --help and help $c differ"
  [ "$cols" -le 100 ] || fail "$c --help is $cols columns wide: $(awk 'length($0) > 100' "$WORK/h2" | head -1)"
  [ "$ru" -eq 2 ] && grep -q "^tunetop $c: unknown option '--no-such-option'" "$WORK/u" &&
    [ "$(grep -c . "$WORK/u")" -eq 1 ] || fail "$c --no-such-option: exit $ru, $(cat "$WORK/u")"
  # every offered option is accepted (a bad value may be refused, never the option itself)
  bad=""
  while IFS=$'\t' read -r opt values; do
    [ "$opt" = --help ] && continue
    args=("$opt")
    case "$values" in
    -) ;;
    @*) args+=("$WORK/none") ;;
    "") args+=(1) ;;
    *) args+=("${values%% *}") ;;
    esac
    "$TT" "$c" "${args[@]}" --no-such-option >/dev/null 2>"$WORK/o" </dev/null
    grep -q "unknown option '$opt'" "$WORK/o" && bad="$bad $opt"
  done < <("$TT" --options "$c")
  [ -z "$bad" ] && ok "$c: every offered option is accepted" || fail "$c refuses options it offers:$bad"
done
[ "$failed" -eq 0 ] && ok "every command: -h, --help, help CMD exit 0; a usage error exits 2"

# the hidden old spellings still work, and are not offered
"$TT" --options tune | grep -q '^--batch	' && fail "tune offers --batch" || ok "tune does not offer --batch"
"$TT" --options tasks | grep -q '^--batch-size	' && ok "tasks offers --batch-size" || fail "tasks: no --batch-size"
"$TT" tasks --network tiny-resnet --batch 2 | grep -q 'batch 2' && ok "tasks --batch 2 still reads as the batch size" ||
  fail "tasks --batch 2"
"$TT" tasks --network tiny-resnet --batch-size 2 | grep -q 'batch 2' && ok "tasks --batch-size 2" || fail "tasks --batch-size"
expect_fail 2 "^tunetop help: unknown command" -- "$TT" help nosuch
"$TT" help >/dev/null && ok "tunetop help: the global help" || fail "tunetop help"
finish
