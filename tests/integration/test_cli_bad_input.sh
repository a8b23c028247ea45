#!/usr/bin/env bash
# Bad input gets one clear message, a non-zero exit, and never touches an existing log.
. "$(dirname "$0")/lib.sh"

expect_fail 2 "unknown command" -- "$TT" frobnicate
expect_fail 2 "nothing to tune" -- "$TT" tune --headless
expect_fail 2 "co" -- "$TT" tune --headless --task conv2d:n=1,ci=8,h=8,w=8,kh=3,kw=3
expect_fail 2 "ci" -- "$TT" tune --headless --task conv2d:n=1,ci=0,h=8,w=8,co=8,kh=3,kw=3
expect_fail 2 "h" -- "$TT" tune --headless --task conv2d:n=1,ci=8,h=-4,w=8,co=8,kh=3,kw=3
expect_fail 2 "bogus" -- "$TT" tune --headless --task conv2d:n=1,ci=8,h=8,w=8,co=8,kh=3,kw=3,bogus=1
expect_fail 2 "matmul2" -- "$TT" tune --headless --task matmul2:m=1
expect_fail 2 "--trials" -- "$TT" tune --headless --task dense:m=1,n=8,k=8 --trials zero
expect_fail 2 "tuner" -- "$TT" tune --headless --task dense:m=1,n=8,k=8 --tuner magic
expect_fail 2 "unknown option" -- "$TT" tune --headless --task dense:m=1,n=8,k=8 --frob
expect_fail 2 "no such template" -- "$TT" tune --headless --task dense:m=1,n=8,k=8 --template magic.cpu
expect_fail 2 "applies to none" -- "$TT" tune --headless --task conv2d:n=1,ci=8,h=8,w=8,co=8,kh=3,kw=3,stride=2 \
    --template conv2d_winograd.cpu
expect_fail 2 "tunetop tune: unknown target" -- "$TT" tune --headless --task dense:m=1,n=8,k=8 --target tpu
expect_fail 2 "network" -- "$TT" tune --headless --network resnet-7
expect_fail 1 "missing.log" -- "$TT" best "$WORK/missing.log"
expect_fail 1 "missing.log" -- "$TT" dump "$WORK/missing.log"

# a file that is not a tunetop log: refused, unchanged
printf 'hello, I am not a log\n' >"$WORK/notalog.log"
sum=$(md5sum <"$WORK/notalog.log")
expect_fail 1 "not a tunetop log|tunetop log" -- "$TT" best "$WORK/notalog.log"
expect_fail 1 "not a tunetop log|tunetop log" -- "$TT" tune --headless --task dense:m=1,n=8,k=8 --trials 2 --log "$WORK/notalog.log"
[ "$(md5sum <"$WORK/notalog.log")" = "$sum" ] && ok "non-log file unchanged" || fail "non-log file was modified"

# a log of the cpu target is not resumed by another target
"$TT" tune --headless --task dense:m=1,n=16,k=16 --trials 4 --round-size 4 --tuner random --log "$WORK/cpu.log" >/dev/null 2>&1
sum=$(md5sum <"$WORK/cpu.log")
expect_fail 1 "target" -- "$TT" tune --headless --task dense:m=1,n=16,k=16 --trials 4 --target opencl --log "$WORK/cpu.log"
[ "$(md5sum <"$WORK/cpu.log")" = "$sum" ] && ok "log of another target unchanged" || fail "log of another target was modified"

# an unreadable log
if [ "$(id -u)" -ne 0 ]; then
  cp "$WORK/cpu.log" "$WORK/locked.log" && chmod 000 "$WORK/locked.log"
  expect_fail 1 "locked.log" -- "$TT" best "$WORK/locked.log"
fi

finish
