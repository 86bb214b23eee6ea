#!/usr/bin/env bash
# H200 plan, any call after the model has travelled: join it (its tokenizer builds the random-weight
# model of the speed setups), then Exp C's speed pair, timed, one after the other on the quiet machine.
set -uo pipefail
source dev/gpu/env.sh
bash dev/gpu/join_model.sh .carry/b/part-b || exit 1
R=/root/results
exp_c_speed_pair 3407
tar czf "$OUT/results.tgz" --exclude='*.adapter*' --exclude=.work -C /root results
