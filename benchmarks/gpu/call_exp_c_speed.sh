#!/usr/bin/env bash
# H200 plan, second session, call 2: join the model (its tokenizer builds the 1B random model), then
# Exp C's speed pair, timed, one after the other on the quiet machine.
set -uo pipefail
source benchmarks/gpu/env.sh
bash benchmarks/gpu/join_model.sh .carry/b/part-b || exit 1
R=/root/results
for s in one_card two_cards; do
  timeout 150 python3 -m harness.cli run "benchmarks/setups/exp_c_speed_$s.toml" --seed 3407 --timed \
    --allow-noisy --results "$R" --quiet > "$OUT/exp_c_speed_$s.log" 2>&1
  tail -n 1 "$OUT/exp_c_speed_$s.log"
done
