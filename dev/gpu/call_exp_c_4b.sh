#!/usr/bin/env bash
# H200 plan, the 2026-11-30 run (f6a7ea9), call 3 (after call_vs_peer_graphs.sh, same nvidia-h200-x2): Exp C's speed pair
# with the 4B Qwen3 shape (batch 64 on one card, then 32 per card on two), timed, one after the other;
# then Exp C's DDP accuracy run for seed 3407, whose record now holds each rank's model-load window
# (the staggered-load claim is judged from it by the suite, here or at home).
set -uo pipefail
source dev/gpu/env.sh
R=/root/results
exp_c_speed_pair 3407
timeout "${EXP_C_ACCURACY_TIMEOUT:-200}" python3 -m harness.cli run benchmarks/setups/exp_c_two_cards.toml \
  --seed 3407 --results "$R" --quiet > "$OUT/exp_c_two_cards_3407.log" 2>&1
tail -n 2 "$OUT/exp_c_two_cards_3407.log"
tar czf "$OUT/results.tgz" --exclude='*.adapter*' --exclude=.work -C /root results
