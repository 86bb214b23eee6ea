"""The one way lorabench writes a file or folder that someone may read at any moment: atomically.

A reader sees the old content or the new, never half: text goes to a flushed temp file in the same
folder, renamed over the target; a folder (an adapter, a converted model) is built under a temp name and
renamed into place. Not covered: filesystems without atomic rename (some network mounts).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness.errors import UserError, describe_os_error

# Not ".tmp": the guard takes growing *.tmp files for a download in progress, and a run that keeps its
# progress durable (partial.json rewritten as it goes) would have flagged its own timed run.
WRITING_SUFFIX = ".lorabench-writing"


def umask() -> int:
    """This process's umask, read without changing it (Linux ≥ 4.7 shows it in /proc); elsewhere set
    and restored at once."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    current = os.umask(0o022)
    os.umask(current)
    return current


def write_text(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=WRITING_SUFFIX)
    try:
        os.fchmod(fd, 0o666 & ~umask())  # mkstemp makes it 0600
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_json(path: Path, data: Any, *, indent: int | None = 1) -> Path:
    return write_text(path, json.dumps(data, indent=indent, ensure_ascii=False) + "\n")


def write_lines(path: Path, rows: Any) -> Path:
    """JSON Lines: one object per line."""
    return write_text(path, "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))


@contextmanager
def building_dir(target: Path) -> Generator[Path]:
    """A temp folder beside `target` to fill in the block; renamed to `target` when the block ends
    without an error, removed when it raises. `target` must not exist yet (move an old one aside first)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=WRITING_SUFFIX))
    try:
        tmp.chmod(0o777 & ~umask())  # mkdtemp makes it 0700
        yield tmp
        os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def folder_or_parent(folder: Path, label: str, fix: str) -> Path:
    """The nearest folder that exists at or above `folder`; one line naming `label` and `fix` where `folder` is
    a file or under one (never a folder, whatever the permissions)."""
    try:
        existing = next(p for p in (folder, *folder.absolute().parents) if p.exists())
    except OSError as exc:
        raise UserError(f"{label}: {folder} cannot be used: {_cause_and_fix(exc, fix)}") from None
    if not existing.is_dir():
        where = "is a file" if existing == folder else f"is under a file, {existing}"
        raise UserError(f"{label}: {folder} {where}; {fix}")
    return existing


def _cause_and_fix(exc: OSError, fix: str) -> str:
    """The fault and one fix: where the fault's own fix already says to give another folder (a read-only
    disk, no permission), the caller's adds only where to give it ("--results DIR"), not the same advice again."""
    cause = describe_os_error(exc)
    where = re.search(r"\(([^()]*)\)$", fix)
    return f"{cause} ({where[1]})" if where and "give a" in cause else f"{cause}; {fix}"


def check_writable_dir(folder: Path, label: str, fix: str) -> Path:
    """A folder lorabench will write into (results, a cache, the locks, the reports): a folder, or creatable,
    and writable; else one line naming `label`, the folder and `fix`. Returns the nearest folder that exists
    (where its free space is read). It writes a byte there, fsynced, and removes it: writing is the only honest
    test (root passes every permission check, not a read-only mount, and a full disk takes an empty file)."""
    existing = folder_or_parent(folder, label, fix)
    try:
        with tempfile.NamedTemporaryFile(dir=existing, prefix=".lorabench-probe-") as probe:
            probe.write(b"lorabench")
            probe.flush()
            os.fsync(probe.fileno())
    except OSError as exc:
        raise UserError(f"{label}: {folder} cannot be written: {_cause_and_fix(exc, fix)}") from None
    return existing
