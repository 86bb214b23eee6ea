"""Scores do not depend on how busy the machine is (issue #18b): the same predictions, scored in a
fresh process alone and again while CPU hogs share its core, give the same scores, bit for bit.

Before the budgets were counted in SQLite VM instructions they were wall clock (1 s per answer,
0.3 s per suite): under load a slow but legal answer timed out, a hostile one failed on another
database, and a slow gold's suite was cut at another point.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import harness
from harness.tasks.sql.budget import ANSWER_INSTRUCTIONS

PETS = "CREATE TABLE pets (name VARCHAR, age INTEGER)"
GOLD = "SELECT name FROM pets WHERE age > 3"
RECURSIVE = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c{limit}) "


def _slow(rows: int) -> str:
    """The gold, plus a constant condition that counts `rows` rows of a recursive CTE first: legal,
    right, and as slow as one likes (each of the answer's ~20 runs pays for it)."""
    return f"{GOLD} AND ({RECURSIVE.format(limit=f' LIMIT {rows}')}SELECT COUNT(*) FROM c) > 0"


def _answer_rows(rows_at_50m: int) -> int:
    """The rows that take the same share of today's answer budget as `rows_at_50m` did of 50 M."""
    return rows_at_50m * ANSWER_INSTRUCTIONS // 50_000_000


CASES: list[tuple[str, str, str]] = [
    (GOLD, GOLD, PETS),
    ("SELECT name FROM pets WHERE age >= 3", GOLD, PETS),
    ("SELECT name FROM pets WHERE age > 3 ORDER BY name", GOLD, PETS),
    # Slow but legal: from a tenth to about two thirds of the answer's budget.
    (_slow(_answer_rows(20_000)), GOLD, PETS),
    (_slow(_answer_rows(50_000)), GOLD, PETS),
    (_slow(_answer_rows(100_000)), GOLD, PETS),
    # Legal, but past the budget on one of the databases drawn for it.
    (_slow(_answer_rows(250_000)), GOLD, PETS),
    # A slow gold: its suite is cut short by the distillation budget.
    (GOLD, _slow(5_000), PETS),
    ("SELECT name FROM pets WHERE age > 4", _slow(2_000), PETS),
    # Hostile: endless, and one long single instruction refused by the length cap.
    (RECURSIVE.format(limit="") + "SELECT COUNT(*) FROM c", GOLD, PETS),
    ("SELECT instr(hex(zeroblob(499999)), hex(zeroblob(250000)) || '1') FROM pets", GOLD, PETS),
]

# Runs in a fresh process pinned to one CPU: prints the scores, and its CPU and wall seconds.
SCORER = """
import dataclasses, json, os, sys, time
os.sched_setaffinity(0, {int(sys.argv[1])})
from harness.tasks.sql.scoring import score_prediction
cases = json.loads(sys.argv[2])
wall, cpu = time.perf_counter(), time.thread_time()
scores = [dataclasses.asdict(score_prediction(*case)) for case in cases]
print(json.dumps({"scores": scores, "cpu": time.thread_time() - cpu, "wall": time.perf_counter() - wall}))
"""
HOG = "import os, sys\nos.sched_setaffinity(0, {int(sys.argv[1])})\nwhile True:\n    pass\n"


def _score_in_child(script: Path, cpu: int, *, hogs: int, hash_seed: str) -> dict[str, object]:
    """Score CASES in a child pinned to `cpu`, with `hogs` busy processes pinned to the same CPU."""
    root = Path(harness.__file__).resolve().parents[1]  # the child scores with this test's harness
    env = {**os.environ, "PYTHONPATH": str(root), "PYTHONHASHSEED": hash_seed}
    started = [subprocess.Popen([sys.executable, "-c", HOG, str(cpu)]) for _ in range(hogs)]
    try:
        done = subprocess.run(
            [sys.executable, str(script), str(cpu), json.dumps(CASES)],
            env=env, capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
        # The hogs shared the child's CPU the whole time: alive at its end, pinned to that CPU.
        contended = [hog.poll() is None and os.sched_getaffinity(hog.pid) == {cpu} for hog in started]
    finally:
        for hog in started:
            hog.kill()
            hog.wait()
    assert done.returncode == 0, done.stderr[-2000:]
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "contended": contended}


def test_scores_are_the_same_when_the_cpu_is_starved(tmp_path: Path) -> None:
    script = tmp_path / "scorer.py"
    script.write_text(SCORER)
    cpu = max(os.sched_getaffinity(0))
    alone = _score_in_child(script, cpu, hogs=0, hash_seed="0")
    starved = _score_in_child(script, cpu, hogs=2, hash_seed="1")
    # The hogs really competed for the CPU (a check of the set-up, not of timings: how much of the
    # CPU the child got depends on the machine).
    assert starved["contended"] == [True, True], starved
    for case, a, b in zip(CASES, alone["scores"], starved["scores"], strict=True):
        assert a == b, (case[0][:80], a, b)
    scores = alone["scores"]
    # Not a vacuous pass: the slow answers are right, the one past the budget and the hostile ones
    # are named misses, and the safety net did not fire on any of them.
    assert [s["semantic"] for s in scores[3:7]] == [True, True, True, False]
    assert "(budget)" in scores[6]["detail"]
    assert "(budget)" in scores[9]["detail"]
    assert "cut short by its instruction budget" in scores[7]["detail"]
    assert not any(s.get("clock_stopped") for s in alone["scores"] + starved["scores"])
