#!/usr/bin/env bash
# Recompile one stack's lockfile (or all) with uv, with hashes. Run from the repository root:
#   bash lockfiles/compile.sh [STACK...]
# uv keeps the pins already in the output file unless an input changed, so re-running is a no-op.
# Needs uv on PATH (pip install uv). Reads lockfiles/stacks.toml for each stack's python and inputs.
set -euo pipefail
cd "$(dirname "$0")/.."
stacks=("$@")
if [ ${#stacks[@]} -eq 0 ]; then
    mapfile -t stacks < <(python3 -c 'import tomllib; print("\n".join(tomllib.load(open("lockfiles/stacks.toml","rb"))["stacks"]))')
fi
for stack in "${stacks[@]}"; do
    mapfile -t args < <(python3 - "$stack" <<'PY'
import sys, tomllib
s = tomllib.load(open("lockfiles/stacks.toml", "rb"))["stacks"][sys.argv[1]]
print(f"lockfiles/{s['input']}")
print(f"--python-version={s['python']}")
print(f"--python-platform={s['platform']}")
print(f"--output-file=lockfiles/{s['lockfile']}")
if s.get("overrides"):
    # The overrides file lists what the base image owns: uv drops it from resolution.
    print(f"--excludes=lockfiles/{s['overrides']}")
for link in s.get("find_links", []):
    print(f"--find-links={link}")
PY
)
    uv pip compile --quiet --generate-hashes --custom-compile-command "bash lockfiles/compile.sh $stack" "${args[@]}"
done
