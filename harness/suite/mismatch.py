"""Why a record's fingerprint is not this run's: the inputs of the fingerprint, diffed field by field.

A fingerprint is a hash (`harness.results.run_fingerprint`): it says *that* a record answers another
question, never *which* part differs. The inputs are kept in the record (its setup, stack and host kind),
so they are rebuilt here and compared: "recipe.steps 300 → 20" tells a user why this host's committed
record did not stand in; "no record" would have had them look for a bug.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from harness.config import SetupConfig
from harness.results import RunRecord, data_identity

MAX_SHOWN = 4  # fields named in one reason; the rest are counted
DEFAULT = "(default)"


def _flat(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in tree.items():
        if isinstance(value, dict) and value:
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _payload(setup: SetupConfig) -> dict[str, Any]:
    body = json.loads(setup.fingerprint_payload(data_identity(setup.data.source)))
    return _flat(body)


def _recorded_payload(record: RunRecord) -> dict[str, Any] | None:
    """The record's setup as the fingerprint saw it, or None when today's schema cannot read it."""
    try:
        return _payload(SetupConfig.model_validate(record.setup))
    except (ValidationError, TypeError, ValueError):
        return None


def _shown(value: Any) -> str:
    if value is DEFAULT:
        return DEFAULT
    text = json.dumps(value) if not isinstance(value, str) else value
    return text if len(text) <= 40 else text[:18] + "…" + text[-18:]


def setup_changes(record: RunRecord, setup: SetupConfig) -> list[str]:
    """`field recorded → now` for each setup field the fingerprint sees that differs (data by content)."""
    now = _payload(setup)
    then = _recorded_payload(record)
    if then is None:
        # A record of another lorabench whose setup no longer validates: diff the raw fields.
        then = _flat({k: v for k, v in record.setup.items() if k not in ("name", "experiment")})
        now = _flat(setup.model_dump(mode="json", exclude={"name", "experiment"}))
    changes = []
    for key in sorted(set(now) | set(then)):
        if key == "fingerprint_version":
            continue
        old, new = then.get(key, DEFAULT), now.get(key, DEFAULT)
        if old != new:
            what = "data.source (by content)" if key == "data.source" else key
            changes.append(f"{what} {_shown(old)} → {_shown(new)}")
    return changes


def fingerprint_changes(record: RunRecord, setup: SetupConfig, stack: str, host_kind: str) -> str:
    """One phrase: what differs between the record's fingerprint inputs and this run's."""
    parts: list[str] = []
    kind = record.provenance.get("host", {}).get("kind")
    if kind is None:
        return "made before fingerprint version 3 (no host kind recorded)"
    if kind != host_kind:
        parts.append(f"host kind {kind}, this host is {host_kind}")
    if record.stack != stack:
        parts.append(f"stack {record.stack} → {stack}")
    changes = setup_changes(record, setup)
    if len(changes) > MAX_SHOWN:
        changes = [*changes[:MAX_SHOWN], f"and {len(changes) - MAX_SHOWN} more"]
    parts += changes
    if not parts:
        # Same inputs, another hash: made by a lorabench whose fingerprint was computed differently.
        return "same settings, but made by a lorabench whose fingerprint version differs"
    return ", ".join(parts)
