"""The checkout names things by what they hold: no tracked path and no user-facing page says "session", and
every development script is listed, with where its result is kept, in dev/README.md."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
USER_PAGES = ("docs/guide.md", "docs/measurements.md", "dev/README.md", "dev/gpu/README.md")


def tracked_paths(root: Path) -> list[str]:
    if shutil.which("git") is None or not (root / ".git").exists():
        pytest.skip("not a git checkout: no tracked paths to read")
    out = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True, check=True).stdout
    return out.splitlines()


def paths_naming_sessions(paths: list[str]) -> list[str]:
    return [p for p in paths if "session" in p.lower()]


def pages_naming_sessions(root: Path, pages: tuple[str, ...]) -> list[str]:
    found = []
    for page in pages:
        path = root / page
        if path.exists():
            found += [
                f"{page}:{n}"
                for n, line in enumerate(path.read_text().splitlines(), 1)
                if "session" in line.lower()
            ]
    return found


def unlisted_dev_scripts(root: Path) -> list[str]:
    """Scripts under dev/ that dev/README.md does not name (the GPU calls may be named as one `gpu/call_*.sh`)."""
    listed = (root / "dev" / "README.md").read_text()
    scripts = sorted(
        p for p in (root / "dev").rglob("*") if p.suffix in {".py", ".sh"} and p.name != "env.sh"
    )
    return [
        str(p.relative_to(root))
        for p in scripts
        if f"`{p.name}`" not in listed
        and f"`{p.parent.name}/{p.name}`" not in listed
        and not (p.name.startswith("call_") and "`gpu/call_*.sh`" in listed)
    ]


def test_no_tracked_path_names_a_session() -> None:
    assert paths_naming_sessions(tracked_paths(ROOT)) == []


def test_a_session_in_a_path_is_caught() -> None:
    paths = ["reports/benchmarks/h200/2026-12-01-simplification.txt", "dev/gpu/call_session10.sh"]
    assert paths_naming_sessions(paths) == ["dev/gpu/call_session10.sh"]


def test_the_user_pages_do_not_say_session() -> None:
    assert pages_naming_sessions(ROOT, USER_PAGES) == []


def test_a_session_on_a_page_is_caught(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# lorabench\n\nMeasured in session 10.\n")
    (tmp_path / "clean.md").write_text("Measured on 2026-12-01 (606e6e1).\n")
    assert pages_naming_sessions(tmp_path, ("README.md", "clean.md")) == ["README.md:3"]


def test_every_dev_script_is_listed_in_dev_readme() -> None:
    assert unlisted_dev_scripts(ROOT) == []


def test_an_unlisted_dev_script_is_caught(tmp_path: Path) -> None:
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "README.md").write_text("| `bench_a.py` | a | cpu/a.txt |\n")
    (tmp_path / "dev" / "bench_a.py").write_text("")
    (tmp_path / "dev" / "bench_b.py").write_text("")
    assert unlisted_dev_scripts(tmp_path) == ["dev/bench_b.py"]
