"""Why a record's fingerprint is not this run's: the inputs of the fingerprint, diffed field by field.

A fingerprint is a hash (`harness.results.run_fingerprint`): it says *that* a record answers another
question, never *which* part differs. The inputs are kept in the record (its setup, stack and host kind),
so they are rebuilt here and compared: "recipe.steps 300 → 20" tells a user why this host's committed
record did not stand in; "no record" would have had them look for a bug.
"""

from __future__ import annotations

import json
from typing import Any

from harness.autorecipe import fingerprint_context
from harness.config import SetupConfig
from harness.results import RunRecord, fingerprint_payload, run_fingerprint, setup_digest

MAX_SHOWN = 4  # fields named in one reason; the rest are counted
MISSING = "(not a field)"


# Any values: setting values of every type the setup model has.
def _flat(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in tree.items():
        if isinstance(value, dict) and value:
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


# Any values: flattened setup fields, values of every setting type.
def _sides(setup: SetupConfig) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the fields the fingerprint sees: those not at their default, data by content; every field's value)."""
    seen = _flat(json.loads(fingerprint_payload(setup)))
    seen.pop("fingerprint_version", None)
    return seen, _flat(setup.model_dump(mode="json"))


def _shown(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, str) else value
    return text if len(text) <= 40 else text[:18] + "…" + text[-18:]


def _before_auto_changed(record: RunRecord, setup: SetupConfig) -> bool:
    """Whether the record holds `setup`'s fingerprint as it was before an "auto" of it changed meaning on the
    record's host kind (harness.autorecipe.fingerprint_context): same settings, another meaning."""
    kind = record.provenance.host.kind
    return (
        kind is not None
        and bool(fingerprint_context(setup, kind))
        and record.fingerprint == setup_digest(setup, record.stack, kind)
    )


def _recorded_setup(record: RunRecord, setup: SetupConfig) -> SetupConfig:
    """The record's setup, its data named as this setup names it where the record's data path was cut
    (`…/<name>`: a published record, `lorabench publish`) and its fingerprint, rebuilt with this setup's data,
    is the one it recorded: the cut path names no file to hash, and without this no published record of a
    local data file would ever tell a run's expected time or whether its seeds fit on one GPU together."""
    kind = record.provenance.host.kind
    if not record.setup.data.source.startswith("…/") or kind is None:
        return record.setup
    rebuilt = record.setup.model_copy(
        update={"data": record.setup.data.model_copy(update={"source": setup.data.source})}
    )
    same = run_fingerprint(rebuilt, record.stack, kind) == record.fingerprint
    return rebuilt if same or _before_auto_changed(record, rebuilt) else record.setup


def _same_setup_but_seed(record: RunRecord, setup: SetupConfig) -> bool:
    """Whether the record is a run of `setup` with the record's own seed: its fingerprint is the one `setup` has
    with that seed. Field by field they may differ all the same, where a default changed since the record was
    made (its setup holds `recipe.kernels = "none"`, the default until 2026-12-04, while an "auto" that means
    none on its host kind adds nothing to the fingerprint)."""
    kind = record.provenance.host.kind
    if kind is None:
        return False
    with_its_seed = setup.model_copy(update={"recipe": setup.recipe.model_copy(update={"seed": record.seed})})
    return run_fingerprint(with_its_seed, record.stack, kind) == record.fingerprint


def setup_changes(record: RunRecord, setup: SetupConfig) -> list[str]:
    """`field recorded → now` for each setup field the fingerprint sees that differs (data by content)."""
    if _same_setup_but_seed(record, setup):
        seed = setup.recipe.seed
        return [] if record.seed == seed else [f"recipe.seed {record.seed} → {seed}"]
    now_seen, now_all = _sides(setup)
    then_seen, then_all = _sides(_recorded_setup(record, setup))
    changes = []
    for key in sorted(set(now_seen) | set(then_seen)):
        # A field at its default on one side is not in that side's fingerprint: its value is the default.
        old, new = (
            then_seen.get(key, then_all.get(key, MISSING)),
            now_seen.get(key, now_all.get(key, MISSING)),
        )
        if old != new:
            what = "data.source (by content)" if key == "data.source" else key
            changes.append(f"{what} {_shown(old)} → {_shown(new)}")
    return changes


def fingerprint_changes(record: RunRecord, setup: SetupConfig, stack: str, host_kind: str) -> str:
    """One phrase: what differs between the record's fingerprint inputs and this run's."""
    parts: list[str] = []
    kind = record.provenance.host.kind
    if kind is None:
        # Its fingerprint cannot match whatever the settings; those that differ too are named after it.
        parts.append("made before fingerprint version 3 (no host kind recorded)")
    elif kind != host_kind:
        parts.append(f"host kind {kind}, this host is {host_kind}")
    if record.stack != stack:
        parts.append(f"stack {record.stack} → {stack}")
    changes = setup_changes(record, setup)
    if len(changes) > MAX_SHOWN:
        changes = [*changes[:MAX_SHOWN], f"and {len(changes) - MAX_SHOWN} more"]
    parts += changes
    if _before_auto_changed(record, _recorded_setup(record, setup)):
        parts += [f"{meaning} now (not when recorded)" for meaning in fingerprint_context(setup, host_kind)]
    if not parts:
        # Same inputs, another hash: made by a lorabench whose fingerprint was computed differently.
        return "same settings, but made by a lorabench whose fingerprint version differs"
    return ", ".join(parts)
