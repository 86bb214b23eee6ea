"""The trainer child's cached `packages_distributions()`: the same map as importlib's, read again only
while the installation is unchanged, and a change to an import-path folder reads it anew."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.run.distributions import cached_map, installation_key, remember_distributions


def _dist(site: Path, name: str, top: str) -> None:
    info = site / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "top_level.txt").write_text(f"{top}\n")


def test_the_cached_map_is_importlibs_and_a_new_install_is_seen(tmp_path: Path) -> None:
    site, cache = tmp_path / "site", tmp_path / "cache"
    site.mkdir()
    _dist(site, "alpha-dist", "alpha")
    code = (
        "import sys, json, importlib.metadata as m; from pathlib import Path\n"
        "from harness.run.distributions import remember_distributions\n"
        "plain = m.packages_distributions()\n"
        f"remember_distributions(Path({str(cache)!r}))\n"
        "print(json.dumps([plain, m.packages_distributions()]))\n"
    )
    env_path = [str(site)]

    def run() -> tuple[dict, dict]:
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True,
            env={"PYTHONPATH": ":".join([*env_path, str(Path.cwd())]), "PATH": "/usr/bin:/bin"},
        )  # fmt: skip
        plain, cached = json.loads(out.stdout)
        return plain, cached

    plain, cached = run()
    assert cached == plain and cached["alpha"] == ["alpha-dist"]
    assert list(cache.glob("distributions/*.json")), "the map was not stored"
    _dist(site, "beta-dist", "beta")  # a new .dist-info folder changes the folder's mtime
    plain, cached = run()
    assert cached == plain and cached["beta"] == ["beta-dist"]


def test_a_stored_map_answers_only_under_its_key(tmp_path: Path) -> None:
    store = tmp_path / "d.json"
    calls = []

    def compute() -> dict[str, list[str]]:
        calls.append(1)
        return {"x": ["x-dist"]}

    assert cached_map(store, compute, "k1") == {"x": ["x-dist"]}
    assert cached_map(store, compute, "k1") == {"x": ["x-dist"]}
    assert len(calls) == 1
    cached_map(store, compute, "k2")
    assert len(calls) == 2
    store.write_text("not json")
    assert cached_map(store, compute, "k2") == {"x": ["x-dist"]} and len(calls) == 3


def test_an_unwritable_cache_costs_the_computation_not_the_run(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("")  # a file where the cache folder would go
    assert cached_map(blocked / "d.json", lambda: {"y": ["y-dist"]}, "k") == {"y": ["y-dist"]}


def test_the_key_follows_the_import_paths_folders(tmp_path: Path) -> None:
    folder = tmp_path / "site"
    folder.mkdir()
    before = installation_key([str(folder)])
    assert installation_key([str(folder)]) == before
    (folder / "new-1.0.dist-info").mkdir()
    assert installation_key([str(folder)]) != before
    assert installation_key([str(folder), str(tmp_path / "absent")]) != installation_key([str(folder)])


def test_each_caller_gets_its_own_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    original = importlib.metadata.packages_distributions
    monkeypatch.setattr(importlib.metadata, "packages_distributions", original)
    remember_distributions(tmp_path)
    first = importlib.metadata.packages_distributions()
    first.clear()  # a caller changing its copy does not change the next caller's
    assert importlib.metadata.packages_distributions() == original()
