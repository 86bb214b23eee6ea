"""The suite's private CUDA MPS server (harness/gpu/mps.py), against a stand-in `nvidia-cuda-mps-control`
on PATH (no NVIDIA GPU here): a real process that behaves as the daemon's documented interface does:
`-f` listens in $CUDA_MPS_PIPE_DIRECTORY (its `control` file) until a client sends `quit` on stdin. On the
lent H200 the real binary ran under the same code (reports/benchmarks/h200/2026-12-04-suite-mps.txt)."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest

from harness.gpu import mps

# The daemon: `-f` makes the control file and waits for the quit a client leaves beside it.
STAND_IN = """#!/bin/sh
if [ "$1" = "-f" ]; then
  echo "$$" > "$CUDA_MPS_PIPE_DIRECTORY/../daemon.pid"
  [ -n "$NEVER_READY" ] && exit 1
  if [ -n "$DEAF" ]; then  # a daemon that never quits, with a server of its own
    sleep 300 &
    echo "$!" > "$CUDA_MPS_PIPE_DIRECTORY/../server.pid"
  fi
  touch "$CUDA_MPS_PIPE_DIRECTORY/control"
  while [ ! -f "$CUDA_MPS_PIPE_DIRECTORY/quit" ] || [ -n "$DEAF" ]; do sleep 0.05; done
  rm "$CUDA_MPS_PIPE_DIRECTORY/control"
  exit 0
fi
read line
[ "$line" = quit ] && touch "$CUDA_MPS_PIPE_DIRECTORY/quit"
"""


PROBE_ANSWERED = (
    "import os, sys; sys.exit(0 if os.path.exists(os.environ['CUDA_MPS_PIPE_DIRECTORY'] + '/control') else 3)"
)


@pytest.fixture
def control(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    tool = tmp_path / "bin" / mps.CONTROL
    tool.parent.mkdir()
    tool.write_text(STAND_IN)
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tool.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv(mps.PIPE_ENV, raising=False)
    monkeypatch.setattr(mps, "HOST_PIPE", tmp_path / "no-host-daemon")
    # The probe client (CUDA's driver API on a GPU) as a stand-in: it asks the daemon's folder only.
    monkeypatch.setattr(mps, "PROBE", PROBE_ANSWERED)
    return tool


def test_a_private_daemon_is_ready_when_started_and_gone_when_stopped(control: Path) -> None:
    server, line = mps.start()
    assert server is not None and server.process is not None, line
    assert (server.pipe / "control").exists() and str(server.pipe) in line
    assert server.pipe.name == "pipe" and server.pipe.parent.name.startswith("lorabench-mps-")
    assert len(str(server.pipe / "control")) < 108  # a Unix socket path's limit
    server.stop()
    assert server.process.poll() == 0  # it quit when asked, not killed
    assert not server.pipe.parent.exists()


def test_a_daemon_that_will_not_quit_is_killed_with_its_server_and_a_ctrl_c_never_reaches_it(
    control: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEAF", "1")
    monkeypatch.setattr(mps, "QUIT_S", 0.5)
    server, _ = mps.start()
    assert server is not None and server.process is not None
    daemon = server.process.pid
    assert os.getsid(daemon) == daemon != os.getsid(0)  # its own session: the terminal's Ctrl-C is ours alone
    inner = int((server.pipe.parent / "server.pid").read_text())
    server.stop()
    assert server.process.returncode == -signal.SIGKILL
    assert not psutil.pid_exists(inner) or psutil.Process(inner).status() == psutil.STATUS_ZOMBIE


def test_no_folder_for_the_pipe_means_no_server(control: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(control.parent / "no-such-folder"))
    server, line = mps.start()
    assert server is None and "could not start" in line


def test_the_hosts_own_daemon_is_used_and_never_stopped(
    control: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = tmp_path / "host-pipe"
    host.mkdir()
    (host / "control").touch()
    monkeypatch.setenv(mps.PIPE_ENV, str(host))
    server, line = mps.start()
    assert server is not None and server.process is None and server.pipe == host
    assert "host's" in line
    server.stop()
    assert (host / "control").exists()


def test_no_binary_or_a_daemon_that_never_listens_means_no_server(
    control: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NEVER_READY", "1")
    server, line = mps.start()
    assert server is None and "did not start" in line
    monkeypatch.setenv("PATH", str(control.parent.parent / "empty"))
    server, line = mps.start()
    assert server is None and f"no {mps.CONTROL} on PATH" in line


@pytest.mark.parametrize(
    ("probe", "said"),
    [("import sys; sys.exit(101)", "CUDA error 101"), ("import time; time.sleep(30)", "no answer in 1 s")],
)
def test_a_server_that_fails_or_never_answers_its_first_client_is_stopped(
    control: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, probe: str, said: str
) -> None:
    """A GPU the server cannot serve, or another user's server ahead of ours: the runs stay plain."""
    monkeypatch.setattr(mps, "PROBE", probe)
    monkeypatch.setattr(mps, "PROBE_S", 1.0)
    before = set(Path(tempfile.gettempdir()).glob("lorabench-mps-*"))
    server, line = mps.start()
    assert server is None and said in line and "take turns" in line
    assert (
        set(Path(tempfile.gettempdir()).glob("lorabench-mps-*")) == before
    )  # its daemon stopped, folder gone
    host = tmp_path / "host-pipe"  # the host's own daemon is asked the same
    host.mkdir()
    (host / "control").touch()
    monkeypatch.setenv(mps.PIPE_ENV, str(host))
    server, line = mps.start()
    assert server is None and "host's CUDA MPS server did not serve" in line


def test_the_daemon_dies_with_a_controller_killed_by_sigkill(control: Path) -> None:
    code = f"from harness.gpu import mps; mps.PROBE = {PROBE_ANSWERED!r}; s, _ = mps.start(); print(s.pipe, flush=True); import time; time.sleep(60)"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    owner = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env)
    assert owner.stdout is not None
    pipe = Path(owner.stdout.readline().strip())
    daemon = int((pipe.parent / "daemon.pid").read_text())
    assert psutil.pid_exists(daemon)
    owner.send_signal(signal.SIGKILL)
    owner.wait()
    deadline = time.monotonic() + 10
    while psutil.pid_exists(daemon) and psutil.Process(daemon).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline, "the daemon outlived the controller that started it"
        time.sleep(0.05)


def test_the_suites_workers_are_told_the_controllers_server_which_ends_with_the_session(
    control: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parents[2]))
    for name in ("LORABENCH_DATA", "LORABENCH_STACK"):  # CI's data path is relative to its checkout
        monkeypatch.delenv(name, raising=False)
    pytester.makeconftest(
        f'pytest_plugins = ["harness.suite.plugin"]\nfrom harness.gpu import mps\nmps.PROBE = {PROBE_ANSWERED!r}'
    )
    pytester.makepyfile(
        test_worker="""
        from pathlib import Path
        from harness.suite.plugin import RUNNER_KEY

        def test_this_worker_knows_the_pipe(request):
            pipe = Path(request.config.stash[RUNNER_KEY].settings.mps_pipe)
            assert (pipe / "control").exists()
            Path(request.config.workerinput["workerid"]).write_text(str(pipe))
        """
    )
    args = ("-n", "2", "-p", "no:cacheprovider", "--lorabench-stack=teststack")
    result = pytester.runpytest_subprocess(*args, "--lorabench-mps")
    result.assert_outcomes(passed=1)
    assert "a CUDA MPS server of its own" in result.stderr.str()
    told = {Path(p.read_text()) for p in pytester.path.glob("gw*")}
    assert len(told) == 1 and not next(iter(told)).parent.exists()  # one server, gone with the session
    for worker in pytester.path.glob("gw*"):
        worker.unlink()
    result = pytester.runpytest_subprocess(*args)  # not asked for: no server, the workers told none
    result.assert_outcomes(failed=1)
    assert "MPS" not in result.stderr.str()
