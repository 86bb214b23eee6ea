#!/usr/bin/env bash
# H200 plan, call 3 (after the model was carried and joined): bitsandbytes, then Exp B's three 4-bit
# seeds at once (two on GPU 0, one on GPU 1: Exp B claims accuracy and per-process peak memory, not
# time), then Exp C's DDP accuracy run on SmolLM2 (both GPUs).
set -uo pipefail
source dev/gpu/env.sh
install_bundle .whl/b2
R=/root/results
for s in 3407:0 42:0 1234:1; do
  (CUDA_VISIBLE_DEVICES=${s#*:} timeout 300 python3 -m harness.cli run benchmarks/setups/exp_b_4bit.toml \
    --seed "${s%:*}" --results "$R" --quiet > "$OUT/exp_b_${s%:*}.log" 2>&1) &
done
wait
tail -n 1 "$OUT"/exp_b_*.log
[ "${EXP_C_ACCURACY:-1}" = 1 ] && timeout 200 python3 -m harness.cli run benchmarks/setups/exp_c_two_cards.toml \
  --seed 3407 --results "$R" --quiet 2>&1 | tail -n 1
tar czf "$OUT/results.tgz" --exclude='*.adapter*' --exclude=.work -C /root results
