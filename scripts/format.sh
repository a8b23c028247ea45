#!/usr/bin/env bash
# The C sources against the repository's .clang-format.
#   scripts/format.sh          check: lists the files clang-format would change, exit 1 if any
#   scripts/format.sh --fix    rewrites them in place
#   scripts/format.sh [--fix] FILE...   only these files
# Files: git ls-files '*.c' '*.h' (tracked ones only). Needs clang-format
# (scripts/install-deps.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
fix=false
if [ "${1:-}" = "--fix" ]; then
  fix=true
  shift
fi
command -v clang-format >/dev/null || { echo "format.sh: clang-format is missing (scripts/install-deps.sh)" >&2; exit 2; }
if [ $# -gt 0 ]; then
  files=("$@")
else
  mapfile -t files < <(git ls-files '*.c' '*.h')
fi
if $fix; then
  printf '%s\0' "${files[@]}" | xargs -0 -n 50 clang-format -i --style=file
  echo "format.sh: formatted ${#files[@]} files"
  exit 0
fi
bad=0
for f in "${files[@]}"; do
  if ! clang-format --style=file "$f" | cmp -s - "$f"; then
    echo "$f"
    bad=$((bad + 1))
  fi
done
if [ "$bad" -gt 0 ]; then
  echo "format.sh: $bad of ${#files[@]} files differ from .clang-format (scripts/format.sh --fix rewrites them)" >&2
  exit 1
fi
echo "format.sh: all ${#files[@]} files follow .clang-format"
