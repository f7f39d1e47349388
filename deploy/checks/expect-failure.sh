#!/usr/bin/env bash
# Runs a check on a deliberately bad fixture and passes only if the check
# fails AND its output names the problem.
# Usage: expect-failure.sh "TEXT THE OUTPUT MUST CONTAIN" [more texts...] -- COMMAND ARGS...
set -uo pipefail
needles=()
while [[ $# -gt 0 && "$1" != "--" ]]; do needles+=("$1"); shift; done
shift || true
if [[ $# -eq 0 || ${#needles[@]} -eq 0 ]]; then
  echo "usage: expect-failure.sh TEXT... -- COMMAND..." >&2
  exit 2
fi
output="$("$@" 2>&1)"
status=$?
printf '%s\n' "$output"
if [[ $status -eq 0 ]]; then
  echo "EXPECTED FAILURE, but the check passed: $*" >&2
  exit 1
fi
for n in "${needles[@]}"; do
  if ! grep -qF -- "$n" <<<"$output"; then
    echo "The check failed (status $status) but its output does not name the problem: missing \"$n\"" >&2
    exit 1
  fi
done
echo "OK: the check failed (status $status) naming: ${needles[*]}"
