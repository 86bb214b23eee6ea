"""The trainer child's bytecode cache (harness/run/bytecode.py): only where writing is off and the sources
carry no bytecode; then a real child process writes its bytecode under the cache and reads it back."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.run.bytecode import child_bytecode_env as real_child_bytecode_env

PROBE = "lorabench_probe_package"


def child_bytecode_env(env: dict[str, str], cache_root: Path, **kwargs: object) -> dict[str, str]:
    return real_child_bytecode_env(env, cache_root, probe=PROBE, **kwargs)  # type: ignore[arg-type]


@pytest.fixture
def bare_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An installed package, sources only (find_spec only: nothing imports it). Not named torch: where
    torch is imported already, find_spec answers from sys.modules."""
    package = tmp_path / "site" / PROBE
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    return package


def test_writing_off_and_no_bytecode_beside_the_sources_gets_a_cache(
    bare_sources: Path, tmp_path: Path
) -> None:
    env = child_bytecode_env({"PYTHONDONTWRITEBYTECODE": "1", "PATH": "/bin"}, tmp_path / "cache")
    assert "PYTHONDONTWRITEBYTECODE" not in env and env["PATH"] == "/bin"
    assert env["PYTHONPYCACHEPREFIX"] == str(tmp_path / "cache" / "bytecode" / sys.implementation.cache_tag)


def test_nothing_changes_where_it_would_not_help_or_is_the_users(bare_sources: Path, tmp_path: Path) -> None:
    off = {"PYTHONDONTWRITEBYTECODE": "1"}
    assert child_bytecode_env({}, tmp_path) == {}  # writing on: the interpreter caches beside the sources
    assert child_bytecode_env({**off, "PYTHONPYCACHEPREFIX": "/mine"}, tmp_path) == {
        **off,
        "PYTHONPYCACHEPREFIX": "/mine",
    }
    cache = bare_sources / "__pycache__"
    cache.mkdir()
    (cache / f"__init__.{sys.implementation.cache_tag}.pyc").write_bytes(b"")
    assert child_bytecode_env(off, tmp_path) == off  # compiled at install: a prefix would hide it


def test_a_child_writes_its_bytecode_in_the_cache_and_not_beside_the_sources(
    bare_sources: Path, tmp_path: Path
) -> None:
    module = tmp_path / "code" / "lorabench_bytecode_probe.py"
    module.parent.mkdir()
    module.write_text("X = 2\n")
    env = child_bytecode_env(
        {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(module.parent)}, tmp_path / "cache"
    )
    run = [sys.executable, "-c", "import lorabench_bytecode_probe, sys; print(sys.flags.dont_write_bytecode)"]
    assert subprocess.run(run, env=env, capture_output=True, text=True, check=True).stdout.strip() == "0"
    written = list((tmp_path / "cache").rglob("lorabench_bytecode_probe.*.pyc"))
    assert len(written) == 1 and not (module.parent / "__pycache__").exists()


def test_the_installed_torch_is_looked_up_without_importing_it() -> None:
    # In a fresh interpreter (this one may have imported torch already): the parent never loads torch.
    probe = "import sys; from harness.run.bytecode import compiled_beside_sources; compiled_beside_sources(); print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_the_lorabench_command_caches_its_own_bytecode(tmp_path: Path) -> None:
    # A torch installed without bytecode (the H200 image's), writing off: `lorabench` itself, not only its
    # trainer, compiles each module once into the cache (here `guard`'s module).
    fake = tmp_path / "site" / "torch"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    repo = Path(__file__).resolve().parents[2]
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": f"{tmp_path / 'site'}:{repo}",
        "PYTHONDONTWRITEBYTECODE": "1",
        "LORABENCH_CACHE": str(tmp_path / "cache"),
    }
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "guard", "--help"], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    cached = tmp_path / "cache" / "bytecode" / sys.implementation.cache_tag
    assert list(cached.rglob("harness/commands/guard.*.pyc")), "the command's own module was not cached"


def test_a_process_that_caches_passes_the_cache_to_what_it_starts(bare_sources: Path, tmp_path: Path) -> None:
    code = (
        "import os, subprocess, sys; from pathlib import Path; from harness.run import bytecode; "
        f"bytecode.cache_this_process(Path({str(tmp_path / 'cache')!r}), probe={PROBE!r}); "
        "import lorabench_bytecode_probe; "
        "print(subprocess.run([sys.executable, '-c', 'import sys; print(sys.pycache_prefix)'], "
        "capture_output=True, text=True).stdout.strip())"
    )
    module = tmp_path / "code" / "lorabench_bytecode_probe.py"
    module.parent.mkdir()
    module.write_text("X = 2\n")
    repo = Path(__file__).resolve().parents[2]
    env = {
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPATH": f"{bare_sources.parent}:{module.parent}:{repo}",
    }
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    prefix = tmp_path / "cache" / "bytecode" / sys.implementation.cache_tag
    assert done.stdout.strip() == str(prefix)  # the child started with the prefix
    assert len(list(prefix.rglob("lorabench_bytecode_probe.*.pyc"))) == 1  # this process wrote its own
    assert not (module.parent / "__pycache__").exists()
