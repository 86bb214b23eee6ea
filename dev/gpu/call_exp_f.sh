#!/usr/bin/env bash
# H200 plan, call 4: Unsloth and its needs, then Exp F's three seeds (3407 on GPU 0 beside 42 on GPU 1,
# then 1234 on GPU 0), each alone on its GPU so that its train time compares with Exp A's.
set -uo pipefail
source dev/gpu/env.sh
install_bundle .whl/b3
python3 -c "import unsloth, torch; print('unsloth', unsloth.__version__, torch.__version__)" 2>&1 | tail -3
R=/root/results
f() { CUDA_VISIBLE_DEVICES=$2 timeout "$3" python3 -m harness.cli run benchmarks/setups/exp_f_unsloth.toml --seed "$1" \
  --results "$R" --quiet > "$OUT/exp_f_$1.log" 2>&1; }
f 3407 0 280 & f 42 1 280 & wait
f 1234 0 220
tail -n 4 "$OUT"/exp_f_*.log
tar czf "$OUT/results.tgz" --exclude='*.adapter*' --exclude=.work -C /root results
