#!/usr/bin/env bash
# `docker compose run --rm SERVICE [ARGS...]` for a maintainer's shell, after the host checks Docker would
# answer only obscurely ("error gathering device information while adding custom device "/dev/kfd"").
#   bash scripts/compose_run.sh bench            # ROCm (the default services: bench, smoke)
#   bash scripts/compose_run.sh smoke-cpu        # CPU profile (smoke-cpu, bench-cpu, report-cpu)
#   bash scripts/compose_run.sh bench-nvidia     # NVIDIA profile (bench-nvidia, smoke-nvidia)
# It sets the host's variables (scripts/host_env.sh) when they are not set yet, picks the profile from the
# service's name, and for a ROCm service checks /dev/kfd and /dev/dri/renderD* first: a host without them
# (no amdgpu/KFD driver: a CPU-only or NVIDIA machine) is told which profile to use instead, exit 2.
# LORABENCH_DEV (default /dev) is where the device nodes are looked for (tests point it at a folder);
# LORABENCH_DRY_RUN=1 prints the docker command instead of running it.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
service="${1:?usage: scripts/compose_run.sh SERVICE [ARGS...] (bench, smoke, report, *-cpu, *-nvidia)}"
shift
dev="${LORABENCH_DEV:-/dev}"
fail() { echo "compose_run: $*" >&2; exit 2; }

case "$service" in
    *-cpu) profile=(--profile cpu); needs=none ;;
    *-nvidia) profile=(--profile nvidia); needs=none ;;
    bench|bench-setups|smoke) profile=(); needs=rocm ;;
    report) profile=(); needs=none ;;
    *) fail "unknown service $service; one of: bench, bench-setups, smoke, report, bench-cpu, smoke-cpu, report-cpu, bench-nvidia, smoke-nvidia" ;;
esac

if [ "$needs" = rocm ]; then
    others="no ROCm GPU here? use the CPU profile: bash scripts/compose_run.sh ${service}-cpu (docker compose --profile cpu run --rm ${service}-cpu), or on an NVIDIA host: bash scripts/compose_run.sh ${service}-nvidia"
    [ -e "$dev/kfd" ] || fail "$dev/kfd does not exist: this host has no AMD ROCm kernel driver (amdgpu with KFD), so the ROCm service $service cannot start; $others"
    renders=("$dev"/dri/renderD*)
    [ -e "${renders[0]}" ] || fail "$dev/kfd exists but no $dev/dri/renderD* node: the amdgpu driver exposes no GPU; $others"
    if [ "$(id -u)" != 0 ]; then
        for node in "$dev/kfd" "${renders[@]}"; do
            if [ ! -r "$node" ] || [ ! -w "$node" ]; then
                gid="$(stat -c %g "$node")"
                name="$(getent group "$gid" | cut -d: -f1 || true)"
                fail "$node is not readable and writable by $(id -un) (groups: $(id -Gn)); it belongs to group ${name:-GID $gid}: sudo usermod -aG ${name:-render} $(id -un), then log out and in"
            fi
        done
    fi
fi

if [ -z "${LORABENCH_UID:-}" ] || [ -z "${LORABENCH_RESULTS_DIR:-}" ]; then
    eval "$(bash scripts/host_env.sh)"
fi
command=(docker compose "${profile[@]}" run --rm "$service" "$@")
if [ "${LORABENCH_DRY_RUN:-0}" = 1 ]; then
    echo "${command[*]}"
    exit 0
fi
exec "${command[@]}"
