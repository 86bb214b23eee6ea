#!/usr/bin/env bash
# Exp E "stacks": one setup (benchmarks/setups/exp_e.toml) on two stacks' images over one results folder,
# then its claims (accuracy equivalent, time ratio both ways, the package diff) and the scorecards.
#   bash scripts/exp_e.sh rocm7.2-hf5.5 rocm7.2-hf5.17 [PYTEST ARGS...]   e.g. --lorabench-seeds=3407
# Steps (each a compose service of the stack's image; LORABENCH_NO_BUILD=1 skips 1):
#   1. build both images                     scripts/build_image.sh
#   2. stack A trains its seeds              Exp E's tests skip there: B has no records yet
#   3. stack B trains its seeds              and asserts the claims against A's records
#   4. stack A again                         no training (cached records), asserts the other direction
#   5. lorabench report                      the scorecards of both stacks
# Exit 0 only when steps 3 and 4 ran every Exp E test and none failed or skipped: a comparison that did not
# happen (no GPU, missing records) fails here rather than passing as "skipped". Needs the host's variables
# (eval "$(bash scripts/host_env.sh)"; this script does it when LORABENCH_UID is unset).
set -euo pipefail
a="${1:?usage: scripts/exp_e.sh STACK_A STACK_B [PYTEST ARGS...]}"
b="${2:?usage: scripts/exp_e.sh STACK_A STACK_B [PYTEST ARGS...]}"
shift 2
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
say() { echo "exp_e: $*" >&2; }
[ "$a" != "$b" ] || { say "the two stacks must differ, got $a twice"; exit 2; }
if [ -z "${LORABENCH_UID:-}" ]; then eval "$(bash scripts/host_env.sh)"; fi

# compose arguments for a stack's bench service: the image is chosen by STACK / CUDA_STACK.
service_for() {
    local accelerator
    accelerator="$(python3 -c 'import sys, tomllib; print(tomllib.load(open("lockfiles/stacks.toml", "rb"))["stacks"][sys.argv[1]]["accelerator"])' "$1")" \
        || { say "unknown stack $1 (lockfiles/stacks.toml)"; exit 2; }
    case "$accelerator" in
        rocm) echo "env STACK=$1 docker compose run --rm bench" ;;
        cuda) echo "env CUDA_STACK=$1 docker compose --profile nvidia run --rm bench-nvidia" ;;
        cpu) echo "docker compose --profile cpu run --rm bench-cpu" ;;
    esac
}

# Passes when the junit file has tests, and none failed, errored or skipped.
all_ran_and_passed() {
    python3 - "$1" <<'PY'
import sys, xml.etree.ElementTree as ET
suite = ET.parse(sys.argv[1]).getroot()
suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
counts = {k: int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped")}
print(f"exp_e: {sys.argv[1]}: {counts}", file=sys.stderr)
sys.exit(0 if counts["tests"] and not (counts["failures"] or counts["errors"] or counts["skipped"]) else 1)
PY
}

suite() {  # suite STACK OTHER JUNIT [PYTEST ARGS]: Exp E in STACK's image, compared with OTHER's records
    local stack="$1" other="$2" junit="$3" run
    shift 3
    run="$(service_for "$stack")"
    say "stack $stack (compared with $other)"
    # shellcheck disable=SC2086  # the compose command line, split on purpose
    $run lorabench bench --results results --no-report -- benchmarks/test_setups.py -k exp_e/ \
        "--lorabench-stack=$stack" "--lorabench-other-stack=$other" "--junitxml=results/exp_e/$junit" -rs "$@" || true
}

if [ "${LORABENCH_NO_BUILD:-0}" != 1 ]; then
    bash scripts/build_image.sh "$a" >/dev/null
    bash scripts/build_image.sh "$b" >/dev/null
    eval "$(bash scripts/host_env.sh)"  # the new images' ids
fi
mkdir -p "$LORABENCH_RESULTS_DIR/exp_e"
if [ "$(id -u)" = 0 ] && [ "$LORABENCH_UID" != 0 ]; then chown "$LORABENCH_UID:$LORABENCH_GID" "$LORABENCH_RESULTS_DIR/exp_e"; fi
suite "$a" "$b" "1-$a.xml" "$@"
suite "$b" "$a" "2-$b.xml" "$@"
suite "$a" "$b" "3-$a.xml" "$@"
status=0
all_ran_and_passed "$LORABENCH_RESULTS_DIR/exp_e/2-$b.xml" || status=1
all_ran_and_passed "$LORABENCH_RESULTS_DIR/exp_e/3-$a.xml" || status=1
# shellcheck disable=SC2046  # the compose command line, split on purpose
$(service_for "$b") lorabench report results -o reports-local || status=1
exit "$status"
