"""Downloads in progress: partial files growing in the Hugging Face and pip caches.

A growing file is a download; a partial file that does not grow is the leftover of an aborted
one and is ignored. Not watched by default: uv's cache (it downloads into `.tmp*` directories
and its unpacked archives make a scan cost ~3 ms, a third of the sampler's budget) and
downloads elsewhere on disk; the network reading sees those.
"""

from __future__ import annotations

import os
import re
from fnmatch import translate
from pathlib import Path

from harness.guard.config import GuardConfig
from harness.guard.verdict import Reading, format_bytes, format_seconds


def default_download_dirs() -> tuple[Path, ...]:
    """Where huggingface_hub, datasets and pip put files while downloading them."""
    env = os.environ
    cache = Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    hf_home = Path(env.get("HF_HOME") or cache / "huggingface")
    dirs = [
        Path(env.get("HF_HUB_CACHE") or env.get("HUGGINGFACE_HUB_CACHE") or hf_home / "hub"),
        Path(env.get("HF_DATASETS_CACHE") or hf_home / "datasets"),
        Path(env.get("PIP_CACHE_DIR") or cache / "pip"),
    ]
    return tuple(dict.fromkeys(dirs))


def scan_partial_files(dirs: tuple[Path, ...], patterns: tuple[str, ...], depth: int) -> dict[str, int]:
    """Size of every partial file under `dirs`, at most `depth` directories down (caches are deep)."""
    # One compiled regex: fnmatch() per entry dominated the sampler's cost on a large cache.
    matches = re.compile("|".join(translate(p) for p in patterns)).match if patterns else lambda _: None
    found: dict[str, int] = {}
    stack = [(str(d), 0) for d in dirs]
    while stack:
        directory, level = stack.pop()
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            if level < depth:
                                stack.append((entry.path, level + 1))
                        elif matches(entry.name) and entry.is_file(follow_symlinks=False):
                            found[entry.path] = entry.stat(follow_symlinks=False).st_size
                    except OSError:
                        continue
        except OSError:
            continue  # a cache that does not exist is a quiet cache
    return found


def downloads_reading(before: dict[str, int], after: dict[str, int], seconds: float) -> Reading:
    """Bytes/s added to partial files during the window; any growth is a download in progress."""
    grown = {path: size - before.get(path, 0) for path, size in after.items() if size > before.get(path, 0)}
    rate = sum(grown.values()) / seconds
    ok = not grown
    if ok:
        detail = f"no partial file grew over {format_seconds(seconds)} ({len(after)} partial files seen)"
    else:
        path, added = max(grown.items(), key=lambda item: item[1])
        more = f" and {len(grown) - 1} more" if len(grown) > 1 else ""
        detail = (
            f"download in progress: {path}{more} grew {format_bytes(added)} over {format_seconds(seconds)}"
            " — a model or package downloading?"
        )
    return Reading("downloads", rate, "B/s", 0.0, ok, detail)


def watched_dirs(config: GuardConfig) -> tuple[Path, ...]:
    return config.download_dirs if config.download_dirs is not None else default_download_dirs()
