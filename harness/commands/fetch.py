"""`lorabench fetch`: download models and data before timing, so timed phases can run offline."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from harness.errors import UserError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "fetch",
        help="prefetch a hub model and dataset into the caches (timed runs are offline)",
        description="Download a Hugging Face model and/or dataset into the local caches, so that timed "
        "phases, which run with HF_HUB_OFFLINE=1, find everything on disk. A local path is only checked.",
    )
    parser.add_argument("--model", metavar="SRC", help="hub model id (org/name) or a local model directory")
    parser.add_argument(
        "--data", metavar="SRC", help="hub dataset id (org/name) or a local data file/directory"
    )
    parser.add_argument("--revision", metavar="REV", help="hub revision (branch, tag or commit) for --model")
    parser.set_defaults(func=cmd_fetch)


def looks_local(source: str) -> bool:
    """A path, not a hub id: exists, or is written as a path (absolute, ./, ~, or a file suffix)."""
    return (
        os.path.exists(source)
        or source.startswith(("/", "./", "../", "~"))
        or Path(source).suffix in {".json", ".jsonl", ".parquet", ".csv", ".gguf"}
    )


def check_local(field: str, source: str) -> Path:
    path = Path(source).expanduser()
    if not path.exists():
        raise UserError(
            f"{field} {source!r}: no such file or directory; pass an existing path or a hub id org/name"
        )
    return path


def _hub_failed(field: str, source: str, exc: Exception, fix: str) -> UserError:
    first_line = (str(exc).splitlines() or [""])[0][:200]
    return UserError(
        f"{field} {source!r}: could not fetch from the Hugging Face hub ({type(exc).__name__}: {first_line}); {fix}"
    )


def fetch_model(source: str, revision: str | None = None) -> Path:
    if looks_local(source):
        return check_local("--model", source)
    from huggingface_hub import snapshot_download, try_to_load_from_cache

    from harness.hub import check_reachable, is_offline

    fix = "check the id, the network (HF_ENDPOINT) and HF_HUB_OFFLINE, or pass a local directory"
    cached = isinstance(try_to_load_from_cache(source, "config.json", revision=revision), str)
    if not cached and not is_offline():  # one TCP connect, not the hub client's retries (~25 s for data)
        check_reachable("--model", source, fix)
    try:
        return Path(snapshot_download(repo_id=source, revision=revision))
    except Exception as exc:  # hub errors have many types; all mean "not in the cache now"
        raise _hub_failed("--model", source, exc, fix) from None


def fetch_data(source: str) -> str:
    if looks_local(source):
        return str(check_local("--data", source))
    from harness.hub import check_reachable, dataset_cached, is_offline

    fix = "check the id, the network (HF_ENDPOINT) and HF_DATASETS_OFFLINE, or pass a local file"
    if not dataset_cached(source) and not is_offline("HF_DATASETS_OFFLINE"):
        check_reachable("--data", source, fix)
    import datasets

    try:
        loaded = datasets.load_dataset(source)
    except Exception as exc:  # as above: every failure means the data is not cached
        raise _hub_failed("--data", source, exc, fix) from None
    return ", ".join(f"{split}: {len(rows)} rows" for split, rows in loaded.items())


def cmd_fetch(args: argparse.Namespace) -> int:
    if not args.model and not args.data:
        raise UserError("nothing to fetch: pass --model SRC and/or --data SRC")
    if args.model:
        print(f"model {args.model}: {fetch_model(args.model, args.revision)}")
    if args.data:
        print(f"data {args.data}: {fetch_data(args.data)}")
    return 0
