"""The checkout names things by what they hold: no tracked path and no user-facing page says "session"; the
README fits in 250 lines; every development script is listed, with where its result is kept, in dev/README.md;
the table of published records in docs/measurements.md is the one dev/measurements_table.py makes."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
USER_PAGES = ("README.md", "docs/guide.md", "docs/measurements.md", "dev/README.md", "dev/gpu/README.md")
README_MAX_LINES = 250


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


def test_the_readme_is_short() -> None:
    lines = (ROOT / "README.md").read_text().count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; longer material goes in docs/guide.md"


def measurements_table() -> ModuleType:
    """dev/measurements_table.py, loaded from its path (dev/ is not a package)."""
    spec = importlib.util.spec_from_file_location(
        "measurements_table", ROOT / "dev" / "measurements_table.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_published_records_table_is_generated_from_the_records() -> None:
    tool = measurements_table()
    page = (ROOT / "docs" / "measurements.md").read_text()
    expected = tool.with_table(page, tool.table(ROOT / "reports" / "results"))
    assert page == expected, (
        "docs/measurements.md's table is stale: run python dev/measurements_table.py --write"
    )


def test_a_stale_published_records_table_is_caught(tmp_path: Path) -> None:
    tool = measurements_table()
    folder = tmp_path / "results" / "cpu" / "host-a" / "exp_a" / "tiny"
    folder.mkdir(parents=True)
    record = {
        "status": "ok",
        "seed": 3407,
        "created": "2026-12-03T00:00:00+00:00",
        "baseline": {"exact_match": 1.0},
        "trained": {"exact_match": 40.0},
        "timings": {"train_s": 12.5, "wall_s": 20.0},
        "guard": {"timed": True},
    }
    (folder / "seed-3407.json").write_text(json.dumps(record))
    page = f"# M\n\n{tool.START}\nold table\n{tool.END}\n\nhand-written\n"
    fresh = tool.with_table(page, tool.table(tmp_path / "results"))
    assert fresh != page
    assert (
        "| cpu · host-a | exp_a / tiny | 1 / 1 | 3407 | 2026-12-03 |  | 1 → 40 | 12.5 | 20 | yes |" in fresh
    )
    assert fresh.endswith(f"{tool.END}\n\nhand-written\n")
    assert tool.with_table(fresh, tool.table(tmp_path / "results")) == fresh
