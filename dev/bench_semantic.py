"""How far the semantic match can be believed: mutant kill rate, equivalent-rewrite rate, scoring time
and hostile answers, for the matcher in this checkout ("after") and, with --matcher-from, the one of
another commit ("before"), on the shared text-to-SQL data.

Cases, per gold that executes on its own schema:
  mutants      near-miss variants of the gold (`harness.tasks.sql.mutants`): an operator changed, a
               literal off by one, a condition dropped or added, LIMIT, DISTINCT, ORDER BY direction,
               a negation, a column or aggregate swapped, COUNT(*)/COUNT(col), LEFT JOIN...
  second-order two mutations at once: held out, the matcher never distils against them
  rewrites     provably equivalent spellings of the gold; a matcher must match all of them

How a mutant is classed (honestly, not in the matcher's favour):
  equivalent by rule     `mutants.equivalence_rule` proves it equivalent: left out of every rate
  does not execute       fails on the empty database: any matcher rejects it, left out of the rates
  distinguishable        some matcher here showed a database where its result differs from the
                         gold's: the matcher under test, or the oracle (`oracle`: this checkout's
                         search run ten times longer, another seed, no early stop, every database
                         kept, 150 more drawn for the pair). Kill rate = killed / distinguishable.
  undecided              no database found that tells it apart: equivalent, or different only on
                         data nobody drew. Counted, sampled in the output, left out of the rate.
The oracle uses this checkout's data drawing; a mistake that only data unlike it shows is invisible
to both the matcher and the oracle, and does not appear in any figure here.

Timing: `score_prediction` (exact, executes, semantic: what a run does per answer) on 300 answers,
caches cleared before each repeat (every gold distilled from scratch), median of --repeats; wall
and CPU seconds (the machine may be shared: CPU time is what the scoring itself used). Answers: the
300 predictions of a CPU run record (--record), and per data file 300 synthetic answers (the gold,
a rewrite or a mutant in turn). Hostile answers: each in a fresh process, wall time, peak RSS and
whether an exception escaped `score_prediction`.

Usage:
  python dev/bench_semantic.py [--data FILE ...] [--limit N] [--matcher-from REV]
      [--repeats 5] [--record RECORD] [--skip-rates] [--skip-timing] [--skip-hostile] [--out FILE]
The report's first lines repeat the command. --matcher-from runs the other commit's harness from a
`git archive` in a separate interpreter (`python -S`, stdlib only), so both are measured on the same
cases by the same script.
"""

from __future__ import annotations

# Only the standard library at module level: the worker modes run an older harness under `python -S`.
import argparse
import json
import os
import platform
import random
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data" / "sql-create-context"
DEFAULT_DATA = [SHARED / "random-sample.jsonl", SHARED / "spider-part.jsonl"]
DEFAULT_RECORD = ROOT / "reports/untimed/cpu/cpu-amd-epyc-2c/exp_a/smollm2-135m-lora/seed-1234.json"
SHOW = int(os.environ.get("BENCH_SEMANTIC_SHOW", "12"))  # examples listed per class
ORACLE_SEED = 7919
ORACLE_CANDIDATES = 150
ORACLE_LOCAL_STEPS = 350
ORACLE_FRESH = 150
ORACLE_BUDGETS = 30  # the oracle's instruction budgets, in answer budgets (30 s of CPU, as before)
SECOND_ORDER_PER_GOLD = 4
# Hostile cases run under a 1 GiB address-space cap, as a run's memory cap would hold the scorer: a
# runaway allocation then raises MemoryError (and shows whether it escapes) instead of swapping.
AS_LIMIT = 1 << 30


# --- worker side: only `harness.tasks.sql.semantic` / `scoring`, whichever commit is on the path -----


def _clear_caches() -> None:
    for name, module in list(sys.modules.items()):
        if name.startswith("harness.tasks.sql"):
            for value in vars(module).values():
                if callable(getattr(value, "cache_clear", None)):
                    value.cache_clear()


def worker_judge(cases_path: str, out_path: str) -> None:
    from harness.tasks.sql.semantic import compare_queries

    cases = json.loads(Path(cases_path).read_text())
    verdicts = []
    for c in cases:
        try:
            verdicts.append(compare_queries(c["pred"], c["gold"], c["context"]).match)
        except Exception:  # scoring turns an exception into semantic = False; so does this
            verdicts.append(False)
    Path(out_path).write_text(json.dumps(verdicts))


def worker_time(answers_path: str, out_path: str, repeats: int) -> None:
    from harness.tasks.sql.scoring import score_prediction

    answers = json.loads(Path(answers_path).read_text())
    runs = []
    for _ in range(repeats):
        _clear_caches()
        wall, cpu = time.perf_counter(), time.process_time()
        scores = [score_prediction(a["pred"], a["gold"], a["context"]) for a in answers]
        runs.append({"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu,
                     "semantic": sum(bool(s.semantic) for s in scores)})  # fmt: skip
    Path(out_path).write_text(json.dumps(runs))


HOSTILE_CONTEXT = "CREATE TABLE t (a VARCHAR, b INTEGER)"
HOSTILE_GOLD = "SELECT a FROM t WHERE b > 3"
WIDE_CONTEXT = "CREATE TABLE w (" + ", ".join(f"c{i} INTEGER" for i in range(100)) + ")"
_RECURSIVE = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c{limit}) "
HOSTILE: dict[str, tuple[str, str, str]] = {
    # name: (prediction, gold, context)
    "printf %.*c 1e9": ("SELECT printf('%.*c', 1e9, 'x') FROM t", HOSTILE_GOLD, HOSTILE_CONTEXT),
    "format %.999999999c": ("SELECT format('%.999999999c', a) FROM t", HOSTILE_GOLD, HOSTILE_CONTEXT),
    "zeroblob(1e9)": ("SELECT length(zeroblob(1e9)) FROM t", HOSTILE_GOLD, HOSTILE_CONTEXT),
    "hex(randomblob(4e8))": ("SELECT hex(randomblob(400000000)) FROM t", HOSTILE_GOLD, HOSTILE_CONTEXT),
    "instr on 1 MB text": (
        "SELECT instr(hex(zeroblob(499999)), hex(zeroblob(250000)) || '1') FROM t", HOSTILE_GOLD, HOSTILE_CONTEXT
    ),
    "300 columns of 1 MB (11 kB query)": (
        "SELECT " + ", ".join(f"printf('%.*c', 999999, 'x') AS c{i}" for i in range(300)) + " FROM t",
        HOSTILE_GOLD, HOSTILE_CONTEXT,
    ),
    "300 columns of 20 kB (10 kB query)": (
        "SELECT " + ", ".join(f"hex(zeroblob(9999)) AS c{i}" for i in range(300)) + " FROM t",
        HOSTILE_GOLD, HOSTILE_CONTEXT,
    ),
    "wide rows: 5-way join of 100 columns": ("SELECT * FROM w a, w b, w c, w d, w e", "SELECT c0 FROM w", WIDE_CONTEXT),
    "sort of 100k values of 15 kB": (
        _RECURSIVE.format(limit=" LIMIT 100000") + "SELECT printf('%.*c', 15000, 'x') || x FROM c ORDER BY 1",
        HOSTILE_GOLD, HOSTILE_CONTEXT,
    ),
    "endless recursive CTE": (_RECURSIVE.format(limit="") + "SELECT COUNT(*) FROM c", HOSTILE_GOLD, HOSTILE_CONTEXT),
    "cross join of 10^9 rows": (
        _RECURSIVE.format(limit=" LIMIT 1000") + "SELECT COUNT(*) FROM c a, c b, c d", HOSTILE_GOLD, HOSTILE_CONTEXT
    ),
    "5,000 nested parentheses": ("SELECT " + "(" * 5000 + "1" + ")" * 5000, HOSTILE_GOLD, HOSTILE_CONTEXT),
    "IN list of 5,000 numbers": (
        "SELECT a FROM t WHERE b IN (" + ", ".join(map(str, range(5000))) + ")", HOSTILE_GOLD, HOSTILE_CONTEXT
    ),
    "LIKE with 400 wildcards": (
        "SELECT a FROM t WHERE hex(zeroblob(5000)) LIKE '" + "%0" * 400 + "%1'", HOSTILE_GOLD, HOSTILE_CONTEXT
    ),
    "1,000-arm UNION": (" UNION ".join(f"SELECT {i}" for i in range(1000)), HOSTILE_GOLD, HOSTILE_CONTEXT),
}  # fmt: skip


def _peak_rss_mb() -> float:
    """This process image's peak RSS (VmHWM). Not ru_maxrss: Linux keeps that across exec, so a
    child would report its parent's peak."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def worker_hostile(name: str) -> None:
    """One hostile answer in this fresh process: wall time, peak RSS, what came back or escaped."""
    resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))
    from harness.tasks.sql.scoring import score_prediction

    pred, gold, context = HOSTILE[name]
    score_prediction(gold, gold, context)  # warm: imports, schema cache, the gold's own work
    base_rss = _peak_rss_mb()
    start = time.perf_counter()
    try:
        score = score_prediction(pred, gold, context)
        outcome = f"executes={score.executes} semantic={score.semantic}: {score.detail[:90]}"
    except BaseException as exc:  # the point: did anything escape?
        outcome = f"ESCAPED {type(exc).__name__}: {str(exc)[:90]}"
    wall = time.perf_counter() - start
    print(json.dumps({"wall": wall, "peak_mb": _peak_rss_mb(), "base_mb": base_rss, "outcome": outcome}))


# --- driver side: this checkout's harness --------------------------------------------------------


def load_rows(path: Path, limit: int | None) -> list[dict[str, str]]:
    with path.open() as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return rows[:limit] if limit else rows


def build_cases(rows: list[dict[str, str]]) -> tuple[list[dict[str, Any]], Counter[str]]:
    """Mutants, second-order mutants and rewrites of every gold that executes; counts of what was
    left out and why."""
    from harness.tasks.sql.fill import identifiers_of, siblings_of
    from harness.tasks.sql.mutants import equivalence_rule, mutants, rewrites
    from harness.tasks.sql.sandbox import ContextError, parse_schema, run_sql
    from harness.tasks.sql.sqltext import render, tokenize

    def spelling(sql: str) -> str:
        return render(tokenize(sql.strip().rstrip(";"))).lower()

    cases: list[dict[str, Any]] = []
    counts: Counter[str] = Counter()
    for index, row in enumerate(rows):
        gold, context = row["answer"], row["context"]
        try:
            schema = parse_schema(context.lower())
        except ContextError:
            counts["gold unscorable (context does not build)"] += 1
            continue
        if not run_sql(gold, context).is_ok:
            counts["gold unscorable (does not execute)"] += 1
            continue
        counts["golds"] += 1
        ids, siblings = identifiers_of(schema), siblings_of(schema)
        base = {"row": index, "gold": gold, "context": context}
        first = mutants(gold, ids, siblings)
        for m in first:
            rule = equivalence_rule(gold, m.sql)
            status = (
                f"equivalent by rule: {rule}"
                if rule
                else ("judged" if run_sql(m.sql, context).is_ok else "does not execute")
            )
            counts[f"mutant {status}" if status != "judged" else "mutant judged"] += 1
            cases.append({**base, "set": "mutant", "kind": m.kind, "pred": m.sql, "status": status})
        rng = random.Random(f"second-order|{index}|{gold}")
        # A second mutation that undoes the first gives the gold back: not a mutant, left out.
        seen = {spelling(m.sql) for m in first} | {spelling(gold)}
        for m in rng.sample(first, min(SECOND_ORDER_PER_GOLD, len(first))):
            options = [v for v in mutants(m.sql, ids, siblings) if spelling(v.sql) not in seen]
            if not options:
                continue
            second = rng.choice(options)
            seen.add(spelling(second.sql))
            rule = equivalence_rule(gold, second.sql)
            status = (
                f"equivalent by rule: {rule}"
                if rule
                else ("judged" if run_sql(second.sql, context).is_ok else "does not execute")
            )
            counts[f"second-order {status}"] += 1
            cases.append(
                {
                    **base,
                    "set": "second-order",
                    "kind": f"{m.kind} + {second.kind}",
                    "pred": second.sql,
                    "status": status,
                }
            )
        for w in rewrites(gold, ids):
            counts["rewrites"] += 1
            cases.append({**base, "set": "rewrite", "kind": w.kind, "pred": w.sql, "status": "judged"})
    return cases, counts


def oracle(pred: str, gold: str, context: str) -> Any:
    """The matcher of this checkout, searching far longer: another seed, ORACLE_CANDIDATES drawn
    databases and ORACLE_LOCAL_STEPS local steps without giving up early, every database kept, then
    ORACLE_FRESH databases drawn for the pair."""
    from harness.tasks.sql.budget import ANSWER_INSTRUCTIONS, Budget
    from harness.tasks.sql.semantic import compare_on_suite
    from harness.tasks.sql.suite import distil

    suite = distil(
        gold.lower(), context.lower(), ORACLE_SEED, max_databases=10_000, candidates=ORACLE_CANDIDATES,
        local_steps=ORACLE_LOCAL_STEPS, patience=10**9, budget_instructions=ORACLE_BUDGETS * ANSWER_INSTRUCTIONS,
    )  # fmt: skip
    return compare_on_suite(
        pred, gold, context, suite, ORACLE_FRESH, ORACLE_SEED, Budget(ORACLE_BUDGETS * ANSWER_INSTRUCTIONS)
    )


def judge_here(cases: list[dict[str, Any]], **options: Any) -> list[bool | None]:
    from harness.tasks.sql.semantic import compare_queries

    return [compare_queries(c["pred"], c["gold"], c["context"], **options).match for c in cases]


def _other_harness(rev: str, tmp: Path) -> Path:
    """`git archive REV harness` unpacked under tmp: the other commit's harness, importable alone."""
    target = tmp / f"harness-{rev}"
    if not target.exists():
        target.mkdir(parents=True)
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", rev, "harness"], check=True, capture_output=True
        )
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)
    return target


def _worker(harness_root: Path | None, *args: str, timeout: float = 3600) -> subprocess.CompletedProcess[str]:
    """This script in worker mode, on this checkout's harness (None) or another one (`python -S`)."""
    env = dict(os.environ)
    command = [sys.executable, str(Path(__file__).resolve()), *args]
    if harness_root is not None:
        env["PYTHONPATH"] = str(harness_root)
        command.insert(1, "-S")
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout, check=False)


def judge_elsewhere(harness_root: Path, cases: list[dict[str, Any]], tmp: Path) -> list[bool | None]:
    cases_path, out_path = tmp / "cases.json", tmp / "verdicts.json"
    cases_path.write_text(json.dumps([{k: c[k] for k in ("pred", "gold", "context")} for c in cases]))
    done = _worker(harness_root, "--worker-judge", str(cases_path), str(out_path))
    if done.returncode != 0:
        raise RuntimeError(f"worker failed: {done.stderr[-2000:]}")
    return json.loads(out_path.read_text())


def _pct(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.2f}%" if whole else "n/a"


def rates_report(name: str, rows: list[dict[str, str]], before_root: Path | None, tmp: Path) -> list[str]:
    started = time.perf_counter()
    cases, counts = build_cases(rows)
    judged = [c for c in cases if c["status"] == "judged"]
    after = judge_here(judged)
    generator_only = judge_here([c for c in judged if c["set"] != "rewrite"], distilled=False)
    before = judge_elsewhere(before_root, judged, tmp) if before_root else [None] * len(judged)
    for c, a, b in zip(judged, after, before, strict=True):
        c["after"], c["before"] = a, b
    for c, g in zip([c for c in judged if c["set"] != "rewrite"], generator_only, strict=True):
        c["generator_only"] = g
    # The oracle looks only where the matcher under test found no difference.
    for c in judged:
        if c["set"] != "rewrite" and c["after"] is not False:
            verdict = oracle(c["pred"], c["gold"], c["context"])
            c["oracle"], c["oracle_detail"] = verdict.match, verdict.detail

    lines = [f"## {name}: {len(rows)} rows, {counts['golds']} golds execute on their schema "
             f"({len(rows) - counts['golds']} unscorable, left out)", ""]  # fmt: skip
    for set_name in ("mutant", "second-order"):
        pool = [c for c in judged if c["set"] == set_name]
        told = [c for c in pool if c["after"] is False or c.get("oracle") is False]
        undecided = [c for c in pool if c not in told]
        after_kills = sum(c["after"] is False for c in told)
        before_kills = sum(c["before"] is False for c in told)
        generator_kills = sum(c["generator_only"] is False for c in told)
        before_only = [c for c in undecided if c["before"] is False]
        label = "mutants" if set_name == "mutant" else "second-order mutants (held out from distillation)"
        left_out = {
            k: v for k, v in counts.items() if k.startswith(set_name.split("-")[0]) and "judged" not in k
        }
        lines += [
            f"{label}: {len(pool)} judged; left out: " + (", ".join(f"{k.split(' ', 1)[1]} {v}" for k, v in sorted(left_out.items())) or "none"),
            f"  distinguishable {len(told)}, undecided {len(undecided)}" + (f" (of which the before matcher rejected {len(before_only)})" if before_root else ""),
            f"  kill rate  before {_pct(before_kills, len(told)) if before_root else 'not run'}   "
            f"after {_pct(after_kills, len(told))}   (after, data drawing only, no distillation: {_pct(generator_kills, len(told))})",
            f"  after, counting every undecided one as a miss: {_pct(after_kills, len(pool))}",
        ]  # fmt: skip
        if set_name == "mutant":
            lines += [
                "",
                "  | kind | judged | distinguishable | undecided | before killed | after killed |",
                "  | --- | ---: | ---: | ---: | ---: | ---: |",
            ]
            for kind in sorted({c["kind"] for c in pool}):
                sub = [c for c in pool if c["kind"] == kind]
                sub_told = [c for c in sub if c in told]
                lines.append(
                    f"  | {kind} | {len(sub)} | {len(sub_told)} | {len(sub) - len(sub_told)} | "
                    f"{sum(c['before'] is False for c in sub_told) if before_root else '-'} | {sum(c['after'] is False for c in sub_told)} |"
                )
        survivors = [c for c in told if c["after"] is not False]
        by_drawn = sum("drawn for this answer" in c.get("oracle_detail", "") for c in survivors)
        lines += [
            "",
            f"  survivors after (told apart by the oracle, matched by the matcher): {len(survivors)} "
            f"({by_drawn} by a database the oracle drew for the answer, {len(survivors) - by_drawn} by its distilled suite)",
        ]
        lines += [f"    {c['kind']}: {c['pred'][:150]}  |  gold: {c['gold'][:150]}" for c in survivors[:SHOW]]
        if before_only:
            lines += [
                f"  undecided but rejected by the before matcher (a gap of both searches, or the old one judging"
                f" chance: it ran the gold in one scan order), {len(before_only)}, the first {min(SHOW, len(before_only))}:"
            ]
            lines += [
                f"    {c['kind']}: {c['pred'][:150]}  |  gold: {c['gold'][:150]}" for c in before_only[:SHOW]
            ]
        sample = random.Random(0).sample(undecided, min(SHOW, len(undecided)))
        lines += [f"  undecided, a sample of {len(sample)}:"] + [
            f"    {c['kind']}: {c['pred'][:150]}  |  gold: {c['gold'][:150]}" for c in sample
        ]
        lines.append("")
    pool = [c for c in judged if c["set"] == "rewrite"]
    lines.append(
        f"equivalent rewrites: {len(pool)}; matched before "
        + (
            f"{sum(c['before'] is True for c in pool)} ({_pct(sum(c['before'] is True for c in pool), len(pool))})"
            if before_root
            else "not run"
        )
        + f", after {sum(c['after'] is True for c in pool)} ({_pct(sum(c['after'] is True for c in pool), len(pool))})"
    )
    for c in [c for c in pool if c["after"] is not True][:10]:
        lines.append(f"    NOT MATCHED after: {c['kind']}: {c['pred'][:150]}  |  gold: {c['gold'][:150]}")
    lines += [f"  (rates section took {time.perf_counter() - started:.0f} s)", ""]
    return lines


def synthetic_answers(rows: list[dict[str, str]], n: int = 300) -> list[dict[str, str]]:
    """n answers to the first n scorable rows: the gold, a rewrite or a mutant in turn."""
    from harness.tasks.sql.fill import identifiers_of, siblings_of
    from harness.tasks.sql.mutants import mutants, rewrites
    from harness.tasks.sql.sandbox import ContextError, parse_schema, run_sql

    answers: list[dict[str, str]] = []
    for row in rows:
        gold, context = row["answer"], row["context"]
        try:
            schema = parse_schema(context.lower())
        except ContextError:
            continue
        if not run_sql(gold, context).is_ok:
            continue
        k = len(answers) % 3
        options = (
            [gold]
            if k == 0
            else [
                v.sql
                for v in (rewrites if k == 1 else mutants)(
                    gold, identifiers_of(schema), *([siblings_of(schema)] if k == 2 else [])
                )
            ]
        )
        answers.append(
            {"pred": random.Random(len(answers)).choice(options or [gold]), "gold": gold, "context": context}
        )
        if len(answers) == n:
            break
    return answers


def record_answers(record_path: Path, data: Path) -> list[dict[str, str]]:
    from harness.results import load_record
    from harness.tasks.sql.resolve import record_test_rows

    record = load_record(record_path)
    test = record_test_rows(record, str(data))
    if test is None:
        raise SystemExit(f"{record_path}: its test rows are not at hand in {data} (split hash differs)")
    predictions = [
        json.loads(line)
        for line in record_path.with_suffix(".predictions.jsonl").read_text().splitlines()
        if line.strip()
    ]
    return [
        {"pred": p["prediction"], "gold": test[p["index"]].answer, "context": test[p["index"]].context}
        for p in predictions
    ]


def timing_report(
    label: str, answers: list[dict[str, str]], before_root: Path | None, repeats: int, tmp: Path
) -> list[str]:
    path = tmp / "answers.json"
    path.write_text(json.dumps(answers))
    lines = []
    for who, root in (("before", before_root), ("after", None)):
        if who == "before" and root is None:
            continue
        out = tmp / f"time-{who}.json"
        done = _worker(root, "--worker-time", str(path), str(out), "--repeats", str(repeats))
        if done.returncode != 0:
            lines.append(f"  {who}: worker failed: {done.stderr[-500:]}")
            continue
        runs = json.loads(out.read_text())
        walls, cpus = [r["wall"] for r in runs], [r["cpu"] for r in runs]
        lines.append(
            f"  {who:6s} {label}: {len(answers)} answers, median wall {statistics.median(walls):.2f} s "
            f"(runs {', '.join(f'{w:.2f}' for w in walls)}), median CPU {statistics.median(cpus):.2f} s, "
            f"semantic matches {runs[0]['semantic']}"
        )
    return lines


def hostile_report(before_root: Path | None) -> list[str]:
    lines = [
        "| case | who | wall s | peak RSS MB (baseline) | outcome |",
        "| --- | --- | ---: | ---: | --- |",
    ]
    for name in HOSTILE:
        for who, root in (("before", before_root), ("after", None)):
            if who == "before" and root is None:
                continue
            try:
                done = _worker(root, "--worker-hostile", name, timeout=120)
                result = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else None
            except (subprocess.TimeoutExpired, json.JSONDecodeError, IndexError):
                result = None
            if result is None:
                lines.append(
                    f"| {name} | {who} | - | - | child died or hung (rc {getattr(done, 'returncode', '?')}): {getattr(done, 'stderr', '')[-120:]!r} |"
                )
                continue
            lines.append(
                f"| {name} | {who} | {result['wall']:.2f} | {result['peak_mb']:.0f} ({result['base_mb']:.0f}) | {result['outcome'].replace('|', '/')} |"
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, nargs="*", default=DEFAULT_DATA)
    parser.add_argument("--limit", type=int, default=None, help="first N rows of each file (default: all)")
    parser.add_argument("--matcher-from", default=None, help="git revision of the 'before' matcher")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--record", type=Path, default=DEFAULT_RECORD, help="run record whose 300 predictions are timed"
    )
    parser.add_argument("--skip-rates", action="store_true")
    parser.add_argument("--skip-timing", action="store_true")
    parser.add_argument("--skip-hostile", action="store_true")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--worker-judge", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--worker-time", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--worker-hostile", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker_judge:
        worker_judge(*args.worker_judge)
        return 0
    if args.worker_time:
        worker_time(*args.worker_time, args.repeats)
        return 0
    if args.worker_hostile:
        worker_hostile(args.worker_hostile)
        return 0

    sys.path.insert(0, str(ROOT))
    command = "python dev/bench_semantic.py " + " ".join(argv if argv is not None else sys.argv[1:])
    header = [
        f"# {time.strftime('%Y-%m-%d %H:%M')}, {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"load average {os.getloadavg()[0]:.1f} at start (shared machine), Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}",
        f"# {command}",
        "",
    ]
    lines = list(header)

    def emit(new: list[str]) -> None:
        lines.extend(new)
        print("\n".join(new), flush=True)
        if args.out:
            args.out.write_text("\n".join(lines) + "\n")

    print("\n".join(header), flush=True)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        before_root = _other_harness(args.matcher_from, tmp) if args.matcher_from else None
        if not args.skip_rates:
            for path in args.data:
                emit(rates_report(path.name, load_rows(path, args.limit), before_root, tmp))
        if not args.skip_timing:
            emit([f"## Scoring time (score_prediction, caches cleared per repeat, {args.repeats} repeats)"])
            if args.record.exists():
                emit(
                    timing_report(
                        f"run record {args.record.relative_to(ROOT)}",
                        record_answers(args.record, DEFAULT_DATA[0]),
                        before_root,
                        args.repeats,
                        tmp,
                    )
                )
            for path in args.data:
                emit(
                    timing_report(
                        f"synthetic on {path.name}",
                        synthetic_answers(load_rows(path, None)),
                        before_root,
                        args.repeats,
                        tmp,
                    )
                )
            emit([""])
        if not args.skip_hostile:
            emit(
                [
                    "## Hostile answers (each in a fresh process under RLIMIT_AS 1 GiB; peak RSS includes the interpreter)",
                    "",
                ]
            )
            emit(hostile_report(before_root))
    return 0


if __name__ == "__main__":
    sys.exit(main())
