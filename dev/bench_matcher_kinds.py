"""The semantic matcher against NULL-sensitive near misses, judged on databases it did not draw; its
byte-heavy hostile answers; and its scoring time.

Three tables (issue #27, item 7):

1. Mutant kinds x n x % judged equal. Per gold of each data file that executes, this script makes
   near-miss mutants of the kinds a holdout measurement found slipping through (its own text edits,
   below; not `harness.tasks.sql.mutants`), and decides which of them really differ from the gold on
   databases drawn by its OWN generator (`independent_rows`: random rows from this file, not
   `harness.tasks.sql.fill`, so a blind spot of the matcher's drawing is not shared). n counts the
   mutants that some independent database tells apart from the gold; "% judged equal" is the share
   of those the matcher (`semantic.compare_queries`, default settings) still calls a match: a false
   match. The results are compared the matcher's way (`suite.Workbench`: column order free, bag
   unless ORDER BY, ties under ORDER BY ... LIMIT accepted), so a mutant counts only where the
   difference is one the matcher is meant to see. Equivalent rewrites (`mutants.rewrites`) must stay
   100% matched.
     count(*)/count(col)  COUNT(*) -> COUNT(c) for columns of the FROM tables, COUNT(c) -> COUNT(*)
     or col is null       `OR c IS NULL` appended to a WHERE, for each column it compares
     avg vs sum/count(*)  AVG(x) -> SUM(x) / COUNT(*)  (and back)
     literal +0.5         each number literal (not of LIMIT/OFFSET) plus 0.5
     offset 1             `LIMIT n` -> `LIMIT n OFFSET 1`
     having +1            a number in a HAVING condition plus 1
   and issue #38's patterns: having -1; group by swap (the GROUP BY key for another column of the
   FROM tables); like -> = (the pattern's core compared with =); intersect -> and (two arms with
   the same SELECT ... FROM merged into one WHERE); distinct added (to the outer SELECT); order
   direction under limit (ASC/DESC flipped or DESC added before a LIMIT); count(c)/count(distinct
   c); < vs <= (and > vs >=). Each kind is counted apart for the tuning golds and a held-out
   quarter (`held_out_split`, by a hash of the gold) that no change to the matcher was fitted to.
2. Hostile answers: each in a fresh process, its CPU seconds, which limit ended it (the deterministic
   count or the CPU-time safety net) and the verdict.
3. Scoring time of 300 answers per data file (gold, rewrite or mutant in turn, as bench_semantic.py
   makes them), this checkout against --before REV, interleaved (before, after, before, ...), caches
   cleared per repeat, medians of --repeats. The machine may be shared: figures are CPU seconds.

Usage:
  python dev/bench_matcher_kinds.py [--data FILE ...] [--limit N] [--dbs 40] [--before REV]
      [--repeats 5] [--jobs N] [--skip-kinds] [--skip-hostile] [--skip-timing] [--out FILE]
(--jobs: worker processes for the kinds table, one gold each; the counts do not depend on it.)
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import multiprocessing
import os
import platform
import random
import re
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "dev"))
import bench_semantic  # ruff: ignore[module-import-not-at-top-of-file]  (its hostile list, answers, workers)

SHARED = ROOT.parent / "shared" / "data" / "sql-create-context"
DEFAULT_DATA = [SHARED / "random-sample.jsonl", SHARED / "spider-part.jsonl"]
INDEPENDENT_SEED = 104_729
KINDS = (
    "count(*)/count(col)",
    "or col is null",
    "avg vs sum/count(*)",
    "literal +0.5",
    "offset 1",
    "having +1",
    # issue #38's patterns
    "having -1",
    "group by swap",
    "like -> =",
    "intersect -> and",
    "distinct added",
    "order direction under limit",
    "count(c)/count(distinct c)",
    "< vs <=",
)

# Byte-heavy answers: few VM instructions, each moving a long value: 19 kB strings (issue #27's
# cases, above today's value cap), and the same shapes just under the cap (950 bytes).
_GROW = "WITH RECURSIVE c(x, s) AS (SELECT 1, 'x' UNION ALL SELECT x + 1, {step} FROM c) "


def _byte_heavy(size: int) -> dict[str, tuple[str, str, str]]:
    kb = f"{size / 1000:g} kB"
    grow = _GROW.format(step=f"substr(s || printf('%.{size // 19}c', 'y'), 1, {size})")
    shapes = {
        f"recursive CTE growing {kb} strings, instr per row": grow + "SELECT SUM(instr(s, 'z')) FROM c",
        f"recursive CTE of {kb} strings, instr of a {size // 4} B needle per row": (
            grow + f"SELECT SUM(instr(s, printf('%.{size // 4}c', 'y') || 'z')) FROM c"
        ),
        f"recursive CTE copying {kb} strings (concatenation only)": (
            _GROW.format(step=f"substr(s || printf('%.{size // 19}c', 'y'), -{size})")
            + "SELECT COUNT(*) FROM c"
        ),
        f"recursive CTE of {kb} strings, upper per row": grow + "SELECT COUNT(*) FROM c WHERE upper(s) = 'a'",
        f"LIKE with 400 wildcards per row on {kb}": grow
        + "SELECT COUNT(*) FROM c WHERE s LIKE '"
        + "%y" * 400
        + "%z'",
        f"LIKE with 200 '_' per row on {kb}": grow
        + "SELECT COUNT(*) FROM c WHERE s LIKE '%"
        + "y_" * 200
        + "z%'",
        f"printf per row on {kb}": grow + "SELECT COUNT(*) FROM c WHERE printf('%s', s) = 'a'",
        f"replace per row on {kb}": grow + "SELECT SUM(length(replace(s, 'y', 'yy'))) FROM c",
    }
    return {
        name: (sql, bench_semantic.HOSTILE_GOLD, bench_semantic.HOSTILE_CONTEXT)
        for name, sql in shapes.items()
    }


BYTE_HEAVY = {**_byte_heavy(19_000), **_byte_heavy(950)}
HOSTILE = {**bench_semantic.HOSTILE, **BYTE_HEAVY}


# --- the independent database generator ----------------------------------------------------------

_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.])")
_QUOTED = re.compile(r"'((?:[^']|'')*)'|\"((?:[^\"]|\"\")*)\"")


def _gold_literals(sql: str) -> tuple[list[object], list[str]]:
    """Numbers and quoted strings of the gold, found by regular expressions (not the matcher's tokenizer)."""
    strings = [a.replace("''", "'") if a else b.replace('""', '"') for a, b in _QUOTED.findall(sql)]
    text = _QUOTED.sub(" ", sql)
    numbers: list[object] = []
    for m in _NUMBER.findall(text):
        value = float(m)
        numbers.append(int(value) if value.is_integer() and "." not in m else value)
    for s in strings:
        with contextlib.suppress(ValueError):
            numbers.append(float(s) if "." in s else int(s))
    return numbers, [s.strip("%") for s in strings]


def independent_rows(
    tables: Sequence[tuple[str, Sequence[str]]], sql: str, rng: random.Random
) -> dict[str, list[tuple[object, ...]]]:
    """Random rows for `tables` ((name, column names)): per database a size (0 to 16 rows), a NULL
    rate, a duplicate rate; each cell NULL, one of the gold's literals or a number around it
    (+-1, +-0.5, +-0.25), a small number (some fractional), or a short word. No column types, no
    uniqueness, no rows built to meet the gold's conditions: a plain random database."""
    numbers, strings = _gold_literals(sql)
    near = [v + d for v in numbers if isinstance(v, int | float) for d in (0, 1, -1, 0.5, -0.5, 0.25, -0.25)]
    words = [*strings, *(s + "x" for s in strings[:2]), "a", "b", "zz"]
    pool_small = [0, 1, 2, 3, 4, 5, 0.5, 1.5, 2.5]
    p_null = rng.choice((0.0, 0.1, 0.25, 0.4))
    p_dup = rng.choice((0.0, 0.2, 0.4))
    size = rng.choice((0, 1, 2, 3, 4, 6, 8, 12, 16))

    def value() -> object:
        x = rng.random()
        if x < p_null:
            return None
        x = rng.random()
        if near and x < 0.35:
            return rng.choice(near)
        if strings and x < 0.55:
            return rng.choice(words)
        if x < 0.85:
            return rng.choice(pool_small)
        return rng.choice(words)

    out: dict[str, list[tuple[object, ...]]] = {}
    for name, columns in tables:
        n = size if rng.random() < 0.7 else rng.choice((0, 1, 3, 8, 16))
        rows: list[tuple[object, ...]] = []
        for _ in range(n):
            if rows and rng.random() < p_dup:
                row = list(rng.choice(rows))
                if rng.random() < 0.5:
                    j = rng.randrange(len(columns))
                    row[j] = value()
                rows.append(tuple(row))
            else:
                rows.append(tuple(value() for _ in columns))
        out[name] = rows
    return out


# --- the mutants: this script's own text edits ---------------------------------------------------


def _tokens(sql: str) -> list[Any]:
    from harness.tasks.sql.sqltext import tokenize

    return tokenize(sql.strip().rstrip(";"))


def _render(tokens: Sequence[Any]) -> str:
    from harness.tasks.sql.sqltext import render

    return render(list(tokens))


def _word(text: str) -> Any:
    from harness.tasks.sql.sqltext import tokenize

    return tokenize(text)[0]


def _from_columns(tokens: Sequence[Any], columns_of: dict[str, list[str]]) -> list[str]:
    """Columns of the tables named anywhere in the query (a table name token)."""
    named = [t.low for t in tokens if t.kind == "word" and t.low in columns_of]
    return list(dict.fromkeys(c for table in named for c in columns_of[table]))


def kind_mutants(gold: str, columns_of: dict[str, list[str]]) -> Iterable[tuple[str, str]]:
    from harness.tasks.sql.sqltext import comparisons, conditions, depths

    toks = _tokens(gold)
    level = depths(toks)
    columns = _from_columns(toks, columns_of)
    for i in range(len(toks) - 3):
        if toks[i].low == "count" and toks[i + 1].text == "(":
            if toks[i + 2].text == "*" and toks[i + 3].text == ")":
                for c in columns[:6]:
                    yield (
                        "count(*)/count(col)",
                        _render(
                            [*toks[: i + 2], _word(f'"{c}"' if not c.isidentifier() else c), *toks[i + 3 :]]
                        ),
                    )
            elif toks[i + 3].text == ")" and toks[i + 2].kind in ("word", "dquoted", "bracketed"):
                yield "count(*)/count(col)", _render([*toks[: i + 2], _word("*"), *toks[i + 3 :]])
    for cond in conditions(toks):
        if toks[cond.keyword].low != "where":
            continue
        seen = set()
        for comp in comparisons(toks[cond.start : cond.end]):
            left = toks[cond.start + comp.left[0] : cond.start + comp.left[1]]
            key = tuple(t.low for t in left)
            if key in seen or not all(
                t.kind in ("word", "dquoted", "bracketed") or t.text == "." for t in left
            ):
                continue
            seen.add(key)
            extra = [_word("or"), *left, _word("is"), _word("null")]
            yield "or col is null", _render([*toks[: cond.end], *extra, *toks[cond.end :]])
    for i in range(len(toks) - 3):
        if toks[i].low == "avg" and toks[i + 1].text == "(":
            depth, j = 0, i + 1
            while j < len(toks):
                depth += toks[j].text == "("
                depth -= toks[j].text == ")"
                if depth == 0:
                    break
                j += 1
            inner = toks[i + 2 : j]
            if inner and inner[0].low != "distinct":
                new = [
                    _word("sum"),
                    _word("("),
                    *inner,
                    _word(")"),
                    _word("/"),
                    _word("count"),
                    _word("("),
                    _word("*"),
                    _word(")"),
                ]
                yield "avg vs sum/count(*)", _render([*toks[:i], *new, *toks[j + 1 :]])
    text = " ".join(t.low for t in toks)
    sum_count = re.search(r"sum \( ([\w.\" ]+?) \) / count \( \* \)", text)
    if sum_count:
        yield "avg vs sum/count(*)", text.replace(sum_count.group(0), f"avg ( {sum_count.group(1)} )", 1)
    clause = ""
    for i, t in enumerate(toks):
        if t.kind == "word" and t.low in (
            "where",
            "having",
            "limit",
            "offset",
            "select",
            "order",
            "group",
            "on",
        ):
            clause = t.low
        if t.kind == "number" and not (i and toks[i - 1].text == ".") and clause not in ("limit", "offset"):
            value = float(t.text)
            yield "literal +0.5", _render([*toks[:i], _word(repr(value + 0.5)), *toks[i + 1 :]])
            if clause == "having":
                for step, kind in ((1, "having +1"), (-1, "having -1")):
                    bumped = repr(value + step) if "." in t.text else str(int(value) + step)
                    yield kind, _render([*toks[:i], _word(bumped), *toks[i + 1 :]])
    limits = [i for i, t in enumerate(toks) if t.low == "limit" and level[i] == 0]
    if limits and not any(t.low == "offset" or t.text == "," for t in toks[limits[-1] :]):
        yield "offset 1", _render([*toks, _word("offset"), _word("1")])


def _top(tokens: Sequence[Any], word: str) -> list[int]:
    from harness.tasks.sql.sqltext import depths

    level = depths(tokens)
    return [i for i, t in enumerate(tokens) if t.low == word and t.kind == "word" and level[i] == 0]


def _group_by_swaps(toks: list[Any], columns: list[str]) -> Iterable[tuple[str, str]]:
    for i in _top(toks, "group"):
        if i + 2 >= len(toks) or toks[i + 1].low != "by":
            continue
        j = i + 2
        end = j + 3 if j + 2 < len(toks) and toks[j + 1].text == "." else j + 1
        current = toks[end - 1].low.strip('"')
        for c in [c for c in columns if c != current][:4]:
            yield "group by swap", _render([*toks[: end - 1], _word(_quoted(c)), *toks[end:]])


def _quoted(column: str) -> str:
    return column if column.isidentifier() else f'"{column}"'


def _like_to_equal(toks: list[Any]) -> Iterable[tuple[str, str]]:
    for i, t in enumerate(toks[:-1]):
        if t.low == "like" and toks[i + 1].kind in ("string", "dquoted"):
            quote = toks[i + 1].text[0]
            bare = toks[i + 1].text[1:-1].replace("%", "")
            yield "like -> =", _render([*toks[:i], _word("="), _word(quote + bare + quote), *toks[i + 2 :]])


def _intersect_to_and(toks: list[Any]) -> Iterable[tuple[str, str]]:
    """`select a from t where c1 intersect select a from t where c2` -> `... where (c1) and (c2)`."""
    for k in _top(toks, "intersect"):
        left, right = toks[:k], toks[k + 1 :]
        wl, wr = _top(left, "where"), _top(right, "where")
        if len(wl) != 1 or len(wr) != 1 or [t.low for t in left[: wl[0]]] != [t.low for t in right[: wr[0]]]:
            continue
        c1, c2 = left[wl[0] + 1 :], right[wr[0] + 1 :]
        merged = [*left[: wl[0] + 1], _word("("), *c1, _word(")"), _word("and"), _word("("), *c2, _word(")")]
        yield "intersect -> and", _render(merged)


def _distinct_added(toks: list[Any]) -> Iterable[tuple[str, str]]:
    selects = _top(toks, "select")
    if selects and selects[0] + 1 < len(toks) and toks[selects[0] + 1].low != "distinct":
        i = selects[0]
        yield "distinct added", _render([*toks[: i + 1], _word("distinct"), *toks[i + 1 :]])


def _order_direction(toks: list[Any]) -> Iterable[tuple[str, str]]:
    limits, orders = _top(toks, "limit"), _top(toks, "order")
    if not limits or not orders or orders[-1] > limits[-1]:
        return
    between = range(orders[-1], limits[-1])
    flips = [i for i in between if toks[i].low in ("asc", "desc")]
    if flips:
        i = flips[0]
        yield (
            "order direction under limit",
            _render([*toks[:i], _word("asc" if toks[i].low == "desc" else "desc"), *toks[i + 1 :]]),
        )
    else:
        end = limits[-1]
        yield "order direction under limit", _render([*toks[:end], _word("desc"), *toks[end:]])


def _count_distinct(toks: list[Any]) -> Iterable[tuple[str, str]]:
    for i in range(len(toks) - 3):
        if toks[i].low != "count" or toks[i + 1].text != "(":
            continue
        if toks[i + 2].low == "distinct":
            yield "count(c)/count(distinct c)", _render([*toks[: i + 2], *toks[i + 3 :]])
        elif toks[i + 2].text != "*":
            yield "count(c)/count(distinct c)", _render([*toks[: i + 2], _word("distinct"), *toks[i + 2 :]])


_STRICT = {"<": "<=", "<=": "<", ">": ">=", ">=": ">"}


def _strictness(toks: list[Any]) -> Iterable[tuple[str, str]]:
    for i, t in enumerate(toks):
        if t.kind == "op" and t.text in _STRICT:
            yield "< vs <=", _render([*toks[:i], _word(_STRICT[t.text]), *toks[i + 1 :]])


def issue38_mutants(gold: str, columns_of: dict[str, list[str]]) -> Iterable[tuple[str, str]]:
    """The near-miss patterns issue #38 found slipping through (its kinds above)."""
    toks = _tokens(gold)
    yield from _group_by_swaps(toks, _from_columns(toks, columns_of))
    yield from _like_to_equal(toks)
    yield from _intersect_to_and(toks)
    yield from _distinct_added(toks)
    yield from _order_direction(toks)
    yield from _count_distinct(toks)
    yield from _strictness(toks)


# --- driver --------------------------------------------------------------------------------------

SPLITS = ("tuning", "held-out")


def held_out_split(gold: str) -> str:
    """A quarter of golds, by a hash of their text, held out: the matcher's database drawing is tuned
    on the other three quarters only, so the held-out rate is one it was not fitted to."""
    return "held-out" if int(hashlib.sha256(gold.encode()).hexdigest(), 16) % 4 == 0 else "tuning"


def _load(path: Path, limit: int | None) -> list[dict[str, str]]:
    with path.open() as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return rows[:limit] if limit else rows


def _row_outcome(job: tuple[dict[str, str], int, int]) -> dict[str, Any]:
    """One gold's mutants, told apart or not by independent databases, and the matcher's verdicts."""
    from harness.tasks.sql.budget import DISTIL_INSTRUCTIONS, Budget
    from harness.tasks.sql.fill import identifiers_of
    from harness.tasks.sql.mutants import rewrites
    from harness.tasks.sql.sandbox import ContextError, QueryResult, parse_schema, run_sql
    from harness.tasks.sql.semantic import compare_queries
    from harness.tasks.sql.sqltext import tokenize, top_level_order_by
    from harness.tasks.sql.suite import Workbench

    row, n_dbs, seed = job
    gold, context = row["answer"].lower(), row["context"].lower()
    try:
        schema = parse_schema(context)
    except ContextError:
        return {"skipped": "context does not build"}
    if not run_sql(gold, context).is_ok:
        return {"skipped": "gold does not execute"}
    columns_of = {t.name.lower(): [c.name.lower() for c in t.columns] for t in schema.tables}
    tables = [(t.name, [c.name for c in t.columns]) for t in schema.tables]
    variants = list(dict.fromkeys([*kind_mutants(gold, columns_of), *issue38_mutants(gold, columns_of)]))
    variants = [(k, m) for k, m in variants if m.lower() != gold and run_sql(m, context).is_ok]
    rng = random.Random(f"{seed}|{gold}|{context}")
    databases = [independent_rows(tables, gold, rng) for _ in range(n_dbs)]
    order_matters = top_level_order_by(tokenize(gold))
    told: set[str] = set()
    with Workbench(context) as bench:
        for rows_ in databases:
            pending = [m for _, m in variants if m not in told]
            if not pending:
                break
            try:
                bench.load(rows_)
            except ContextError:
                continue
            db = bench.gold_database(rows_, gold, Budget(DISTIL_INSTRUCTIONS), order_matters=order_matters)
            if isinstance(db, QueryResult):
                continue
            for m in pending:
                outcome = bench.check(m, db, order_matters, Budget(DISTIL_INSTRUCTIONS))
                if outcome is not None and (outcome.is_ok or outcome.failure.value == "error"):
                    told.add(m)
    verdicts = [(kind, m, m in told and compare_queries(m, gold, context).match) for kind, m in variants]
    matched = [compare_queries(v.sql, gold, context).match for v in rewrites(gold, identifiers_of(schema))]
    return {"gold": gold, "variants": [(k, m, m in told, eq) for k, m, eq in verdicts], "rewrites": matched}


def kinds_report(
    path: Path, limit: int | None, n_dbs: int, seed: int = INDEPENDENT_SEED, jobs: int = 1
) -> tuple[list[str], dict[str, dict[str, list[int]]]]:
    """Per split and kind: [generated, distinguishable, judged equal]; and the rewrites line."""
    started = time.time()
    counts = {split: {k: [0, 0, 0] for k in KINDS} for split in SPLITS}
    rewrites_total = rewrites_matched = 0
    examples: dict[str, list[str]] = {k: [] for k in KINDS}
    skipped: Counter[str] = Counter()
    rows = _load(path, limit)
    with multiprocessing.Pool(jobs) as pool:
        outcomes = pool.map(_row_outcome, [(row, n_dbs, seed) for row in rows], chunksize=4)
    for outcome in outcomes:
        if "skipped" in outcome:
            skipped[outcome["skipped"]] += 1
            continue
        gold, split = outcome["gold"], held_out_split(outcome["gold"])
        for kind, m, told, equal in outcome["variants"]:
            counts[split][kind][0] += 1
            counts[split][kind][1] += told
            counts[split][kind][2] += equal
            if equal and len(examples[kind]) < bench_semantic.SHOW:
                examples[kind].append(f"    {kind} ({split}): {m[:150]}  |  gold: {gold[:150]}")
        rewrites_total += len(outcome["rewrites"])
        rewrites_matched += sum(outcome["rewrites"])
    lines = [
        f"## {path.name}: {len(rows)} rows ({', '.join(f'{v} {k}' for k, v in skipped.items()) or 'all scorable'}), "
        f"{n_dbs} independent databases per gold (seed {seed})",
        "",
        "n: mutants told apart from the gold by an independent database; equal: of those, judged equal "
        "by the matcher. Held-out: the quarter of golds `held_out_split` sets aside (never used to tune).",
        "",
        "| kind | generated | tuning n | tuning equal | tuning % | held-out n | held-out equal | held-out % |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for kind in [*KINDS, "all kinds"]:
        cells = []
        for split in SPLITS:
            if kind == "all kinds":
                n, equal = (sum(c[i] for c in counts[split].values()) for i in (1, 2))
            else:
                n, equal = counts[split][kind][1:]
            cells.append(f"{n} | {equal} | {100 * equal / n:.2f}%" if n else f"{n} | 0 | n/a")
        generated = sum(c[kind][0] if kind in c else sum(x[0] for x in c.values()) for c in counts.values())
        lines.append(f"| {kind} | {generated} | {' | '.join(cells)} |")
    lines += [
        "",
        f"equivalent rewrites matched: {rewrites_matched} of {rewrites_total} ({100 * rewrites_matched / max(1, rewrites_total):.2f}%)",
    ]
    shown = [e for k in KINDS for e in examples[k]]
    if shown:
        lines += ["", "judged equal though an independent database tells them apart (up to "
                  f"{bench_semantic.SHOW} per kind):", *shown]  # fmt: skip
    lines.append(
        f"  (this file's table took {time.time() - started:.0f} s of wall clock with {jobs} worker processes)"
    )
    return lines, counts


def worker_hostile(name: str) -> None:
    """One hostile answer in this fresh process: CPU seconds, the limit that ended it, the verdict."""
    resource.setrlimit(resource.RLIMIT_AS, (bench_semantic.AS_LIMIT, bench_semantic.AS_LIMIT))
    from harness.tasks.sql.scoring import score_prediction

    pred, gold, context = HOSTILE[name]
    score_prediction(gold, gold, context)  # warm: imports, schema cache, the gold's own work
    cpu = time.process_time()
    try:
        score = score_prediction(pred, gold, context)
        ended = (
            "safety net (CPU time)"
            if score.clock_stopped
            else "count"
            if "budget" in score.detail
            else "other limit or none"
        )
        outcome = f"executes={score.executes} semantic={score.semantic}: {score.detail[:100]}"
    except BaseException as exc:  # the point: did anything escape?
        ended, outcome = "ESCAPED", f"{type(exc).__name__}: {str(exc)[:90]}"
    print(json.dumps({"cpu": time.process_time() - cpu, "ended": ended, "outcome": outcome}))


def hostile_report() -> list[str]:
    lines = [
        "## Hostile answers (score_prediction in a fresh process each, RLIMIT_AS 1 GiB)",
        "",
        "| case | CPU s | ended by | outcome |",
        "| --- | ---: | --- | --- |",
    ]
    slowest = 0.0
    for name in HOSTILE:
        done = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--worker-hostile", name],
            capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
        try:
            res = json.loads(done.stdout.strip().splitlines()[-1])
        except (json.JSONDecodeError, IndexError):
            lines.append(f"| {name} | - | CRASHED | {done.stderr.strip()[-120:]} |")
            continue
        slowest = max(slowest, res["cpu"])
        lines.append(f"| {name} | {res['cpu']:.2f} | {res['ended']} | {res['outcome'].replace('|', '/')} |")
    lines += ["", f"slowest hostile answer: {slowest:.2f} CPU s"]
    return lines


def timing_report(data: list[Path], before_root: Path | None, repeats: int, tmp: Path) -> list[str]:
    """Interleaved: before and after alternate, one repeat each per round (a shared machine's load
    then weighs on both alike)."""
    lines = [
        "## Scoring 300 answers (score_prediction; caches cleared per repeat; CPU s, interleaved rounds)",
        "",
    ]
    for path in data:
        answers = bench_semantic.synthetic_answers(_load(path, None), 300)
        answers_path = tmp / f"answers-{path.stem}.json"
        answers_path.write_text(json.dumps(answers))
        cpu: dict[str, list[float]] = {"before": [], "after": []}
        semantic: dict[str, int] = {}
        for _ in range(repeats):
            for who, root in (("before", before_root), ("after", None)):
                if who == "before" and root is None:
                    continue
                out = tmp / f"time-{who}.json"
                done = bench_semantic._worker(
                    root, "--worker-time", str(answers_path), str(out), "--repeats", "1"
                )
                if done.returncode != 0:
                    lines.append(f"  {who}: worker failed: {done.stderr[-300:]}")
                    continue
                run = json.loads(out.read_text())[0]
                cpu[who].append(run["cpu"])
                semantic[who] = run["semantic"]
        for who, runs in cpu.items():
            if runs:
                lines.append(
                    f"  {who:6s} {path.name}: {len(answers)} answers, median CPU {statistics.median(runs):.2f} s "
                    f"(runs {', '.join(f'{r:.2f}' for r in runs)}), semantic matches {semantic[who]}"
                )
        if cpu["before"] and cpu["after"]:
            lines.append(
                f"  after / before: {statistics.median(cpu['after']) / statistics.median(cpu['before']):.2f}"
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, nargs="+", default=DEFAULT_DATA)
    parser.add_argument("--limit", type=int, default=None, help="first N rows of each file")
    parser.add_argument("--dbs", type=int, default=40, help="independent databases per gold")
    parser.add_argument(
        "--seed", type=int, default=INDEPENDENT_SEED, help="seed of the independent databases"
    )
    parser.add_argument("--before", default=None, help="git revision whose matcher is timed as 'before'")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--jobs", type=int, default=os.cpu_count() or 1, help="worker processes for the kinds table"
    )
    parser.add_argument("--skip-kinds", action="store_true")
    parser.add_argument("--skip-hostile", action="store_true")
    parser.add_argument("--skip-timing", action="store_true")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--worker-hostile", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker_hostile:
        worker_hostile(args.worker_hostile)
        return 0
    missing = [str(p) for p in args.data if not p.is_file()]
    if missing:
        print(f"--data: no such file {missing[0]}; pass the sql-create-context jsonl files", file=sys.stderr)
        return 2
    shown = " ".join(
        a if not a.startswith(str(ROOT.parent)) else os.path.relpath(a, ROOT) for a in sys.argv[1:]
    )
    load = os.getloadavg()[0]
    lines = [
        f"# {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, {platform.machine()}, {os.cpu_count()} cores, load average "
        f"{load:.1f} at start (shared machine), Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}",
        f"# python dev/bench_matcher_kinds.py {shown}",
        "",
    ]

    def emit(new: list[str]) -> None:
        lines.extend([*new, ""])
        print("\n".join(new), flush=True)

    print("\n".join(lines), flush=True)
    if not args.skip_kinds:
        for path in args.data:
            emit(kinds_report(path, args.limit, args.dbs, args.seed, args.jobs)[0])
    if not args.skip_hostile:
        emit(hostile_report())
    if not args.skip_timing:
        with tempfile.TemporaryDirectory() as tmp:
            before = bench_semantic._other_harness(args.before, Path(tmp)) if args.before else None
            emit(timing_report(args.data, before, args.repeats, Path(tmp)))
    if args.out:
        args.out.write_text("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
