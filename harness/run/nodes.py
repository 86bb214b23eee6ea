"""One run across several hosts (`nodes` > 1), top to bottom, as seen from one node's parent process.

Every node runs the same `lorabench run SETUP` with $LORABENCH_RDZV_ENDPOINT pointing at the lead
(harness.run.launch). After the supervisor's steps 0 and 1 (harness.run.supervisor), the parents meet
in the store at that endpoint (harness.run.nodegroup), then:

2. Guard on every node (timed runs): each takes its own timed lock, without waiting, and pre-checks its
   own machine (harness.guard.agreement). Every node posts who it is and what its guard saw; the lead
   decides for all: one node busy → the run is refused, naming it; nodes with different setups or
   stacks → failed. No trainer has started yet, so a refusal costs seconds.
3–9. Every node starts torchrun (one process per GPU), which joins the same c10d rendezvous; each node
   staggers its own ranks' model loads; the lead node's first process scores and reports (harness.run.
   ranks). Each node's guard sampler watches its own host. While the trainers run, the lead watches every
   node's heartbeat; a node that stops answering is lost: the lead stops its own trainer (a collective
   waiting on a dead peer could hang) and the record is `killed`, naming the node, its host and ranks.
10. Each node posts how its trainer ended; the lead writes the one record, naming every node and rank
   (through `harness.run.landing`, as a single run's: under the record's lock, atomically), and posts
   it, so every node's `lorabench run` ends with the same status. A node that loses the lead writes a
   `killed` record itself, so no run vanishes.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import psutil
from pydantic import BaseModel, ConfigDict, Field

from harness import settings
from harness.errors import UserError
from harness.guard import GuardRecord, Sampler, offline_env
from harness.guard.agreement import NodeGuard, guard_this_node, refusal
from harness.json_types import JsonObject
from harness.results import NodeInfo, NodeStatus, RunRecord, setup_digest
from harness.run.capped import ChildOutcome
from harness.run.landing import land
from harness.run.launch import Rendezvous, rendezvous_from_env, start_trainer
from harness.run.nodegroup import LeadLost, Liveness, NodeGroup
from harness.run.outcome import Outcome, train_window
from harness.run.plan import PLAN_FILE, RunPlan
from harness.run.ranks import NODE_ENV
from harness.run.supervisor import (
    Begun,
    Landed,
    Stopped,
    land_record,
    signal_name,
    stop_signals_raise,
    stopped_reason,
    summary_line,
    trainer_outcome,
)
from harness.run.workdir import create_work_dir

SEEN_WAIT_S = 30.0


class Hello(BaseModel):
    """Who a node is and what its guard saw, posted to the others when the nodes meet."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    node: int
    hostname: str
    host: str
    stack: str
    gpus: list[str]
    setup: str = Field(
        description="the setup's digest, data by content: copies of the data in other folders agree"
    )
    guard: NodeGuard
    ranks: list[int] | None = None  # the ranks it was seen to start (the lead adds them at the end)


class NodeEnd(BaseModel):
    """How one node's trainer ended, posted to the lead (the lead's own, to every node)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    returncode: int | None
    ranks: list[int]
    reason: str | None = None
    stopped: bool = False  # stopped from outside (a signal), not failed
    guard: GuardRecord | None = None  # timed runs: this node's sampler and whether its timing holds

    def to_post(self) -> JsonObject:
        # Only what was set, so the guard read back on the lead writes what this node's did.
        return self.model_dump(mode="json", exclude_unset=True)


@dataclass(frozen=True)
class NodeRun(Begun):
    """This node's part of one run, as every step after the nodes met sees it."""

    group: NodeGroup
    guard: NodeGuard  # this node's own guard
    hellos: list[Hello]  # every node's, lead first


class Nodes:
    """The supervisor's way across several hosts: the nodes meet in the store, the lead decides for all,
    every node trains, and the lead writes the one record (a node that lost the lead writes its own).
    Every node returns the record; its path is on the lead's host unless this node wrote it."""

    def run(self, begun: Begun) -> Landed:
        rendezvous = rendezvous_from_env(begun.setup, begun.options.stack)
        group = NodeGroup(rendezvous, begun.setup.nodes)
        # `held`: this host's timed lock, through training
        with contextlib.ExitStack() as held, stop_signals_raise():
            # 2. This node's guard, then every node's: the lead decides for all.
            guard = guard_this_node(begun.options.guard, held, timed=begun.options.timed)
            group.post(f"node/{group.index}", hello(begun, guard, group.index).model_dump(mode="json"))
            hellos, status, reason = agree(group, rendezvous.timeout_s, begun.options.allow_noisy)
            run = NodeRun(**vars(begun), group=group, guard=guard, hellos=hellos)
            if status is not None:
                return Landed(*ended_before_training(run, status, reason))
            # 3–10. The trainers on every node, then the one record.
            return train_and_record(run, rendezvous)


def hello(begun: Begun, guard: NodeGuard, index: int) -> Hello:
    """Who this node is and what its guard saw, for the others (the lead compares setups and stacks)."""
    return Hello(
        node=index,
        hostname=socket.gethostname(),
        host=begun.header.host,
        stack=begun.options.stack,
        gpus=[g.name for g in begun.header.provenance.host.gpus],
        setup=setup_digest(begun.setup),
        guard=guard,
    )


def agree(
    group: NodeGroup, timeout_s: float, allow_noisy: bool
) -> tuple[list[Hello], str | None, str | None]:
    """Every node's hello, and the lead's decision for all: (hellos, status, reason), status None to train."""
    try:
        hellos = [
            Hello.model_validate(h)
            for h in group.gather("node", timeout_s, f"node {group.index}: the other nodes")
        ]
        if group.is_lead:
            status, reason = decide(hellos, allow_noisy)
            group.post("decision", {"status": status, "reason": reason})
            return hellos, status, reason
        group.wait_for(["decision"], timeout_s, f"node {group.index}: the lead's decision")
        decision = group.read("decision")
        return hellos, decision["status"], decision["reason"]
    except LeadLost as exc:
        raise UserError(f"node {group.index}: the lead node was lost before the run began: {exc}") from None


def ended_before_training(run: NodeRun, status: str, reason: str | None) -> tuple[RunRecord, Path]:
    """The lead refused or failed the run before any trainer started: it writes the record, every node
    returns it."""
    if not run.group.is_lead:
        try:
            return received_record(run.group)
        except LeadLost as exc:
            raise UserError(f"node {run.group.index}: the lead node was lost: {exc}") from None
    nodes = [node_info(h, status="busy" if not h.guard.ok else "ok") for h in run.hellos]
    guard = GuardRecord(
        timed=run.options.timed, precheck=run.guard.precheck, nodes=[h.guard.to_dict() for h in run.hellos]
    )
    return publish(run.group, *land_untrained(run, status, reason, guard, nodes))


def train_and_record(run: NodeRun, rendezvous: Rendezvous) -> Landed:
    """3–9: torchrun on every node, one c10d rendezvous; the lead's first process reports. 10: the lead
    writes the record from every node's end; a node that lost the lead writes its own."""
    group = run.group
    work_dir = create_work_dir(run.options.results_dir, run.header)
    plan = RunPlan(setup=run.setup, work_dir=work_dir.resolve(), quiet=run.options.quiet or not group.is_lead)
    job_file = plan.work_dir / PLAN_FILE
    liveness = Liveness(
        group,
        on_lost=lambda node, why: stop_trainer(job_file),
        on_ended=lambda node, end: stop_trainer(job_file),
        on_record=lambda: stop_trainer(job_file),
        ranks=lambda: local_ranks(plan.work_dir),
    )
    liveness.start()
    child, interrupted, ended = train_here(run, plan, rendezvous)
    if group.is_lead and 0 not in liveness.lost:
        # The others stop at once when the lead's trainer ended badly, instead of waiting in a collective.
        group.post("end/0", ended.to_post())
    try:
        if not group.is_lead:
            return follower_ends(run, plan, liveness, ended, interrupted)
        ends = wait_for_ends(group, liveness)
    except LeadLost as exc:
        liveness.lost.setdefault(0, str(exc))
        return Landed(*lead_lost_record(run, liveness.lost[0], ended))
    finally:
        liveness.close()
    # What the lead's trainer left, read as on one host; `killed` when a stop from outside ended it.
    outcome = trainer_outcome(plan.work_dir, child, run.options.memory_cap_bytes) if child else Outcome()
    if interrupted is not None or child is None:
        outcome.status, outcome.reason = "killed", ended.reason
    nodes, guard = lead_verdict(run, outcome, ends, liveness.lost, ended)
    outcome.add_timings(total_s=round(time.perf_counter() - run.started, 2))
    record, path = land_record(run.options.results_dir, run.header, outcome, guard, plan.work_dir, nodes)
    return Landed(*publish(group, record, path), interrupted)


def train_here(
    run: NodeRun, plan: RunPlan, rendezvous: Rendezvous
) -> tuple[ChildOutcome | None, BaseException | None, NodeEnd]:
    """This node's torchrun to its end (or a stop from outside), and how it ended, for the lead."""
    env = {NODE_ENV: str(run.group.index), **(offline_env() if run.options.timed else {})}
    interrupted: BaseException | None = None
    child: ChildOutcome | None = None
    sampler: Sampler | None = None
    try:
        with Sampler(run.options.guard) if run.options.timed else contextlib.nullcontext() as sampler:
            child = start_trainer(
                plan,
                cap_bytes=run.options.memory_cap_bytes,
                floor_bytes=run.options.memory_floor_bytes,
                extra_env=env,
                rendezvous=rendezvous,
            )
    except (Stopped, KeyboardInterrupt) as exc:
        interrupted = exc
    return child, interrupted, node_end(child, interrupted, run.guard, sampler, plan.work_dir)


def follower_ends(
    run: NodeRun, plan: RunPlan, liveness: Liveness, ended: NodeEnd, interrupted: BaseException | None
) -> Landed:
    """A node other than the lead: posts how its trainer ended and returns the lead's record."""
    if 0 in liveness.lost:
        raise LeadLost(liveness.lost[0])
    run.group.post(f"end/{run.group.index}", ended.to_post())
    record, path = received_record(run.group)
    shutil.rmtree(plan.work_dir, ignore_errors=True)  # what its ranks wrote; the record is the lead's
    return Landed(record, path, interrupted)  # the stop goes on up, as on one host: a shell loop stops too


def lead_lost_record(run: NodeRun, why_lost: str, ended: NodeEnd) -> tuple[RunRecord, Path]:
    """A node that lost the lead mid-run writes a `killed` record itself, so no run vanishes."""
    nodes = [node_info(h, status="lost" if h.node == 0 else "ok") for h in run.hellos]
    mine = ended.reason or "it ended with the lead gone"
    why = f"{node_name(run.hellos[0])}, the lead, was lost mid-run: {why_lost}; written by node {run.group.index} instead ({mine})"
    record, path = land_untrained(run, "killed", why, GuardRecord(timed=run.options.timed), nodes)
    print(summary_line(record, path), file=sys.stderr)
    return record, path


def land_untrained(
    run: NodeRun, status: str, reason: str | None, guard: GuardRecord, nodes: list[NodeInfo]
) -> tuple[RunRecord, Path]:
    """A record with no trainer's outcome in it: the lead's decision before training, or a lead lost."""
    record = RunRecord.from_header(
        run.header, status=status, reason=reason, guard=guard.to_record(), nodes=nodes
    )
    landed = land(run.options.results_dir, run.header, lambda _path: record)
    assert landed is not None  # not late: `land` returns None only for a sweep's record
    return landed


def node_name(hello: Hello, ranks: list[int] | None = None) -> str:
    shown = f"; ranks {', '.join(map(str, ranks))}" if ranks else ""
    return f"node {hello.node} ({hello.hostname}, {hello.host}{shown})"


def decide(hellos: list[Hello], allow_noisy: bool) -> tuple[str | None, str | None]:
    """The lead's call for every node: (status, reason) that ends the run before training, or (None, None)."""
    lead = hellos[0]
    for field, what in (("setup", "setups (file, seed and --set overrides)"), ("stack", "stacks")):
        odd = [h for h in hellos[1:] if getattr(h, field) != getattr(lead, field)]
        if odd:
            names = ", ".join(f"{node_name(h)}: {getattr(h, field)}" for h in odd)
            return "failed", (
                f"the nodes run different {what}: {names}, against {node_name(lead)}: {getattr(lead, field)}; run the same "
                f"`lorabench run` on every node (one run is one {field})"
            )
    busy = refusal([(node_name(h), h.guard) for h in hellos])
    if busy and not allow_noisy:
        return "refused", busy
    return None, None


def node_info(
    hello: Hello,
    *,
    status: NodeStatus = "ok",
    detail: str | None = None,
    ranks: list[int] | None = None,
    guard: GuardRecord | None = None,
) -> NodeInfo:
    node_guard = (
        {**hello.guard.to_dict(), **(guard.to_record() if guard else {})} if hello.guard.timed else None
    )
    return NodeInfo(
        node=hello.node,
        hostname=hello.hostname,
        host=hello.host,
        gpus=hello.gpus,
        ranks=ranks or [],
        status=status,
        detail=detail or (hello.guard.reason if status == "busy" else None),
        guard=node_guard,
    )


def stop_trainer(job_file: Path) -> None:
    """Stops this node's torchrun agent (SIGTERM: it stops its workers, which run in sessions of their own)."""
    for proc in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            cmdline = proc.cmdline()
            if "torch.distributed.run" in cmdline and str(job_file) in cmdline:
                proc.send_signal(signal.SIGTERM)


def local_ranks(work_dir: Path) -> list[int]:
    """The global ranks this node's trainer runs, from their event journals (`events-rank<N>.jsonl`; the
    lead's reporting process writes `events.jsonl`, and is named by the record's ranks)."""
    found = (
        p.name.removeprefix("events-rank").removesuffix(".jsonl") for p in work_dir.glob("events-rank*.jsonl")
    )
    return sorted(int(n) for n in found if n.isdigit())


def node_end(
    child: ChildOutcome | None,
    interrupted: BaseException | None,
    guard: NodeGuard,
    sampler: Sampler | None,
    work_dir: Path,
) -> NodeEnd:
    """How this node's trainer ended, and whether its timing holds (its pre-check and its sampler)."""
    reason, stopped = None, interrupted is not None
    if interrupted is not None:
        reason = stopped_reason(signal_name(interrupted))
    elif child is not None and child.returncode != 0:
        reason = f"trainer {child.reason}"
    timing = None
    if sampler is not None:
        report = sampler.report(window=train_window(work_dir))
        timing = GuardRecord(
            sampler=report.to_dict(),
            timing_valid=guard.ok and report.valid,
            timing_invalid_reason=report.reason or (None if guard.ok else guard.reason),
        )
    return NodeEnd(
        returncode=child.returncode if child else None,
        ranks=local_ranks(work_dir),
        reason=reason,
        stopped=stopped,
        guard=timing,
    )


def wait_for_ends(group: NodeGroup, liveness: Liveness) -> dict[int, NodeEnd]:
    """Every other node's end post, until each has posted or is lost, or END_WAIT after the lead's own end."""
    deadline = time.monotonic() + settings.NODE_END_WAIT.value()
    ends: dict[int, NodeEnd] = {}
    while True:
        pending = [n for n in range(1, group.nodes) if n not in ends and n not in liveness.lost]
        for node in pending:
            if group.has(f"end/{node}"):
                ends[node] = NodeEnd.model_validate(group.read(f"end/{node}"))
        if not [n for n in pending if n not in ends] or time.monotonic() > deadline:
            return ends
        time.sleep(0.25)


def lead_verdict(
    run: NodeRun, outcome: Outcome, ends: dict[int, NodeEnd], lost: dict[int, str], lead_end: NodeEnd
) -> tuple[list[NodeInfo], GuardRecord]:
    """The run's status from the lead's outcome and every node's end, set on `outcome`: a node lost or
    stopped from outside makes it `killed`, a node whose trainer failed while the lead's did not makes it
    `failed`, each naming the node. Returns every node's line and the guard's verdict over all of them."""
    # The ranks each node was seen to start, for a node that never reported its end.
    hellos = [
        h.model_copy(update={"ranks": run.group.read(f"ranks/{h.node}")})
        if run.group.has(f"ranks/{h.node}")
        else h
        for h in run.hellos
    ]
    nodes, problems, stopped = judge_nodes(outcome, hellos, ends, lost, lead_end)
    if stopped or lost:  # a node lost, or stopped from outside (timeout, docker stop, a cancelled job)
        reason = "; ".join([*stopped, *problems]) + (
            f" (the lead's trainer then: {outcome.reason})" if outcome.reason else ""
        )
        outcome.status, outcome.reason = "killed", reason
    elif problems and outcome.status == "ok":
        outcome.status, outcome.reason = "failed", "; ".join(problems)
    elif problems:
        outcome.reason = f"{outcome.reason}; {'; '.join(problems)}"
    return nodes, nodes_guard(run, nodes, lead_end)


def judge_nodes(
    outcome: Outcome,
    hellos: list[Hello],
    ends: dict[int, NodeEnd],
    lost: dict[int, str],
    lead_end: NodeEnd,
) -> tuple[list[NodeInfo], list[str], list[str]]:
    """Every node's line in the record, the problems to name, and the nodes stopped from outside."""
    ranks_of = {n: sorted(r.rank for r in outcome.ranks or [] if r.node == n) for n in range(len(hellos))}
    nodes: list[NodeInfo] = []
    problems: list[str] = []
    stopped: list[str] = []
    for hello in hellos:
        n = hello.node
        end = lead_end if n == 0 else ends.get(n)
        ranks = ranks_of[n] or (end.ranks if end else None) or hello.ranks or None
        name = node_name(hello, ranks)
        if n in lost:
            nodes.append(node_info(hello, status="lost", detail=lost[n], ranks=ranks))
            problems.append(f"{name} was lost mid-run: {lost[n]}")
        elif end is None:
            wait = settings.NODE_END_WAIT.value()
            detail = f"did not report how its trainer ended within {wait:g} s of the lead's"
            nodes.append(node_info(hello, status="failed", detail=detail, ranks=ranks))
            problems.append(f"{name} {detail}")
        else:
            failed = outcome.status != "ok" if n == 0 else end.returncode != 0
            detail = (outcome.reason if n == 0 else end.reason) if failed else None
            nodes.append(
                node_info(
                    hello, status="failed" if failed else "ok", detail=detail, ranks=ranks, guard=end.guard
                )
            )
            if end.stopped and n != 0:
                stopped.append(f"{name} was {detail}")
            elif failed and n != 0:
                problems.append(f"{name}: {detail}")
    return nodes, problems, stopped


def nodes_guard(run: NodeRun, nodes: list[NodeInfo], lead_end: NodeEnd) -> GuardRecord:
    """The guard's verdict on a run over several hosts: the lead's pre-check and sampler, and the timing
    valid only when every node's was."""
    if not run.options.timed:
        return GuardRecord(timed=False)
    invalid = [
        f"{node_name(h)}: {g.get('timing_invalid_reason')}"
        for h, g in ((h, nodes[h.node].guard or {}) for h in run.hellos)
        if g.get("timing_valid") is not True
    ]
    sampler = {"sampler": lead_end.guard.sampler} if lead_end.guard is not None else {}
    return GuardRecord(
        timed=True,
        precheck=run.hellos[0].guard.precheck,
        **sampler,
        timing_valid=not invalid,
        timing_invalid_reason="; ".join(invalid) or None,
    )


def publish(group: NodeGroup, record: RunRecord, path: Path) -> tuple[RunRecord, Path]:
    """Hand the record to every node (so each `lorabench run` ends with its status), then wait until each
    has read it: the store, hosted here, goes when this process ends."""
    group.post(
        "record",
        {
            "record": record.model_dump(mode="json"),
            "path": str(path.resolve()),
            "hostname": socket.gethostname(),
        },
    )
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
    print(
        f"node {group.index}: the record was written on the lead node {posted['hostname']}", file=sys.stderr
    )
    return record, Path(posted["path"])


__all__ = ["Nodes"]
