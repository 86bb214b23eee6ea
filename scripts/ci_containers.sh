#!/usr/bin/env bash
# The containers for real, as CI runs them (.ci/run calls this as root; a developer with docker can too):
#   1. a Docker engine and compose v2            scripts/docker_engine.sh
#   2. the stand-in base (no registry here)      scripts/base_image.sh
#   3. the cpu image                              scripts/build_image.sh cpu (torch's CPU wheel from /opt/wheels)
#   3b. the ROCm stand-in                        Dockerfile.rocm on the stand-in base, cpu stack (lorabench:rocm-standin)
#   4. smoke-cpu, report-cpu, bench-cpu           docker compose --profile cpu run --rm ..., as uid:gid 1000:1000;
#      and the ROCm `smoke` service on the stand-in (its devices dropped: tests/containers/compose.rehearsal-cpu.yaml)
#      (a non-root user, as on a maintainer's box), each timed, its output checked on the host.
# bench-cpu runs a short setup (Exp A's gain claim, seed 3407, 10 steps of batch 4, 10 questions, no preflight):
# on the real rows 10 steps learn nothing (0 -> 0), on the generated ones they do (0 -> 60); either way bench's
# exit status must be the claim's (0 when the record's gain reaches exp_a.toml's min_gain, else 1) and the
# scorecard must be written: a bench that swallowed a failed claim, or failed a held one, fails CI.
# Data: ../shared/data/sql-create-context/random-sample.jsonl when it is beside the checkout (CI has it); else
# 600 rows generated here in the dataset's shape (question, context, answer), said so in the log.
# Outputs under .cache/ci/ (results, reports, caches), the timings in .cache/ci/timings.txt.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
out="$root/.cache/ci"
ci_uid="${CI_CONTAINER_UID:-1000}"
mkdir -p "$out"
: >"$out/timings.txt"
say() { echo "ci_containers: $*" >&2; }
timed() {  # timed LABEL COMMAND...: runs it, appends "LABEL SECONDS rc=N" to timings.txt, returns its status
    local label="$1" start rc
    shift
    start=$(date +%s)
    set +e
    "$@"
    rc=$?
    set -e
    echo "$label $(( $(date +%s) - start )) s rc=$rc" | tee -a "$out/timings.txt" >&2
    return "$rc"
}

timed engine bash scripts/docker_engine.sh
timed base_image bash scripts/base_image.sh >/dev/null
wheels=""
if [ -d /opt/wheels ]; then wheels=/opt/wheels; fi
timed build_cpu_image env BASE_IMAGE=lorabench-base:bookworm-py3.11 LORABENCH_WHEELS="$wheels" \
    bash scripts/build_image.sh cpu >/dev/null
echo "image lorabench:cpu $(docker image inspect -f '{{.Size}}' lorabench:cpu) bytes" | tee -a "$out/timings.txt" >&2
# The ROCm stand-in: Dockerfile.rocm, every line but its base (rocm/pytorch is on no reachable registry), on the
# stand-in base with the cpu stack (the ROCm lockfiles need Python 3.12 and a HIP torch this base has not).
# tests/containers/test_rocm_entrypoint.py runs its entrypoint against a missing/unreadable /dev/kfd and replayed
# ROCm tools; its smoke runs below.
timed build_rocm_standin env BASE_IMAGE=lorabench-base:bookworm-py3.11 LORABENCH_WHEELS="$wheels" \
    LORABENCH_DOCKERFILE=Dockerfile.rocm LORABENCH_TAG=rocm-standin bash scripts/build_image.sh cpu >/dev/null
# Each CI run's image replaces the last one's tag: drop the untagged leftovers and build cache a day old.
docker image prune -f >/dev/null
docker builder prune -f --filter until=24h >/dev/null || true  # build cache unused for a day

shared="$root/../shared/data/sql-create-context/random-sample.jsonl"
if [ -f "$shared" ]; then
    data="$shared"
else
    data="$out/data/generated-sql.jsonl"
    say "no shared data beside the checkout ($shared): smoke runs on 600 generated rows ($data)"
    mkdir -p "$(dirname "$data")"
    python3 - "$data" <<'PY'
import json, random, sys
rng = random.Random(42)
cols = ["name", "year", "team", "city", "score", "position", "country", "points"]
with open(sys.argv[1], "w") as f:
    for i in range(600):
        table = f"table_{rng.randrange(2000):04d}"
        a, b = rng.sample(cols, 2)
        value = str(rng.randrange(1950, 2030)) if b in ("year", "score", "points") else rng.choice(["Boston", "Lyon", "Oslo", "Kyoto"])
        f.write(json.dumps({
            "question": f"What is the {a} when the {b} is {value}?",
            "context": f"CREATE TABLE {table} ({a} VARCHAR, {b} VARCHAR)",
            "answer": f'SELECT {a} FROM {table} WHERE {b} = "{value}"',
        }) + "\n")
PY
fi

# The invoking user of a maintainer's box is not root: run the services as ci_uid, on folders made for it.
eval "$(LORABENCH_UID="$ci_uid" LORABENCH_GID="$ci_uid" LORABENCH_RESULTS_DIR="$out/results" \
        LORABENCH_REPORTS_DIR="$out/reports" HF_HOME="$out/hf" LORABENCH_CACHE="$out/lorabench" \
        LORABENCH_DATA="$data" bash scripts/host_env.sh)"
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1
compose=(docker compose --profile cpu run --rm -T)

timed smoke_cpu "${compose[@]}" smoke-cpu
timed report_cpu "${compose[@]}" report-cpu
# compose's own ROCm `smoke` service on the stand-in image, its GPU devices dropped (no /dev/kfd here).
# Its own results folder: the same cpu stack, host and setup as smoke-cpu's record, which is never overwritten.
mkdir -p "$out/results-rocm-standin" && chown "$ci_uid:$ci_uid" "$out/results-rocm-standin"
timed smoke_rocm_standin env STACK=rocm-standin LORABENCH_RESULTS_DIR="$out/results-rocm-standin" \
    COMPOSE_FILE=compose.yaml:tests/containers/compose.rehearsal-cpu.yaml docker compose run --rm -T smoke
bench_status=0
timed bench_cpu_short "${compose[@]}" bench-cpu lorabench bench --results results --reports reports-local -- \
    benchmarks/test_setups.py -k exp_a/gain --lorabench-seeds=3407 --lorabench-set=recipe.steps=10 \
    --lorabench-set=recipe.batch_size=4 --lorabench-set=recipe.warmup_steps=0 --lorabench-set=checks.smoke.steps=10 \
    --lorabench-set=eval.limit=10 --lorabench-set=checks.preflight=false || bench_status=$?

# What a maintainer would look at on the host: the record, its owner and provenance, the scorecards.
python3 - "$out" "$ci_uid" "$bench_status" <<'PY'
import json, os, subprocess, sys
from pathlib import Path
out, uid, bench_status = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
image_id = subprocess.run(["docker", "image", "inspect", "-f", "{{.Id}}", "lorabench:cpu"],
                          capture_output=True, text=True, check=True).stdout.strip()
[smoke] = (out / "results").rglob("smoke/*/seed-3407.json")
rocm_standin = sorted((out / "results-rocm-standin").rglob("smoke/*/seed-3407.json"))
record = json.loads(smoke.read_text())
problems = []
if record["status"] != "ok":
    problems.append(f"smoke record status {record['status']}: {record.get('reason')}")
if record["checks"]["smoke"]["verdict"] != "pass":
    problems.append(f"smoke check: {record['checks']['smoke']}")
image = record["provenance"].get("image", {})
if image.get("name") != "lorabench:cpu" or image.get("digest") != image_id or not image.get("guard_sees_host"):
    problems.append(f"record's image block: {image} (image id {image_id})")
sha = record["provenance"]["git"].get("sha")
if not sha or sha == "unknown":
    problems.append(f"record's git sha: {sha!r}")
files = [p for p in [*(out / "results").rglob("*"), *(out / "reports").rglob("*")] if p.is_file()]
foreign = [str(p) for p in files if p.stat().st_uid != uid]
if foreign:
    problems.append(f"files not owned by uid {uid}: {foreign[:5]}")
scorecards = [p for p in (out / "reports").rglob("*.md") if p.name != "README.md"]
if not (out / "reports" / "README.md").is_file() or not scorecards:
    problems.append("report-cpu wrote no scorecard")
import tomllib
min_gain = tomllib.loads(Path("benchmarks/setups/exp_a.toml").read_text())["claims"]["gain on every seed"]["min_gain"]
[exp_a] = (out / "results").rglob("exp_a/*/seed-3407.json")
bench_record = json.loads(exp_a.read_text())
gain = bench_record["trained"]["exact_match"] - bench_record["baseline"]["exact_match"]
expected = 0 if gain >= min_gain else 1
print(f"ci_containers: bench-cpu record: gain {gain:+.1f} points (claim >= {min_gain:g}): bench must exit {expected}, "
      f"exited {bench_status}", file=sys.stderr)
if bench_status != expected:
    problems.append(f"bench-cpu exited {bench_status} but its record's gain {gain:+.1f} means the claim should exit {expected}")
losses = record["train"]["loss"]
print(f"ci_containers: smoke record {smoke.relative_to(out)}: status {record['status']}, "
      f"loss {losses[0]:.3f} -> {losses[-1]:.3f} over {len(losses)} steps, smoke check {record['checks']['smoke']['verdict']}; "
      f"image {image.get('name')} {image.get('digest')}, base {image.get('base')}, git {sha}; "
      f"{len(files)} files owned by uid {uid}; scorecards: {[str(p.relative_to(out)) for p in scorecards]}", file=sys.stderr)
standin = json.loads(rocm_standin[0].read_text()) if rocm_standin else {}
if standin.get("status") != "ok" or standin["provenance"].get("image", {}).get("name") != "lorabench:rocm-standin":
    problems.append(f"the ROCm stand-in's smoke: no ok record of lorabench:rocm-standin in {rocm_standin}")
for p in problems:
    print(f"ci_containers: FAILED: {p}", file=sys.stderr)
sys.exit(1 if problems else 0)
PY
say "timings: $(tr '\n' ';' < "$out/timings.txt")"
