#!/usr/bin/env bash
# The stranger's side of scripts/rehearse_stranger.sh, run inside the stranger container from a copy of the
# tracked files (/src.tar) with the stand-in index's folder at /index. Not meant to run on a host.
set -euo pipefail
step() { echo "rehearse_stranger: [$(( $(date +%s) - t0 )) s] $*" >&2; }
t0=$(date +%s)
unset PIP_FIND_LINKS PIP_INDEX_URL PIP_EXTRA_INDEX_URL PIP_CONFIG_FILE PIP_NO_INDEX
for conf in /etc/pip.conf /etc/xdg/pip/pip.conf /root/.config/pip/pip.conf /root/.pip/pip.conf /opt/wheels; do
    if [ -e "$conf" ]; then echo "rehearse_stranger: FAILED: $conf exists: not a stranger's machine" >&2; exit 1; fi
done
mkdir -p /home/stranger/lorabench && cd /home/stranger/lorabench && tar -xf /src.tar
python3 -m http.server --bind 127.0.0.1 8765 --directory /index >/tmp/index.log 2>&1 &
export LORABENCH_INDEX_URL=http://127.0.0.1:8765/whl/cpu

step "an unsupported Python: make setup PYTHON=pypy3"
set +e
refusal="$(make setup PYTHON=pypy3 2>&1)"
status=$?
set -e
echo "$refusal" | sed 's/^/    | /' >&2
if [ "$status" = 0 ] || ! grep -q "^install.sh: stack cpu has hashes for CPython .* not pypy" <<<"$refusal" \
    || [ -e .venv ]; then
    echo "rehearse_stranger: FAILED: pypy3 was not refused before the venv (exit $status)" >&2
    exit 1
fi

step "make setup (python3 $(python3 -c 'import platform; print(platform.python_version())'))"
make setup >/tmp/setup.log 2>&1 || { tail -30 /tmp/setup.log >&2; echo "rehearse_stranger: FAILED: make setup" >&2; exit 1; }
grep -E "^(Looking in indexes|Successfully installed torch|stack cpu)" /tmp/setup.log | sed 's/^/    | /' >&2 || true

step "a 2-step smoke run"
.venv/bin/lorabench run benchmarks/setups/exp_a.toml --results /tmp/results --seed 3407 --quiet \
    --set experiment=smoke --set recipe.steps=2 --set recipe.batch_size=4 --set recipe.warmup_steps=0 \
    --set checks.smoke.steps=2 --set checks.preflight=false --set eval.baseline=false --set eval.limit=2 2>&1 | tail -5 | sed 's/^/    | /' >&2
.venv/bin/python - <<'PY'
import json, pathlib, sys
records = sorted(pathlib.Path("/tmp/results").rglob("seed-3407.json"))
record = json.loads(records[0].read_text()) if records else {}
losses = (record.get("train") or {}).get("loss", [])
print(f"rehearse_stranger: smoke record: status {record.get('status')}, {len(losses)} steps", file=sys.stderr)
sys.exit(0 if record.get("status") == "ok" else 1)
PY
step "passed"
