"""A training run's progress reaches the terminal through pytest's capture; records of another host of
the same kind stand in for untimed claims, and records that cannot say why."""

from __future__ import annotations

import io
import json
import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.run.progress import Progress
from harness.suite.progress import ProgressView, clock, followed_run, rough_reasons
from harness.terminal import fit

LABEL = "exp_t/tiny seed 3407"


def test_progress_shows_through_fd_capture(
    pytester: pytest.Pytester,
    bench_dir: Callable[..., Path],
    bench_args: tuple[str, ...],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A wide terminal: the lines are matched whole here (fitting them to 80 and 40 columns: fit's tests).
    monkeypatch.setenv("COLUMNS", "400")
    # A real pytest process with its default fd capture, a real trainer child: the child's own stderr
    # is captured (its phase lines never reach the output), the suite's progress lines do.
    bench_dir(steps=2, min_gain=-100.0)
    shown = pytester.runpytest_subprocess(*bench_args, "--lorabench-progress-every=0", timeout=300)
    shown.assert_outcomes(passed=1)
    shown.stdout.fnmatch_lines([
        f"[[]lorabench] {LABEL} · no record of this setup on this host: training; expected time: no earlier run "
        "of this setup on this host; an estimate follows 5 steps in",
        f"[[]lorabench] {LABEL} · train 0/2 · *",
        f"[[]lorabench] {LABEL} · train 2/2 · loss * · *",
        f"[[]lorabench] {LABEL} · eval 4/4 · *",
        f"[[]lorabench] {LABEL} · ok | exp_t/tiny seed 3407 | exact match * → *",
    ])  # fmt: skip
    assert "[lorabench] train (2)" not in shown.stdout.str()  # the child's own line stayed captured

    # The control: without the follower nothing of the run shows until the summary.
    bench_dir(steps=3, min_gain=-100.0)
    hidden = pytester.runpytest_subprocess(*bench_args, "--lorabench-progress=off", timeout=300)
    hidden.assert_outcomes(passed=1)
    assert f"[lorabench] {LABEL}" not in hidden.stdout.str()

    # Run again: the first line tells the time before it starts, from the newest earlier run (3 steps).
    again = pytester.runpytest_subprocess(
        *bench_args, "--lorabench-rerun", "--lorabench-progress-every=0", timeout=300
    )
    again.assert_outcomes(passed=1)
    again.stdout.fnmatch_lines([f"[[]lorabench] {LABEL} · its record is ok, running it again: training; expected ~*:* "
                                "(from results/*seed-3407.json, *: 3 steps*)"])  # fmt: skip


def test_lines_mode_writes_a_line_per_phase_and_an_eta_from_the_first_step() -> None:
    written: list[tuple[str, bool]] = []
    view = ProgressView(
        LABEL, lambda text, transient: written.append((text, transient)), "lines", every_s=3600
    )
    view.event({"t": 100.0, "phase": "train", "done": 0, "total": 10})
    view.event(
        {"t": 160.0, "phase": "train", "done": 1, "total": 10, "loss": 1.25}
    )  # 60 s of preflight first
    view.event({"t": 162.0, "phase": "train", "done": 2, "total": 10, "loss": 1.0})
    assert view.phase is not None and view.phase.eta() == pytest.approx(16.0)  # 2 s a step, 8 to go
    view.tick()  # within the hour: nothing new
    view.event({"t": 170.0, "phase": "eval", "done": 0, "total": 300})
    view.finish("ok")
    texts = [text.removeprefix(f"[lorabench] {LABEL} · ") for text, _ in written]
    assert texts[0].startswith("train 0/10 · ") and texts[0].endswith("preparing")
    assert texts[1].startswith("train 2/10 · loss 1 · ") and texts[1].endswith(
        "eta 0:16"
    )  # the phase, closed
    assert texts[2].startswith("eval 0/300") and texts[3].startswith("eval 0/300") and texts[4] == "ok"
    assert not any(transient for _, transient in written)


def test_five_steps_in_the_whole_run_is_estimated_once() -> None:
    written: list[str] = []
    view = ProgressView(LABEL, lambda text, _: written.append(text), "lines", every_s=3600, more_runs=2)
    view.machine_load = lambda: (9.3, 2)  # the shared 2-core machine the CPU suite's estimates missed on
    view.event({"t": 0.0, "phase": "data", "done": 0, "total": 0})
    view.event({"t": 10.0, "phase": "baseline eval", "done": 0, "total": 300})
    view.event({"t": 130.0, "phase": "train", "done": 0, "total": 300})  # the baseline eval took 2:00
    view.event({"t": 150.0, "phase": "train", "done": 1, "total": 300, "loss": 1.5})  # warm-up: not timed
    for done in range(2, 7):
        view.event({"t": 150.0 + 3 * (done - 1), "phase": "train", "done": done, "total": 300, "loss": 1.0})
        assert (view.estimate is None) == (done < 6)
    # 3 s a step; 165 s gone, 294 steps (882 s) and a final eval as long as the baseline's (120 s) to go.
    assert view.estimate is not None and view.estimate.step_s == pytest.approx(3.0)
    shown = [t for t in written if "estimate" in t]
    assert shown == [f"[lorabench] {LABEL} · rough: machine busy (load 9.3 on 2 cores), 5 of 300 steps timed; "
                     "estimate from 5 steps (3.00 s/step) and the baseline eval 2:00 (the "
                     "final eval about as long): this run ~19:27 in all, ~16:42 to go; up to 2 more seed(s) of this "
                     "setup: ~38:54 more (Ctrl-C stops; run it again to resume from the last checkpoint)"]  # fmt: skip
    view.event({"t": 200.0, "phase": "train", "done": 20, "total": 300, "loss": 0.5})
    assert sum("estimate" in t for t in written) == 1


def test_a_resumed_run_is_estimated_from_its_own_steps_not_the_replayed_ones() -> None:
    view = ProgressView(LABEL, lambda text, _: None, "lines", every_s=3600)
    view.event({"t": 0.0, "phase": "train", "done": 0, "total": 300})
    view.event({"t": 0.001, "phase": "train", "done": 40, "total": 300})  # the checkpoint's 40 steps, at once
    for done in range(41, 46):
        view.event({"t": 10.0 + 2 * (done - 40), "phase": "train", "done": done, "total": 300})
    # Timed from the jump, not from step 0: 20 s for 5 steps (the first resumed one loaded the checkpoint);
    # from step 0 it would have been 22 s for 45 steps, an estimate nine times too short.
    assert view.estimate is not None and view.estimate.step_s == pytest.approx(4.0, abs=0.01)
    assert view.estimate.eval_s is None and view.estimate.steps_left == 255


def test_live_mode_rewrites_one_line_and_keeps_a_line_per_phase() -> None:
    written: list[tuple[str, bool]] = []
    view = ProgressView(LABEL, lambda text, transient: written.append((text, transient)), "live", every_s=30)
    view.event({"t": 1.0, "phase": "load smollm2-135m (cpu, bf16)", "done": 0, "total": 0})
    view.event({"t": 2.0, "phase": "train", "done": 0, "total": 3})
    view.tick(force=True)
    view.finish("ok")
    assert [transient for _, transient in written] == [True, False, True, True, False, False]


def test_the_child_side_writes_json_lines_the_follower_reads(tmp_path: Path) -> None:
    shown: list[str] = []
    with followed_run(LABEL, lambda text, _: shown.append(text), "lines", every_s=0) as view:
        assert view is not None
        progress = Progress(quiet=True, events_file=view.progress_file)
        progress.phase("train", total=2)
        progress.advance(loss=0.5)
        progress.advance(loss=0.25)
        path = progress.events_file
    assert view is not None and path is not None and not path.exists()  # the file goes with the block
    view.finish("ok")  # the runner's last word: the phase closed with its last step, then the outcome
    assert any("train 2/2 · loss 0.25" in line for line in shown)
    assert clock(3725) == "1:02:05" and clock(65) == "1:05"


def test_a_record_of_another_host_of_this_kind_stands_in(
    pytester: pytest.Pytester, bench_dir: Callable[..., Path], bench_args: tuple[str, ...],
    write_cached: Callable[..., Path], host_kind: str,
) -> None:  # fmt: skip
    setup = bench_dir(min_gain=-100.0)
    results = pytester.path / "results"
    write_cached(setup, results, host="cpu-twin-2c", kind=host_kind)
    result = pytester.runpytest(*bench_args, "--lorabench-inline")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([
        f"reused  {LABEL}: ok → *cpu-twin-2c*seed-3407.json [[]yours; stands in: made on host cpu-twin-2c, of this host's kind {host_kind}]",
        "lorabench: 0 trained, 0 re-ran, 1 reused from cache",
    ])  # fmt: skip


def test_records_of_another_kind_or_an_older_fingerprint_say_why_they_do_not_stand_in(
    pytester: pytest.Pytester, bench_dir: Callable[..., Path], bench_args: tuple[str, ...],
    write_cached: Callable[..., Path], host_kind: str,
) -> None:  # fmt: skip
    setup = bench_dir(min_gain=-100.0)
    results = pytester.path / "results"
    # Another kind than this host's, whatever this host is (CI ran it on an avx2 EPYC once: the fixed
    # avx2 kind was this host's own there, and the record stood in).
    other_kind = "cpu-x86-64-2c-avx2" if host_kind != "cpu-x86-64-2c-avx2" else "cpu-x86-64-2c-amx"
    write_cached(setup, results, host="cpu-other-2c", kind=other_kind)
    old = write_cached(setup, results, host="cpu-older-2c", kind=host_kind)
    data = json.loads(old.read_text())
    data["provenance"] = {"host": {"id": "cpu-older-2c"}}  # made before host kinds were recorded
    data["fingerprint"] = "0" * 16
    old.write_text(json.dumps(data))
    result = pytester.runpytest(*bench_args, "--lorabench-inline", "--lorabench-progress=off")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([
        f"trained {LABEL}: ok → * [[]yours; not standing in: cpu-older-2c: made before fingerprint version 3 (no host "
        f"kind recorded); cpu-other-2c: host kind {other_kind}, this host is {host_kind}]",
    ])  # fmt: skip


LINE = "[lorabench] exp_a/smollm2-135m-lora seed 3407 · train 120/300 · loss 0.412 · 4:58 · eta 7:27"
ESTIMATE = (
    f"[lorabench] {LABEL} · estimate from 5 steps (20.65 s/step) and the baseline eval 2:00 (the final eval "
    "about as long): this run ~1:45:27 in all, ~1:40:42 to go (Ctrl-C stops; run it again to resume)"
)
NUMBERS = re.compile(r"\d[\d.:/]*")


@pytest.mark.parametrize("width", [80, 40])
def test_a_lasting_line_wraps_at_the_terminal_width_never_mid_number(width: int) -> None:
    """Issue 36: on 80 columns the estimate read "estimate from 5 steps (20.65 s/" and nothing more."""
    lines = fit(ESTIMATE, width, transient=False)
    assert len(lines) > 1 and all(len(line) <= width for line in lines)
    assert " ".join(line.strip() for line in lines) == ESTIMATE  # every word kept, in order
    assert NUMBERS.findall(" ".join(lines)) == NUMBERS.findall(ESTIMATE)  # no number split across lines


@pytest.mark.parametrize("width", [80, 40])
def test_a_status_line_is_shortened_by_whole_words(width: int) -> None:
    (line,) = fit(LINE, width, transient=True)
    assert len(line) <= width and "…" in line
    assert "train 120/300" in line  # the label goes first, the progress stays
    assert set(line.replace(" …", "").split()) <= set(LINE.split())  # only whole words of the line


def test_a_line_that_fits_is_left_alone_and_estimates_say_when_they_are_rough() -> None:
    assert fit(LINE, 200, transient=True) == [LINE] == fit(LINE, 200, transient=False)
    assert rough_reasons(5, 300, 9.3, 2) == ("machine busy (load 9.3 on 2 cores)", "5 of 300 steps timed")
    assert rough_reasons(5, 40, 1.2, 2) == ()  # a quiet machine and an eighth of the steps timed


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_lorabench_runs_own_lines_wrap_on_a_terminal_and_stay_whole_in_a_log(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "40")
    tty, log = _Terminal(), io.StringIO()
    for stream in (tty, log):
        progress = Progress(stream=stream, events_file=Path(os.devnull))
        progress.phase("train", 1)
        progress.advance(loss=0.41234, grad_norm=1.5, learning_rate=0.0002)
    assert all(len(line) <= 39 for line in tty.getvalue().splitlines())
    assert " ".join(line.strip() for line in tty.getvalue().splitlines()) == " ".join(
        line.strip() for line in log.getvalue().splitlines()
    )  # the same words, none cut
    assert max(len(line) for line in log.getvalue().splitlines()) > 40  # a log is left as it is
