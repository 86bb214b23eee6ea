"""The record's provenance as a frozen model (harness/origin.py): every published record's provenance
reads and writes back key for key, a fact no field names yet is kept, and nothing unset is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from harness.origin import Provenance
from harness.provenance import collect_provenance

PUBLISHED = sorted((Path(__file__).resolve().parents[1] / "reports" / "results").rglob("seed-*.json"))


@pytest.mark.parametrize("path", PUBLISHED, ids=lambda p: p.parent.name + "/" + p.name)
def test_published_provenance_reads_and_writes_back_key_for_key(path: Path) -> None:
    raw = json.loads(path.read_text(encoding="utf-8"))["provenance"]
    provenance = Provenance.model_validate(raw)
    assert json.dumps(provenance.model_dump(mode="json")) == json.dumps(raw)  # same keys, same order
    assert provenance.host.id and provenance.stack.name and provenance.git.sha


def test_readers_get_attributes_not_dict_lookups() -> None:
    h200 = next(p for p in PUBLISHED if "/nvidia-h200/exp_a/" in p.as_posix())
    provenance = Provenance.model_validate(json.loads(h200.read_text(encoding="utf-8"))["provenance"])
    assert provenance.host.gpus[0].name == "NVIDIA H200"
    assert provenance.git.source == "image build"  # "from" in the JSON
    assert provenance.environment == {}  # recorded there: none of the watched variables was set
    kept_aside = Path(__file__).resolve().parents[1] / "reports" / "untimed" / "cpu" / "cpu-amd-epyc-2c"
    older = next(kept_aside.rglob("seed-*.json"))
    made_before = Provenance.model_validate(json.loads(older.read_text(encoding="utf-8"))["provenance"])
    assert made_before.environment is None  # made before the environment was recorded


def test_nothing_unset_is_written_and_a_new_fact_is_kept() -> None:
    assert Provenance.model_validate({}).model_dump(mode="json") == {}
    found = Provenance.model_validate({"host": {"cpu": {"arch": "x86_64"}, "glibc": "2.39"}})
    assert found.model_dump(mode="json") == {"host": {"cpu": {"arch": "x86_64"}, "glibc": "2.39"}}


def test_a_wrong_type_is_refused_and_the_model_is_frozen() -> None:
    with pytest.raises(ValidationError):
        Provenance.model_validate({"host": {"ram_bytes": "lots"}})
    provenance = collect_provenance("cpu")
    with pytest.raises(ValidationError):
        provenance.host.kind = "other"  # type: ignore[misc]
    assert provenance.host.kind and provenance.stack.name == "cpu" and provenance.environment is not None
