#!/usr/bin/env bash
# Install one stack into the current python environment, then the project. The Dockerfiles, CI and the
# Makefile all call this, so an image and a CI venv are built the same way:
#   python3 -m venv .venv && . .venv/bin/activate && bash scripts/install.sh cpu
# Environment:
#   LORABENCH_EDITABLE=0   install the project non-editable (images); default 1 (a checkout)
#   LORABENCH_VERIFY=0     skip the closing `lorabench stacks verify`; default 1
#   LORABENCH_ONLY=deps    the lockfile and extras only; =project: the project and the verify only. Images
#                          run the two apart, so a change to harness/ rebuilds one small layer, not the stack
#   LORABENCH_INDEX_URL=U  where the pins PyPI lacks (torch==2.13.0+cpu) come from, instead of the stack's
#                          index_url (a mirror, or the rehearsal's local stand-in); =none: pip's own configuration
#                          alone (a machine whose pip has a local wheel folder, as this project's CI)
#   PYTHON=python3.12      the interpreter to install into (default python3: the venv's, once activated)
#   scripts/install.sh --check-python STACK   only the Python check (the Makefile runs it before the venv)
# Where pins come from: lockfiles/stacks.toml's index_url for the pins with a local version label (only that
# index is asked for them), PyPI for the rest. A Python the stack has no hashes for (`pythons`) is refused
# before pip starts, in one line naming the fix, exit 2.
# What it does not do: create the venv, or install torch for a "base-image" stack (the image has it; a
# venv for such a stack needs --system-site-packages to see it).
set -euo pipefail
check_only=0
if [ "${1:-}" = "--check-python" ]; then check_only=1; shift; fi
stack="${1:?usage: scripts/install.sh [--check-python] STACK (see lockfiles/stacks.toml)}"
root="$(cd "$(dirname "$0")/.." && pwd)"
py="${PYTHON:-python3}"
refuse() { echo "install.sh: $*" >&2; exit 2; }

# Any Python answers this, even one too old for tomllib; the table is then read by python3 from PATH.
version="$("$py" -c 'import sys; print("%s %d.%d" % (sys.implementation.name, sys.version_info[0], sys.version_info[1]))' 2>/dev/null)" \
    || refuse "cannot run $py; name a Python with PYTHON=python3.X (make setup PYTHON=python3.12)"
reader="$py"
"$py" -c 'import tomllib' 2>/dev/null || reader=python3
"$reader" -c 'import tomllib' 2>/dev/null \
    || refuse "$py is $version, older than every stack's (lorabench needs CPython 3.11 or newer): run \`make setup PYTHON=python3.12\`, or use the image (docker compose run --rm bench-cpu)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# One python call reads the table, checks the Python and splits the lockfile by source, so a missing stack
# or an unsupported Python fails here, before pip runs.
table="$("$reader" - "$root/lockfiles" "$stack" "$version" "$work" <<'PY'
import sys, tomllib
from pathlib import Path
lockfiles, name, (impl, version), work = Path(sys.argv[1]), sys.argv[2], sys.argv[3].split(), Path(sys.argv[4])
stacks = tomllib.loads((lockfiles / "stacks.toml").read_text())["stacks"]
if name not in stacks:
    sys.exit(f"install.sh: unknown stack {name!r}; known: {', '.join(sorted(stacks))}")
s = stacks[name]
pythons = s.get("pythons") or [s["python"]]
if impl != "cpython" or version not in pythons:
    newest = "python" + max(pythons, key=lambda v: tuple(map(int, v.split("."))))
    service = {"cpu": "bench-cpu", "cuda": "bench-nvidia"}.get(s["accelerator"], "bench")
    note = f" ({s['pythons_note']})" if s.get("pythons_note") else ""
    sys.exit(f"install.sh: stack {name} has hashes for CPython {', '.join(pythons)} only, not {impl} {version}"
             f"{note}: run `make setup PYTHON={newest}`, or use the image: docker compose run --rm {service}")
# The lockfile in two: the pins with a local version label (only the stack's index serves them), the rest.
blocks = {"index": [], "pypi": []}
for line in (lockfiles / s["lockfile"]).read_text().splitlines(keepends=True):
    if not line.strip() or line.lstrip().startswith("#") or line.startswith("-"):
        continue  # comments and pip options
    if not line[0].isspace():  # a pin, `name==version \`; its hashes follow, indented
        current = blocks["index" if "+" in line.split("==", 1)[-1].split()[0] else "pypi"]
    current.append(line)
for part, lines in blocks.items():
    (work / f"{part}.txt").write_text("".join(lines))
print(s["torch"])
print(s.get("index_url", ""))
print(" ".join(s.get("extras", [])))
PY
)" || exit 2
mapfile -t fields <<<"$table"
torch_from="${fields[0]}"
index_url="${LORABENCH_INDEX_URL:-${fields[1]}}"
if [ "$index_url" = none ]; then index_url=""; fi
extras="${fields[2]:-}"
if [ "$check_only" = 1 ]; then exit 0; fi

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
    pip=("$py" -m pip install --no-deps --require-hashes --only-binary=:all:)
    if [ -s "$work/index.txt" ]; then
        if [ -n "$index_url" ]; then
            "${pip[@]}" --index-url "$index_url" -r "$work/index.txt"
        else
            "${pip[@]}" -r "$work/index.txt"
        fi
    fi
    "${pip[@]}" -r "$work/pypi.txt"
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
