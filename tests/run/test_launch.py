"""How the trainer starts on one process, one host's GPUs, or as one node of several; where the nodes meet
comes from the environment, never from the setup; how the lead decides for every node."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from harness.config import load_setup
from harness.errors import ConfigError, UserError
from harness.guard.agreement import NodeGuard
from harness.run.launch import default_run_id, parse_endpoint, rendezvous_from_env, trainer_command
from harness.run.nodes import Hello, decide

JOB = Path("/w/job.json")
CHILD = ["-m", "harness.run.child", str(JOB)]


@pytest.fixture(autouse=True)
def _no_rendezvous_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "LORABENCH_RDZV_ENDPOINT",
        "PET_RDZV_ENDPOINT",
        "LORABENCH_RDZV_ID",
        "PET_RDZV_ID",
        "LORABENCH_RDZV_TIMEOUT",
    ):
        monkeypatch.delenv(name, raising=False)


def test_one_process_one_host_and_several_nodes() -> None:
    assert trainer_command(load_setup(None), JOB) == [sys.executable, *CHILD]
    assert trainer_command(load_setup(None, ["gpus=2"]), JOB) == [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", *CHILD
    ]  # fmt: skip


def test_several_nodes_meet_through_c10d_at_the_endpoint_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    setup = load_setup(None, ["nodes=2", "gpus=4"])
    monkeypatch.setenv("LORABENCH_RDZV_ENDPOINT", "10.0.0.5:29500")
    monkeypatch.setenv("LORABENCH_RDZV_ID", "exp-c-1")
    rendezvous = rendezvous_from_env(setup, "cpu")
    assert trainer_command(setup, JOB, rendezvous) == [
        sys.executable, "-m", "torch.distributed.run", "--nnodes=2", "--nproc-per-node=4", "--rdzv-backend=c10d",
        "--rdzv-endpoint=10.0.0.5:29500", "--rdzv-id=exp-c-1", "--rdzv-conf=is_host=false,join_timeout=600",
        "--max-restarts=0", *CHILD,
    ]  # fmt: skip
    with pytest.raises(ValueError, match="needs its rendezvous"):
        trainer_command(setup, JOB)


def test_torchruns_own_variables_serve_too_and_the_default_id_is_the_same_on_every_node(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PET_RDZV_ENDPOINT", "lead.example")
    setup = load_setup(None, ["nodes=2"])
    rendezvous = rendezvous_from_env(setup, "cpu")
    assert (rendezvous.host, rendezvous.port, rendezvous.endpoint) == (
        "lead.example",
        29400,
        "lead.example:29400",
    )
    # The id comes from what the run is: the same setup on the same stack meets; another seed does not.
    assert rendezvous.run_id == default_run_id(load_setup(None, ["nodes=2"]), "cpu")
    assert rendezvous.run_id != default_run_id(load_setup(None, ["nodes=2", "recipe.seed=42"]), "cpu")
    assert rendezvous.run_id != default_run_id(setup, "rocm7.2-hf5.5")
    assert parse_endpoint("[fe80::1]:29401", "X") == ("fe80::1", 29401)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({}, r"\$LORABENCH_RDZV_ENDPOINT is not set; on every node set LORABENCH_RDZV_ENDPOINT=HOST:PORT"),
        ({"LORABENCH_RDZV_ENDPOINT": "a:b:c"}, r"\$LORABENCH_RDZV_ENDPOINT: 'a:b:c' is not HOST:PORT"),
        ({"LORABENCH_RDZV_ENDPOINT": "h:99999"}, "is not HOST:PORT"),
        (
            {"LORABENCH_RDZV_ENDPOINT": "h:1", "LORABENCH_RDZV_TIMEOUT": "soon"},
            r"\$LORABENCH_RDZV_TIMEOUT: 'soon'",
        ),
    ],
)
def test_a_missing_or_wrong_endpoint_is_one_clear_line(
    env: dict[str, str], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(UserError, match=message):
        rendezvous_from_env(load_setup(None, ["nodes=2"]), "cpu")


def test_nodes_is_part_of_the_setup_and_its_fingerprint_where_it_meets_is_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert load_setup(None).fingerprint_payload() == load_setup(None, ["nodes=1"]).fingerprint_payload()
    assert '"nodes":2' in load_setup(None, ["nodes=2"]).fingerprint_payload()
    assert load_setup(None, ["nodes=2", "gpus=4"]).world_size == 8
    with pytest.raises(ConfigError, match=r"nodes: input should be greater than or equal to 1, got 0"):
        load_setup(None, ["nodes=0"])
    with pytest.raises(
        ConfigError,
        match=r"eval.adapter: .* with gpus = 1, nodes = 2; set backend = 'hf' and gpus = 1 and nodes = 1",
    ):
        load_setup(None, ["nodes=2", "eval.adapter=/x"])
    with pytest.raises(ConfigError, match=r"recipe.compile: 'graphs' cannot run with nodes = 2"):
        load_setup(None, ["nodes=2", "recipe.compile=graphs"])


def hello(node: int, *, setup: str = "s1", stack: str = "cpu", guard: NodeGuard | None = None) -> Hello:
    # As the store hands it to the lead: posted as JSON, read back.
    posted = Hello(node=node, hostname=f"box{node}", host="nvidia-h200x2", stack=stack, setup=setup,
                   gpus=["NVIDIA H200"], guard=guard or NodeGuard(timed=False, ok=True))  # fmt: skip
    return Hello.model_validate_json(posted.model_dump_json())


def test_the_lead_decides_for_every_node() -> None:
    quiet = NodeGuard(timed=True, ok=True, lock="held")
    busy = NodeGuard(
        timed=True, ok=False, reason="refused to time: 3 GB downloaded. use --allow-noisy", lock="held"
    )
    assert decide([hello(0, guard=quiet), hello(1, guard=quiet)], allow_noisy=False) == (None, None)
    assert decide([hello(0, guard=quiet), hello(1, guard=busy)], allow_noisy=False) == (
        "refused", "node 1 (box1, nvidia-h200x2): refused to time: 3 GB downloaded. use --allow-noisy"
    )  # fmt: skip
    assert decide([hello(0, guard=quiet), hello(1, guard=busy)], allow_noisy=True) == (None, None)
    status, reason = decide([hello(0), hello(1, setup="s2"), hello(2)], allow_noisy=False)
    assert status == "failed" and reason.startswith(
        "the nodes run different setups (file, seed and --set overrides): node 1 (box1, nvidia-h200x2): s2, against node 0"
    )
    status, reason = decide([hello(0), hello(1, stack="rocm7.2-hf5.5")], allow_noisy=False)
    assert status == "failed" and "different stacks: node 1 (box1, nvidia-h200x2): rocm7.2-hf5.5" in reason
