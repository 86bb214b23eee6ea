"""CPU reading: a real burner outside our process tree is refused; our own trainer child is not.

Each case runs in fresh pid and network namespaces, so the shared host's other jobs are invisible
and the only CPU user is the burner the test starts.
"""

from __future__ import annotations

import json
import subprocess

from guardlib import PYTHON, burner_code, child_env

# Runs as a sibling of the burner: the burner is not in its process tree, so it is foreign.
CHECK = """
import json
from harness.guard import GuardConfig, precheck
print(json.dumps(precheck(GuardConfig(checks=("cpu",), window_s=1.0, cpu_other_percent_limit=10)).to_dict()))
"""

# Starts the burner as its own child, the way the run starts the trainer.
OWN_CHILD = """
import json, os, subprocess, sys, time
from harness.guard import GuardConfig, precheck
from harness.guard.cpu import cpu_reading, take_cpu_snapshot
burner = subprocess.Popen([sys.executable, "-c", sys.argv[1]])
time.sleep(0.3)
config = GuardConfig(checks=("cpu",), window_s=1.0, cpu_other_percent_limit=10)
verdict = precheck(config)
before = take_cpu_snapshot(); time.sleep(0.5); after = take_cpu_snapshot()
naive = cpu_reading(before, after, 0.5, config, exclude={os.getpid()})
burner.kill()
print(json.dumps({"burner": burner.pid, "verdict": verdict.to_dict(), "naive": naive.to_dict()}))
"""


def run_in(hermetic: list[str], script: str) -> str:
    done = subprocess.run(
        [*hermetic, "sh", "-c", script], capture_output=True, text=True, env=child_env(), timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_foreign_burner_is_refused(hermetic: list[str]) -> None:
    script = f"{PYTHON} -c '{burner_code(4)}' & echo burner=$!; {PYTHON} -c '{CHECK}'; kill $!"
    out = run_in(hermetic, script)
    burner_pid = out.split("burner=")[1].split()[0]
    verdict = json.loads(out.splitlines()[-1])
    assert not verdict["ok"]
    assert verdict["reason"].startswith("refused to time: other processes used")
    assert f"pid {burner_pid} " in verdict["reason"] and "another job?" in verdict["reason"]


def test_quiet_machine_passes_the_cpu_check(hermetic: list[str]) -> None:
    verdict = json.loads(run_in(hermetic, f"{PYTHON} -c '{CHECK}'").splitlines()[-1])
    assert verdict["ok"], verdict["reason"]


def test_own_child_is_not_noise_but_would_be_without_the_tree(hermetic: list[str]) -> None:
    out = json.loads(run_in(hermetic, f"{PYTHON} -c '{OWN_CHILD}' '{burner_code(4)}'").splitlines()[-1])
    assert out["verdict"]["ok"], out["verdict"]["reason"]
    # Counting only our own pid (not the tree) sees the burner: the exclusion is what keeps it quiet.
    assert not out["naive"]["ok"] and f"pid {out['burner']} " in out["naive"]["detail"]
