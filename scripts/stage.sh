#!/usr/bin/env bash
# stage.sh runs one stage of `make test` and prints its wall time:
#   bash scripts/stage.sh NAME COMMAND [ARG...]
# prints the command, runs it, then prints "stage NAME: 83 s (1m23s)"
# (with "FAILED (exit N)" if it failed), appends that line to $STAGE_LOG if set (make test prints
# the list at the end), and exits with the command's status.
set -uo pipefail
name=$1
shift
echo "== stage $name: $*"
start=$(date +%s)
"$@"
rc=$?
secs=$(($(date +%s) - start))
line=$(printf 'stage %-9s %4d s (%dm%02ds)' "$name:" "$secs" $((secs / 60)) $((secs % 60)))
[ "$rc" -eq 0 ] || line="$line FAILED (exit $rc)"
echo "$line"
[ -z "${STAGE_LOG:-}" ] || echo "$line" >>"$STAGE_LOG"
exit "$rc"
