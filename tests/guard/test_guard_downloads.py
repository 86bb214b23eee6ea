"""Downloads reading: a real file growing under a watched cache is refused; a stale one is not."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.guard import GuardConfig, precheck
from harness.guard.downloads import default_download_dirs

# Appends 64 kB every 50 ms (about 1.3 MB/s), the way huggingface_hub fills a blob.incomplete.
WRITER = """
import sys, time
end = time.time() + float(sys.argv[2])
with open(sys.argv[1], "ab") as f:
    while time.time() < end:
        f.write(b"x" * 65536)
        f.flush()
        time.sleep(0.05)
"""


def config(hub: Path) -> GuardConfig:
    return GuardConfig(checks=("downloads",), window_s=1.0, download_dirs=(hub,))


@pytest.fixture
def hub(tmp_path: Path) -> Path:
    blobs = tmp_path / "hub" / "models--org--model" / "blobs"
    blobs.mkdir(parents=True)
    return tmp_path / "hub"


@pytest.fixture
def growing(hub: Path) -> Iterator[Path]:
    path = hub / "models--org--model" / "blobs" / "4f1c2d.incomplete"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path), "5"])
    time.sleep(0.2)
    yield path
    writer.kill()
    writer.wait()


def test_growing_incomplete_file_is_refused(hub: Path, growing: Path) -> None:
    verdict = precheck(config(hub))
    assert not verdict.ok
    assert f"download in progress: {growing} grew" in (verdict.reason or "")
    assert "--allow-noisy" in (verdict.reason or "")


def test_stale_incomplete_file_from_an_aborted_download_passes(hub: Path) -> None:
    (hub / "models--org--model" / "blobs" / "abandoned.incomplete").write_bytes(b"x" * 1000)
    verdict = precheck(config(hub))
    assert verdict.ok, verdict.reason
    assert "1 partial files seen" in verdict.readings[0].detail


def test_growing_file_deeper_than_the_scan_depth_is_not_seen(hub: Path, growing: Path) -> None:
    shallow = GuardConfig(checks=("downloads",), window_s=1.0, download_dirs=(hub,), download_scan_depth=1)
    assert precheck(shallow).ok


def test_default_dirs_follow_the_hugging_face_variables(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("HUGGINGFACE_HUB_CACHE", raising=False)
    monkeypatch.delenv("HF_DATASETS_CACHE", raising=False)
    dirs = default_download_dirs()
    assert tmp_path / "hf" / "hub" in dirs and tmp_path / "hf" / "datasets" in dirs
