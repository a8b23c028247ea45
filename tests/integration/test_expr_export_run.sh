#!/usr/bin/env bash
# A log tuned with `tune --expr`: `export --expr` writes the expression's best schedule as a kernel that the
# bundle's CMakeLists builds, and `run --expr` builds it, checks it against the expression interpreter and times
# it (with and without the log). Without --expr, or with a .te the log was not tuned from, one line names the fix.
. "$(dirname "$0")/lib.sh"
EX="$(cd "$(dirname "$0")/../../examples/te" && pwd)"
MM="$EX/matmul.te"
LOG="$WORK/mm.log"

if "$TT" tune --headless --seed 3 --round-size 4 --trials 8 --timeout 5 --no-roof --log "$LOG" \
  --expr "$MM" --set N=64 >"$WORK/tune.out" 2>&1; then
  ok "tune --expr matmul.te --set N=64"
else
  fail "tune --expr matmul.te: $(tail -n 5 "$WORK/tune.out")"
fi

# ---- export
if out=$("$TT" export "$LOG" -o "$WORK/k" --expr "$MM" --set N=64 2>&1) \
  && printf '%s' "$out" | grep -q "^exported 1 cpu kernel to $WORK/k (0 with the default config)"; then
  ok "export --expr: $(printf '%s' "$out" | head -n 1)"
else
  fail "export --expr: $out"
fi
if grep -q "template  *te\." "$WORK/k"/expr_*.c 2>/dev/null && grep -q "workload  *expr:name=matmul" "$WORK/k"/expr_*.c; then
  ok "the kernel's comment names the expression and its template"
else
  fail "the kernel's comment: $(head -n 12 "$WORK/k"/expr_*.c 2>&1)"
fi
if command -v cmake >/dev/null; then
  if (cmake -S "$WORK/k" -B "$WORK/kb" >"$WORK/cmake.log" 2>&1 && cmake --build "$WORK/kb" >>"$WORK/cmake.log" 2>&1) \
    && [ -f "$WORK/kb/libtunetop_kernels.a" ]; then
    ok "cmake builds the exported expression kernel"
  else
    fail "cmake: $(tail -n 5 "$WORK/cmake.log")"
  fi
  # the library on its own: C = A * B against a naive product
  cat >"$WORK/main.c" <<'EOF'
#include <math.h>
#include <stdio.h>
#include "tunetop_kernels.h"
enum { N = 64 };
static float a[N * N], b[N * N], c[N * N];
int main(void) {
    for (int i = 0; i < N * N; i++)
        a[i] = (float)((i * 7) % 13) / 13 - 0.5f, b[i] = (float)((i * 5) % 11) / 11 - 0.5f;
    expr_0_t *k = expr_0_create(NULL);
    const float *in[2] = {a, b};
    if (!k || expr_0_run(k, in, c) != 0) return 2;
    expr_0_destroy(k);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            double ref = 0;
            for (int l = 0; l < N; l++) ref += (double)a[i * N + l] * b[l * N + j];
            if (fabs(c[i * N + j] - ref) > 1e-4 * N) {
                printf("C[%d, %d] = %g, want %g\n", i, j, c[i * N + j], ref);
                return 1;
            }
        }
    printf("matches\n");
    return 0;
}
EOF
  if cc -O2 -fopenmp -I"$WORK/k" -o "$WORK/main" "$WORK/main.c" "$WORK/kb/libtunetop_kernels.a" -lm >"$WORK/cc.log" 2>&1 \
    && out=$("$WORK/main") && [ "$out" = matches ]; then
    ok "the exported kernel computes A * B"
  else
    fail "the exported kernel: $(tail -n 3 "$WORK/cc.log") ${out:-}"
  fi
else
  fail "no cmake: the exported library cannot be built (scripts/install-deps.sh installs it)"
fi

# ---- run
if out=$("$TT" run --expr "$MM" --set N=64 --log "$LOG" --repeat 3 2>&1) \
  && printf '%s' "$out" | grep -q "^matmul (te-[0-9a-f]*): the best schedule in $LOG" \
  && printf '%s' "$out" | grep -q "^output matches the expression interpreter (4096 elements)$" \
  && printf '%s' "$out" | grep -qE "^median [0-9.]+ ms over 3 repeats"; then
  ok "run --expr --log: $(printf '%s' "$out" | grep '^median')"
else
  fail "run --expr --log: $out"
fi
if out=$("$TT" run --expr "$MM" --set N=32 --repeat 2 2>&1) \
  && printf '%s' "$out" | grep -q "the zero-trial default schedule" \
  && printf '%s' "$out" | grep -q "^output matches the expression interpreter (1024 elements)$"; then
  ok "run --expr without a log: the zero-trial default"
else
  fail "run --expr without a log: $out"
fi

# ---- errors: one line each, naming the fix
expect_fail 1 "holds the expression matmul \(te-[0-9a-f]*\): give its file with --expr FILE.te" -- \
  "$TT" export "$LOG" -o "$WORK/noexpr"
[ ! -e "$WORK/noexpr" ] && ok "nothing written without --expr" || fail "$WORK/noexpr was written"
expect_fail 1 "has no records of the expression matmul \(te-[0-9a-f]*\) that --expr with --set gives: the log's expressions are matmul \(te-" -- \
  "$TT" export "$LOG" -o "$WORK/other" --expr "$MM" --set N=32
expect_fail 1 "has no records of the expression dense" -- "$TT" export "$LOG" -o "$WORK/other" --expr "$EX/dense.te"
expect_fail 1 "log $LOG has no records of the expression matmul \(te-[0-9a-f]*\) that $MM with --set gives" -- \
  "$TT" run --expr "$MM" --set N=32 --log "$LOG"
expect_fail 2 "^tunetop run: --set needs --expr FILE.te" -- "$TT" run --set N=64 --log "$LOG"
expect_fail 2 "^tunetop export: --set needs --expr FILE.te" -- "$TT" export "$LOG" -o "$WORK/x" --set N=64

finish
