"""A CUDA MPS server for the suite's runs that share a GPU (issue #40).

Three of Exp A's seeds on one H200, side by side as plain processes, take turns on the GPU; through one
MPS server their kernels run at once: their 300 steps 16.4-18.7 s against 24.2-25.7 s, the whole suite
53.1 / 59.9 s against 63.5 / 62.0 s (alternated on one machine), the same predictions (2026-12-04,
reports/benchmarks/h200/2026-12-04-suite-mps.txt). The suite's pytest controller starts the control
daemon in the foreground as its own child, with a pipe folder of its own (CUDA_MPS_PIPE_DIRECTORY), so
only the trainers told that folder use it: other users' jobs and a run placed alone on its GPU (timed)
stay plain processes. It ends with the session, and with the controller if that is killed (the daemon
gets SIGTERM from the kernel). Where the host runs a daemon for every client, the shared runs are told
that one; with no MPS (ROCm, no binary, a server that does not serve) nothing is started and the runs
take turns on the GPU as before.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

CONTROL = "nvidia-cuda-mps-control"
PIPE_ENV = "CUDA_MPS_PIPE_DIRECTORY"
LOG_ENV = "CUDA_MPS_LOG_DIRECTORY"
HOST_PIPE = Path("/tmp/nvidia-mps")  # the folder a host-wide daemon listens in when none is named
READY_S = 10.0
# A client through the new server before any run is told it: CUDA's driver API by ctypes (no torch), a
# context on the first GPU. A server that cannot serve fails it (a GPU in another mode, a driver that
# refuses); one that queues us behind another user's server (NVIDIA: one user's server active per GPU)
# never answers. Either way the runs then share the GPU as plain processes instead of failing or hanging.
PROBE = (
    "import ctypes, sys; cu = ctypes.CDLL('libcuda.so.1'); d, c = ctypes.c_int(), ctypes.c_void_p(); "
    "sys.exit(cu.cuInit(0) or cu.cuDeviceGet(ctypes.byref(d), 0) or cu.cuCtxCreate_v2(ctypes.byref(c), 0, d))"
)
PROBE_S = 30.0
QUIT_S = 30.0  # for the daemon to end its server once the last run has let go of it
PLAIN = "the runs that share a GPU take turns on it"
PR_SET_PDEATHSIG = 1


@dataclass
class Mps:
    """The MPS daemon the shared runs' trainers are told (CUDA_MPS_PIPE_DIRECTORY = `pipe`): ours, with its
    process, or the host's (no process: not ours to stop)."""

    pipe: Path
    process: subprocess.Popen[bytes] | None = None

    def stop(self) -> None:
        """Ask our daemon to quit (it ends its server once the clients are gone), then make sure."""
        if self.process is None:
            return
        if self.process.poll() is None:
            try:
                subprocess.run(
                    [CONTROL],
                    input=b"quit\n",
                    env=_daemon_env(self.pipe),
                    timeout=QUIT_S,
                    capture_output=True,
                )
                self.process.wait(timeout=QUIT_S)
            except (OSError, subprocess.TimeoutExpired):
                # The daemon's session holds its server too: none is left holding the GPU.
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        shutil.rmtree(self.pipe.parent, ignore_errors=True)


def _daemon_env(pipe: Path) -> dict[str, str]:
    return {**os.environ, PIPE_ENV: str(pipe), LOG_ENV: str(pipe.parent / "log")}


def host_pipe(env: Mapping[str, str] = os.environ) -> Path | None:
    """The pipe folder of a daemon this host runs for every CUDA client (named, or the default), if any."""
    named = env.get(PIPE_ENV)
    pipe = Path(named) if named else HOST_PIPE
    return pipe if (pipe / "control").exists() else None


def _die_with_parent() -> None:
    # Runs in the forked child before exec: the daemon gets SIGTERM when the controller that started it dies.
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def start() -> tuple[Mps | None, str]:
    """The daemon for the shared runs, ready for clients, and a line saying which; None and why when none."""
    if (pipe := host_pipe()) is not None:
        if (failed := _probe(pipe)) is not None:
            return None, f"the host's CUDA MPS server did not serve a client ({failed}): {PLAIN}"
        return Mps(pipe), f"the host's CUDA MPS server for the runs that share a GPU ({pipe})"
    binary = shutil.which(CONTROL)
    if binary is None:
        return None, f"no {CONTROL} on PATH: {PLAIN}"
    try:
        pipe, process = _daemon(binary)
    except OSError as exc:
        return None, f"{CONTROL} could not start ({exc}): {PLAIN}"
    mps = Mps(pipe, process)
    deadline = time.monotonic() + READY_S
    while not (pipe / "control").exists():
        if process.poll() is not None or time.monotonic() > deadline:
            mps.stop()
            return None, f"{CONTROL} did not start (try `{CONTROL} -f`): {PLAIN}"
        time.sleep(0.05)
    if (failed := _probe(pipe)) is not None:
        mps.stop()
        return None, f"the CUDA MPS server did not serve a client ({failed}): {PLAIN}"
    return mps, f"a CUDA MPS server of its own for the runs that share a GPU ({pipe})"


def _daemon(binary: str) -> tuple[Path, subprocess.Popen[bytes]]:
    # Short and private: the pipe is a Unix socket path (at most 107 bytes), for this session's clients only.
    folder = Path(tempfile.mkdtemp(prefix="lorabench-mps-"))
    pipe = folder / "pipe"
    pipe.mkdir()
    (folder / "log").mkdir()
    process = subprocess.Popen(
        [binary, "-f"],
        env=_daemon_env(pipe),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        # A session of its own: a Ctrl-C at the terminal stops the runs, which still write their records
        # through the server; it quits at the session's end (`Mps.stop`).
        start_new_session=True,
        preexec_fn=_die_with_parent,  # safe here: pytest's controller at configure runs no threads of ours
    )
    return pipe, process


def _probe(pipe: Path) -> str | None:
    """None when a CUDA context could be made through the server, else what happened."""
    command = [sys.executable, "-c", PROBE]
    try:
        done = subprocess.run(
            command, env={**os.environ, PIPE_ENV: str(pipe)}, capture_output=True, timeout=PROBE_S
        )
    except subprocess.TimeoutExpired:
        return f"no answer in {PROBE_S:.0f} s: another user's MPS server may hold the GPU"
    return None if done.returncode == 0 else f"CUDA error {done.returncode}"
