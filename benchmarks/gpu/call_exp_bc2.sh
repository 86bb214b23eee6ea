#!/usr/bin/env bash
# H200 plan, second session, call 3 (after calls 1 and 2 carried the model): bitsandbytes, then Exp B's
# three 4-bit seeds at once (two on GPU 0, one on GPU 1: Exp B claims accuracy and per-process peak
# memory, not time). Exp C's speed pair runs in call 2 (benchmarks/gpu/call_exp_c_speed.sh).
set -uo pipefail
source benchmarks/gpu/env.sh
install_bundle .whl/b2
R=/root/results
for s in 3407:0 42:0 1234:1; do
  (CUDA_VISIBLE_DEVICES=${s#*:} timeout 300 python3 -m harness.cli run benchmarks/setups/exp_b_4bit.toml \
    --seed "${s%:*}" --results "$R" --quiet > "$OUT/exp_b_${s%:*}.log" 2>&1) &
done
wait
tail -n 1 "$OUT"/exp_b_*.log
tar czf "$OUT/results.tgz" --exclude='*.adapter*' --exclude=.work -C /root results
