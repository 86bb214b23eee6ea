#!/usr/bin/env bash
# The images' entrypoint: the container checks (scripts/container_checks.py: writable results and caches,
# GPU device access, the GPU's gfx arch against torch's kernels, what the guard can see), then
# `lorabench doctor --untimed --no-guard` (its screen on stderr: runtime, groups, devices torch sees, arch,
# memory, disk, the image's stack against its lockfile; exit 2 names what blocks), then the command.
# The guard is left to each timed phase, which refuses and records the reading itself.
# LORABENCH_SKIP_CHECKS=1 skips both (debugging a broken container).
# Options alone (`docker compose run --rm bench-cpu --help`) are lorabench's: a command of its own is run as it
# is, so `... bench-cpu lorabench report ...` and `... bench-cpu bash` work as before. Help skips the checks.
set -euo pipefail
case "${1:-}" in
    -h|--help) exec lorabench "$@" ;;
    -*) set -- lorabench "$@" ;;
esac
if [ "${LORABENCH_SKIP_CHECKS:-0}" != 1 ]; then
    python3 /opt/lorabench/scripts/container_checks.py
    lorabench doctor --untimed --no-guard >&2
fi
exec "$@"
