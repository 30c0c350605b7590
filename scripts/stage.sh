#!/usr/bin/env bash
# stage.sh runs one stage of `make test` and prints its wall and CPU time:
#   bash scripts/stage.sh NAME COMMAND [ARG...]
# prints the command, runs it, then prints
# "stage NAME: 83 s (1m23s), 120 CPU-s" (with "FAILED (exit N)" if it
# failed). The CPU time is user + system of the command and every
# descendant waited for down the chain (this shell's cutime and
# cstime): a lower bound, since a process whose parent ended before
# waiting for it is not counted. It appends that line to $STAGE_LOG if
# set (make test prints the list at the end) and exits with the
# command's status.
set -uo pipefail
name=$1
shift
echo "== stage $name: $*"
start=$(date +%s)
"$@"
rc=$?
secs=$(($(date +%s) - start))
read -r -a st <"/proc/$$/stat"
cpu=$(((st[15] + st[16]) / $(getconf CLK_TCK)))
line=$(printf 'stage %-9s %4d s (%dm%02ds), %d CPU-s' "$name:" "$secs" $((secs / 60)) $((secs % 60)) "$cpu")
[ "$rc" -eq 0 ] || line="$line FAILED (exit $rc)"
echo "$line"
[ -z "${STAGE_LOG:-}" ] || echo "$line" >>"$STAGE_LOG"
exit "$rc"
