#!/usr/bin/env bash
# feature-lesson.sh measures the default lesson over scattering features
# live: the coordinator in its lobby with the
# default template and `-features scatter`, N native devices (cmd/device,
# each on its own demo shard, computing the features of each minibatch),
# the teacher's Start through the API (so the "one lesson" preset sizes
# the session for the N present), then every round to the end. It
# prints the session's shape, the time from Start to the end and the
# final accuracy the coordinator measured on its test pictures' features.
#   bash scripts/feature-lesson.sh                 # 10 devices
#   N=10 GAP=100ms EXTRA="-eta 0.2" bash scripts/feature-lesson.sh
set -euo pipefail
cd "$(dirname "$0")/.."
n=${N:-10}
port=${PORT:-18181}
gap=${GAP:-1s}
code=FEATLESSON
work=$(mktemp -d)
stop() {
  # shellcheck disable=SC2046
  kill $(jobs -p) 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work" # the coordinator's log and data hold the teacher secret
}
trap stop EXIT
go build -o "$work/coordinator" ./cmd/coordinator
go build -o "$work/device" ./cmd/device
# shellcheck disable=SC2086
"$work/coordinator" -lobby -features scatter -join-code "$code" -data "$work/coord" \
  -listen "127.0.0.1:$port" -round-gap "$gap" ${EXTRA:-} >"$work/coord.log" 2>&1 &
base="http://127.0.0.1:$port"
until curl -fs "$base/healthz" >/dev/null 2>&1; do
  sleep 0.2
  grep -q level=ERROR "$work/coord.log" && { cat "$work/coord.log" >&2; exit 1; }
done
for i in $(seq 1 "$n"); do
  "$work/device" -url "ws://127.0.0.1:$port/ws" -code "$code" -dir "$work/dev$i" >"$work/dev$i.log" 2>&1 &
done
status() { curl -fs "$base/api/status?code=$code"; }
until [ "$(status | python3 -c 'import json,sys; print(json.load(sys.stdin).get("devices", {}).get("connected", 0))' 2>/dev/null || echo 0)" -ge "$n" ]; do
  sleep 1
done
secret=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["teacher_secret"])' "$work/coord/host.json")
start=$(date +%s)
curl -fs -X POST -H "X-Teacher-Secret: $secret" "$base/api/teacher/start?code=$code" >/dev/null
while :; do
  s=$(status)
  state=$(echo "$s" | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')
  [ "$state" = ended ] && break
  sleep 2
done
end=$(date +%s)
echo "$s" | python3 -c '
import json, sys
s = json.load(sys.stdin)
p = s["session"]
e = s.get("last_eval") or {}
print("feature lesson: %s, M %d, m %d, T %d, b %d, eta %g; %d of %d rounds; final accuracy %.1f%% (after round %s, on %s test pictures)" % (
    p.get("transform"), p["M"], p["cohort"], p["rounds"], p["batch"], p["eta"], s["committed"], p["rounds"],
    100 * e.get("accuracy", 0), e.get("t"), e.get("samples")))
'
echo "Start to the end: $((end - start)) s; load $(cut -d" " -f1-3 /proc/loadavg)"
