"""CPU seconds of each byte-heavy hostile statement (tests/sql/hostile_sql.py) and which limit ended
it, for this checkout and optionally another code root (issue #38 item 6).

Plain script, not collected by pytest:
  python dev/bench_hostile_sql.py [--before DIR] [--golds] [--out FILE]
DIR is a checkout of the code to compare with (e.g. `git worktree add /tmp/before main`). Each
statement runs in a fresh process (`run_sql` with the default statement budget) so a heap cap reached
by one cannot weigh on the next; the figure is that process's thread CPU time for the statement.
--golds also checks that the charges stop no real query: every gold of the shared data files that
calls a charged or denied function is distilled (`gold_suite`) and scored against itself, with each code root, and the outcomes counted
(suites that fail, are cut short by the budget or the net, golds not matching themselves).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def worker(name: str) -> None:
    """Run one hostile statement with the harness found first on sys.path (PYTHONPATH)."""
    sys.path.insert(1, str(ROOT / "tests" / "sql"))
    from hostile_sql import CONTEXT, HOSTILE_SQL, ROWS

    from harness.tasks.sql.sandbox import run_sql

    sql, _ = HOSTILE_SQL[name]
    run_sql("SELECT 1", CONTEXT, ROWS)  # warm: imports, the schema cache
    start = time.thread_time()
    result = run_sql(sql, CONTEXT, ROWS)
    cpu = time.thread_time() - start
    failure = result.failure.value if result.failure else "ok"
    print(json.dumps({"cpu": cpu, "failure": failure, "message": result.message[:80]}))


# Golds the charges can touch: those calling a charged or denied function (the others run as before;
# the lower heap cap is checked by the SQLite heap high-water mark of scoring, in the report).
CHARGED_WORDS = re.compile(
    r"\b(instr|replace|like|glob|trim|ltrim|rtrim|upper|lower|hex|quote|substr|substring|length|soundex|"
    r"strftime|zeroblob|randomblob|printf|format|json\w*)\b|->",
    re.IGNORECASE,
)


def gold_worker(path: str) -> None:
    """Each gold of one data file: its suite's failure, truncation, and its self-match."""
    from harness.tasks.sql.semantic import compare_queries, gold_suite

    outcomes = []
    for line in Path(path).read_text().splitlines():
        row = json.loads(line)
        if not CHARGED_WORDS.search(row["answer"]):
            continue
        suite = gold_suite(row["answer"], row["context"])
        verdict = compare_queries(row["answer"], row["answer"], row["context"])
        outcomes.append(
            [suite.failure or "", suite.truncated, suite.clock_stopped, verdict.match, suite.instructions]
        )
    print(json.dumps(outcomes))


def gold_lines(before: Path | None) -> list[str]:
    from collections import Counter

    shared = ROOT.parent / "shared" / "data" / "sql-create-context"
    lines = [
        "",
        "## Golds of the shared data calling a charged or denied function: distilled and scored against themselves",
        "",
    ]
    for path in sorted(shared.glob("*.jsonl")):
        results = {}
        for label, root in (("after", ROOT), ("before", before)):
            if root is None:
                continue
            env = {**os.environ, "PYTHONPATH": str(root)}
            cmd = [sys.executable, __file__, "--gold-worker", str(path)]
            done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True, timeout=3000)
            results[label] = json.loads(done.stdout.splitlines()[-1])
        for label, outcomes in results.items():
            failures = Counter(o[0].split(":")[0][:40] for o in outcomes if o[0])
            lines.append(
                f"{path.name} {label}: {len(outcomes)} golds; suites failing {sum(failures.values())} "
                f"({dict(failures)}); cut short by the budget {sum(o[1] for o in outcomes)}, by the net "
                f"{sum(o[2] for o in outcomes)}; not matching themselves {sum(not o[3] for o in outcomes)}; "
                f"costliest suite {max(o[4] for o in outcomes):,} instructions"
            )
        if len(results) == 2:
            changed = sum(a[:4] != b[:4] for a, b in zip(results["after"], results["before"], strict=True))
            lines.append(f"{path.name}: golds whose outcome differs after vs before: {changed}")
    return lines


def measure(code_root: Path, name: str) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(code_root)}
    done = subprocess.run(
        [sys.executable, __file__, "--worker", name],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    if done.returncode != 0:
        return {"cpu": float("nan"), "failure": f"exit {done.returncode}", "message": done.stderr[-80:]}
    return json.loads(done.stdout.splitlines()[-1])


def _commit(root: Path) -> str:
    done = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    )
    return done.stdout.strip() or "unknown"


def table(before: Path | None) -> list[str]:
    sys.path.insert(0, str(ROOT / "tests" / "sql"))
    sys.path.insert(0, str(ROOT))
    from hostile_sql import HOSTILE_SQL

    head = "| statement | expected | after: CPU s | after: ended by |"
    rule = "| --- | --- | ---: | --- |"
    if before is not None:
        head += " before: CPU s | before: ended by |"
        rule += " ---: | --- |"
    lines = [head, rule]
    worst = 0.0
    for name, (_, expected) in HOSTILE_SQL.items():
        after = measure(ROOT, name)
        worst = max(worst, float(after["cpu"]))
        row = f"| {name} | {expected.value} | {after['cpu']:.2f} | {after['failure']} |"
        if before is not None:
            old = measure(before, name)
            row += f" {old['cpu']:.2f} | {old['failure']} |"
        lines.append(row)
    lines += ["", f"slowest after: {worst:.2f} CPU s"]
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--gold-worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--before", type=Path, default=None)
    parser.add_argument("--golds", action="store_true", help="also check every gold of the shared data")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker)
        return 0
    if args.gold_worker:
        gold_worker(args.gold_worker)
        return 0
    header = [
        f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.machine()}, {os.cpu_count()} cores, "
        f"load average {os.getloadavg()[0]:.1f} at start (shared machine), Python {platform.python_version()}, "
        f"SQLite {sqlite3.sqlite_version}",
        f"# python dev/bench_hostile_sql.py {' '.join(sys.argv[1:])}",
        f"# after: {ROOT} at {_commit(ROOT)}"
        + (f"; before: {args.before} at {_commit(args.before)}" if args.before else ""),
        "",
    ]
    body = table(args.before) + (gold_lines(args.before) if args.golds else [])
    text = "\n".join([*header, *body, f"# load average {os.getloadavg()[0]:.1f} at the end"]) + "\n"
    print(text, end="")
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
