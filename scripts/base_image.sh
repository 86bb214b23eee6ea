#!/usr/bin/env bash
# A stand-in base image for machines that reach no image registry (this project's CI): Debian bookworm with
# its python3 (3.11, the cpu lockfile's), built by debootstrap from Debian's packages and `docker import`ed.
#   bash scripts/base_image.sh                 # -> lorabench-base:bookworm-py3.11 (kept if it exists)
#   bash scripts/base_image.sh --force         # build it again
#   docker compose build --build-arg BASE_IMAGE=lorabench-base:bookworm-py3.11 ...   # how it is used
# It is only ever a BASE_IMAGE build argument: the Dockerfiles keep their pinned bases (lockfiles/stacks.toml).
# The host's CA bundle is copied in and PIP_CERT/SSL_CERT_FILE point at it, so pip inside a build reaches
# PyPI through this machine's TLS proxy; a real base needs neither.
# Downloaded .debs are kept in $LORABENCH_CI_DIR/debootstrap, so a second build downloads nothing.
set -euo pipefail

TAG="${LORABENCH_BASE_TAG:-lorabench-base:bookworm-py3.11}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
ci_dir="${LORABENCH_CI_DIR:-/var/cache/lorabench-ci}"
say() { echo "base_image: $*" >&2; }

if [ "${1:-}" != "--force" ] && docker image inspect "$TAG" >/dev/null 2>&1; then
    say "$TAG exists ($(docker image inspect -f '{{.Id}}' "$TAG")); --force builds it again"
    echo "$TAG"
    exit 0
fi
[ "$(id -u)" = 0 ] || { say "debootstrap needs root"; exit 1; }
if ! command -v debootstrap >/dev/null; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null) \
        || { say "apt-get install debootstrap failed"; exit 1; }
fi

rootfs="$(mktemp -d "${TMPDIR:-/tmp}/lorabench-rootfs.XXXXXX")"
trap 'rm -rf "$rootfs"' EXIT
mkdir -p "$ci_dir/debootstrap"
start=$(date +%s)
debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
    --cache-dir="$ci_dir/debootstrap" bookworm "$rootfs" "$MIRROR" >"$ci_dir/debootstrap.log" 2>&1 \
    || { say "debootstrap failed:"; tail -20 "$ci_dir/debootstrap.log" >&2; exit 1; }
# As the official slim images: no package lists, no .deb cache.
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
cp /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/ca-certificates.crt"
tar -C "$rootfs" -c . | docker import \
    -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    -c 'ENV LANG=C.UTF-8' \
    -c 'ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt' \
    -c 'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt' \
    -c 'LABEL io.lorabench.stand-in-base="debootstrap bookworm; not a release base"' \
    -c 'CMD ["python3"]' \
    - "$TAG" >/dev/null
say "$TAG built in $(( $(date +%s) - start )) s ($(docker image inspect -f '{{.Size}}' "$TAG") bytes)"
echo "$TAG"
