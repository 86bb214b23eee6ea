"""A node's view of the group when the lead goes: a real TCPStore served by a lead process that gets SIGKILL."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from harness.run.launch import Rendezvous
from harness.run.nodegroup import LeadLost, NodeGroup
from tests.run.nodeslib import free_port

LEAD = """
import sys, time
from harness.run.launch import Rendezvous
from harness.run.nodegroup import NodeGroup
group = NodeGroup(Rendezvous("127.0.0.1", int(sys.argv[1]), "t", timeout_s=30), nodes=2)
assert group.is_lead
group.post("hello", 1)
print("serving", flush=True)
time.sleep(600)
"""


@pytest.fixture
def lost_lead() -> NodeGroup:
    """Node 1 of a two-node group whose lead (the store's host) was killed after node 1 joined."""
    port = free_port()
    lead = subprocess.Popen([sys.executable, "-c", LEAD, str(port)], stdout=subprocess.PIPE, text=True)
    try:
        assert lead.stdout is not None and lead.stdout.readline().strip() == "serving"
        group = NodeGroup(Rendezvous("127.0.0.1", port, "t", timeout_s=30), nodes=2)
        assert (group.is_lead, group.index, group.read("hello")) == (False, 1, 1)
    finally:
        lead.kill()
        lead.wait(timeout=30)
    time.sleep(0.5)  # the kernel closes the dead lead's sockets; the next call meets a closed peer
    return group


def post_end_then_wait(group: NodeGroup) -> None:
    """What node 1 does when its trainer ends: post its end, wait for the lead's record. The set alone can
    seem to succeed on a socket whose peer is gone (it expects no reply); the wait then meets the error."""
    group.post("end/1", {"returncode": 1})
    group.wait_for(["record"], 5, "node 1: the lead's record")


@pytest.mark.parametrize("call", ["post_end_then_wait", "read", "wait_for"])
def test_every_store_call_names_a_lost_lead_the_same_way(lost_lead: NodeGroup, call: str) -> None:
    """The record's reason must not depend on which call noticed first (CI once saw a bare "Broken pipe")."""
    calls = {
        "post_end_then_wait": lambda: post_end_then_wait(lost_lead),
        "read": lambda: lost_lead.read("hello"),
        "wait_for": lambda: lost_lead.wait_for(["record"], 5, "node 1: the lead's record"),
    }
    with pytest.raises(LeadLost, match=r"^the rendezvous store it hosts stopped answering \(.+\)$"):
        calls[call]()
