"""staggered_load with two real processes: under one lock their load windows never overlap; with two
different locks (the bug: each rank computing its own path) they do, so the check can fail."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LOADER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from harness.run.ranks import staggered_load
    lock, out = Path(sys.argv[1]), Path(sys.argv[2])
    with staggered_load(lock):
        start = time.monotonic()
        time.sleep(0.6)  # "loading the model"
        end = time.monotonic()
    out.write_text(f"{start} {end}")
""")


def windows(tmp_path: Path, locks: tuple[Path, Path]) -> list[tuple[float, float]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    outs = [tmp_path / f"rank{i}.txt" for i in range(2)]
    procs = [
        subprocess.Popen([sys.executable, "-c", LOADER, str(lock), str(out)], env=env)
        for lock, out in zip(locks, outs, strict=True)
    ]
    assert [p.wait(timeout=30) for p in procs] == [0, 0]
    spans = [tuple(float(x) for x in out.read_text().split()) for out in outs]
    return sorted((s[0], s[1]) for s in spans)


def test_two_ranks_load_one_after_the_other(tmp_path: Path) -> None:
    lock = tmp_path / "load.lock"
    (_a_start, a_end), (b_start, _b_end) = windows(tmp_path, (lock, lock))
    assert b_start >= a_end, f"second load began {a_end - b_start:.2f}s before the first ended"


# Each holds its lock until it sees the other inside its own (or 120 s pass): with two different locks
# both meet inside, however slowly the machine starts them; no timing is assumed.
MEETER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from harness.run.ranks import staggered_load
    lock, mine, other, out = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4])
    with staggered_load(lock):
        mine.touch()
        deadline = time.monotonic() + 120
        while not other.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        out.write_text("met" if other.exists() else "alone")
""")


def test_without_a_shared_lock_the_loads_overlap(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    entered, outs = [tmp_path / f"in{i}" for i in range(2)], [tmp_path / f"out{i}" for i in range(2)]
    procs = [
        subprocess.Popen([sys.executable, "-c", MEETER, str(tmp_path / f"{i}.lock"), str(entered[i]),
                          str(entered[1 - i]), str(outs[i])], env=env)
        for i in range(2)
    ]  # fmt: skip
    assert [p.wait(timeout=300) for p in procs] == [0, 0]
    assert [out.read_text() for out in outs] == ["met", "met"]
