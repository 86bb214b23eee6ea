"""The GGUF conversion parses a file once and builds gguf's name table once, and leaves gguf as it was."""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np
import pytest

from harness.config import ModelConfig
from harness.models import PRESETS, converted_dir, gguf_read_once, model_files, preset_gguf


@pytest.fixture
def small_gguf(tmp_path: Path) -> Path:
    path = tmp_path / "small.gguf"
    writer = gguf.GGUFWriter(path, "llama")
    writer.add_block_count(2)
    writer.add_tensor("token_embd.weight", np.ones((4, 8), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_one_reader_per_file_and_one_name_table_within_a_conversion(small_gguf: Path) -> None:
    with gguf_read_once():
        first = gguf.GGUFReader(small_gguf)
        assert gguf.GGUFReader(str(small_gguf)) is first
        assert [t.name for t in first.tensors] == ["token_embd.weight"]
        arch = gguf.MODEL_ARCH.LLAMA
        assert gguf.get_tensor_name_map(arch, 2) is gguf.get_tensor_name_map(arch, 2)


def test_within_a_conversion_the_file_is_read_into_memory_and_reads_the_same(small_gguf: Path) -> None:
    # A memmap's every slice runs Python code: SmolLM2's vocabulary is ~4.5 million slices (a third of a cold
    # conversion on the Xeon: 8.8 → 5.5-6.1 s, the written model and tokenizer byte for byte the same).
    mapped = gguf.GGUFReader(small_gguf)
    with gguf_read_once():
        in_memory = gguf.GGUFReader(small_gguf)
    assert isinstance(mapped.data, np.memmap) and not isinstance(in_memory.data, np.memmap)
    assert list(in_memory.fields) == list(mapped.fields)
    assert [f.contents() for f in in_memory.fields.values()] == [f.contents() for f in mapped.fields.values()]
    assert np.array_equal(in_memory.tensors[0].data, mapped.tensors[0].data)


def test_a_span_inside_another_shares_its_reader(small_gguf: Path) -> None:
    # A first run's input checks and its conversion: one reader for both, and gguf restored once at the end.
    reader_class = gguf.GGUFReader
    with gguf_read_once():
        checked = gguf.GGUFReader(small_gguf)
        with gguf_read_once():
            assert gguf.GGUFReader(small_gguf) is checked
        assert gguf.GGUFReader(small_gguf) is checked  # the inner span's end restored nothing
    assert gguf.GGUFReader is reader_class


def test_gguf_is_restored_after_the_conversion_even_when_it_fails(small_gguf: Path) -> None:
    reader_class, name_map = gguf.GGUFReader, gguf.get_tensor_name_map
    with pytest.raises(RuntimeError), gguf_read_once():
        raise RuntimeError("conversion failed")
    assert (gguf.GGUFReader, gguf.get_tensor_name_map) == (reader_class, name_map)
    assert gguf.GGUFReader(small_gguf) is not gguf.GGUFReader(small_gguf)
    assert isinstance(gguf.GGUFReader(small_gguf).data, np.memmap)


def test_inputs_are_read_from_the_converted_folder_once_it_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before conversion the checks read the GGUF's own metadata; after it, the written-out config and
    tokenizer (the same ones), instead of parsing the GGUF again on every run."""
    monkeypatch.setenv("LORABENCH_CACHE", str(tmp_path / "cache"))
    gguf_path = preset_gguf("smollm2-135m")
    config = ModelConfig(source="smollm2-135m")
    assert model_files(config) == (gguf_path.parent, gguf_path.name)
    converted = converted_dir(gguf_path, PRESETS["smollm2-135m"].sha256)
    converted.mkdir(parents=True)
    (converted / "config.json").write_text("{}")
    assert model_files(config) == (converted, None)


def test_a_presets_copies_in_two_venvs_share_one_converted_folder(tmp_path: Path) -> None:
    """Each venv installs its own copy of a preset's GGUF; keyed by its pinned content, a new checkout finds
    the conversion (and the baseline answers keyed by it) another checkout made. Other files: by path."""
    here, there = tmp_path / "a" / "m.gguf", tmp_path / "b" / "m.gguf"
    for path in (here, there):
        path.parent.mkdir()
        path.write_bytes(b"GGUF")
    pinned = PRESETS["smollm2-135m"].sha256
    assert converted_dir(here, pinned) == converted_dir(there, pinned)
    assert converted_dir(here) != converted_dir(there)
