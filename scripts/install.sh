#!/usr/bin/env bash
# Install one stack into the current python environment, then the project. The Dockerfiles, CI and the
# Makefile all call this, so an image and a CI venv are built the same way:
#   python3 -m venv .venv && . .venv/bin/activate && bash scripts/install.sh cpu
# Environment:
#   LORABENCH_EDITABLE=0   install the project non-editable (images); default 1 (a checkout)
#   LORABENCH_VERIFY=0     skip the closing `lorabench stacks verify`; default 1
#   LORABENCH_ONLY=deps    the lockfile and extras only; =project: the project and the verify only. Images
#                          run the two apart, so a change to harness/ rebuilds one small layer, not the stack
# What it does not do: create the venv, or install torch for a "base-image" stack (the image has it; a
# venv for such a stack needs --system-site-packages to see it).
set -euo pipefail
stack="${1:?usage: scripts/install.sh STACK (see lockfiles/stacks.toml)}"
root="$(cd "$(dirname "$0")/.." && pwd)"
py="${PYTHON:-python3}"

# One python call reads the table, so a missing stack fails here with the known names, before pip runs.
mapfile -t fields < <("$py" - "$root/lockfiles/stacks.toml" "$stack" <<'PY'
import sys, tomllib
stacks = tomllib.load(open(sys.argv[1], "rb"))["stacks"]
name = sys.argv[2]
if name not in stacks:
    sys.exit(f"install.sh: unknown stack {name!r}; known: {', '.join(sorted(stacks))}")
s = stacks[name]
print(s["lockfile"])
print(s["torch"])
print(" ".join(s.get("extras", [])))
PY
)
lockfile="$root/lockfiles/${fields[0]}"
torch_from="${fields[1]}"
extras="${fields[2]:-}"

if [ "$torch_from" = "base-image" ] && ! "$py" -c "import torch" 2>/dev/null; then
    echo "install.sh: stack $stack takes torch from its base image, but $py cannot import torch;" \
         "use the image, or a venv made with --system-site-packages on top of it" >&2
    exit 2
fi

only="${LORABENCH_ONLY:-all}"
case "$only" in all|deps|project) ;; *) echo "install.sh: LORABENCH_ONLY must be all, deps or project, got $only" >&2; exit 2 ;; esac

# --no-deps: the lockfile is the complete closure, so pip never resolves, and cannot pull a PyPI torch or
# triton over the image's (those are left out of the lockfile by the stack's overrides file).
if [ "$only" != project ]; then
    "$py" -m pip install --no-deps --require-hashes --only-binary=:all: -r "$lockfile"
    if [ -n "$extras" ]; then
        # shellcheck disable=SC2086  # a space-separated list, split on purpose
        "$py" -m pip install --no-deps $extras
    fi
fi
if [ "$only" = deps ]; then exit 0; fi
if [ "${LORABENCH_EDITABLE:-1}" = "1" ]; then
    "$py" -m pip install --no-deps --no-build-isolation -e "$root"
else
    "$py" -m pip install --no-deps --no-build-isolation "$root"
fi
if [ "${LORABENCH_VERIFY:-1}" = "1" ]; then
    "$py" -m harness.cli stacks verify "$stack"
fi
