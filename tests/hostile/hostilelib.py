"""What the hostile-input table needs: data files written by the test, mounts made for real, and the
judge of one answer.

A case is clean when the CLI exits with the expected status (2: a user mistake or an environment
fault), prints no traceback, names the thing in at most three lines from `error:` on, loaded no model's
weights (a spy, `spy/sitecustomize.py`, in every process of the case notes any `from_pretrained` of a model
or GGUF dequantization: issue 39 asks for the proof, not a time), and — for `run` — started nothing: no
record, no work folder.
`HOSTILE_CODE_ROOT` points the subprocesses at another checkout (how "before" was measured: the same
table against the old code).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CODE_ROOT = Path(os.environ.get("HOSTILE_CODE_ROOT") or REPO)
SPY = Path(__file__).resolve().parent / "spy"


@dataclass(frozen=True)
class Sparse:
    """A file of `size` bytes, NULs after `head`, written sparse: a 2 GB file costs no disk and no time."""

    size: int
    head: str = ""


# A file's content: bytes, text, sparse NULs, or built from the test's context (paths of the fixtures).
Content = bytes | str | Sparse | Callable[[dict[str, str]], bytes | str]


def write_content(path: Path, content: Content, ctx: dict[str, str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, Sparse):
        with path.open("wb") as handle:
            handle.write(content.head.encode())
            handle.truncate(content.size)
        return
    value = content(ctx) if callable(content) else content
    path.write_bytes(value if isinstance(value, bytes) else value.encode())


@dataclass(frozen=True)
class Case:
    kind: str
    argv: tuple[str, ...]
    expect: str  # the error must name this
    files: dict[str, Content] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    code: int = 2
    mount: str | None = None  # at {tmp}/mnt: "full" (a tmpfs with no room), "small" (1 MiB) or "read-only"


@dataclass(frozen=True)
class Answer:
    returncode: int
    stdout: str
    stderr: str
    loaded: list[str]  # the weight loads the spy saw, "pid what" each


def sql_row(i: int, question: str | None = None) -> dict[str, str]:
    return {
        "question": question or f"What is the name when the year is {1990 + i}?",
        "context": f"CREATE TABLE table_{i % 7} (name VARCHAR, year VARCHAR)",
        "answer": f'SELECT name FROM table_{i % 7} WHERE year = "{1990 + i}"',
    }


def jsonl(rows: list[object]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def run_cli(argv: list[str], cwd: Path, env: dict[str, str]) -> Answer:
    full_env = {k: v for k, v in os.environ.items() if k not in ("LORABENCH_DATA", "PYTEST_XDIST_WORKER")}
    spied = cwd / "spy.log"
    full_env.update({
        "PYTHONPATH": f"{SPY}{os.pathsep}{CODE_ROOT}", "HOSTILE_SPY_FILE": str(spied), "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1", "LORABENCH_CACHE": str(cwd / "cache"), "LORABENCH_LOCK_DIR": str(cwd / "locks"),
        **env,
    })  # fmt: skip
    try:
        done = subprocess.run(
            [sys.executable, "-m", "harness.cli", *argv], cwd=cwd, env=full_env, capture_output=True, text=True,
            timeout=600,
        )  # fmt: skip
        answer = (done.returncode, done.stdout, done.stderr)
    except subprocess.TimeoutExpired as exc:  # a hang: no answer at all
        answer = (-1, str(exc.stdout or ""), f"no answer within 600 s\n{exc.stderr or ''}")
    loaded = spied.read_text().splitlines() if spied.is_file() else []
    return Answer(*answer, loaded)


def judge(case: Case, answer: Answer, results: Path) -> list[str]:
    """What makes this answer not clean; empty when it is."""
    problems = []
    text = answer.stdout + answer.stderr
    if answer.returncode != case.code:
        problems.append(f"exit status {answer.returncode}, wanted {case.code}")
    if "Traceback" in text:
        problems.append("a traceback")
    if "Retrying in" in text:
        problems.append("the hub client retried first (~30 s lost where the hub cannot answer)")
    if case.expect not in answer.stderr:
        problems.append(f"no {case.expect!r} in the error")
    start = answer.stderr.find("error:")
    if start < 0 or len(answer.stderr[start:].strip().splitlines()) > 3:
        problems.append("not a short error (at most 3 lines from 'error:')")
    if answer.loaded:
        problems.append(f"the model's weights were loaded first ({answer.loaded[0]})")
    if case.argv[0] == "run":
        records = [p for p in results.rglob("seed-*.json")] if results.is_dir() else []
        work = (
            [p for p in results.rglob("*") if ".work" in p.parts or ".lorabench-probe" in p.name]
            if results.is_dir()
            else []
        )
        if records:
            problems.append(
                f"a run started: record {records[0].name} ({json.loads(records[0].read_text())['status']})"
            )
        if work:
            problems.append(f"something was left: {work[0].relative_to(results)}")
    return problems


def _mount(args: list[str]) -> bool:
    return subprocess.run(args, capture_output=True).returncode == 0


@contextlib.contextmanager
def mounted(kind: str, where: Path) -> Generator[Path]:
    """A real full disk (a tmpfs of 1 MiB, filled), a small one (1 MiB free) or a real read-only folder (a read-only bind mount:
    root ignores permission bits, not a read-only mount). Skips when this host cannot mount."""
    where.mkdir(parents=True, exist_ok=True)
    if kind in ("full", "small"):
        if not _mount(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(where)]):
            pytest.skip("cannot mount a tmpfs here (needs root with CAP_SYS_ADMIN)")
        if kind == "full":
            with contextlib.suppress(OSError), (where / "filler").open("wb") as handle:
                handle.write(b"\0" * (2 << 20))
    else:
        source = where.with_name(where.name + "-source")
        source.mkdir(exist_ok=True)
        if not _mount(["mount", "--bind", str(source), str(where)]):
            pytest.skip("cannot bind-mount here (needs root with CAP_SYS_ADMIN)")
        if not _mount(["mount", "-o", "remount,bind,ro", str(where)]):
            _mount(["umount", "-l", str(where)])
            pytest.skip("cannot remount read-only here")
    try:
        yield where
    finally:
        _mount(["umount", "-l", str(where)])
