#!/usr/bin/env bash
# stage.sh runs one stage of `make test` and prints its wall time and
# the CPU time of what it ran:
#   bash scripts/stage.sh NAME COMMAND [ARG...]
# prints the command, runs it, then prints "stage NAME: 83 s (1m23s),
# CPU 120 s" (with "FAILED (exit N)" if it failed), appends that line to
# $STAGE_LOG if set (make test prints the list at the end), and exits
# with the command's status. The CPU time is user + system of the
# command and every process it waited for, browsers included (this
# shell's cutime and cstime): beside the wall time it shows whether a
# stage waits or computes, and, summed over the stages, what the two
# cores had to do.
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
line=$(printf 'stage %-9s %4d s (%dm%02ds), CPU %d s' "$name:" "$secs" $((secs / 60)) $((secs % 60)) "$cpu")
[ "$rc" -eq 0 ] || line="$line FAILED (exit $rc)"
echo "$line"
[ -z "${STAGE_LOG:-}" ] || echo "$line" >>"$STAGE_LOG"
exit "$rc"
