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
exp_a_model "$seed" || exit 1
exp_a_vs_peer "$seed" 330
if [ "${1:-}" = "--three" ]; then
  shift
  exp_a_three_at_once
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
