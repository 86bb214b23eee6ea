"""One run across several hosts (`nodes` > 1), top to bottom, as seen from one node's parent process.

Every node runs the same `lorabench run SETUP` with $LORABENCH_RDZV_ENDPOINT pointing at the lead
(harness.run.launch). The parents meet in the store at that endpoint (harness.run.nodegroup), then:

1. Provenance of this host.
2. Guard on every node (timed runs): each takes its own timed lock, without waiting, and pre-checks its
   own machine (harness.guard.agreement). Every node posts who it is and what its guard saw; the lead
   decides for all: one node busy → the run is refused, naming it; nodes with different setups or
   stacks → failed. No trainer has started yet, so a refusal costs seconds.
3–9. Every node starts torchrun (one process per GPU), which joins the same c10d rendezvous; each node
   staggers its own ranks' model loads; the lead node's first process scores and reports (harness.run.
   ranks). Each node's guard sampler watches its own host. While the trainers run, the lead watches every
   node's heartbeat; a node that stops answering is lost: the lead stops its own trainer (a collective
   waiting on a dead peer could hang) and the record is `killed`, naming the node, its host and ranks.
10. Each node posts how its trainer ended; the lead writes the one record, naming every node and rank,
   and posts it, so every node's `lorabench run` ends with the same status. A node that loses the lead
   writes a `killed` record itself, so no run vanishes.

A copy of the single-host recipe in harness.run.parent, with the differences above, rather than branches in it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any

import psutil

from harness.config import SetupConfig
from harness.errors import UserError
from harness.guard import Sampler, offline_env
from harness.guard.agreement import NodeGuard, guard_this_node, refusal
from harness.results import (
    MemoryStats,
    NodeInfo,
    RunRecord,
    data_identity,
    predictions_path,
    record_path,
    write_record,
)
from harness.run.adapter import keep_adapter
from harness.run.capped import ChildOutcome
from harness.run.launch import rendezvous_from_env, start_trainer
from harness.run.nodegroup import LeadLost, Liveness, NodeGroup
from harness.run.outcome import Job, Outcome, read_outcome
from harness.run.parent import (
    STOP_CAUSES,
    RunOptions,
    Stopped,
    check_and_sweep,
    record_base,
    stop_signals_raise,
    summary_line,
)
from harness.run.ranks import NODE_ENV
from harness.run.workdir import create_work_dir

END_WAIT_ENV = "LORABENCH_NODE_END_WAIT"  # after the lead's trainer ended, how long it waits for the others'
DEFAULT_END_WAIT_S = 120.0
SEEN_WAIT_S = 30.0


def run_on_nodes(setup: SetupConfig, options: RunOptions) -> tuple[RunRecord, Path]:
    """This node's part of the run. Every node returns the record; its path is on the lead's host unless
    this node wrote it (the lead, or a node that lost the lead)."""
    # Nothing has started yet: a bad input is a UserError on this node, before it joins the others.
    check_and_sweep(setup, options)
    rendezvous = rendezvous_from_env(setup, options.stack)
    started = time.perf_counter()
    # 1. Provenance of this host.
    base = record_base(setup, options)
    host, run_id, provenance = base["host"], base["run_id"], base["provenance"]
    group = NodeGroup(rendezvous, setup.nodes)
    with contextlib.ExitStack() as held, stop_signals_raise():  # `held`: this host's timed lock, through training
        # 2. This node's guard, then every node's: the lead decides for all.
        guard = guard_this_node(options.guard, held, timed=options.timed)
        group.post(f"node/{group.index}", {
            "node": group.index, "hostname": socket.gethostname(), "host": host, "stack": options.stack,
            "gpus": [str(g.get("name")) for g in provenance["host"].get("gpus") or []],
            # The setup with its data by content: copies of the data in other folders agree.
            "setup": hashlib.sha256(setup.fingerprint_payload(data_identity(setup.data.source)).encode()).hexdigest()[:16],
            "guard": guard.to_dict(),
        })  # fmt: skip
        try:
            hellos = group.gather("node", rendezvous.timeout_s, f"node {group.index}: the other nodes")
            if group.is_lead:
                status, reason = decide(hellos, options.allow_noisy)
                group.post("decision", {"status": status, "reason": reason})
            else:
                group.wait_for(["decision"], rendezvous.timeout_s, f"node {group.index}: the lead's decision")
                status, reason = group.read("decision")["status"], group.read("decision")["reason"]
        except LeadLost as exc:
            raise UserError(f"node {group.index}: the lead node was lost before the run began: {exc}") from None
        if status is not None:
            if not group.is_lead:
                try:
                    return received_record(group)
                except LeadLost as exc:
                    raise UserError(f"node {group.index}: the lead node was lost: {exc}") from None
            nodes = [node_info(h, status="busy" if not h["guard"]["ok"] else "ok") for h in hellos]
            guard_record = {"timed": options.timed, "precheck": guard.precheck, "nodes": [h["guard"] for h in hellos]}
            record = RunRecord(**base, status=status, reason=reason, guard=guard_record, nodes=nodes)
            return publish(group, record, write_record(options.results_dir, record))

        # 3–9. The trainers: torchrun on every node, one c10d rendezvous; the lead's first process reports.
        work_dir = create_work_dir(options.results_dir, run_id, base)
        job = Job(setup=setup, work_dir=work_dir.resolve(), quiet=options.quiet or not group.is_lead)
        env = {NODE_ENV: str(group.index), **(offline_env() if options.timed else {})}
        stopper = TrainerStopper(job.work_dir / "job.json")
        liveness = Liveness(group, on_lost=lambda node, why: stopper.stop(), on_ended=lambda node, end: stopper.stop(),
                            on_record=stopper.stop, ranks=lambda: local_ranks(job.work_dir))  # fmt: skip
        liveness.start()
        interrupted: BaseException | None = None
        child: ChildOutcome | None = None
        sampler: Sampler | None = None
        try:
            with Sampler(options.guard) if options.timed else contextlib.nullcontext() as sampler:
                child = start_trainer(job, cap_bytes=options.memory_cap_bytes, floor_bytes=options.memory_floor_bytes,
                                      extra_env=env, rendezvous=rendezvous)  # fmt: skip
        except (Stopped, KeyboardInterrupt) as exc:
            interrupted = exc
        ended = node_end(child, interrupted, guard, sampler, job.work_dir)
        if group.is_lead and 0 not in liveness.lost:
            # The others stop at once when the lead's trainer ended badly, instead of waiting in a collective.
            group.post("end/0", ended)

        # 10. The record: the lead writes it from every node's end; a node that lost the lead writes its own.
        try:
            if not group.is_lead:
                if 0 in liveness.lost:
                    raise LeadLost(liveness.lost[0])
                group.post(f"end/{group.index}", ended)
                record, path = received_record(group)
                shutil.rmtree(job.work_dir, ignore_errors=True)  # what its ranks wrote; the record is the lead's
                if interrupted is not None:  # the stop goes on up, as on one host: a shell loop stops too
                    print(summary_line(record, path), file=sys.stderr)
                    raise KeyboardInterrupt(str(interrupted)) from interrupted
                return record, path
            ends = wait_for_ends(group, liveness)
        except LeadLost as exc:
            liveness.lost.setdefault(0, str(exc))
            nodes = [node_info(h, status="lost" if h["node"] == 0 else "ok") for h in hellos]
            lead = node_name(hellos[0])
            mine = ended.get("reason") or "it ended with the lead gone"
            why = f"{lead}, the lead, was lost mid-run: {liveness.lost[0]}; written by node {group.index} instead ({mine})"
            record = RunRecord(**base, status="killed", reason=why, guard={"timed": options.timed}, nodes=nodes)
            path = write_record(options.results_dir, record)
            print(summary_line(record, path), file=sys.stderr)
            return record, path
        finally:
            liveness.close()
        outcome = lead_outcome(job.work_dir, child, interrupted)
        if outcome.traceback:
            (job.work_dir / "traceback.txt").write_text(outcome.traceback, encoding="utf-8")
            outcome.reason = f"{outcome.reason} (traceback: {job.work_dir / 'traceback.txt'})"
        for hello in hellos:  # the ranks each node saw start, for a node that never reported its end
            if group.has(f"ranks/{hello['node']}"):
                hello["ranks"] = group.read(f"ranks/{hello['node']}")
        record = lead_record(base, outcome, hellos, ends, liveness.lost, ended, options, started)
        produced = job.work_dir / "predictions.jsonl"
        if produced.is_file():
            record = record.model_copy(update={"predictions_file": predictions_path(record_path(options.results_dir, record)).name})
        path = write_record(options.results_dir, record)
        if produced.is_file():
            os.replace(produced, predictions_path(path))
        keep_adapter(job.work_dir / "adapter", path)
        if not outcome.traceback:
            shutil.rmtree(job.work_dir, ignore_errors=True)
        publish(group, record, path)
        if interrupted is not None:
            print(summary_line(record, path), file=sys.stderr)
            raise KeyboardInterrupt(str(interrupted)) from interrupted
        return record, path


def node_name(hello: dict[str, Any], ranks: list[int] | None = None) -> str:
    shown = f"; ranks {', '.join(map(str, ranks))}" if ranks else ""
    return f"node {hello['node']} ({hello['hostname']}, {hello['host']}{shown})"


def decide(hellos: list[dict[str, Any]], allow_noisy: bool) -> tuple[str | None, str | None]:
    """The lead's call for every node: (status, reason) that ends the run before training, or (None, None)."""
    lead = hellos[0]
    for field, what in (("setup", "setups (file, seed and --set overrides)"), ("stack", "stacks")):
        odd = [h for h in hellos[1:] if h[field] != lead[field]]
        if odd:
            names = ", ".join(f"{node_name(h)}: {h[field]}" for h in odd)
            return "failed", (
                f"the nodes run different {what}: {names}, against {node_name(lead)}: {lead[field]}; run the same "
                f"`lorabench run` on every node (one run is one {field})"
            )
    busy = refusal([(node_name(h), NodeGuard.from_dict(h["guard"])) for h in hellos])
    if busy and not allow_noisy:
        return "refused", busy
    return None, None


def node_info(hello: dict[str, Any], *, status: str = "ok", detail: str | None = None, ranks: list[int] | None = None,
              guard: dict[str, Any] | None = None) -> NodeInfo:  # fmt: skip
    node_guard = {**hello["guard"], **(guard or {})} if hello["guard"]["timed"] else None
    return NodeInfo(node=hello["node"], hostname=hello["hostname"], host=hello["host"], gpus=hello["gpus"],
                    ranks=ranks or [], status=status, detail=detail or (hello["guard"]["reason"] if status == "busy" else None),
                    guard=node_guard)  # fmt: skip


class TrainerStopper:
    """Stops this node's torchrun agent (SIGTERM: it stops its workers, which run in sessions of their own)."""

    def __init__(self, job_file: Path) -> None:
        self.job_file = str(job_file)

    def stop(self) -> None:
        for proc in psutil.Process().children(recursive=True):
            with contextlib.suppress(psutil.Error):
                cmdline = proc.cmdline()
                if "torch.distributed.run" in cmdline and self.job_file in cmdline:
                    proc.send_signal(signal.SIGTERM)


def local_ranks(work_dir: Path) -> list[int]:
    """The global ranks this node's trainer runs, from their event journals (`events-rank<N>.jsonl`; the
    lead's reporting process writes `events.jsonl`, and is named by the record's ranks)."""
    found = (p.name.removeprefix("events-rank").removesuffix(".jsonl") for p in work_dir.glob("events-rank*.jsonl"))
    return sorted(int(n) for n in found if n.isdigit())


def train_window(work_dir: Path) -> tuple[float, float] | None:
    """This node's train phase in wall-clock time, from any of its ranks' event journals."""
    for events_file in sorted(work_dir.glob("events*.jsonl")):
        stamps = {}
        for line in events_file.read_text(encoding="utf-8").splitlines():
            event = json.loads(line)
            if event["phase"] == "train":
                stamps[event["event"]] = event["t"]
        if {"start", "end"} <= stamps.keys():
            return stamps["start"], stamps["end"]
    return None


def node_end(
    child: ChildOutcome | None, interrupted: BaseException | None, guard: NodeGuard, sampler: Sampler | None,
    work_dir: Path,
) -> dict[str, Any]:  # fmt: skip
    """How this node's trainer ended, and whether its timing holds (its pre-check and its sampler)."""
    ended: dict[str, Any] = {"returncode": child.returncode if child else None, "ranks": local_ranks(work_dir)}
    if interrupted is not None:
        name = str(interrupted) if isinstance(interrupted, Stopped) else "SIGINT"
        ended["reason"] = f"stopped from outside by {STOP_CAUSES.get(name, name)} before the run ended"
        ended["stopped"] = True
    elif child is not None and child.returncode != 0:
        ended["reason"] = f"trainer {child.reason}"
    if sampler is not None:
        report = sampler.report(window=train_window(work_dir))
        ended["guard"] = {"sampler": report.to_dict(), "timing_valid": guard.ok and report.valid,
                          "timing_invalid_reason": report.reason or (None if guard.ok else guard.reason)}  # fmt: skip
    return ended


def wait_for_ends(group: NodeGroup, liveness: Liveness) -> dict[int, dict[str, Any]]:
    """Every other node's end post, until each has posted or is lost, or END_WAIT after the lead's own end."""
    deadline = time.monotonic() + float(os.environ.get(END_WAIT_ENV) or DEFAULT_END_WAIT_S)
    ends: dict[int, dict[str, Any]] = {}
    while True:
        pending = [n for n in range(1, group.nodes) if n not in ends and n not in liveness.lost]
        for node in pending:
            if group.has(f"end/{node}"):
                ends[node] = group.read(f"end/{node}")
        if not [n for n in pending if n not in ends] or time.monotonic() > deadline:
            return ends
        time.sleep(0.25)


def lead_outcome(work_dir: Path, child: ChildOutcome | None, interrupted: BaseException | None) -> Outcome:
    outcome = read_outcome(work_dir) or Outcome(
        status="killed", reason=f"trainer {child.reason if child and child.reason else 'ended'} before reporting an outcome"
    )
    if interrupted is not None:
        name = str(interrupted) if isinstance(interrupted, Stopped) else "SIGINT"
        outcome.status = "killed"
        outcome.reason = f"stopped from outside by {STOP_CAUSES.get(name, name)} before the run ended"
    if child is not None:
        memory = outcome.memory or MemoryStats(device=outcome.model.device if outcome.model else "unknown")
        outcome.memory = memory.model_copy(update={
            "peak_rss_bytes": child.peak_rss_bytes, "cap_method": child.cap_method, "watchdog_reading": child.reading or None,
        })  # fmt: skip
    return outcome


def lead_record(
    base: dict[str, Any], outcome: Outcome, hellos: list[dict[str, Any]], ends: dict[int, dict[str, Any]],
    lost: dict[int, str], lead_end: dict[str, Any], options: RunOptions, started: float,
) -> RunRecord:  # fmt: skip
    """The record from the lead's outcome and every node's end; a node lost or stopped from outside makes it
    `killed`, a node whose trainer failed while the lead's did not makes it `failed`, each naming the node."""
    ranks_of = {n: sorted(r.rank for r in outcome.ranks or [] if r.node == n) for n in range(len(hellos))}
    nodes: list[NodeInfo] = []
    problems: list[str] = []
    stopped: list[str] = []
    status, reason = outcome.status, outcome.reason
    for hello in hellos:
        n = hello["node"]
        end = lead_end if n == 0 else ends.get(n)
        ranks = ranks_of[n] or (end or {}).get("ranks") or hello.get("ranks") or None
        name = node_name(hello, ranks)
        if n in lost:
            nodes.append(node_info(hello, status="lost", detail=lost[n], ranks=ranks))
            problems.append(f"{name} was lost mid-run: {lost[n]}")
        elif end is None:
            wait = float(os.environ.get(END_WAIT_ENV) or DEFAULT_END_WAIT_S)
            detail = f"did not report how its trainer ended within {wait:g} s of the lead's"
            nodes.append(node_info(hello, status="failed", detail=detail, ranks=ranks))
            problems.append(f"{name} {detail}")
        else:
            failed = outcome.status != "ok" if n == 0 else end.get("returncode") != 0
            detail = (outcome.reason if n == 0 else end.get("reason")) if failed else None
            nodes.append(node_info(hello, status="failed" if failed else "ok", detail=detail, ranks=ranks, guard=end.get("guard")))
            if end.get("stopped") and n != 0:
                stopped.append(f"{name} was {detail}")
            elif failed and n != 0:
                problems.append(f"{name}: {detail}")
    if stopped or lost:  # a node lost, or stopped from outside (timeout, docker stop, a cancelled job)
        status = "killed"
        reason = "; ".join([*stopped, *problems]) + (f" (the lead's trainer then: {outcome.reason})" if outcome.reason else "")
    elif problems and status == "ok":
        status, reason = "failed", "; ".join(problems)
    elif problems:
        reason = f"{reason}; {'; '.join(problems)}"
    guard: dict[str, Any] = {"timed": options.timed}
    if options.timed:
        guard["precheck"] = hellos[0]["guard"]["precheck"]
        guard.update({k: v for k, v in (lead_end.get("guard") or {}).items() if k == "sampler"})
        invalid = [f"{node_name(h)}: {g.get('timing_invalid_reason')}" for h, g in
                   ((h, nodes[h["node"]].guard or {}) for h in hellos) if g.get("timing_valid") is not True]  # fmt: skip
        guard["timing_valid"] = not invalid
        guard["timing_invalid_reason"] = "; ".join(invalid) or None
    outcome.add_timings(total_s=round(time.perf_counter() - started, 2))
    record = RunRecord(
        **base, status=status, reason=reason, data=outcome.data, model=outcome.model, baseline=outcome.baseline,
        trained=outcome.trained, train=outcome.train, memory=outcome.memory, timings=outcome.timings,
        checks=outcome.checks, guard=guard, predictions_file=None, nodes=nodes, ranks=outcome.ranks,
    )  # fmt: skip
    return record


def publish(group: NodeGroup, record: RunRecord, path: Path) -> tuple[RunRecord, Path]:
    """Hand the record to every node (so each `lorabench run` ends with its status), then wait until each
    has read it: the store, hosted here, goes when this process ends."""
    group.post("record", {"record": record.model_dump(mode="json"), "path": str(path.resolve()),
                          "hostname": socket.gethostname()})  # fmt: skip
    others = [n for n in range(1, group.nodes) if not record.nodes or record.nodes[n].status != "lost"]
    with contextlib.suppress(UserError):
        group.wait_for([f"seen/{n}" for n in others], SEEN_WAIT_S, "the other nodes reading the record")
    return record, path


def received_record(group: NodeGroup) -> tuple[RunRecord, Path]:
    """The record the lead wrote (its path is on the lead's host)."""
    group.wait_for(["record"], float("inf"), f"node {group.index}: the lead's record")
    posted = group.read("record")
    group.post(f"seen/{group.index}", True)
    record = RunRecord.model_validate(posted["record"])
    print(f"node {group.index}: the record was written on the lead node {posted['hostname']}", file=sys.stderr)
    return record, Path(posted["path"])


__all__ = ["run_on_nodes"]
