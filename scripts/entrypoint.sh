#!/usr/bin/env bash
# The images' entrypoint: the container checks (scripts/container_checks.py: writable results and caches,
# GPU device access, the GPU's gfx arch against torch's kernels, what the guard can see), then the command.
# LORABENCH_SKIP_CHECKS=1 skips them (debugging a broken container).
set -euo pipefail
if [ "${LORABENCH_SKIP_CHECKS:-0}" != 1 ]; then
    python3 /opt/lorabench/scripts/container_checks.py
fi
exec "$@"
