"""Where the seconds of runs went, side by side, from their records (Timings.phases, wall_s, unaccounted_s).

    python dev/bench_breakdown.py RECORD.json [RECORD.json ...]

One column per record (its host and seed), one row per phase in the order the runs met them, then the
phases' sum, the whole command's wall clock (process start to record) and what no phase covers. For Exp A
on CPU and GPU: give a CPU record and an H200 record. Records written before the phases existed show
their old timings (load, baseline, preflight, train, eval, total) only.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.results import load_record, slug

OLD = ("load_s", "baseline_eval_s", "preflight_s", "train_s", "eval_s", "total_s")


def column(path: Path) -> tuple[str, dict[str, float], dict[str, float | None]]:
    record = load_record(path)
    timings = record.timings
    # Its results folder names the column (<results>/<stack>/<host>/<experiment>/<setup>/seed-N.json):
    # runs of one host and seed from two folders (before/after a change) stay apart.
    in_layout = len(path.parents) > 4 and path.parents[2].name == slug(record.host)
    label = f"{path.parents[4].name[:12] if in_layout else record.host} s{record.seed}"
    totals = {"sum of phases": sum((timings.phases or {}).values()) if timings.phases else None,
              "wall (process start → record)": timings.wall_s, "unaccounted": timings.unaccounted_s}  # fmt: skip
    phases = dict(timings.phases or {}) or {
        name: getattr(timings, name) for name in OLD if getattr(timings, name)
    }
    return label, phases, totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("records", nargs="+", type=Path)
    args = parser.parse_args()
    columns = [column(p) for p in args.records]
    names: list[str] = []
    for _, phases, _ in columns:
        names += [n for n in phases if n not in names]
    width = max(len(n) for n in [*names, "wall (process start → record)"])
    print(f"{'phase (s)':<{width}} | " + " | ".join(f"{label:>18}" for label, _, _ in columns))
    for name in names:
        cells = [phases.get(name) for _, phases, _ in columns]
        print(
            f"{name:<{width}} | " + " | ".join(f"{c:>18.2f}" if c is not None else f"{'':>18}" for c in cells)
        )
    for key in ("sum of phases", "wall (process start → record)", "unaccounted"):
        cells = [totals.get(key) for _, _, totals in columns]
        print(
            f"{key:<{width}} | "
            + " | ".join(f"{c:>18.2f}" if c is not None else f"{'n/a':>18}" for c in cells)
        )


if __name__ == "__main__":
    main()
