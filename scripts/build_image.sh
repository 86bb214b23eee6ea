#!/usr/bin/env bash
# Build one stack's image through compose (so what is tested is compose's build), timed:
#   bash scripts/build_image.sh cpu                       # -> lorabench:cpu
#   STACK=rocm7.2-hf5.5 bash scripts/build_image.sh rocm7.2-hf5.5
# Environment (all optional):
#   BASE_IMAGE=IMAGE         a stand-in base, e.g. lorabench-base:bookworm-py3.11 (scripts/base_image.sh);
#                            without it the Dockerfile's pinned base is used
#   LORABENCH_WHEELS=DIR     serve DIR's wheels to the build over HTTP on the docker bridge (PIP_FIND_LINKS),
#                            for machines that cannot reach PyPI's torch CPU index (this project's CI: /opt/wheels)
#   LORABENCH_DOCKERFILE=F   build F with `docker build` as lorabench:$LORABENCH_TAG instead of the stack's service
#                            (CI: Dockerfile.rocm on the stand-in base with the cpu stack, tag rocm-standin)
# Prints the image reference on stdout; wall time, image id and size on stderr.
set -euo pipefail
stack="${1:?usage: scripts/build_image.sh STACK}"
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
say() { echo "build_image: $*" >&2; }

accelerator="$(python3 - "$stack" <<'PY'
import sys, tomllib
stacks = tomllib.load(open("lockfiles/stacks.toml", "rb"))["stacks"]
if sys.argv[1] not in stacks:
    sys.exit(f"build_image: unknown stack {sys.argv[1]!r}; known: {', '.join(sorted(stacks))}")
print(stacks[sys.argv[1]]["accelerator"])
PY
)"
case "$accelerator" in
    cpu) compose=(docker compose --profile cpu); service=smoke-cpu ;;
    cuda) export CUDA_STACK="$stack"; compose=(docker compose --profile nvidia); service=bench-nvidia ;;
    rocm) export STACK="$stack"; compose=(docker compose); service=bench ;;
esac

# compose reads the whole file, so it needs the host's variables even to build; they also carry GIT_SHA and
# GIT_DIRTY, baked into the image (.git is not in the build context).
eval "$(bash scripts/host_env.sh)"
args=()
if [ -n "${BASE_IMAGE:-}" ]; then
    args+=(--build-arg "BASE_IMAGE=$BASE_IMAGE")
fi

server_pid=""
# Waited for, so the next build (CI builds two images in a row) finds the fixed port free.
cleanup() { if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi; }
trap cleanup EXIT
if [ -n "${LORABENCH_WHEELS:-}" ]; then
    # The default bridge's address on this host: build steps reach it whatever their network mode.
    gateway="$(ip -4 -o addr show docker0 2>/dev/null | awk '{print $4}' | cut -d/ -f1 | head -1)"
    [ -n "$gateway" ] || { say "no docker0 address to serve $LORABENCH_WHEELS on"; exit 1; }
    # A fixed port when it is free: the URL is a build argument, and a new one each build would miss the cache
    # of the stack's layer (minutes of pip) on every rebuild. SO_REUSEADDR as http.server binds: the last
    # build's connections linger in TIME_WAIT on that port for a minute, which a plain bind takes for "in use"
    # (CI's second image got a random port and rebuilt its pip layer every run: 96-118 s).
    port="$(python3 -c '
import socket, sys, time
for _ in range(30):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind((sys.argv[1], 38765))
        break
    except OSError:
        s.close()
        time.sleep(0.1)
else:
    s = socket.socket()
    s.bind((sys.argv[1], 0))
print(s.getsockname()[1])' "$gateway")"
    python3 -m http.server --bind "$gateway" --directory "$LORABENCH_WHEELS" "$port" >/dev/null 2>&1 &
    server_pid=$!
    for _ in $(seq 50); do
        python3 -c "import urllib.request; urllib.request.urlopen('http://$gateway:$port/', timeout=1)" 2>/dev/null && break
        sleep 0.1
    done
    say "serving $LORABENCH_WHEELS at http://$gateway:$port/ to the build"
    # The local folder replaces PyPI's torch CPU index, which this machine cannot reach.
    args+=(--build-arg "PIP_FIND_LINKS=http://$gateway:$port/" --build-arg "PIP_TRUSTED_HOST=$gateway"
           --build-arg "PIP_EXTRA_INDEX_URL=" --build-arg "LORABENCH_INDEX_URL=none")
fi

start=$(date +%s)
if [ -n "${LORABENCH_DOCKERFILE:-}" ]; then
    # A Dockerfile other than the stack's, outside compose (CI's ROCm stand-in: Dockerfile.rocm on the stand-in
    # base with a stack that base can install); the image is lorabench:$LORABENCH_TAG.
    image="lorabench:${LORABENCH_TAG:?LORABENCH_TAG names the image built from LORABENCH_DOCKERFILE}"
    docker build -f "$LORABENCH_DOCKERFILE" --build-arg "STACK=$stack" --build-arg "IMAGE_NAME=$image" \
        --build-arg "GIT_SHA=$GIT_SHA" --build-arg "GIT_DIRTY=$GIT_DIRTY" "${args[@]}" -t "$image" . >&2
else
    "${compose[@]}" build "${args[@]}" "$service" >&2
    image="$("${compose[@]}" config --images "$service" | head -1)"
fi
say "$image built in $(( $(date +%s) - start )) s: $(docker image inspect -f '{{.Id}} {{.Size}} bytes' "$image")"
echo "$image"
