"""How many SQLite VM instructions one CPU second buys: the figure behind the SQL scoring budgets
(`harness.tasks.sql.budget`), which count instructions instead of seconds.

Plain script, not collected by pytest: `python dev/calibrate_sql_budget.py [--repeats 5]`.

Two measurements, both in instructions per second of this thread's CPU time (`time.thread_time`:
what the work itself used, so a busy machine stretches the wall clock but hardly this figure):
  shapes    long single statements of the kinds that reach a budget (an endless recursive CTE, a
            cross join, a sort, a GROUP BY, LIKE and instr over text), and byte-heavy ones (a value
            near the sandbox's cap passed along a recursive CTE and worked on per row: few VM
            instructions, many bytes), each run by the sandbox (`run_query`, so functions charged
            for their bytes count) on a budget of SHAPE_INSTRUCTIONS; median over --repeats
  scoring   `score_prediction` on 300 synthetic answers per shared data file (the gold, a rewrite or
            a mutant in turn, as bench_semantic.py times them): instructions counted by the sandbox,
            against the CPU time of the whole scoring, Python included; and how close the costliest
            answers come to the per-answer budget
Instructions are counted the way the sandbox counts them: SQLite calls the progress handler once
every `budget.TICK` instructions.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import sqlite3
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.tasks.sql import budget as budget_module  # ruff: ignore[module-import-not-at-top-of-file]
from harness.tasks.sql.budget import Budget  # ruff: ignore[module-import-not-at-top-of-file]
from harness.tasks.sql.sandbox import MAX_VALUE_BYTES, build_database, run_query  # ruff: ignore[module-import-not-at-top-of-file]

CONTEXT = "CREATE TABLE t (name VARCHAR, age INTEGER, note VARCHAR)"
ROWS = {"t": [(f"p{i}", i, f"note {i} " * (i % 7)) for i in range(40)]}
_RECURSIVE = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
SHAPES = {
    "endless recursive CTE, COUNT": _RECURSIVE + "SELECT COUNT(*) FROM c",
    "endless recursive CTE, MAX of text": _RECURSIVE + "SELECT MAX(x || 'a') FROM c",
    "5-way cross join, COUNT": "SELECT COUNT(*) FROM t a, t b, t c, t d, t e WHERE a.age + b.age > c.age",
    # Sorts stay at 4 tables: 40^5 sort records would reach the sandbox's heap cap first.
    "4-way cross join, GROUP BY": "SELECT a.name, COUNT(*) FROM t a, t b, t c, t d GROUP BY a.name, b.age % 3",
    "4-way cross join, ORDER BY text": "SELECT a.name || b.name || d.name FROM t a, t b, t c, t d ORDER BY 1 LIMIT 1",
    "5-way cross join, LIKE": "SELECT COUNT(*) FROM t a, t b, t c, t d, t e WHERE a.note || e.name LIKE '%e 3%p1%'",
    "5-way cross join, instr": "SELECT COUNT(*) FROM t a, t b, t c, t d, t e WHERE instr(a.note || e.note, c.name) > 0",
    "4-way cross join, correlated subquery": "SELECT COUNT(*) FROM t a, t b, t c, t d WHERE a.age < (SELECT MAX(e.age) FROM t e WHERE e.name > d.name)",
}
_LONG = MAX_VALUE_BYTES - 50
_PASS_ALONG = (
    f"WITH RECURSIVE c(x, s) AS (SELECT 1, printf('%.{_LONG}c', 'y') UNION ALL SELECT x + 1, s FROM c) "
)
BYTE_SHAPES = {
    f"{_LONG} B value per row, passed along": _PASS_ALONG + "SELECT COUNT(*) FROM c",
    f"{_LONG} B value per row, concatenated": _PASS_ALONG
    + "SELECT COUNT(*) FROM c WHERE length(s || 'z') > 0",
    f"{_LONG} B value per row, upper": _PASS_ALONG + "SELECT COUNT(*) FROM c WHERE upper(s) = 'a'",
    f"{_LONG} B value per row, substr from the end": _PASS_ALONG
    + "SELECT COUNT(*) FROM c WHERE substr(s, -5) = 'a'",
    f"{_LONG} B value per row, instr 1 char (charged)": _PASS_ALONG + "SELECT SUM(instr(s, 'z')) FROM c",
    f"{_LONG} B value per row, instr 400 B needle (charged)": _PASS_ALONG
    + "SELECT SUM(instr(s, substr(s, 1, 400) || 'z')) FROM c",
    f"{_LONG} B value per row, replace (charged)": _PASS_ALONG
    + "SELECT SUM(length(replace(s, 'y', 'z'))) FROM c",
    f"{_LONG} B value per row, LIKE with 200 '_' (charged)": _PASS_ALONG
    + "SELECT COUNT(*) FROM c WHERE s LIKE '%"
    + "y_" * 200
    + "z%'",
    f"{_LONG} B value per row, printf (charged)": _PASS_ALONG
    + "SELECT COUNT(*) FROM c WHERE printf('%s', s) = 'a'",
}
# Long enough that start-up costs vanish, short enough for a shared machine: 0.1-1 CPU s each.
SHAPE_INSTRUCTIONS = 10_000_000


def measure_shape(sql: str) -> tuple[int, float]:
    """Instructions counted (charges included) and thread CPU seconds for one statement run by the
    sandbox on a budget of SHAPE_INSTRUCTIONS, the safety net out of the way."""
    conn = build_database(CONTEXT, ROWS)
    budget = Budget(SHAPE_INSTRUCTIONS, net_cpu_s=1e9)
    start = time.thread_time()
    with contextlib.suppress(sqlite3.DatabaseError, MemoryError):  # stopped by the budget: the point
        run_query(conn, sql, budget=budget)
    cpu = time.thread_time() - start
    conn.close()
    return budget.spent, cpu


def shapes_report(repeats: int, shapes: dict[str, str]) -> tuple[list[str], list[float]]:
    lines = [
        "| statement | instructions | CPU s (median) | M instructions per CPU s |",
        "| --- | ---: | ---: | ---: |",
    ]
    rates = []
    for name, sql in shapes.items():
        runs = [measure_shape(sql) for _ in range(repeats)]
        instructions = runs[0][0]
        cpu = statistics.median(c for _, c in runs)
        rates.append(instructions / cpu)
        lines.append(f"| {name} | {instructions:,} | {cpu:.3f} | {instructions / cpu / 1e6:.0f} |")
    return lines, rates


def scoring_report(data: Path) -> list[str]:
    """Instructions and CPU of `score_prediction` on bench_semantic's 300 synthetic answers."""
    from dev.bench_semantic import load_rows, synthetic_answers
    from harness.tasks.sql.scoring import score_prediction
    from harness.tasks.sql.semantic import gold_suite

    answers = synthetic_answers(load_rows(data, None))
    start = time.thread_time()
    scores = [score_prediction(a["pred"], a["gold"], a["context"]) for a in answers]
    cpu = time.thread_time() - start
    # Each gold's suite once (cached by now): the distillation's instructions, on their own budget.
    suites = {(a["gold"], a["context"]): gold_suite(a["gold"], a["context"]) for a in answers}
    distilled = sum(s.instructions for s in suites.values())
    answered = sum(s.instructions for s in scores)
    top = sorted(s.instructions for s in scores)[-3:]
    top_suites = sorted(s.instructions for s in suites.values())[-3:]
    return [
        f"  {data.name}: {len(answers)} answers in {cpu:.2f} CPU s; instructions counted: answers {answered:,}, "
        f"distillation {distilled:,} ({len(suites)} golds): {(answered + distilled) / cpu / 1e6:.1f} M per CPU s "
        f"of scoring, Python's share included",
        f"    costliest answers {', '.join(f'{t:,}' for t in top)} (budget {budget_module.ANSWER_INSTRUCTIONS:,}); "
        f"costliest suites {', '.join(f'{t:,}' for t in top_suites)} (budget {budget_module.DISTIL_INSTRUCTIONS:,}); "
        f"suites cut short {sum(s.truncated for s in suites.values())}",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    lines = [
        f"# {time.strftime('%Y-%m-%d %H:%M')}, {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"load average {os.getloadavg()[0]:.1f} at start (shared machine), Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}",
        f"# python dev/calibrate_sql_budget.py {' '.join(sys.argv[1:])}",
        "",
        f"## Long statements (stopped at {SHAPE_INSTRUCTIONS:,} instructions), {args.repeats} repeats",
        "",
    ]
    shape_lines, rates = shapes_report(args.repeats, SHAPES)
    lines += shape_lines
    lines += [
        "",
        f"median over the shapes: {statistics.median(rates) / 1e6:.0f} M instructions per CPU second "
        f"(range {min(rates) / 1e6:.0f}-{max(rates) / 1e6:.0f})",
        "",
        f"## Bytes per instruction: values near the {MAX_VALUE_BYTES:,}-byte cap (stopped at "
        f"{SHAPE_INSTRUCTIONS:,} instructions, charges included), {args.repeats} repeats",
        "",
    ]
    byte_lines, byte_rates = shapes_report(args.repeats, BYTE_SHAPES)
    lines += byte_lines
    slowest = min(rates + byte_rates)
    lines += [
        "",
        f"slowest shape: {slowest / 1e6:.1f} M instructions per CPU second; the budgets assume "
        f"{budget_module.INSTRUCTIONS_PER_S / 1e6:.0f} M, so an answer's budget of "
        f"{budget_module.ANSWER_INSTRUCTIONS:,} is at most {budget_module.ANSWER_INSTRUCTIONS / slowest:.2f} CPU s here",
        "",
        "## Scoring (score_prediction, caches cold, one pass)",
    ]
    shared = ROOT.parent / "shared" / "data" / "sql-create-context"
    for name in ("random-sample.jsonl", "spider-part.jsonl"):
        if (shared / name).exists():
            lines += scoring_report(shared / name)
    lines.append(f"# load average {os.getloadavg()[0]:.1f} at the end")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
