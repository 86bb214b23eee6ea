"""Before a run starts: is a hub id usable now, from the local cache or from a hub that answers?

Offline, the hub client retried for 36 s before it failed, inside the trainer. These checks answer in
milliseconds (cache lookups, one TCP connect with a short timeout) and name the fix. They never
download. Not covered: a hub that accepts connections but refuses the id (the trainer reports that).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from urllib.parse import urlsplit

from harness.errors import UserError

PROBE_TIMEOUT_S = 3.0


def is_offline(*names: str) -> bool:
    """HF_HUB_OFFLINE (or another of `names`, e.g. HF_DATASETS_OFFLINE) set to a true value."""
    return any(
        os.environ.get(n, "").strip().lower() in ("1", "true", "yes", "on")
        for n in ("HF_HUB_OFFLINE", *names)
    )


def hub_endpoint() -> str:
    from huggingface_hub import constants

    return constants.ENDPOINT


def check_reachable(label: str, source: str, fix: str) -> None:
    """One TCP connect to the hub endpoint, `PROBE_TIMEOUT_S` at most."""
    endpoint = urlsplit(hub_endpoint())
    port = endpoint.port or (443 if endpoint.scheme == "https" else 80)
    try:
        socket.create_connection((endpoint.hostname or "", port), timeout=PROBE_TIMEOUT_S).close()
    except OSError as exc:
        raise UserError(
            f"{label}: {source!r} is not in the local cache and the hub {hub_endpoint()} cannot be reached "
            f"({exc.strerror or exc}); {fix}"
        ) from None


def check_hub_model(
    source: str,
    file: str | None,
    revision: str | None,
    *,
    field: str = "model.source",
    local: str = "folder or .gguf file",
) -> None:
    """`field` names where the user gave `source` (a setup's field, a command's argument), `local` what
    they may give instead."""
    from huggingface_hub import try_to_load_from_cache

    if isinstance(try_to_load_from_cache(source, file or "config.json", revision=revision), str):
        return
    fix = f"run `lorabench fetch --model {source}` where the hub is reachable, or give a local {local}"
    if is_offline():
        raise UserError(f"{field}: {source!r} is not in the local hub cache and HF_HUB_OFFLINE is set; {fix}")
    check_reachable(field, source, fix)


def dataset_cached(source: str) -> bool:
    from huggingface_hub import constants

    owner, _, name = source.partition("/")
    datasets_cache = Path(os.environ.get("HF_DATASETS_CACHE") or Path(constants.HF_HOME) / "datasets")
    return (Path(constants.HF_HUB_CACHE) / f"datasets--{owner}--{name}").is_dir() or any(
        datasets_cache.glob(f"{owner}___{name}*")
    )


def check_hub_dataset(source: str, local_example: str) -> None:
    if dataset_cached(source):
        return
    fix = (
        f"run `lorabench fetch --data {source}` where the hub is reachable, or point data.source (or --data, "
        f"or $LORABENCH_DATA) at a local .jsonl file such as {local_example}"
    )
    if is_offline("HF_DATASETS_OFFLINE"):
        raise UserError(
            f"data.source: dataset {source!r} is not in the local cache and the hub is set offline; {fix}"
        )
    check_reachable("data.source", source, fix)
