"""On a CUDA host: a second CUDA process, started by someone else, is seen for real.

Skips where torch sees no CUDA device (the CPU dev box). Run it on the GPU machine:
`pytest tests/guard/test_gpu_live.py -q`.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from guardlib import child_env

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

# Holds a CUDA context (and 256 MiB) until killed.
CUDA_HOLDER = """
import time, torch
x = torch.empty(256 * 2**20, dtype=torch.uint8, device="cuda")
torch.cuda.synchronize()
print("ready", flush=True)
time.sleep(60)
"""


def test_second_cuda_process_is_refused() -> None:
    holder = subprocess.Popen([sys.executable, "-c", CUDA_HOLDER], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        time.sleep(0.5)
        # `lorabench guard` is the holder's sibling, as a second shell would be: the holder is foreign.
        config = '{"checks": ["gpu"], "window_s": 0.5, "gpu_busy_percent_limit": 100}'
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                "import json, sys; from harness.guard import GuardConfig, precheck; "
                f"print(json.dumps(precheck(GuardConfig.model_validate(json.loads('{config}'))).to_dict()))",
            ],
            capture_output=True,
            text=True,
            env=child_env(),
            timeout=120,
        )
    finally:
        holder.kill()
        holder.wait()
    verdict = json.loads(done.stdout.splitlines()[-1])
    print(json.dumps(verdict, indent=2))
    assert not verdict["ok"], "the second CUDA process was not seen"
    assert f"foreign GPU process pid {holder.pid} " in verdict["reason"], (
        f"seen, but not under our pid {holder.pid} (a container pid namespace?): {verdict['reason']}"
    )


def test_own_cuda_child_is_not_foreign() -> None:
    # The trainer is our child: the sampler's exclusion must keep it out of the foreign list.
    code = (
        "import json, subprocess, sys, time\n"
        "from harness.guard import GuardConfig, precheck\n"
        f"holder = subprocess.Popen([sys.executable, '-c', {CUDA_HOLDER!r}], stdout=subprocess.PIPE, text=True)\n"
        "holder.stdout.readline()\n"
        "v = precheck(GuardConfig(checks=('gpu',), window_s=0.5, gpu_busy_percent_limit=100))\n"
        "holder.kill()\n"
        "print(json.dumps(v.to_dict()))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=child_env(), timeout=120
    )
    verdict = json.loads(done.stdout.splitlines()[-1])
    foreign = next(r for r in verdict["readings"] if r["name"] == "gpu_foreign_processes")
    assert foreign["ok"], foreign["detail"]
