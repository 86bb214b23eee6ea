#!/usr/bin/env bash
# A stranger's first hour, rehearsed (.ci/run calls it; issue #36): a clean container from the project's own
# base image (scripts/base_image.sh) plus what a stranger installs first (make), with NO pip configuration and
# NO local wheel folder, where PyPI is PyPI and a plain HTTP server on the container's loopback, laid out as
# PyTorch's index (/whl/cpu/torch/<wheel>), stands in for PyTorch's CPU index (LORABENCH_INDEX_URL):
#   1. an unsupported Python (Debian's pypy3) gets install.sh's one-line refusal, exit 2, before pip starts;
#   2. `make setup` from a copy of the tracked files passes (lockfile hashes, torch from the index, verify);
#   3. a 2-step smoke run (`lorabench run` on Exp A's setup, 2 questions, no baseline) writes an ok record.
#   bash scripts/rehearse_stranger.sh        # as root; prints each step's time, exit 1 when a step fails
# Kept between runs: the stranger image (docker's cache) and the index folder. Not the downloads: pip's HTTP cache
# stores nothing here (this machine's TLS proxy sends PyPI's files without cache headers), so each run fetches
# the ~130 wheels from PyPI again. Two pip settings reach the container, neither a package source: PIP_CERT (the
# base image's: the CA bundle of that proxy) and PIP_NO_COMPILE=1 (no .pyc for torch's thousands of files:
# minutes of CPU on a loaded machine, and the smoke run compiles what it imports anyway).
# The torch wheel for the stand-in index is taken from $LORABENCH_WHEELS (default /opt/wheels, this project's
# machines); without it the rehearsal cannot run and says so.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
work="$root/.cache/stranger"
wheels="${LORABENCH_WHEELS:-/opt/wheels}"
image=lorabench-stranger:bookworm
say() { echo "rehearse_stranger: $*" >&2; }
start=$(date +%s)

bash scripts/docker_engine.sh
base="$(bash scripts/base_image.sh)"
# Debian's make for `make setup`, Debian's pypy3 as the Python no stack has hashes for. Cached by docker.
mkdir -p "$work"
docker build -q -t "$image" - >"$work/image.log" 2>&1 <<EOF || { cat "$work/image.log" >&2; say "FAILED: $image"; exit 1; }
FROM $base
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends make pypy3 \
    >/dev/null && rm -rf /var/lib/apt/lists/*
EOF

torch_wheel="$(python3 - <<'PY'
import tomllib
s = tomllib.load(open("lockfiles/stacks.toml", "rb"))["stacks"]["cpu"]
print(next(w for w in s["index_wheels"] if "-cp311-" in w))
PY
)"
mkdir -p "$work/index/whl/cpu/torch"
if [ ! -f "$work/index/whl/cpu/torch/$torch_wheel" ]; then
    [ -f "$wheels/$torch_wheel" ] || { say "no $torch_wheel in $wheels (LORABENCH_WHEELS) for the stand-in index"; exit 1; }
    cp "$wheels/$torch_wheel" "$work/index/whl/cpu/torch/"
fi
# The stranger's clone: the tracked files as they are in this checkout.
git ls-files -z | tar --null -T - -cf "$work/src.tar"
data="$root/../shared/data/sql-create-context/random-sample.jsonl"
[ -f "$data" ] || data="$root/.cache/ci/data/generated-sql.jsonl"  # scripts/ci_containers.sh made it
[ -f "$data" ] || { say "no data for the smoke run: $data"; exit 1; }
say "ready in $(( $(date +%s) - start )) s (image $image, index $work/index)"

set +e
docker run --rm --network bridge \
    -v "$work/src.tar:/src.tar:ro" -v "$work/index:/index:ro" -e PIP_NO_COMPILE=1 \
    -v "$root/scripts/rehearse_stranger_container.sh:/rehearse.sh:ro" \
    -v "$data:/data/sql.jsonl:ro" -e LORABENCH_DATA=/data/sql.jsonl -e HF_HUB_OFFLINE=1 -e HF_DATASETS_OFFLINE=1 \
    "$image" bash /rehearse.sh </dev/null
status=$?
set -e
say "$( [ "$status" = 0 ] && echo passed || echo FAILED) in $(( $(date +%s) - start )) s"
exit "$status"
