#!/usr/bin/env bash
# time-run.sh measures `make run` to the lobby: wall time from the command
# to the coordinator printing its teacher link, and to its /healthz
# answering. The coordinator gets a fresh data directory and its own
# port, and is stopped afterwards (Ctrl-C to its process group). make
# always runs its build steps; whether go rebuilt anything shows in the
# time (see docs/coordinator.md, "Classroom measurements").
# COLD=1 starts from nothing built: an empty build cache and module
# cache of its own (go downloads every module through the proxy), no
# web/app.wasm, web/precompressed or bin/; the dataset's package is
# taken as installed. It also prints the CPU time make run used.
# MAKEFILE names another makefile to run (to time one recipe against
# another, e.g. the tree's Makefile of another commit).
#   bash scripts/time-run.sh
#   COLD=1 bash scripts/time-run.sh
#   COLD=1 MAKEFILE=/tmp/Makefile.other bash scripts/time-run.sh
set -euo pipefail
cd "$(dirname "$0")/.."
port=${PORT:-18080}
data=$(mktemp -d)
log=$(mktemp)
now() { date +%s.%N; }
if [ -n "${COLD:-}" ]; then
  cold=$(mktemp -d)
  export GOCACHE=$cold/gocache GOMODCACHE=$cold/gomodcache GOFLAGS=-modcacherw
  rm -rf web/app.wasm web/wasm_exec.js web/precompressed bin/coordinator-nonats bin/coordinator bin/device
fi
start=$(now)
setsid make -f "${MAKEFILE:-Makefile}" run RUNFLAGS="-listen 127.0.0.1:$port -data $data" >"$log" 2>&1 &
pid=$!
link="" health=""
while [ -z "$link" ] || [ -z "$health" ]; do
  if ! kill -0 "$pid" 2>/dev/null; then cat "$log" >&2; echo "make run exited" >&2; exit 1; fi
  [ -z "$link" ] && grep -q "teacher:" "$log" && link=$(now)
  [ -z "$health" ] && curl -fs "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && health=$(now)
  sleep 0.05
done
# The CPU time of what make ran and waited for (the builds): its cutime
# and cstime, in clock ticks, read before the coordinator is stopped.
read -r -a st <"/proc/$pid/stat"
cpu=$(echo "(${st[15]} + ${st[16]}) / $(getconf CLK_TCK)" | bc -l)
kill -INT -- "-$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
echo "make ran:"
grep -E '^(go|\./bin|GOOS|cp|bash)' "$log" | sed 's/-listen.*/.../; s/^/  /'
printf 'make run to the teacher link: %.2f s; to /healthz: %.2f s\n' \
  "$(echo "$link - $start" | bc)" "$(echo "$health - $start" | bc)"
printf 'CPU time of what make ran before the coordinator (user + system): %.1f s\n' "$cpu"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
[ -z "${COLD:-}" ] || rm -rf "$cold"
rm -rf "$data" "$log" # the log holds the teacher secret
