"""`lorabench doctor --settings`: every `LORABENCH_*` variable (declared in `harness.settings`) with its
value now or its default, who sets it and what it does. A value that cannot be read is shown with the
problem, so a user sees the bad one before a run refuses it."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import TextIO

from tabulate import tabulate

from harness import settings
from harness.errors import UserError


def settings_rows(environ: Mapping[str, str] | None = None) -> list[dict[str, str]]:
    """One row per declared variable, those lorabench reads first (in declaration order), then the
    ones only compose, the scripts or the tests read."""
    rows = []
    for setting in sorted(settings.REGISTRY.values(), key=lambda s: s.read_by != "lorabench"):
        problem = ""
        try:
            setting.get(environ)
        except UserError as exc:
            problem = str(exc)
        rows.append(
            {
                "name": setting.name,
                "value": setting.shown(environ),
                "problem": problem,
                "set_by": setting.set_by,
                "read_by": setting.read_by,
                "meaning": setting.meaning,
            }
        )
    return rows


def render_settings(
    environ: Mapping[str, str] | None = None, out: TextIO | None = None, *, as_json: bool = False
) -> int:
    """Print the table (or JSON); 2 when a variable that is set cannot be read, else 0."""
    out = out or sys.stdout  # looked up now: a test may have replaced it
    rows = settings_rows(environ)
    bad = [r for r in rows if r["problem"]]
    if as_json:
        json.dump(rows, out, indent=2)
        print(file=out)
    else:
        table = [
            [("✗ " if r["problem"] else "") + r["name"], r["value"], r["set_by"], _meaning(r)] for r in rows
        ]
        print(
            tabulate(table, headers=["variable", "now", "set by", "what it does"], tablefmt="plain"), file=out
        )
        for r in bad:
            print(f"lorabench doctor: {r['problem']}", file=out)
        for retired in settings.retired_set(environ):
            print(f"lorabench doctor: {retired}", file=out)
    return 2 if bad else 0


def _meaning(row: dict[str, str]) -> str:
    return row["meaning"] if row["read_by"] == "lorabench" else f"{row['meaning']} (read by {row['read_by']})"
