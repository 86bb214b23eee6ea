#!/usr/bin/env bash
# H200 plan, an nvidia-h200-x2 after README call 1 (bundle b1, model part A, data): Exp C as two single-GPU
# "nodes" on one host. Each node is its own `lorabench run` with one GPU (CUDA_VISIBLE_DEVICES 0 or 1) and its
# own lock folder (as two hosts have), meeting through torchrun's c10d rendezvous at 127.0.0.1; node 0 starts
# first, so it hosts the rendezvous store, leads and writes the record. Carry .carry/b (model part B).
#
#   bash dev/gpu/call_exp_c_two_nodes.sh accuracy   # exp_c_two_nodes, seeds 3407 then 42 (~6-7 min)
#   bash dev/gpu/call_exp_c_two_nodes.sh speed      # seed 3407, timed: the 4B shape as two nodes, then one
#                                                          # card, then two cards of one node (~8 min)
#
# NODE_LINK=net (default): NCCL between the nodes as between two hosts, through sockets on loopback (P2P over
# NVLink and shared memory off); NODE_LINK=host lets NCCL pick (P2P between the two processes). NVLink
# multicast stays off either way (env.sh). EXP_C_NODES_SEEDS overrides the accuracy seeds.
# Packs $OUT/results.tgz (records and predictions, no adapters), each run's logs per node, and link.txt.
# Every run has its own timeout, and a run that would end past ~560 s of the call is skipped (named in skipped.txt).
set -uo pipefail
source dev/gpu/env.sh
part="${1:-accuracy}"
case "$part" in accuracy|speed) ;; *) echo "usage: $0 accuracy|speed" >&2; exit 2 ;; esac
bash dev/gpu/join_model.sh .carry/b/part-b || exit 1
R=/root/results
mkdir -p /tmp/node0 /tmp/node1
link=()
if [ "${NODE_LINK:-net}" = net ]; then
  link=(NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=lo)
fi
echo "NODE_LINK=${NODE_LINK:-net} ${link[*]}" > "$OUT/link.txt"

fits() {  # NAME SECONDS: is there time left in this call for a run of about SECONDS?
  if [ $((SECONDS + $2)) -gt 560 ]; then echo "$1 (needs ~$2 s, $SECONDS s used)" >> "$OUT/skipped.txt"; return 1; fi
}

two_nodes() {  # SETUP SEED LIMIT [run args...]: both nodes, node 0 leads; prints the lead's summary line
  local setup=$1 seed=$2 limit=$3 port name node
  shift 3
  port=$((29400 + RANDOM % 400))
  name=$(basename "$setup" .toml)
  for node in 0 1; do
    env "${link[@]}" CUDA_VISIBLE_DEVICES=$node LORABENCH_LOCK_DIR=/tmp/node$node \
      LORABENCH_RDZV_ENDPOINT=127.0.0.1:$port LORABENCH_RDZV_TIMEOUT=120 \
      timeout "$limit" python3 -m harness.cli run "$setup" --seed "$seed" --results "$R$([ $node = 1 ] && echo -node1)" \
      --quiet "$@" > "$OUT/${name}_${seed}_node$node.log" 2>&1 &
    if [ $node = 0 ]; then sleep 3; fi  # node 0 binds the endpoint first: it leads
  done
  wait
  tail -n 1 "$OUT/${name}_${seed}_node0.log"
  tail -n 1 "$OUT/${name}_${seed}_node1.log"
}

one_node() {  # SETUP SEED LIMIT [run args...]
  local setup=$1 seed=$2 limit=$3 name
  shift 3
  name=$(basename "$setup" .toml)
  timeout "$limit" python3 -m harness.cli run "$setup" --seed "$seed" --results "$R" --quiet "$@" \
    > "$OUT/${name}_${seed}.log" 2>&1
  tail -n 1 "$OUT/${name}_${seed}.log"
}

if [ "$part" = accuracy ]; then
  # The GGUF converts once per machine (inside the first run otherwise, where both nodes would wait on it).
  python3 -c "from harness.config import ModelConfig; from harness.models import resolve_model; resolve_model(ModelConfig(source='smollm2-135m'))" \
    > "$OUT/convert.log" 2>&1
  for seed in ${EXP_C_NODES_SEEDS:-3407 42}; do
    fits "two nodes seed $seed" 200 && two_nodes benchmarks/setups/exp_c_two_nodes.toml "$seed" 240
  done
else
  timed=(--timed --allow-noisy)
  fits "two nodes" 170 && two_nodes benchmarks/setups/exp_c_speed_two_nodes.toml 3407 220 "${timed[@]}" \
    --guard-config dev/gpu/guard_two_nodes_one_host.toml
  fits "one card" 200 && one_node benchmarks/setups/exp_c_speed_one_card.toml 3407 230 "${timed[@]}"
  fits "two cards" 150 && one_node benchmarks/setups/exp_c_speed_two_cards.toml 3407 190 "${timed[@]}"
fi
echo "call: ${SECONDS} s"
tar czf "$OUT/results.tgz" --exclude='*.adapter*' --exclude=.work -C /root results
