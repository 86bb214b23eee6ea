"""The table of published records' figures in docs/measurements.md, generated from reports/results/.

    python dev/measurements_table.py            # print the table
    python dev/measurements_table.py --write    # replace it between the markers in docs/measurements.md

One row per stack × host × experiment/setup folder: runs ok of all, seeds, the records' dates and commits,
exact match before → after training per seed, training seconds and whole-command seconds per seed (– where
the record predates `timings.wall_s`), and whether the run was timed under the quiet-machine guard.
tests/test_docs.py checks that the committed table is this script's output.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "measurements.md"
START, END = "<!-- published-records:start -->", "<!-- published-records:end -->"
HEADER = (
    "| stack · host | experiment / setup | ok / runs | seeds | date | commit | EM % base → trained | train s | "
    "whole command s | timed |\n|---|---|---|---|---|---|---|---|---|---|"
)


def number(value: float | None) -> str:
    return "–" if value is None else f"{value:g}"


def published(path: Path) -> bool:
    """seed-N.json; not the earlier records kept beside it (seed-N.prev-*.json)."""
    return path.stem.removeprefix("seed-").isdigit()


def exact_match(record: dict) -> str:
    before = (record.get("baseline") or {}).get("exact_match")
    return f"{number(before)} → {number(record['trained'].get('exact_match'))}"


def row(folder: Path, root: Path) -> str:
    records = sorted(
        (json.loads(p.read_text()) for p in folder.glob("seed-*.json") if published(p)),
        key=lambda r: r["seed"],
    )
    ok = [r for r in records if r["status"] == "ok"]
    stack, host, experiment, setup = folder.relative_to(root).parts
    commits = sorted(
        {((r.get("provenance") or {}).get("git") or {}).get("sha", "")[:7] for r in records} - {""}
    )
    dates = sorted({r["created"][:10] for r in records})
    em = " / ".join(exact_match(r) for r in ok if r.get("trained"))
    train = " / ".join(number((r.get("timings") or {}).get("train_s")) for r in ok)
    whole = " / ".join(number((r.get("timings") or {}).get("wall_s")) for r in ok)
    timed = sorted({"yes" if (r.get("guard") or {}).get("timed") else "no" for r in records})
    seeds = ", ".join(str(r["seed"]) for r in records)
    return (
        f"| {stack} · {host} | {experiment} / {setup} | {len(ok)} / {len(records)} | {seeds} | {' – '.join(dates)} "
        f"| {', '.join(commits)} | {em or '–'} | {train or '–'} | {whole or '–'} | {' / '.join(timed)} |"
    )


def table(root: Path) -> str:
    folders = sorted({p.parent for p in root.glob("*/*/*/*/seed-*.json")})
    return "\n".join([HEADER, *(row(folder, root) for folder in folders)])


def with_table(page: str, generated: str) -> str:
    head, _, rest = page.partition(START)
    _, _, tail = rest.partition(END)
    return f"{head}{START}\n{generated}\n{END}{tail}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="replace the table in docs/measurements.md")
    args = parser.parse_args()
    generated = table(ROOT / "reports" / "results")
    if args.write:
        PAGE.write_text(with_table(PAGE.read_text(), generated))
    else:
        print(generated)


if __name__ == "__main__":
    main()
