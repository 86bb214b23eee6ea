"""The result record: one run (setup × seed on one stack and host), its schema, and how it lands on disk.

Layout: `<results>/<stack>/<host>/<experiment>/<setup>/seed-<n>.json`, with the per-question predictions
in `seed-<n>.predictions.jsonl` beside it. Writes are atomic (temp file + rename) and never overwrite a
different record: an older, different record is kept as `seed-<n>.prev-<created>.json`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    PrivateAttr,
    SerializeAsAny,
    SerializerFunctionWrapHandler,
    ValidationError,
    ValidatorFunctionWrapHandler,
    field_serializer,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from harness import atomic, catalog
from harness.autorecipe import fingerprint_context
from harness.config import SetupConfig
from harness.errors import UserError
from harness.json_types import JsonObject
from harness.origin import Provenance

# Changelog of the record format. Bump FORMAT_VERSION on any change readers must know about,
# and teach `upgrade_record` to lift older versions.
#   1 (2026-11-30): first version. Later the same version gained optional fields that older records lack:
#     train.step_s (steady seconds per step), timings.preflight_s,
#     timings.load_windows (DDP), model.adapter (eval.adapter runs), checks.*.seconds (preflight),
#     train.graphs (recipe.compile = "graphs"), model.attention and model.auto_settings (the
#     choice and why, fingerprint version 3).
#   2 (2026-12-01): the metric `executes` is `well_formed` (task-neutral: SQL that executes, a verdict in
#     its output contract). Version-1 records are lifted on load. Later the same version gained optional
#     fields, each left out of the JSON when unset: metrics.decoded_in and metrics.merged (how eval
#     decoded), a counter of the SQL task's (harness/tasks/sql/metrics.py) and a predictions-line key of its;
#     nodes and ranks (multi-node runs name every node, DDP runs every rank; absent otherwise); seeding (the
#     run's one seed and where it was set, harness/run/seeding.py).
#     Later still (2026-12-01, issue 25), each task owns its scores' fields (Metrics keeps the common ones;
#     harness/tasks/<name>/metrics.py adds the task's): a record's scores hold its task's fields only, so a
#     verdict record no longer carries the SQL task's fields as null (older ones load, those nulls dropped);
#     every SQL record reads and writes byte for byte as before.
#     Later still (2026-12-03, issues 37 and 38): provenance.environment (allocator and runtime variables as
#     set, harness/provenance.py ENVIRONMENT) and memory.before_training_peak_vram_bytes (peak_vram_bytes is
#     training's alone since); the record's setup is read as the setup model and its provenance as
#     harness/origin.py's, each writing back the keys it was read with. Schemas: harness/record_schema.py.
#     Later still (a171ae8, 2026-12-03): train.compile (recipe.compile as the steps ran, "auto" resolved).
#     Later still (2026-12-04): provenance.placement.mps (the run went through the suite's CUDA MPS server).
#     Later still (2026-12-05): metrics.decoded_by (how eval decoded: generate, shrinking or graphed).
FORMAT_VERSION = 2
SUPPORTED_VERSIONS = (1, 2)

Status = Literal["ok", "failed", "refused", "diverged", "killed"]


class Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Metrics(Record):
    """Scores on the test split, percentages with one decimal: the fields every task has.

    A task adds its own in its metrics model, a subclass (`harness/tasks/<name>/metrics.py`). A record's
    scores are validated with the model of the record's task (`RunRecord`); between the trainer and the
    parent (`harness.run.outcome`) the task's fields ride along as extra fields, unchecked until then."""

    model_config = ConfigDict(frozen=True, extra="allow")
    # A task model's keys in the order its records have them, among the fields here; keys it does not
    # name follow in declared order.
    json_key_order: ClassVar[tuple[str, ...]] = ()

    exact_match: float
    well_formed: float = Field(
        description="answers in the task's output form (each task's metrics model says which: "
        "harness/tasks/<name>/metrics.py)"
    )
    n: int
    eval_s: float | None = None
    cached: bool = Field(
        False, description="taken from the baseline cache (same model, split and eval settings)"
    )
    decoded_in: str | None = Field(
        None,
        description="the precision eval decoded in (eval.precision resolved)",
        exclude_if=lambda value: value is None,
    )
    merged: bool | None = Field(
        None,
        description="decoded with the adapter folded in (eval.merge_adapter resolved)",
        exclude_if=lambda value: value is None,
    )
    decoded_by: str | None = Field(
        None,
        description="how eval decoded: 'generate' (transformers' generate), 'shrinking' (a CPU's: a row "
        "leaves the batch once it has stopped) or 'graphed' (a GPU's: each decode step replayed from a CUDA "
        "graph, harness/run/graphed_decode.py); ways joined by '+' where batches differed",
        exclude_if=lambda value: value is None,
    )

    @model_serializer(mode="wrap")
    def _in_key_order(self, handler: SerializerFunctionWrapHandler) -> JsonObject:
        data: JsonObject = handler(self)
        return {**{key: data[key] for key in self.json_key_order if key in data}, **data}

    @classmethod
    def __get_pydantic_json_schema__(
        cls, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        # The schema of the fields: the key-order serializer above changes no key, only where it sits.
        return handler({key: value for key, value in schema.items() if key != "serialization"})  # type: ignore[misc]


def task_metrics(task: str, phase: str, value: Any) -> Any:
    """`value` (a Metrics, its fields, or None) as task `task`'s metrics model. A record of format 2 made
    before each task owned its fields carries the other tasks' fields as null: those are dropped."""
    model = catalog.metrics_model(task)
    if value is None or isinstance(value, model):
        return value
    fields = value.model_dump() if isinstance(value, Metrics) else value
    if not isinstance(fields, dict):
        return value  # pydantic names the wrong type
    fields = {key: v for key, v in fields.items() if v is not None or key in model.model_fields}
    try:
        return model.model_validate(fields)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(map(str, (phase, *error["loc"])))
        raise ValueError(
            f"{where}: {error['msg'].lower()} (task {task!r}), got {error.get('input')!r}"
        ) from None


class TrainStats(Record):
    steps_done: int = 0
    loss: list[float] = Field(default_factory=list)
    first_loss: float | None = None
    final_loss: float | None = Field(None, description="mean of the last 10% of steps (at least one)")
    train_s: float | None = None
    step_s: float | None = Field(
        None, description="median seconds per optimizer step, the first tenth of the steps (warm-up) left out"
    )
    tokens: int | None = Field(None, description="non-padding tokens seen by the model in training")
    tokens_per_s: float | None = None
    samples_per_s: float | None = None
    mfu: float | None = Field(
        None, description="model FLOPs utilisation against the GPU's bf16 dense peak, 0..1"
    )
    trainable_params: int | None = None
    total_params: int | None = None
    kernels: list[str] | None = Field(
        None,
        description="recipe.kernels: the fused kernels patched in for training, e.g. liger:swiglu",
        exclude_if=lambda value: value is None,
    )
    compile: str | None = Field(
        None,
        description="recipe.compile as the steps ran, 'auto' resolved (records of a lorabench before a171ae8 lack it: "
        "their 'auto' was graphs where train.graphs is set, else none)",
        exclude_if=lambda value: value is None,
    )
    graphs: dict[str, float | int] | None = Field(
        None,
        description="recipe.compile = 'graphs': shapes captured, capture_s (inside train_s), graphed_calls "
        "and eager_calls (decoder-layer calls replayed or run eager)",
        exclude_if=lambda value: value is None,
    )


class MemoryStats(Record):
    device: str
    peak_vram_bytes: int | None = Field(
        None,
        description="peak GPU memory of training (records made before 2026-12-03: of the whole run to the end "
        "of training, model load and baseline eval included)",
    )
    peak_rss_bytes: int | None = None
    peak_vram_per_gpu_bytes: list[int] | None = None
    before_training_peak_vram_bytes: int | None = Field(
        None,
        description="peak GPU memory of model load and baseline eval, read before training reset the counter "
        "(harness/gpu/peak.py); this process's (rank 0 under DDP)",
        exclude_if=lambda value: value is None,
    )
    cap_method: str | None = Field(
        None, description="how the trainer's memory was capped: systemd-run, rlimit or none"
    )
    watchdog_reading: dict[str, int] | None = Field(
        None, description="available memory etc. when the watchdog killed"
    )


class Timings(Record):
    load_s: float | None = None
    baseline_eval_s: float | None = None
    preflight_s: float | None = Field(None, description="the preflight checks, before the timed training")
    load_windows: list[list[float]] | None = Field(
        None, description="DDP: each rank's model load as [start, end], seconds from the first rank's start"
    )
    train_s: float | None = None
    eval_s: float | None = None
    total_s: float | None = Field(None, description="the parent's run, from its input checks to the record")
    wall_s: float | None = Field(
        None,
        description="the whole command: its process's start (interpreter, imports) to the record's content "
        "final (harness/run/timeline.py)",
        exclude_if=lambda value: value is None,
    )
    phases: dict[str, float] | None = Field(
        None,
        description="wall seconds of every phase of the command, in order, parent and trainer child: "
        "startup (interpreter, imports, config), inputs, provenance, guard, spawn, child_start (the child's "
        "interpreter and imports), data, load, baseline, lora, trainer, preflight, graph_capture, steps, "
        "post_checks, save_adapter, eval, score, child_exit, record",
        exclude_if=lambda value: value is None,
    )
    unaccounted_s: float | None = Field(
        None,
        description="wall_s minus the sum of phases: the seconds no phase covers",
        exclude_if=lambda value: value is None,
    )


class CheckVerdict(Record):
    """What one silent-bug check found (harness/checks): the verdict, a one-line detail and the evidence."""

    verdict: Literal["pass", "fail", "skipped", "error"]
    detail: str = ""
    evidence: JsonObject = Field(default_factory=dict)
    seconds: float | None = Field(None, description="preflight checks: what the check took")

    def __init__(
        self, verdict: str, detail: str = "", evidence: JsonObject | None = None, **fields: Any
    ) -> None:
        # Positional, as the checks write them: CheckVerdict("fail", "why", {...}).
        super().__init__(verdict=verdict, detail=detail, evidence=evidence or {}, **fields)


class DataInfo(Record):
    source: str
    split_hash: str
    n_rows: int
    n_train: int
    n_test: int


class ModelInfo(Record):
    source: str
    resolved: str = Field(description="the local folder the weights were read from")
    weights: Literal["pretrained", "random"] = "pretrained"
    precision: str
    device: str
    attention: str | None = Field(None, description="the attention implementation the model ran with")
    auto_settings: dict[str, str] | None = Field(
        None,
        description="settings the setup left to auto, each with what it resolved to on this host and why "
        "(harness/runtime.py)",
        exclude_if=lambda value: value is None,
    )
    adapter: JsonObject | None = Field(
        None,
        description="eval.adapter runs: the adapter scored (path, base model, precision it was trained in)",
    )


class RankInfo(Record):
    """One data-parallel process of a DDP or multi-node run, as it reported itself at the end of training."""

    rank: int
    local_rank: int
    node: int = Field(
        0, description="the lorabench node it ran on (0 = the lead node, which wrote the record)"
    )
    hostname: str
    device: str = Field(description="'cpu', or the GPU it drove: 'cuda:0 NVIDIA H200'")
    load_window: list[float] | None = Field(
        None, description="its model load as [start, end], seconds from the first rank's start"
    )
    peak_vram_bytes: int | None = None
    peak_rss_bytes: int | None = None


class Seeding(Record):
    """How the run's randomness was fixed: once, by `harness.run.seeding.seed_run`."""

    seed: int
    generators: list[str] = Field(
        description="the generators seeded: torch = torch's CPU generator and every GPU's"
    )
    where: str = Field(description="the one place the run seeds them")


NodeStatus = Literal["ok", "failed", "lost", "refused", "busy"]


class NodeInfo(Record):
    """One host of a multi-node run: who it was, what it had, what its guard saw and how it ended."""

    node: int = Field(description="0 = the lead node (hosts the rendezvous store, writes the record)")
    hostname: str
    host: str = Field(
        description="the host id (harness.provenance.host_id), as in a one-node record's `host`"
    )
    gpus: list[str] = Field(default_factory=list, description="names of the GPUs it had visible")
    ranks: list[int] = Field(default_factory=list, description="global ranks it ran")
    status: NodeStatus = "ok"
    detail: str | None = None
    guard: JsonObject | None = Field(
        None, description="timed runs: its pre-check, sampler verdict and timed lock"
    )


def as_written(model: BaseModel, data: JsonObject) -> JsonObject:
    """`data` (the model's dump) with only the fields that were set, at every depth: a record read from
    JSON writes back the keys it was read with, byte for byte, not a field it predates at its default."""
    out: JsonObject = {}
    for key, value in data.items():
        if key in model.model_fields_set:
            inner = getattr(model, key)
            out[key] = (
                as_written(inner, value)
                if isinstance(inner, BaseModel) and isinstance(value, dict)
                else value
            )
    return out


class WithSetup(Record):
    """A record part that carries the run's setup as the setup model (RecordHeader, RunRecord)."""

    # The setup as read from JSON, settings a later lorabench removed included: written back as it was.
    _setup_read: JsonObject | None = PrivateAttr(None)

    @model_validator(mode="wrap")
    @classmethod
    def _remember_setup(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        record = handler(data)
        setup = data.get("setup") if isinstance(data, dict) else None
        if isinstance(setup, SetupConfig):
            # A run's own setup, written in full: remembered as it will read back, so that a record
            # equals its own read-back (pydantic compares private attributes too).
            setup = setup.model_dump(mode="json")
        if isinstance(setup, dict):
            record._setup_read = setup
        return record

    @field_validator("setup", mode="before", check_fields=False)
    @classmethod
    def _setup_in_full(cls, value: Any) -> Any:
        # A setup handed over as the model is the run's own: every field counts as set, so each is written.
        if isinstance(value, SetupConfig):
            return value.model_dump(mode="json")
        return known_fields(value, SetupConfig) if isinstance(value, dict) else value

    @field_serializer("setup", mode="wrap", check_fields=False)
    def _setup_as_written(self, setup: SetupConfig, handler: SerializerFunctionWrapHandler) -> JsonObject:
        written = as_written(setup, handler(setup))
        read = self._setup_read
        return read if read is not None and known_fields(read, SetupConfig) == written else written


# A run id begins with its start, to the microsecond (harness.run.supervisor.new_run_id): `created` is cut to
# the second.
RUN_ID_TIME = "%Y%m%dT%H%M%S.%f"


class RecordHeader(WithSetup):
    """A record's fields known when its run starts (design step 1): built once by the parent, kept in the
    work folder (`run.json`), and carried to the record, whoever writes it (the parent, the lead node, a
    later run's sweep). `RunRecord` spells these fields again rather than inheriting them: a record's
    JSON keeps its key order (format_version, run_id, status, reason, created, …), and committed records
    re-read byte for byte."""

    run_id: str
    created: str
    experiment: str
    setup_name: str
    seed: int
    stack: str
    host: str
    fingerprint: str
    setup: SetupConfig
    provenance: Provenance = Provenance()

    def record_path(self, results_dir: Path) -> Path:
        return seed_record_path(
            results_dir, self.stack, self.host, self.experiment, self.setup_name, self.seed
        )


class RunRecord(WithSetup):
    format_version: int = FORMAT_VERSION
    run_id: str
    status: Status
    reason: str | None = None
    created: str
    experiment: str
    setup_name: str
    seed: int
    stack: str
    host: str
    fingerprint: str
    setup: SetupConfig
    provenance: Provenance = Provenance()
    data: DataInfo | None = None
    model: ModelInfo | None = None
    # Typed by the record's task (see `_scores_of_its_task`), written with the task model's fields.
    baseline: SerializeAsAny[Metrics] | None = None
    trained: SerializeAsAny[Metrics] | None = None
    train: TrainStats | None = None
    memory: MemoryStats | None = None
    timings: Timings = Timings()
    checks: dict[str, CheckVerdict] = Field(default_factory=dict)
    guard: JsonObject = Field(
        default_factory=dict, description="timed?, pre-check, sampler verdict and readings"
    )
    predictions_file: str | None = None
    seeding: Seeding | None = Field(
        None,
        description="how the run was seeded (records made before 2026-12-01 lack it: the same seed, set "
        "before the model's init and the adapter's)",
        exclude_if=lambda value: value is None,
    )
    nodes: list[NodeInfo] | None = Field(
        None, description="multi-node runs: every node, lead first", exclude_if=lambda value: value is None
    )
    ranks: list[RankInfo] | None = Field(
        None,
        description="DDP and multi-node runs: every rank, in rank order",
        exclude_if=lambda value: value is None,
    )

    @model_validator(mode="before")
    @classmethod
    def _scores_of_its_task(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        setup = data.get("setup")
        task = (
            setup.task
            if isinstance(setup, SetupConfig)
            else catalog.task_of(setup if isinstance(setup, dict) else {})
        )
        if task not in catalog.task_names():
            raise catalog.UnknownTask(task)
        return {
            **data,
            **{
                phase: task_metrics(task, phase, data[phase])
                for phase in ("baseline", "trained")
                if phase in data
            },
        }

    @property
    def task(self) -> str:
        return self.setup.task

    @property
    def setup_as_written(self) -> JsonObject:
        """The setup's fields this record names (read with it, or given): not those it predates."""
        return as_written(self.setup, self.setup.model_dump(mode="json"))

    @classmethod
    def from_header(cls, header: RecordHeader, **ending: Any) -> RunRecord:
        """The record of a run: its header and how it ended (status, reason, metrics, …)."""
        return cls(**dict(header), **ending)

    @property
    def gain(self) -> float | None:
        if self.baseline is None or self.trained is None:
            return None
        return round(self.trained.exact_match - self.baseline.exact_match, 1)


def slug(text: str) -> str:
    """A path-safe name: lowercase letters, digits, dots and dashes."""
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-") or "unknown"


def fingerprint_payload(setup: SetupConfig) -> str:
    """What a fingerprint hashes of a setup: its settings, with its data by content (`data_identity`)."""
    return setup.fingerprint_payload(data_identity(setup.data.source))


def setup_digest(setup: SetupConfig, *context: str, length: int = 16) -> str:
    """The one hash over a fingerprint payload (every caller comes here; a test holds it to that): the
    setup with its data by content, then `context` (stack, host kind), one per line, hex-cut to `length`."""
    text = "\n".join([fingerprint_payload(setup), *context])
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def run_fingerprint(setup: SetupConfig, stack: str, host_kind: str) -> str:
    """Same setup + stack + host kind → same fingerprint → a cached record may stand in for a new run
    (FINGERPRINT_VERSION 3): the setup with its data by content, the stack, and the host's kind
    (`harness.provenance.host_kind`), so a record made on another host of the same kind, from a copy of
    the data in another folder, answers the same question. An "auto" whose meaning changed on this host kind
    adds what it now means (harness.autorecipe.fingerprint_context)."""
    return setup_digest(setup, stack, host_kind, *fingerprint_context(setup, host_kind))


def data_identity(source: str) -> str:
    """A local data file as the sha256 of its bytes (two copies in two folders are the same data; an
    edited file is not); anything else (a hub id, the shipped verdict corpus) as its name."""
    path = Path(source).expanduser()
    try:
        stat = path.stat()
    except OSError:
        return source
    if not path.is_file():
        return source
    return _file_digest(str(path.resolve()), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=32)
def _file_digest(path: str, size: int, mtime_ns: int) -> str:
    # Keyed by size and mtime too, so an edited file is hashed again; a suite asks for one file many times.
    with open(path, "rb") as handle:
        return f"sha256:{hashlib.file_digest(handle, 'sha256').hexdigest()}"


def record_dir(results_dir: Path, stack: str, host: str, experiment: str, setup_name: str) -> Path:
    return results_dir / slug(stack) / slug(host) / experiment / setup_name


def seed_record_path(
    results_dir: Path, stack: str, host: str, experiment: str, setup_name: str, seed: int
) -> Path:
    """Where the record of one setup × seed on one stack and host lives (the only place that builds it)."""
    return record_dir(results_dir, stack, host, experiment, setup_name) / f"seed-{seed}.json"


def record_path(results_dir: Path, record: RunRecord) -> Path:
    return seed_record_path(
        results_dir, record.stack, record.host, record.experiment, record.setup_name, record.seed
    )


# What lies beside `seed-<n>.json` and belongs to that record: its predictions, its adapter, its
# traceback. When a newer record takes the name, these move with the old one to its `prev-` name.
BESIDE_SUFFIXES = (".predictions.jsonl", ".adapter", ".traceback.txt")


def beside(record_file: Path, suffix: str) -> Path:
    """`seed-<n><suffix>` beside `seed-<n>.json` (also for a kept `seed-<n>.prev-<…>.json`)."""
    return record_file.with_name(record_file.name.removesuffix(".json") + suffix)


def predictions_path(record_file: Path) -> Path:
    return beside(record_file, ".predictions.jsonl")


def record_lock_path(record_file: Path) -> Path:
    """The lock that guards one record's name: the suite holds it for a whole run, a run while it
    writes its record, a sweep while it recovers one. It lives with the host's other locks, named by
    the record's resolved path, not beside the record: results folders hold results only (a lock file
    cannot be removed safely while another process may be waiting on it, so it stays)."""
    from harness.locks import lock_dir

    key = hashlib.sha256(str(record_file.resolve()).encode()).hexdigest()[:16]
    return lock_dir() / f"lorabench-record-{key}.lock"


def previous_path(record_file: Path, old_created: str) -> Path:
    """The name a replaced record is kept under: `seed-<n>.prev-<created>.json`, made unique when two
    records share a creation second."""
    stem = record_file.name.removesuffix(".json")
    candidate = record_file.with_name(f"{stem}.prev-{slug(old_created)}.json")
    number = 2
    while candidate.exists() or any(beside(candidate, s).exists() for s in BESIDE_SUFFIXES):
        candidate = record_file.with_name(f"{stem}.prev-{slug(old_created)}-{number}.json")
        number += 1
    return candidate


def write_record(results_dir: Path, record: RunRecord, *, path: Path | None = None) -> Path:
    """Write atomically, at the record's place or at `path` (a kept previous record's name). A different
    record already at the path is kept under a `prev-` name first. A run's record is written through
    `harness.run.landing.land`, under the record's lock; tests and tools that make records call this."""
    path = path or record_path(results_dir, record)
    text = record.model_dump_json(indent=2) + "\n"
    if path.exists() or path.is_symlink():
        old_created = _held_by(path, text)
        if old_created is not None:
            keep = previous_path(path, old_created)
            os.replace(path, keep)
            # Its predictions, adapter and traceback go with it, so a kept record keeps its files.
            for suffix in BESIDE_SUFFIXES:
                if beside(path, suffix).exists():
                    os.replace(beside(path, suffix), beside(keep, suffix))
    atomic.write_text(path, text)
    return path


# A record is a few kB to a few MB; what holds its name and is larger than this is not read to be moved.
RECORD_READ_LIMIT = 64 << 20


def _held_by(path: Path, text: str) -> str | None:
    """The `created` of what holds a record's name, for the name it is kept under; None when it holds
    `text` already. What is not a record file (a folder, a FIFO, a dangling link, a huge file) is kept aside
    unread: before issue 39 it made every later landing of that setup and seed fail (or block on the
    FIFO), and each run was left to the next one's sweep, which failed the same way."""
    if not path.is_file():
        return "not-a-record-file"
    if path.stat().st_size > RECORD_READ_LIMIT:
        return "unreadable"
    old_text = path.read_text(encoding="utf-8", errors="replace")
    if old_text == text:
        return None
    try:
        return str(json.loads(old_text).get("created", "unknown"))
    except (json.JSONDecodeError, AttributeError):
        return "unreadable"


def upgrade_record(data: JsonObject, source: str) -> JsonObject:
    version = data.get("format_version")
    if version not in SUPPORTED_VERSIONS:
        shown = version if isinstance(version, int) and not isinstance(version, bool) else repr(version)
        newer = isinstance(version, int) and version > FORMAT_VERSION
        raise UserError(
            f"{source}: record format version {shown} not supported; this lorabench reads "
            f"{min(SUPPORTED_VERSIONS)}-{max(SUPPORTED_VERSIONS)}"
            + ("; upgrade lorabench to read it" if newer else "; was it written by lorabench?")
        )
    if version == 1:
        data = {**data, "format_version": 2}
        for phase in ("baseline", "trained"):
            metrics = data.get(phase)
            if isinstance(metrics, dict) and "executes" in metrics:
                lifted = dict(metrics)
                lifted["well_formed"] = lifted.pop("executes")
                data[phase] = lifted
    # A removed setting (recipe.micro_batches, issue #37: every run steps one batch, as "auto" and 1 did)
    # is left out when the setup is read (`known_fields`) and written back as it was read.
    setup = data.get("setup")
    if not isinstance(setup, dict):
        return data
    # Made before the field existed: read with today's default ("auto") the record would claim a setting it
    # never had. Every run used SDPA; the model's own modules ran.
    for table, key, then in (("model", "attention", "sdpa"), ("recipe", "kernels", "none")):
        fields = setup.get(table)
        if isinstance(fields, dict) and key not in fields:
            setup = {**setup, table: {**fields, key: then}}
    return {**data, "setup": setup}


def known_fields(tables: JsonObject, model: type[BaseModel]) -> JsonObject:
    """`tables` without the keys `model` no longer has, at every depth. The record's setup is the setup
    model; a setting a later lorabench removed (a switch deleted with its code) is left out on read, so
    every published record still reads (what the run did is in its fingerprint and figures)."""
    out: JsonObject = {}
    for key, value in tables.items():
        field = model.model_fields.get(key)
        if field is None:
            continue
        inner = field.annotation
        if isinstance(value, dict) and isinstance(inner, type) and issubclass(inner, BaseModel):
            value = known_fields(value, inner)
        out[key] = value
    return out


def load_record(path: Path) -> RunRecord:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"record not found: {path}") from None
    except IsADirectoryError:
        raise UserError(
            f"{path}: a folder, not a record; give a seed-N.json file or the results folder"
        ) from None
    except UnicodeDecodeError:
        raise UserError(
            f"{path}: binary data, not a JSON record; give a seed-N.json file written by lorabench"
        ) from None
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}: not a JSON record ({exc})") from None
    if not isinstance(data, dict):
        raise UserError(
            f"{path}: a JSON {type(data).__name__}, not a run record (an object with format_version, run_id, …)"
        )
    try:
        return RunRecord.model_validate(upgrade_record(data, str(path)))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'record'}: {e['msg'].lower()}" for e in exc.errors()[:3]
        )
        more = f" (and {exc.error_count() - 3} more)" if exc.error_count() > 3 else ""
        raise UserError(
            f"{path}: not a valid run record: {problems}{more}; was it written by lorabench?"
        ) from None


def find_records(paths: Iterable[Path]) -> list[Path]:
    """Record files under the given files/folders (predictions and kept previous records excluded)."""
    found: list[Path] = []
    for path in paths:
        if path.is_file():
            found.append(path)
        elif path.is_dir():
            found.extend(p for p in sorted(path.rglob("seed-*.json")) if ".prev-" not in p.name)
        else:
            raise UserError(f"no such results file or folder: {path}")
    return found
