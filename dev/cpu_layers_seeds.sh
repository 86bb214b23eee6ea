#!/usr/bin/env bash
# Usage (2026-12-03, reports/benchmarks/cpu/compile-layers-2026-12-03-xeon/): CLONE=DIR LORABENCH_DATA=FILE bash dev/cpu_layers_seeds.sh [SEED ...] (default 3407 42 1234)
# Exp A with recipe.compile=layers on a CPU host, one seed after another, each run --timed under the guard
# from a clean clone ($CLONE, its .venv from the cpu lockfile): the whole command timed from outside, peak RSS
# from /usr/bin/time. Compared with the published CPU records of the same host kind (the defaults: eager).
set -uo pipefail
cd "${CLONE:?a clean clone of the code measured}"
export PYTHONPATH=$CLONE LORABENCH_DATA=${LORABENCH_DATA:?the data file}
OUTD=${OUTD:-/tmp/cpu-layers}; mkdir -p "$OUTD"
seeds=("$@"); [ ${#seeds[@]} -gt 0 ] || seeds=(3407 42 1234)
for seed in "${seeds[@]}"; do
  start=$(date +%s.%N)
  /usr/bin/time -v -o "$OUTD/time-$seed.txt" .venv/bin/lorabench run benchmarks/setups/exp_a.toml --seed "$seed" \
    --timed --stack cpu --set recipe.compile=layers --results "$OUTD/results" > "$OUTD/run-$seed.log" 2>&1
  rc=$?
  echo "seed $seed: rc=$rc whole command $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s | max RSS $(grep 'Maximum resident' "$OUTD/time-$seed.txt" | awk '{print $NF}') kB | $(tail -n 1 "$OUTD/run-$seed.log" | cut -c1-150)" | tee -a "$OUTD/seeds.txt"
done
