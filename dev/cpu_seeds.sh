#!/usr/bin/env bash
# Usage: CLONE=DIR LORABENCH_DATA=FILE [SET="recipe.compile=none ..."] bash dev/cpu_seeds.sh [SEED ...] (default 3407 42 1234)
# Exp A on a CPU host, one seed after another, each `lorabench run --timed` under the guard from a clean clone
# ($CLONE, its .venv from the cpu lockfile), with the defaults or the `--set` overrides in $SET: the whole
# command timed from outside, peak RSS from /usr/bin/time; lines in $OUTD/seeds.txt, records in $OUTD/results.
# Ran for reports/benchmarks/cpu/compile-layers-2026-12-03-xeon/ (as dev/cpu_layers_seeds.sh, SET fixed to
# recipe.compile=layers) and for the published CPU records of 2026-12-04 (the defaults).
set -uo pipefail
cd "${CLONE:?a clean clone of the code measured}"
export PYTHONPATH=$CLONE LORABENCH_DATA=${LORABENCH_DATA:?the data file}
OUTD=${OUTD:-/tmp/cpu-seeds}; mkdir -p "$OUTD"
overrides=(); for item in ${SET:-}; do overrides+=(--set "$item"); done
seeds=("$@"); [ ${#seeds[@]} -gt 0 ] || seeds=(3407 42 1234)
for seed in "${seeds[@]}"; do
  start=$(date +%s.%N)
  /usr/bin/time -v -o "$OUTD/time-$seed.txt" .venv/bin/lorabench run benchmarks/setups/exp_a.toml --seed "$seed" \
    --timed --stack cpu "${overrides[@]}" --results "$OUTD/results" > "$OUTD/run-$seed.log" 2>&1
  rc=$?
  echo "seed $seed: rc=$rc whole command $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s | max RSS $(grep 'Maximum resident' "$OUTD/time-$seed.txt" | awk '{print $NF}') kB | $(tail -n 1 "$OUTD/run-$seed.log" | cut -c1-150)" | tee -a "$OUTD/seeds.txt"
done
