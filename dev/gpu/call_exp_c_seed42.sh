#!/usr/bin/env bash
# H200 plan, the 2026-11-30 run (93beaf1), call 4 (same machine): Exp C's second seed: the DDP accuracy run (paired with Exp A
# seed 42 from call_vs_peer.sh) and the speed pair, timed.
set -uo pipefail
source dev/gpu/env.sh
R=/root/results
timeout 200 python3 -m harness.cli run benchmarks/setups/exp_c_two_cards.toml --seed 42 --results "$R" --quiet \
  > "$OUT/exp_c_42.log" 2>&1
tail -n 1 "$OUT/exp_c_42.log"
exp_c_speed_pair 42
tar czf "$OUT/results.tgz" --exclude='*.adapter*' --exclude=.work -C /root results
