"""The scorecard's tables, as GitHub-flavoured Markdown (tabulate "github"), from records only.

Numbers over seeds are shown as `mean [min–max]` with n: three seeds make the range the honest
spread. A cell is `–` when no ok record holds the number.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

from tabulate import tabulate

from harness import stats
from harness.findings import Assessment
from harness.origin import GitFacts, HostFacts, StackFacts
from harness.report import likeness, pairs, settings
from harness.report.groups import ReportGroup, SetupRuns
from harness.results import RunRecord
from harness.run import mfu as mfu_table
from harness.tasks.registry import MetricColumn, task_module

GIB = 1024**3
NONE = "–"
Getter = Callable[[RunRecord], float | None]


def md_cell(text: object) -> str:
    """Table cells must not break the table (pipes escaped, no newlines) nor leak a machine's paths."""
    return settings.public(str(text)).replace("|", "\\|").replace("\n", " ")


def table(rows: Sequence[Sequence[object]], headers: Sequence[str]) -> str:
    return tabulate(
        [[md_cell(c) for c in row] for row in rows],
        headers=list(headers),
        tablefmt="github",
        disable_numparse=True,
    )


def values(records: Sequence[RunRecord], getter: Getter) -> list[float]:
    return [v for v in (getter(r) for r in records) if v is not None]


def summary(data: Sequence[float], digits: int = 1) -> str:
    if not data:
        return NONE
    if len(data) == 1 or min(data) == max(data):
        return f"{data[0]:.{digits}f}"
    return f"{stats.mean(data):.{digits}f} [{min(data):.{digits}f}–{max(data):.{digits}f}]"


# --- getters: every number a table shows comes through one of these ---


def baseline_em(r: RunRecord) -> float | None:
    return r.baseline.exact_match if r.baseline else None


def trained_em(r: RunRecord) -> float | None:
    return r.trained.exact_match if r.trained else None


def gain(r: RunRecord) -> float | None:
    return r.gain


def train_seconds(r: RunRecord) -> float | None:
    return r.train.train_s if r.train and r.train.train_s else r.timings.train_s


def step_seconds(r: RunRecord) -> float | None:
    """Steady seconds per step (records made before the 2026-11-30 run (93beaf1) lack it)."""
    return r.train.step_s if r.train else None


def peak_vram_gib(r: RunRecord) -> float | None:
    return r.memory.peak_vram_bytes / GIB if r.memory and r.memory.peak_vram_bytes else None


def steady(r: RunRecord) -> mfu_table.SteadyRate | None:
    """The steady steps' rate (`harness.run.mfu.steady_rate`); None without a steady step time."""
    t = r.train
    if t is None or not t.step_s or not t.tokens or t.steps_done < 2:
        return None
    return mfu_table.steady_rate([t.step_s], [t.tokens / t.steps_done], mfu_table.steady_window(t.steps_done))


def tokens_per_s(r: RunRecord) -> float | None:
    """Tokens/s over the steady steps the step time reads; the whole run's where the record has no step time."""
    rate = steady(r)
    if rate is not None:
        return rate.tokens_per_s
    return r.train.tokens_per_s if r.train else None


# The FLOP convention, written beside every MFU figure (harness/run/mfu.py).
MFU_CONVENTION = (
    "MFU = model FLOPs per second over the steady steps (the steps the step time reads) against the GPUs' "
    "bf16 dense peak (`harness/run/mfu.py`): 4·N + 2·N_trainable FLOPs per token for N parameters, "
    "recomputation not counted; the attention term (12·layers·width·sequence per token) is left out, "
    "as the records do not carry the model's layers and width (it would add a few percent at these lengths). "
    "A record without a steady step time shows its whole-run figure (its window: whole run)."
)


def mfu_percent(r: RunRecord) -> float | None:
    """MFU_CONVENTION; over the whole run (tokens / train time) where the record has no steady step time
    (its conditions then say "whole run")."""
    if r.train is None:
        return None
    gpus = r.provenance.host.gpus
    rate = steady(r)
    seconds = train_seconds(r)
    if rate is not None:
        tokens_per_s: float | None = rate.tokens_per_s
    else:
        tokens_per_s = r.train.tokens / seconds if r.train.tokens and seconds else None
    if not (gpus and tokens_per_s and r.train.total_params and r.train.trainable_params is not None):
        return None if r.train.mfu is None or rate is not None else 100 * r.train.mfu
    checkpointing = r.setup.recipe.gradient_checkpointing
    flops = mfu_table.training_flops(
        r.train.total_params, r.train.trainable_params, tokens_per_s, checkpointing
    )
    value = mfu_table.mfu(flops, gpus[0].name, r.setup.world_size)
    return None if value is None else 100 * value


def task_columns(setups: Sequence[SetupRuns]) -> list[MetricColumn]:
    """The score columns of the tasks these setups' runs ran, in the order the tasks first appear."""
    tasks = dict.fromkeys(r.task for s in setups for r in s.records)
    return [column for task in tasks for column in task_module(task).COLUMNS]


def column_getter(column: MetricColumn) -> Getter:
    return lambda r: column.value(r.trained) if r.trained else None


def is_marked(column: MetricColumn, r: RunRecord) -> bool:
    """The column's mark is earned by the run's trained or baseline metrics."""
    check = column.is_marked
    return check is not None and any(check(m) for m in (r.trained, r.baseline) if m is not None)


def column_cell(column: MetricColumn, records: Sequence[RunRecord]) -> str:
    marks = column.mark if any(is_marked(column, r) for r in records) else ""
    return summary(values(records, column_getter(column))) + marks


def marks_note(setups: Sequence[SetupRuns]) -> str:
    """What the task columns' marks shown in these setups' table mean."""
    shown = [c for c in task_columns(setups) if any(is_marked(c, r) for s in setups for r in s.ok)]
    return "".join(c.note for c in shown)


def marked(cell: str, marks: str) -> str:
    """A figure with its conditions' marks (conditions.LEGEND); a missing figure carries none."""
    return f"{cell} {marks}" if marks and cell != NONE else cell


def experiment_table(setups: Sequence[SetupRuns]) -> str:
    """One row per setup. Every cost figure carries its runs' conditions' marks (conditions.LEGEND), the
    last column states them in words; the tasks' own scores follow the gain (`marks_note`)."""
    columns = task_columns(setups)
    rows = []
    for s in setups:
        ok = s.ok
        found = s.conditions
        marks = found.marks
        rows.append(
            [
                s.setup,
                f"{len(ok)}/{len(s.runs)}",
                summary(values(ok, baseline_em)),
                summary(values(ok, trained_em)),
                summary(values(ok, gain)),
                *(column_cell(c, ok) for c in columns),
                marked(summary(values(ok, train_seconds), 0), marks),
                marked(summary(values(ok, step_seconds), 3), marks),
                marked(summary(values(ok, peak_vram_gib), 2), marks),
                marked(summary(values(ok, tokens_per_s), 0), marks),
                marked(summary(values(ok, mfu_percent), 2), marks),
                found.text,
            ]
        )
    headers = [
        "setup",
        "ok / runs",
        "baseline EM %",
        "trained EM %",
        "gain (points)",
        *(c.label for c in columns),
        "train time (s)",
        "step (s, steady)",
        "peak VRAM (GiB)",
        "tokens/s (steady)",
        "MFU % (steady)",
        "conditions (timing; sharing; commit; steady window)",
    ]
    return table(rows, headers)


# The margin the comparison tables test equivalence against (the story's; each claim uses its setup
# file's own, in the claims table).
EQUIVALENCE_MARGIN = 3.0


def _equivalence(found: pairs.Equivalent) -> str:
    if found.result is None:
        return f"{NONE} (needs 2 seeds run on both sides, got {found.paired_seeds})"
    verdict = "equivalent" if found.result.is_equivalent else "not shown"
    interval = found.result.interval
    return f"{verdict}: 90% [{interval.low:+.1f}, {interval.high:+.1f}], n = {found.result.n} seeds"


def _speedup(found: pairs.Speedup | None) -> str:
    """Ratio of mean times (reference / setup: above 1, the setup is faster) with a seeded 95% bootstrap
    interval; a side with one run has no spread to resample, so there the ratio stands alone with its n,
    the setup's first, as the row names the two sides ("setup vs reference")."""
    if found is None:
        return NONE
    ratio = f"{found.ratio:.2f}×"
    if found.n_reference == 1 and found.n_setup == 1:
        return f"{ratio} (n = 1)"
    if found.interval is None:
        return f"{ratio} (n = {found.n_setup} vs n = {found.n_reference})"
    return f"{ratio} [{found.interval.low:.2f}–{found.interval.high:.2f}]"


Pair = tuple[SetupRuns, SetupRuns]  # (reference, setup)


def order_pairs(pairs: Sequence[Pair]) -> list[tuple[Pair, list[str]]]:
    """Each pair with the settings its runs differ in, like-for-like pairs (fewest differences) first."""
    found = [(pair, settings.differences(pair[0].records, pair[1].records)) for pair in pairs]
    return sorted(
        found, key=lambda item: (settings.count_settings(item[1]), item[0][1].setup, item[0][0].setup)
    )


@dataclass(frozen=True)
class Comparisons:
    """A set of pairs drawn as two tables: like for like, and the labelled unlike table."""

    like: str | None
    unlike: str | None


def pair_figures(ref: SetupRuns, s: SetupRuns, margin: float = EQUIVALENCE_MARGIN) -> pairs.PairFigures:
    return pairs.PairFigures(
        pairs.speedup(values(ref.ok, train_seconds), values(s.ok, train_seconds)),
        pairs.speedup(values(ref.ok, step_seconds), values(s.ok, step_seconds)),
        pairs.accuracy(ref, s),
        pairs.equivalence(ref, s, margin),
    )


def _pair_cells(ref: SetupRuns, s: SetupRuns) -> list[str]:
    marks = " ".join(dict.fromkeys(m for m in f"{s.conditions.marks} {ref.conditions.marks}".split() if m))
    found = pair_figures(ref, s)
    if found.accuracy is not None:
        test = found.accuracy.test
        diff = f"{test.diff:+.1f}"
        detail = (
            f"{test.only_a} / {test.only_b} of {test.n} (seeds {', '.join(map(str, found.accuracy.seeds))})"
        )
        p = f"{test.p_value:.3g}"
    else:
        diff, detail, p = NONE, "no paired predictions", NONE
    return [
        marked(_speedup(found.train_time), marks),
        marked(_speedup(found.step), marks),
        diff,
        detail,
        p,
        _equivalence(found.equivalence),
    ]


def comparison_tables(
    pairs: Sequence[Pair], axis: Collection[str] | None = None, axis_label: str | None = None
) -> Comparisons:
    """Each setup against its reference, fewest differences first. Pairs that differ only on the compared
    axis (`axis`; None: the one setting that differs) and in no condition go in the first table; every
    other pair in the unlike table, which names each difference (harness.report.likeness). Cells name the
    sides in the row's order: setup, then reference. `axis_label`: what is compared when no setting is."""
    like_rows, unlike_rows = [], []
    for (ref, s), _ in order_pairs(pairs):
        judged = likeness.judge(s, ref, axis)
        name = f"{s.setup} vs {ref.setup}"
        compared = "; ".join(([axis_label] if axis_label else []) + list(judged.axis)) or NONE
        if likeness.is_comparable(judged, axis):
            like_rows.append([name, compared, *_pair_cells(ref, s)])
        else:
            nothing = (
                [] if judged.axis or judged.settings or axis is not None else [likeness.NOTHING_RECORDED]
            )
            also = "; ".join([*nothing, *judged.differences])
            unlike_rows.append([name, compared, also, *_pair_cells(ref, s)])
    tail = [
        "speedup (train time, 95% bootstrap)",
        "speedup (steady step)",
        "EM difference (points)",
        "only ref right / only setup right",
        "McNemar p",
        f"same EM within ±{EQUIVALENCE_MARGIN:g} (TOST)",
    ]
    return Comparisons(
        table(like_rows, ["setups", "compared", *tail]) if like_rows else None,
        table(unlike_rows, ["setups (unlike)", "compared", "also differs (settings; conditions)", *tail])
        if unlike_rows
        else None,
    )


def findings_table(assessments: Sequence[Assessment]) -> str:
    rows = [
        [_where(a), a.finding.title, f"**{a.result.status}**", a.result.evidence, a.finding.workaround]
        for a in assessments
    ]
    return table(rows, ["category", "finding", "status", "evidence", "workaround"])


def registry_table(assessments: Sequence[Assessment]) -> str:
    rows = [[a.finding.id, _where(a), a.finding.detected, a.finding.source] for a in assessments]
    return table(rows, ["id", "category", "detected by", "source"])


def _where(a: Assessment) -> str:
    return (
        a.finding.category if a.finding.platform == "any" else f"{a.finding.category} ({a.finding.platform})"
    )


def _rank_rows(r: RunRecord) -> list[list[Any]]:
    """One row per rank that reported its facts: where it ran, its model-load window and its peaks."""
    nodes = {n.node: n for n in r.nodes or []}
    rows = []
    for rank in r.ranks or []:
        node = nodes.get(rank.node)
        window = f"{rank.load_window[0]:.1f}–{rank.load_window[1]:.1f}" if rank.load_window else NONE
        vram = f"{rank.peak_vram_bytes / GIB:.2f}" if rank.peak_vram_bytes else NONE
        rss = f"{rank.peak_rss_bytes / GIB:.2f}" if rank.peak_rss_bytes else NONE
        rows.append(
            [
                r.experiment,
                r.setup_name,
                r.seed,
                rank.rank,
                rank.node,
                rank.hostname,
                node.host if node else r.host,
                rank.device,
                window,
                vram,
                rss,
                node.status if node else "ok",
            ]
        )
    return rows


def _silent_node_rows(r: RunRecord) -> list[list[Any]]:
    """One row per node that never reported its ranks' facts (lost, failed or busy), with its status."""
    ranked = {rank.node for rank in r.ranks or []}
    rows = []
    for node in r.nodes or []:
        if node.node not in ranked:
            shown = ", ".join(map(str, node.ranks)) or NONE
            rows.append(
                [
                    r.experiment,
                    r.setup_name,
                    r.seed,
                    shown,
                    node.node,
                    node.hostname,
                    node.host,
                    ", ".join(node.gpus) or NONE,
                    NONE,
                    NONE,
                    NONE,
                    f"{node.status}: {node.detail or ''}".rstrip(": "),
                ]
            )
    return rows


def ranks_table(group: ReportGroup) -> str | None:
    """Every rank of the DDP and multi-node runs; a node's status when it was not ok (lost, failed, busy)."""
    rows = []
    for r in group.records:
        rows += _rank_rows(r)
        rows += _silent_node_rows(r)
    if not rows:
        return None
    headers = [
        "experiment",
        "setup",
        "seed",
        "rank",
        "node",
        "host name",
        "host",
        "device",
        "model load (s)",
        "peak VRAM (GiB)",
        "peak RSS (GiB)",
        "node",
    ]
    return table(rows, headers)


def failures_table(group: ReportGroup) -> str | None:
    rows = [
        [r.experiment, r.setup_name, r.seed, r.status, r.reason or ""]
        for r in group.records
        if r.status != "ok"
    ]
    return table(rows, ["experiment", "setup", "seed", "status", "reason"]) if rows else None


def _distinct(records: Sequence[RunRecord], getter: Callable[[RunRecord], Any]) -> str:
    seen: dict[str, int] = {}
    for r in records:
        value = getter(r)
        key = NONE if value in (None, "") else str(value)
        seen[key] = seen.get(key, 0) + 1
    if len(seen) == 1:
        return next(iter(seen))
    return "; ".join(f"{k} ({n} runs)" for k, n in sorted(seen.items()))


def _host(r: RunRecord) -> HostFacts:
    return r.provenance.host


def _stack(r: RunRecord) -> StackFacts:
    return r.provenance.stack


def _gpus(r: RunRecord) -> str:
    gpus = _host(r).gpus
    return ", ".join(f"{g.name} ({g.arch}, {(g.vram_bytes or 0) / GIB:.0f} GiB)" for g in gpus) or "none"


def provenance_table(group: ReportGroup) -> str:
    records = group.records
    rows = [
        ["GPUs", _distinct(records, _gpus)],
        [
            "runtime",
            _distinct(
                records,
                lambda r: " ".join(filter(None, [_host(r).runtime, _host(r).runtime_version])),
            ),
        ],
        ["driver", _distinct(records, lambda r: _host(r).driver)],
        ["kernel", _distinct(records, lambda r: _host(r).kernel)],
        ["CPU", _distinct(records, lambda r: _host(r).cpu.model)],
        [
            "RAM",
            _distinct(
                records,
                lambda r: f"{_host(r).ram_bytes / GIB:.0f} GiB" if _host(r).ram_bytes else None,
            ),
        ],
        ["image", _distinct(records, lambda r: _stack(r).image)],
        ["image digest", _distinct(records, lambda r: _stack(r).image_digest)],
        ["lockfile", _distinct(records, lambda r: _stack(r).lockfile)],
        ["lockfile sha256", _distinct(records, lambda r: _stack(r).lockfile_sha256)],
        ["git", _distinct(records, lambda r: _git(r.provenance.git))],
    ]
    return table(rows, ["what", "value"])


def _git(git: GitFacts) -> str | None:
    if not git.sha:
        return None
    return f"{git.sha[:12]}{' (dirty)' if git.dirty else ''}"


def packages_table(group: ReportGroup) -> str:
    names = sorted({name for r in group.records for name in _stack(r).packages})
    rows = [[name, _distinct(group.records, lambda r, n=name: _stack(r).packages.get(n))] for name in names]
    return table(rows, ["package", "version"])


def peaks_used_table(group: ReportGroup) -> str | None:
    names = sorted({g.name for r in group.records for g in _host(r).gpus})
    rows = []
    for name in names:
        peak = mfu_table.find_peak(name)
        if peak is None:
            rows.append([name, NONE, "no peak known: MFU not computed", NONE])
        else:
            rows.append([name, f"{peak.bf16_dense_tflops:g}", peak.note or "", peak.source])
    return table(rows, ["GPU", "bf16 dense peak (TFLOP/s)", "note", "source"]) if rows else None
