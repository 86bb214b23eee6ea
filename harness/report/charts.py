"""Charts as PNG files with alt text: loss curves (with a zoom on the first steps), peak memory, train time.

Drawn with matplotlib's object API on an Agg canvas (no pyplot, no global backend switch), at a fixed
size and dpi, without a "Software" stamp in the PNG, so the same records give the same bytes on the
same matplotlib and fonts.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from harness import stats
from harness.cpuinfo import usable_cores
from harness.report.groups import SetupRuns
from harness.report.tables import Getter, peak_vram_gib, train_seconds, values

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

DPI = 100
ZOOM_STEPS = 20
# Colour-blind-safe (Okabe–Ito), one per setup in name order.
COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")


@dataclass(frozen=True)
class Chart:
    path: Path
    alt: str


def preload() -> None:
    """Imports what drawing needs (matplotlib's figure, Agg canvas and tickers: ~0.5 s of a report on the
    2-core EPYC), for `lorabench bench` to call in a thread while its suite trains."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # ruff: ignore[unused-import]
    from matplotlib.figure import Figure  # ruff: ignore[unused-import]
    from matplotlib.ticker import MaxNLocator  # ruff: ignore[unused-import]


def _figure(width: float, height: float, ncols: int = 1) -> tuple[Figure, list[Axes]]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, ncols, squeeze=False)[0]
    return fig, list(axes)


def _draw(fig: Figure, path: Path) -> None:
    fig.savefig(path, dpi=DPI, format="png", metadata={"Software": None})


# Drawing is most of a chart's cost (constrained layout draws each figure twice: 1.9 of `lorabench report`'s
# 2.9 s on a 2-core AMD EPYC, cProfile), so each chart is drawn in a forked child while the scorecards are
# written on, as many at once as this process may use cores; `finish_drawing` waits for them.
_drawing: list[tuple[int, Figure, Path]] = []


def _save(fig: Figure, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not hasattr(os, "fork"):  # Windows: drawn here
        _draw(fig, path)
        return
    if len(_drawing) >= usable_cores():
        _finish(_drawing.pop(0))
    # Python 3.12 warns at a fork of a threaded process (bench's, say): the child only draws and exits.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:
        code = 1
        try:
            _draw(fig, path)
            code = 0
        finally:
            os._exit(code)
    _drawing.append((pid, fig, path))


def _finish(drawing: tuple[int, Figure, Path]) -> None:
    pid, fig, path = drawing
    if os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) != 0:
        _draw(fig, path)  # drawn here again, so its error (a full disk, say) is raised here


def finish_drawing() -> None:
    """Every chart drawn and written (each child waited for); then the first error, if one failed."""
    failed: Exception | None = None
    while _drawing:
        try:
            _finish(_drawing.pop(0))
        except Exception as exc:  # the others are still waited for: no child left unreaped
            failed = failed or exc
    if failed is not None:
        raise failed


def loss_chart(experiment: str, setups: Sequence[SetupRuns], path: Path) -> Chart | None:
    curves = [(i, s, r) for i, s in enumerate(setups) for r in s.records if r.train and r.train.loss]
    if not curves:
        return None
    from matplotlib.ticker import MaxNLocator

    fig, (full, zoom) = _figure(10, 3.8, ncols=2)
    labelled: set[str] = set()
    for index, setup, record in curves:
        losses = record.train.loss if record.train else []
        steps = list(range(1, len(losses) + 1))
        colour = COLOURS[index % len(COLOURS)]
        label = None if setup.setup in labelled else setup.setup
        labelled.add(setup.setup)
        full.plot(steps, losses, color=colour, linewidth=1.0, alpha=0.85, label=label)
        zoom.plot(
            steps[:ZOOM_STEPS], losses[:ZOOM_STEPS], color=colour, linewidth=1.2, marker=".", alpha=0.85
        )
    full.set(title=f"{experiment}: training loss, every seed", xlabel="step", ylabel="loss")
    zoom.set(title=f"first {ZOOM_STEPS} steps", xlabel="step", ylabel="loss")
    full.legend(fontsize="small")
    for ax in (full, zoom):
        ax.grid(alpha=0.3)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    _save(fig, path)
    parts = []
    for setup in setups:
        runs = [r for r in setup.records if r.train and r.train.loss]
        if runs:
            firsts = [r.train.loss[0] for r in runs if r.train]
            finals = [r.train.final_loss or r.train.loss[-1] for r in runs if r.train]
            steps = max(len(r.train.loss) for r in runs if r.train)
            parts.append(
                f"{setup.setup} ({len(runs)} seeds): first loss {min(firsts):.2f}–{max(firsts):.2f}, "
                f"final {min(finals):.2f}–{max(finals):.2f} after up to {steps} steps"
            )
    alt = (
        f"Line chart of training loss per step for {experiment}, with a zoom on the first {ZOOM_STEPS} steps. "
        + "; ".join(parts)
    )
    return Chart(path, alt)


def _bars(
    experiment: str, setups: Sequence[SetupRuns], getter: Getter, what: str, unit: str, path: Path
) -> Chart | None:
    # Each bar is labelled with its setup, n and its conditions' marks (the page's legend explains them).
    data = [
        (f"{s.setup} (n={len(v)}) {s.conditions.marks}".rstrip(), v)
        for s in setups
        if (v := values(s.ok, getter))
    ]
    if not data:
        return None
    fig, (ax,) = _figure(8, 0.6 + 0.45 * len(data))
    names = [name for name, _ in data][::-1]
    means = [stats.mean(v) for _, v in data][::-1]
    colours = [COLOURS[i % len(COLOURS)] for i in range(len(data))][::-1]
    ax.barh(names, means, color=colours)
    # Whiskers only where there is a spread to show: one run has no min–max.
    spread = [
        (i, stats.mean(v), stats.mean(v) - min(v), max(v) - stats.mean(v))
        for i, (_, v) in enumerate(data[::-1])
        if len(v) > 1
    ]
    if spread:
        ax.errorbar(
            [m for _, m, _, _ in spread],
            [i for i, _, _, _ in spread],
            xerr=[[lo for _, _, lo, _ in spread], [hi for _, _, _, hi in spread]],
            fmt="none",
            ecolor="black",
            capsize=3,
        )
    ax.set(title=f"{experiment}: {what}", xlabel=f"{unit} (mean of ok seeds; whiskers min–max where n > 1)")
    ax.grid(axis="x", alpha=0.3)
    _save(fig, path)
    described = "; ".join(f"{name}: {stats.mean(v):.2f} {unit}" for name, v in data)
    return Chart(path, f"Bar chart of {what} per setup for {experiment}: {described}")


def memory_chart(experiment: str, setups: Sequence[SetupRuns], path: Path) -> Chart | None:
    return _bars(experiment, setups, peak_vram_gib, "peak VRAM", "GiB", path)


def time_chart(experiment: str, setups: Sequence[SetupRuns], path: Path) -> Chart | None:
    return _bars(experiment, setups, train_seconds, "train time", "s", path)
