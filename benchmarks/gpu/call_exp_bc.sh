#!/usr/bin/env bash
# H200 plan, call 3: bitsandbytes, then Exp B's three 4-bit seeds at once (two on GPU 0, one on GPU 1:
# Exp B claims accuracy and per-process peak memory, not time), then Exp C: the speed pair timed one
# after the other on a quiet machine, and the DDP accuracy run on SmolLM2.
set -uo pipefail
source benchmarks/gpu/env.sh
install_bundle .whl/b2
R=/root/results
for s in 3407:0 42:0 1234:1; do
  (CUDA_VISIBLE_DEVICES=${s#*:} timeout 330 python3 -m harness.cli run benchmarks/setups/exp_b_4bit.toml \
    --seed "${s%:*}" --results "$R" --quiet > "$OUT/exp_b_${s%:*}.log" 2>&1) &
done
wait
tail -n 2 "$OUT"/exp_b_*.log
LB="python3 -m harness.cli run"
timeout 100 $LB benchmarks/setups/exp_c_speed_one_card.toml --seed 3407 --timed --allow-noisy --results "$R" --quiet 2>&1 | tail -3
timeout 100 $LB benchmarks/setups/exp_c_speed_two_cards.toml --seed 3407 --timed --allow-noisy --results "$R" --quiet 2>&1 | tail -3
timeout 200 $LB benchmarks/setups/exp_c_two_cards.toml --seed 3407 --results "$R" --quiet 2>&1 | tail -3
tar czf "$OUT/results.tgz" --exclude='*.adapter*' --exclude=.work -C /root results
