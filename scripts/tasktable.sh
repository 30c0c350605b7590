#!/usr/bin/env bash
# tasktable.sh prints docs/tasks.md's accuracy table: for each built-in
# task, the classroom session (M = m = 10, b = 32, single pass) with nc at
# epsilon 1, 2, 4, 8 (delta 1e-5 per device) and the non-private mu2. The
# step size of each cell is chosen on the validation split (flsim
# -validate, seed 1) from a grid; the test accuracy is then the mean (min
# to max) over seeds 1-3. Run from the repository root after make setup.
# The table is also written to docs/results/tasks-table.md, which
# docs/tasks.md and the results report (make results) show.
set -euo pipefail
grid=(0.25 0.5 1 2 4)
flsim=$(mktemp -d)/flsim
go build -o "$flsim" ./cmd/flsim
acc() { "$flsim" -q "$@" | sed -n 's/.*\(test\|validation\) accuracy \([0-9.]*\).*/\2/p'; }
exec > >(tee docs/results/tasks-table.md)
echo "| task | setting | eta (on validation) | test accuracy, seeds 1-3 |"
echo "|---|---|---|---|"
for task in tabular text; do
  for setting in mu2 1 2 4 8; do
    if [ "$setting" = mu2 ]; then args=(-algorithm mu2); label="non-private (mu2)"
    else args=(-algorithm nc -epsilon "$setting" -delta 1e-5); label="nc, epsilon $setting"; fi
    best=""; bestacc=-1
    for eta in "${grid[@]}"; do
      a=$(acc -task "$task" -M 10 -m 10 -b 32 -eta "$eta" -seed 1 -validate "${args[@]}")
      if awk -v a="$a" -v b="$bestacc" 'BEGIN{exit !(a>b)}'; then best=$eta; bestacc=$a; fi
    done
    accs=()
    for seed in 1 2 3; do accs+=("$(acc -task "$task" -M 10 -m 10 -b 32 -eta "$best" -seed "$seed" "${args[@]}")"); done
    printf '| %s | %s | %s | %s |\n' "$task" "$label" "$best" \
      "$(printf '%s\n' "${accs[@]}" | awk '{s+=$1; if(NR==1||$1<lo)lo=$1; if(NR==1||$1>hi)hi=$1} END{printf "%.1f%% (%.1f-%.1f)", 100*s/NR, 100*lo, 100*hi}')"
  done
done
