# Sourced on the lent GPU machine (offline, python3 with torch there) before any lorabench command.
# Wheels carried in .whl/ are installed into /tmp/site; data and the model travel in .carry/.
export PYTHONPATH="/tmp/site:$PWD" PYTHONUNBUFFERED=1
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 UNSLOTH_DISABLE_STATISTICS=1
export LORABENCH_CACHE=/root/lbcache LORABENCH_DATA=/root/lbdata/random-sample.jsonl
# That machine's own image (torch 2.11 + cu130, transformers 5.17, carried trl 1.15): not one of our
# pinned stacks, so it is recorded under its own name and no lockfile hash.
export LORABENCH_STACK=h200-image
# Keep NVLink multicast off: it can take the host's shared GPUs out of service.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
install_bundle() { python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$1"/*.whl; }
lorabench() { python3 -m harness.cli "$@"; }
# Exp C's speed pair for one seed, timed, one card then two, one after the other (results under $R).
exp_c_speed_pair() {
  local s
  for s in one_card two_cards; do
    timeout 220 python3 -m harness.cli run "benchmarks/setups/exp_c_speed_$s.toml" --seed "$1" --timed \
      --allow-noisy --results "$R" --quiet > "$OUT/exp_c_speed_${s}_$1.log" 2>&1
    tail -n 1 "$OUT/exp_c_speed_${s}_$1.log"
  done
}
