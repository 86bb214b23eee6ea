#!/usr/bin/env bash
# H200 plan, session 6 (a one-GPU nvidia-h200), on the merged code of issues 16-21 (divergence observer,
# step journal, trainer lifeline, CPU auto runtime, packing). After README call 1:
#   call 2: bash benchmarks/gpu/call_session6.sh 3407 --mfu
#   call 3: bash benchmarks/gpu/call_session6.sh 42 --three
# Each: join the model and convert the GGUF once (skipped when done); Exp A beside the peer for the seed,
# one after the other on GPU 0 (bench_vs_peer.py --one-gpu). --mfu: the 4B packed shape (8 x 2048 tokens,
# exp_c_speed_packed.toml), timed, without then with gradient checkpointing, and its MFU. --three: Exp A's
# three seeds started at once (fresh results).
set -uo pipefail
source benchmarks/gpu/env.sh
seed=$1; shift
exp_a_model "$seed" || exit 1
exp_a_vs_peer "$seed" 450
if [ "${1:-}" = "--mfu" ]; then
  shift
  for ckpt in false true; do
    timeout 150 python3 -m harness.cli run benchmarks/setups/exp_c_speed_packed.toml --seed "$seed" --timed --allow-noisy \
      --set recipe.gradient_checkpointing=$ckpt --set name=packed-8x2048-ckpt-$ckpt --results /root/results --quiet \
      > "$OUT/mfu-ckpt-$ckpt.log" 2>&1
    tail -n 1 "$OUT/mfu-ckpt-$ckpt.log"
  done
  python3 - <<'PY' | tee "$OUT/mfu.txt"
import glob, json
# The plain transformers + PEFT loop on this shape (../shared/DEVICE.md): 1.94 s/step with checkpointing,
# "about 23%" counted as 6 x params x tokens against 790 TFLOP/s (a bf16 matmul measured there).
for f in sorted(glob.glob("/root/results/h200-image/*/exp_c_speed/packed-8x2048-*/seed-*.json")):
    r = json.load(open(f)); t = r.get("train") or {}; m = r.get("memory") or {}
    if r["status"] != "ok" or not t.get("step_s"):
        print(f"{f}: {r['status']}: {r.get('reason')}"); continue
    tokens = t["tokens"] / t["steps_done"]
    plain = 6 * t["total_params"] * tokens / t["step_s"] / 790e12
    print(f"{r['setup_name']}: {t['step_s']:.3f} s/step ({tokens:.0f} tokens/step, {tokens / t['step_s']:.0f} tokens/s; "
          f"plain loop 1.94 s/step: {1.94 / t['step_s']:.2f}x), MFU {100 * t['mfu']:.1f}% (lorabench: 4N+2Nt per token "
          f"vs 989 TFLOP/s dense peak), {100 * plain:.1f}% in DEVICE.md's count (6N vs 790), peak "
          f"VRAM {(m.get('peak_vram_bytes') or 0) / 2**30:.1f} GiB")
PY
fi
if [ "${1:-}" = "--three" ]; then
  shift
  exp_a_three_at_once
fi
tar czf "$OUT/results-$seed.tgz" --exclude='*.adapter*' --exclude=.work -C /root $(cd /root && ls -d results results3 2>/dev/null)
