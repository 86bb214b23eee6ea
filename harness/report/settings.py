"""What differs between two setups' runs, setting by setting, so a comparison says what it compares.

Read from the records: each record's setup (fields it predates read as their defaults, as
`SetupConfig.fingerprint_payload` promises), "auto" settings as the run resolved them where the record
says so, the data split and the lorabench commit. Data is compared by content (`data.split_hash`), never
by path: two machines' copies of one file live in two folders. No setting is shown with an absolute path
(`public`): reports are published.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from harness.config import WHEN_NOT_WHAT
from harness.results import RunRecord
from harness.suite.catalogue import compile_mode

# Fields that name a run, or say when it saves its progress, rather than change what it does.
IDENTITY = frozenset({"name", "experiment", "recipe.seed", *(f"recipe.{field}" for field in WHEN_NOT_WHAT)})


# Any values: setting values of every type the setup model has (numbers, strings, lists, None).
def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, Mapping):
            out.update(_flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


# An absolute path (POSIX or Windows, or ~user) not inside a URL or a relative path: what `public` hides.
ABSOLUTE_PATH = re.compile(r"(?<![\w:/.>~-])(?:/|[A-Za-z]:\\|~[\w.-]*/)(?:[\w.+@-]+[/\\])+[\w.+@-]*")


# The kernel's own trees name the same thing on every Linux machine (/dev/kfd, /sys/fs/cgroup): not private.
SYSTEM_ROOTS = ("/dev/", "/proc/", "/sys/")


def machine_paths(text: str) -> list[str]:
    """The absolute paths in `text` that name something of one machine (its folders, its user's home)."""
    return [m for m in ABSOLUTE_PATH.findall(text) if not m.startswith(SYSTEM_ROOTS)]


def public(text: str) -> str:
    """`text` with every machine path cut to `…/<last part>`: machine paths never reach a report."""

    def cut(found: re.Match[str]) -> str:
        path = found.group(0)
        return path if path.startswith(SYSTEM_ROOTS) else "…/" + re.split(r"[/\\]", path.rstrip("/\\"))[-1]

    return ABSOLUTE_PATH.sub(cut, text)


# A JSON string literal, escapes included: paths inside one are cut without touching the escapes around them.
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def public_json(text: str) -> str:
    """JSON text (a record, a predictions line) with machine paths cut inside its strings, every other byte
    as it was: what `lorabench publish` writes into the committed reports/."""

    def cut(found: re.Match[str]) -> str:
        value = json.loads(found.group(0))
        cleaned = public(value)
        return found.group(0) if cleaned == value else json.dumps(cleaned, ensure_ascii=False)

    return _JSON_STRING.sub(cut, text)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return ",".join(map(str, value))
    return "–" if value is None else public(str(value))


def raw_settings(record: RunRecord) -> dict[str, str]:
    """Setting → value as the setup asked for it ("auto" left as is), data by content where the record
    names its split, without the run's name, experiment and seed."""
    flat = _flatten(record.setup.model_dump(mode="json"))
    out = {key: _text(value) for key, value in flat.items() if key not in IDENTITY}
    if record.data is not None:
        out.pop("data.source", None)
        out["data split"] = record.data.split_hash
    return out


def file_settings(fields: Mapping[str, Any]) -> dict[str, str]:
    """A setup file's own settings (its table, not validated), flattened and shown as `raw_settings`
    shows a record's; its data is left out (a path, which each machine names its own way)."""
    return {
        key: _text(value)
        for key, value in _flatten(fields).items()
        if key not in IDENTITY and not key.startswith("data.")
    }


def settings(record: RunRecord) -> dict[str, str]:
    """Setting → value as this run had it (resolved where it said "auto" and the record tells)."""
    out = raw_settings(record)
    out.setdefault("data split", "–")
    if record.model is not None:
        for key, resolved in (("precision", record.model.precision), ("device", record.model.device)):
            if out.get(key) == "auto":
                out[key] = f"{resolved} (auto)"
    if out.get("recipe.compile") == "auto" and record.status == "ok":
        out["recipe.compile"] = f"{compile_mode(record)} (auto)"
    if out.get("recipe.kernels") == "auto" and record.status == "ok" and record.train is not None:
        out["recipe.kernels"] = f"{'liger' if record.train.kernels else 'none'} (auto)"
    git = record.provenance.git
    out["lorabench commit"] = f"{str(git.sha or '–')[:7]}{' (dirty)' if git.dirty else ''}"
    return out


def _values(each: Sequence[Mapping[str, str]], key: str) -> str:
    return " / ".join(dict.fromkeys(s.get(key, "–") for s in each))


def _same(value: str) -> str:
    # "bf16 (auto)" and "bf16" ran alike: compare what ran, show how it was asked for.
    return value.removesuffix(" (auto)")


def _ran(records: Sequence[RunRecord]) -> list[RunRecord]:
    # A run that stopped early never resolved its "auto" settings: what ran is what the ok runs say.
    ok = [r for r in records if r.status == "ok"]
    return ok or list(records)


def differences(a: Sequence[RunRecord], b: Sequence[RunRecord]) -> list[str]:
    """`setting: a's value vs b's value` for every setting whose values differ between the two sets of runs
    (several values on one side, joined by ' / ', when its runs differ among themselves)."""
    # Each record's settings once: the scorecard compares hundreds of pairs (per key, it took 2.5 of `lorabench
    # report`'s 3 s on the published records).
    left_each, right_each = [settings(r) for r in _ran(a)], [settings(r) for r in _ran(b)]
    if not left_each or not right_each:
        return []
    out = []
    for key in sorted({k for s in (*left_each, *right_each) for k in s}):
        left, right = _values(left_each, key), _values(right_each, key)
        if {_same(v) for v in left.split(" / ")} != {_same(v) for v in right.split(" / ")}:
            out.append(f"{key}: {left} vs {right}")
    return out


def count_settings(diffs: Sequence[str]) -> int:
    """How far from like-for-like a pair is: differing settings, the commit not counted (it differs almost always)."""
    return sum(1 for d in diffs if not d.startswith("lorabench commit:"))
