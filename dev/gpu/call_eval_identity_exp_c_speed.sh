#!/usr/bin/env bash
# H200 plan, the 2026-11-30 run (93beaf1), call 3 (after call_vs_peer.sh, same machine): Exp A seed 1234 on GPU 0 while
# bench_eval.py decodes seed 3407's adapter in fp32 on GPU 1 (issue 3's identity check: batched vs one
# question at a time vs the peer's generate); then Exp C's speed pair, 100 steps, timed, one after the other.
set -uo pipefail
source dev/gpu/env.sh
R=/root/results
A=$R/h200-image/nvidia-h200x2/exp_a/smollm2-135m-lora
(CUDA_VISIBLE_DEVICES=0 timeout 200 python3 -m harness.cli run benchmarks/setups/exp_a.toml --seed 1234 \
  --results "$R" --quiet > "$OUT/exp_a_1234.log" 2>&1) &
(CUDA_VISIBLE_DEVICES=1 timeout 270 python3 dev/bench_eval.py "$A/seed-3407.json" --precision fp32 \
  --ways peer,harness,one-at-a-time --repeats 3 --one-at-a-time-limit 60 --json "$OUT/bench_eval_fp32.json" \
  > "$OUT/bench_eval_fp32.txt" 2>&1) &
wait
cat "$OUT/bench_eval_fp32.txt"; tail -n 2 "$OUT/exp_a_1234.log"
exp_c_speed_pair 3407
tar czf "$OUT/results.tgz" --exclude='*.adapter*' --exclude=.work -C /root results
