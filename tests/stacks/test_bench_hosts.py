"""The many-runners workflow's shape: every host × stack job is a known stack on labelled runners and uploads
an artifact of its own, and the report job reads every one of them (what tests/report/test_merged_report.py
renders from two such folders). actionlint checks the syntax (tests/stacks/test_images.py)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = yaml.safe_load((ROOT / ".github/workflows/bench-hosts.yml").read_text())
STACKS = tomllib.loads((ROOT / "lockfiles/stacks.toml").read_text())["stacks"]
LABELS = set(yaml.safe_load((ROOT / ".github/actionlint.yaml").read_text())["self-hosted-runner"]["labels"])


def steps(job: str) -> list[dict]:
    return WORKFLOW["jobs"][job]["steps"]


def test_every_job_is_a_known_stack_on_labelled_runners() -> None:
    include = WORKFLOW["jobs"]["bench"]["strategy"]["matrix"]["include"]
    assert {entry["stack"] for entry in include} == set(STACKS), "every pinned stack runs somewhere"
    for entry in include:
        assert entry["labels"][0] == "self-hosted" and set(entry["labels"][1:]) <= LABELS, entry
        accelerator = STACKS[entry["stack"]]["accelerator"]
        assert accelerator in entry["labels"] or (accelerator == "rocm" and "rocm" in entry["labels"]), entry
    pairs = [(e["host"], e["stack"]) for e in include]
    assert len(pairs) == len(set(pairs))
    # Exp E needs two stacks of one host, each its own artifact.
    hosts = {host for host, _ in pairs}
    assert any(sum(1 for h, _ in pairs if h == host) >= 2 for host in hosts)
    assert WORKFLOW["jobs"]["bench"]["strategy"]["fail-fast"] is False


def test_each_job_uploads_its_own_artifact_and_the_report_reads_them_all() -> None:
    upload = next(s for s in steps("bench") if s.get("uses", "").startswith("actions/upload-artifact"))
    assert (
        upload["with"]["name"] == "results-${{ matrix.host }}-${{ matrix.stack }}"
        and upload["if"] == "always()"
    )
    report = WORKFLOW["jobs"]["report"]
    assert report["needs"] == "bench" and report["if"] == "always()"
    download = next(s for s in steps("report") if s.get("uses", "").startswith("actions/download-artifact"))
    prefix = upload["with"]["name"].split("$")[0]
    assert download["with"]["pattern"] == f"{prefix}*"
    command = next(s["run"] for s in steps("report") if "lorabench report" in s.get("run", ""))
    assert re.search(rf"lorabench report {download['with']['path']}/{re.escape(prefix)}\* -o \S+", command), (
        command
    )
