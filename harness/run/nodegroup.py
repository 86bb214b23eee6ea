"""The lorabench parents of one multi-node run, meeting in torch.distributed's TCPStore at the rendezvous
endpoint — the store torchrun's c10d rendezvous then uses for its agents too.

The parent on the endpoint's host hosts the store and is node 0, the lead; every other parent joins it
and takes the next number. They post small JSON documents under `lorabench/<run id>/…` (who they are,
what their guard saw, how their trainer ended, the record) and beat a counter each, so the lead can tell
a node that stopped answering (lost: host down, network cut, its processes killed) from one still busy,
and a node can tell that the lead is gone (the store went with it).

Not covered: two runs sharing one rendezvous id at once; a lead whose host name does not resolve to the
endpoint's address (it would wait as a client for a store nobody hosts, and time out saying so).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from harness import settings
from harness.errors import UserError
from harness.json_types import JsonObject
from harness.run.launch import Rendezvous

BEAT_S = 1.0
POLL_S = 0.25


def lost_after_s() -> float:
    """A node whose counter stood still this long is lost. Generous: a busy host's parent may stall for seconds."""
    return settings.NODE_LOST_AFTER.value()


class LeadLost(Exception):
    """The store stopped answering: the lead node, which hosts it, is gone."""

    @classmethod
    def from_store_error(cls, exc: BaseException) -> LeadLost:
        # One wording whichever call noticed first (the liveness thread, a wait, a post): the record's reason
        # must not depend on that race.
        return cls(f"the rendezvous store it hosts stopped answering ({str(exc).splitlines()[0]})")


class NodeGroup:
    """This node's view of the group: its number, whether it leads, and the shared store."""

    def __init__(self, rendezvous: Rendezvous, nodes: int) -> None:
        from torch.distributed import TCPStore
        from torch.distributed.elastic.rendezvous.utils import _matches_machine_hostname

        self.rendezvous = rendezvous
        self.nodes = nodes
        timeout = timedelta(seconds=rendezvous.timeout_s)
        store = None
        # As torchrun's c10d backend does: the endpoint's host serves the store; when two nodes share one
        # host (loopback tests, two "nodes" on one box), the first to bind serves and the other joins.
        for as_server in (True, False) if _matches_machine_hostname(rendezvous.host) else (False,):
            try:
                store = TCPStore(
                    rendezvous.host,
                    rendezvous.port,
                    is_master=as_server,
                    wait_for_workers=False,
                    timeout=timeout,
                )
                self.is_lead = as_server
                break
            except RuntimeError as exc:
                if not as_server:
                    raise UserError(
                        f"cannot reach the rendezvous store at {rendezvous.endpoint} within {rendezvous.timeout_s:g} s "
                        f"({str(exc).splitlines()[0]}); start `lorabench run` on the lead node (the host of that "
                        "address) too, or fix $LORABENCH_RDZV_ENDPOINT"
                    ) from None
        assert store is not None
        self.store = store
        # The lead is 0; the others count themselves in after it (its store exists before they can connect).
        self.index = 0 if self.is_lead else int(store.add(self.key("joined"), 1))
        if self.index >= nodes:
            raise UserError(
                f"the rendezvous {rendezvous.run_id!r} at {rendezvous.endpoint} already has its {nodes} nodes; "
                f"this would be node {self.index + 1}. Set nodes = {self.index + 1} on every node, or give this run "
                "its own $LORABENCH_RDZV_ID"
            )

    def key(self, name: str) -> str:
        return f"lorabench/{self.rendezvous.run_id}/{name}"

    def post(self, name: str, value: Any) -> None:
        try:
            self.store.set(self.key(name), json.dumps(value))
        except RuntimeError as exc:  # DistNetworkError: the store, and the lead hosting it, are gone
            raise LeadLost.from_store_error(exc) from None

    def read(self, name: str) -> Any:
        try:
            return json.loads(self.store.get(self.key(name)))
        except RuntimeError as exc:
            raise LeadLost.from_store_error(exc) from None

    def has(self, name: str) -> bool:
        return bool(self.store.check([self.key(name)]))

    def wait_for(self, names: list[str], timeout_s: float, what: str) -> None:
        """Until every key is posted; LeadLost when the store goes, UserError naming the missing after the timeout."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                missing = [n for n in names if not self.has(n)]
            except RuntimeError as exc:
                raise LeadLost.from_store_error(exc) from None
            if not missing:
                return
            if time.monotonic() > deadline:
                raise UserError(
                    f"{what}: still waiting for {', '.join(missing)} at {self.rendezvous.endpoint} after {timeout_s:g} s; "
                    f"start `lorabench run` with the same setup on every one of the {self.nodes} nodes"
                )
            time.sleep(POLL_S)

    def gather(self, prefix: str, timeout_s: float, what: str) -> list[Any]:
        """Every node's `prefix/<n>` document, in node order."""
        names = [f"{prefix}/{n}" for n in range(self.nodes)]
        self.wait_for(names, timeout_s, what)
        return [self.read(name) for name in names]

    def client(self) -> Any:
        """A second connection to the store, for a thread of its own (a store client serves one caller)."""
        from torch.distributed import TCPStore

        return TCPStore(
            self.rendezvous.host,
            self.rendezvous.port,
            is_master=False,
            timeout=timedelta(seconds=max(lost_after_s(), 5.0)),
        )


class Liveness(threading.Thread):
    """Beats this node's counter every BEAT_S and posts the global ranks its trainer runs. Calls back, once
    per node, when the run cannot go on as it is:
    - `on_ended(node, end)`: another node's trainer ended badly (failed, stopped from outside): a collective
      waiting for its ranks would wait until the process group's timeout (half an hour), so stop ours;
    - `on_lost(node, why)`: the lead sees a node's counter stand still for `lost_after_s()`; another node
      sees the store stop answering (the lead, which hosts it, is gone);
    - `on_record()`: another node sees the lead's record already posted (the run ended without it)."""

    def __init__(
        self,
        group: NodeGroup,
        *,
        on_lost: Callable[[int, str], None],
        on_ended: Callable[[int, JsonObject], None],
        on_record: Callable[[], None],
        ranks: Callable[[], list[int]],
    ) -> None:
        super().__init__(name="lorabench-node-liveness", daemon=True)
        self.group = group
        self.on_lost, self.on_ended, self.on_record, self.ranks = on_lost, on_ended, on_record, ranks
        self.lost: dict[int, str] = {}
        self.ended: dict[int, JsonObject] = {}
        self.posted_ranks: list[int] = []
        self.stop = threading.Event()
        self.store = group.client()

    def key(self, name: str) -> str:
        return self.group.key(name)

    def run(self) -> None:
        me = self.group.index
        others = [n for n in range(self.group.nodes) if n != me]
        watched = {n: (-1, time.monotonic()) for n in others} if self.group.is_lead else {}
        limit = lost_after_s()
        while not self.stop.is_set():
            try:
                self.store.add(self.key(f"beat/{me}"), 1)
                # The global ranks this node runs, once its trainer has started them: a lost node is named by them.
                ranks = self.ranks()
                if ranks and ranks != self.posted_ranks:
                    self.store.set(self.key(f"ranks/{me}"), json.dumps(ranks))
                    self.posted_ranks = ranks
                if not self.group.is_lead and self.store.check([self.key("record")]):
                    self.on_record()
                    return
                for node in others:
                    if node not in self.ended and self.store.check([self.key(f"end/{node}")]):
                        self.ended[node] = end = json.loads(self.store.get(self.key(f"end/{node}")))
                        watched.pop(node, None)
                        if end.get("returncode") != 0:
                            self.on_ended(node, end)
                now = time.monotonic()
                for node, (count, since) in list(watched.items()):
                    current = int(self.store.add(self.key(f"beat/{node}"), 0))
                    if current != count:
                        watched[node] = (current, now)
                    elif now - since > limit:
                        del watched[node]
                        why = f"its lorabench process stopped answering the rendezvous store for {now - since:.0f} s"
                        self.lost[node] = why
                        self.on_lost(node, why)
            except RuntimeError as exc:  # DistNetworkError: the store, and the lead hosting it, are gone
                if not self.group.is_lead:
                    why = str(LeadLost.from_store_error(exc))
                    self.lost[0] = why
                    self.on_lost(0, why)
                return
            self.stop.wait(BEAT_S)

    def close(self) -> None:
        self.stop.set()
        if self.is_alive() and threading.current_thread() is not self:
            self.join(timeout=BEAT_S * 5)
        with contextlib.suppress(Exception):
            del self.store
