#!/usr/bin/env bash
# What compose.yaml needs from this host, as export lines for your shell:
#   eval "$(bash scripts/host_env.sh)" && docker compose run --rm bench
# - LORABENCH_UID/GID: the containers run as you, so records and reports on the host are yours.
# - LORABENCH_RENDER_GID/VIDEO_GID: the host's GIDs of render and video (an image's own group names resolve
#   to the image's GIDs, and /dev/kfd is then refused). A host without a render group gets your own GID,
#   one without either group nogroup (65534) for video: valid for group_add, they grant nothing.
# - results/ and reports-local/ (your runs: untracked, never the committed reports/), the HF cache, the
#   lorabench cache and the data folder are created here, as you, so dockerd never creates them root-owned.
# - LORABENCH_DATA (a local .jsonl/.json/.parquet) is mounted read-only at /data; unset, the checkout's
#   ../shared/data/sql-create-context/random-sample.jsonl when it exists (as `make bench`), else runs read the hub.
# - LORABENCH_IMAGE_DIGEST_{CPU,ROCM,CUDA}: the ids of the images built now, recorded in every record.
#   Run this again after a build.
# - GIT_SHA/GIT_DIRTY: baked into an image at build time (.git is not in the build context).
# Already-set LORABENCH_UID, LORABENCH_GID, LORABENCH_RESULTS_DIR and LORABENCH_REPORTS_DIR are kept.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
fail() { echo "host_env: $*" >&2; exit 2; }

uid="${LORABENCH_UID:-$(id -u)}"
gid="${LORABENCH_GID:-$(id -g)}"
gid_of() { getent group "$1" | cut -d: -f3 || true; }
render="$(gid_of render)"
video="$(gid_of video)"

results="${LORABENCH_RESULTS_DIR:-$root/results}"
reports="${LORABENCH_REPORTS_DIR:-$root/reports-local}"
hf_cache="${HF_HOME:-$HOME/.cache/huggingface}"
cache="${LORABENCH_CACHE:-$HOME/.cache/lorabench}"
# As `make bench` does: the checkout's sibling ../shared holds a local copy of the suite's data.
shared_data="$root/../shared/data/sql-create-context/random-sample.jsonl"
if [ -z "${LORABENCH_DATA:-}" ] && [ -f "$shared_data" ]; then
    LORABENCH_DATA="$(cd "$(dirname "$shared_data")" && pwd)/$(basename "$shared_data")"
fi
if [ -n "${LORABENCH_DATA:-}" ]; then
    [ -f "$LORABENCH_DATA" ] || fail "LORABENCH_DATA=$LORABENCH_DATA is not a file; point it at a local .jsonl/.json/.parquet, or unset it to read the hub"
    data_dir="$(cd "$(dirname "$LORABENCH_DATA")" && pwd)"
    data_in_container="/data/$(basename "$LORABENCH_DATA")"
else
    data_dir="$cache/no-data"
    data_in_container=""
fi
for dir in "$results" "$reports" "$hf_cache" "$cache" "$data_dir"; do
    if [ ! -d "$dir" ]; then
        mkdir -p "$dir"
        # Root preparing folders for another user (CI, sudo): hand them over.
        if [ "$(id -u)" = 0 ] && [ "$uid" != 0 ]; then chown "$uid:$gid" "$dir"; fi
    fi
    if [ "$(id -u)" = "$uid" ] && [ ! -w "$dir" ]; then
        fail "$dir is not writable by uid $uid (owner $(stat -c %u "$dir")); fix: sudo chown $uid:$gid $dir"
    fi
done

image_id() { docker image inspect -f '{{.Id}}' "$1" 2>/dev/null || true; }
emit() { printf 'export %s=%q\n' "$1" "$2"; }
emit LORABENCH_UID "$uid"
emit LORABENCH_GID "$gid"
render="${render:-$gid}"
video="${video:-$gid}"
# compose refuses a group_add listing one GID twice (a host with neither group): nogroup grants nothing.
if [ "$video" = "$render" ]; then video=65534; fi
emit LORABENCH_RENDER_GID "$render"
emit LORABENCH_VIDEO_GID "$video"
emit LORABENCH_RESULTS_DIR "$results"
emit LORABENCH_REPORTS_DIR "$reports"
emit LORABENCH_HF_CACHE "$hf_cache"
emit LORABENCH_CACHE_DIR "$cache"
emit LORABENCH_DATA_DIR "$data_dir"
emit LORABENCH_DATA_IN_CONTAINER "$data_in_container"
if command -v docker >/dev/null; then
    emit LORABENCH_IMAGE_DIGEST_CPU "$(image_id lorabench:cpu)"
    emit LORABENCH_IMAGE_DIGEST_ROCM "$(image_id "lorabench:${STACK:-rocm7.2-hf5.17}")"
    emit LORABENCH_IMAGE_DIGEST_CUDA "$(image_id "lorabench:${CUDA_STACK:-cuda13}")"
fi
emit GIT_SHA "$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)"
emit GIT_DIRTY "$( (git -C "$root" status --porcelain --untracked-files=no 2>/dev/null | grep -q .) && echo true || echo false)"
