#!/usr/bin/env bash
# time-run.sh measures `make run` to the lobby: wall time from the command
# to the coordinator printing its teacher link, and to its /healthz
# answering. The coordinator gets a fresh data directory and its own
# port, and is stopped afterwards (Ctrl-C to its process group). make
# always runs its build steps; whether go rebuilt anything shows in the
# time (see docs/coordinator.md, "Classroom measurements").
#   bash scripts/time-run.sh
set -euo pipefail
cd "$(dirname "$0")/.."
port=${PORT:-18080}
data=$(mktemp -d)
log=$(mktemp)
now() { date +%s.%N; }
start=$(now)
setsid make run RUNFLAGS="-listen 127.0.0.1:$port -data $data" >"$log" 2>&1 &
pid=$!
link="" health=""
while [ -z "$link" ] || [ -z "$health" ]; do
  if ! kill -0 "$pid" 2>/dev/null; then cat "$log" >&2; echo "make run exited" >&2; exit 1; fi
  [ -z "$link" ] && grep -q "teacher:" "$log" && link=$(now)
  [ -z "$health" ] && curl -fs "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && health=$(now)
  sleep 0.05
done
kill -INT -- "-$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
echo "make ran:"
grep -E '^(go|\./bin|GOOS|cp|bash)' "$log" | sed 's/-listen.*/.../; s/^/  /'
printf 'make run to the teacher link: %.2f s; to /healthz: %.2f s\n' \
  "$(echo "$link - $start" | bc)" "$(echo "$health - $start" | bc)"
rm -rf "$data" "$log" # the log holds the teacher secret
