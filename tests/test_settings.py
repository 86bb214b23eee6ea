"""harness.settings: every LORABENCH_* variable declared once, read only through it, named nowhere
undeclared; bad values refused with the variable, the value and the fix.

The scans are the house rule made checkable. What counts as a read: a string constant that *is* a
variable's name (`"LORABENCH_STACK"`, or an f-string that starts with one) — a read needs the exact
name as a key; and an `os.environ`/`getenv`/`env` lookup keyed by a settings name (`settings.X.name`, or
a module constant bound to one). Docstrings, comments and messages that name a variable among other words
(`"set LORABENCH_CACHE to a folder you may write"`) are for the user, not reads; the doc scan below keeps
those honest instead: every name they mention must be declared.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from harness import settings
from harness.cli import main
from harness.errors import UserError

ROOT = Path(__file__).resolve().parents[1]
FULL_NAME = re.compile(r"LORABENCH_[A-Z0-9_]*$")
MENTION = re.compile(r"LORABENCH_[A-Z0-9_]*")
# A string that looks like a variable but is none: a marker put in a chat template to find where an
# answer ends (harness/tasks/encoding.py). Never in the environment.
NOT_VARIABLES = frozenset({"LORABENCH_ANSWER"})


def python_sources() -> list[Path]:
    found = [*ROOT.glob("harness/**/*.py"), *ROOT.glob("benchmarks/**/*.py")]
    return sorted(p for p in found if p != ROOT / "harness" / "settings.py")


def name_literals(source: str) -> list[tuple[int, str]]:
    """(line, text) of each string constant in code that is a LORABENCH_ name, or an f-string starting with one."""
    hits = []
    for node in ast.walk(ast.parse(source)):  # an f-string's first part is a constant of its own
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and FULL_NAME.match(node.value):
            hits.append((node.lineno, node.value))
    return [(line, text) for line, text in hits if text not in NOT_VARIABLES]


def settings_aliases(sources: list[str]) -> set[str]:
    """Names of module constants bound to a settings name anywhere (`NODE_ENV = settings.NODE.name`)."""
    aliases = set()
    for source in sources:
        for node in ast.walk(ast.parse(source)):
            value = node.value if isinstance(node, ast.Assign) else None
            if (
                isinstance(value, ast.Attribute)
                and value.attr == "name"
                and ast.unparse(value.value).startswith("settings.")
            ):
                aliases |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return aliases


def environ_reads_of_settings(source: str, aliases: set[str]) -> list[tuple[int, str]]:
    """(line, code) of each environment lookup whose key is a settings name or an alias of one."""

    def is_environ(node: ast.expr) -> bool:
        return ast.unparse(node).split(".")[-1] in ("environ", "env", "environment")

    def is_ours(key: ast.expr) -> bool:
        text = ast.unparse(key)
        return (isinstance(key, ast.Name) and key.id in aliases) or (
            text.startswith("settings.") and text.endswith(".name")
        )

    hits = []
    for node in ast.walk(ast.parse(source)):
        key = None
        if isinstance(node, ast.Call) and node.args and isinstance(node.func, ast.Attribute):
            if (node.func.attr == "get" and is_environ(node.func.value)) or ast.unparse(
                node.func
            ) == "os.getenv":
                key = node.args[0]
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and is_environ(node.value):
            key = node.slice
        elif (
            isinstance(node, ast.Compare)
            and isinstance(node.ops[0], ast.In | ast.NotIn)
            and is_environ(node.comparators[0])
        ):
            key = node.left
        if key is not None and is_ours(key):
            hits.append((node.lineno, ast.unparse(node)))
    return hits


def undeclared(text: str) -> set[str]:
    """LORABENCH_ names in `text` that settings does not declare; `LORABENCH_IMAGE_DIGEST_{CPU,…}` (a name
    ending in _) stands for the declared names it starts."""
    names = set(MENTION.findall(text)) - NOT_VARIABLES
    return {
        n for n in names
        if n not in settings.REGISTRY and n not in settings.RETIRED and not (n.endswith("_") and any(d.startswith(n) for d in settings.REGISTRY))
    }  # fmt: skip


def test_no_variable_name_as_a_string_in_code_outside_settings() -> None:
    found = [
        f"{p.relative_to(ROOT)}:{line}: {text}"
        for p in python_sources()
        for line, text in name_literals(p.read_text())
    ]
    assert not found, "read these through harness.settings (declare them there if new):\n" + "\n".join(found)


def test_the_literal_scan_catches_a_read_and_lets_a_message_be() -> None:
    bug = 'import os\nx = os.environ.get("LORABENCH_MEM_CAP")\ny = f"LORABENCH_IMAGE_DIGEST_{x}"\n'
    assert [line for line, _ in name_literals(bug)] == [2, 3]
    clean = 'msg = "set LORABENCH_CACHE to a folder you may write"\nmarker = "LORABENCH_ANSWER"\n'
    assert name_literals(clean) == []


def test_no_environ_lookup_keyed_by_a_settings_name_outside_settings() -> None:
    sources = {p: p.read_text() for p in python_sources()}
    aliases = settings_aliases(list(sources.values()))
    found = [
        f"{p.relative_to(ROOT)}:{line}: {code}"
        for p, s in sources.items()
        for line, code in environ_reads_of_settings(s, aliases)
    ]
    assert not found, "use settings.X.get() (state for a trainer child goes in its run plan):\n" + "\n".join(
        found
    )


def test_the_lookup_scan_catches_reads_through_an_alias_or_a_name() -> None:
    bug = (
        "NODE_ENV = settings.NODE.name\n"
        "a = os.environ.get(NODE_ENV)\n"
        "b = os.environ[settings.DATA.name]\n"
        "c = NODE_ENV in os.environ\n"
        "d = facts.env.get(settings.STACK.name)\n"
        "env = {NODE_ENV: '1'}\n"  # a write for a child: allowed
    )
    aliases = settings_aliases([bug])
    assert aliases == {"NODE_ENV"}
    assert [line for line, _ in environ_reads_of_settings(bug, aliases)] == [2, 3, 4, 5]


def doc_files() -> list[Path]:
    """Every file a user or a maintainer reads names for: docs, compose, images, make, CI, scripts,
    the suite's data files, the harness (messages and docstrings included) and the tests."""
    patterns = ["README.md", "compose.yaml", "Dockerfile*", "Makefile", ".ci/*", "scripts/*", "benchmarks/**/*", "docs/**/*",
                "harness/**/*", "tests/**/*.py", "tests/**/*.yaml", "tests/data/**/*.json"]  # fmt: skip
    found = {
        p for pattern in patterns for p in ROOT.glob(pattern) if p.is_file() and "__pycache__" not in p.parts
    }
    return sorted(found - {Path(__file__).resolve()})


def test_every_variable_any_file_names_is_declared() -> None:
    found = {}
    for path in doc_files():
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if missing := undeclared(text):
            found[str(path.relative_to(ROOT))] = sorted(missing)
    assert not found, (
        f"declare these in harness/settings.py (name, type, default, meaning, who sets it): {found}"
    )


def test_the_doc_scan_catches_an_undeclared_name() -> None:
    # (This file is not scanned: it names undeclared variables on purpose.)
    text = "export LORABENCH_NOT_A_THING=1, LORABENCH_IMAGE_DIGEST_{CPU,ROCM}, $LORABENCH_STACK, LORABENCH_NOPE_{A,B}"
    assert undeclared(text) == {"LORABENCH_NOT_A_THING", "LORABENCH_NOPE_"}


def test_every_declaration_is_complete_and_its_default_reads() -> None:
    assert len(settings.REGISTRY) >= 50
    for setting in settings.REGISTRY.values():
        assert setting.meaning and setting.set_by in ("you", "image", "host_env.sh", "harness", "tests"), (
            setting.name
        )
        setting.get({})  # the default goes through the parser like a user's value: it must read
    with pytest.raises(ValueError, match="declared twice"):
        settings.declare("LORABENCH_STACK", str, "again", "you")


@pytest.mark.parametrize(
    ("name", "value", "words"),
    [
        ("LORABENCH_MEM_CAP", "banana", "is not a size; use bytes or a number with k, m, g"),
        ("LORABENCH_MEM_CAP", "0", "not a size above zero"),
        ("LORABENCH_MIN_FREE", "-1g", "not a size above zero"),
        ("LORABENCH_MEMORY_FLOOR", "1e999t", "is not a size"),
        ("LORABENCH_GIT_DIRTY", "maybe", "is not 1 or 0"),
        ("LORABENCH_NODE", "first", "is not a whole number"),
        (
            "LORABENCH_RDZV_TIMEOUT",
            "-1",
            "is not a positive number of seconds; set e.g. LORABENCH_RDZV_TIMEOUT=600",
        ),
        ("LORABENCH_NODE_LOST_AFTER", "soon", "is not a positive number of seconds"),
        ("LORABENCH_NODE_END_WAIT", "0", "is not a positive number of seconds"),
    ],
)
def test_a_bad_value_names_the_variable_the_value_and_the_fix(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, words: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(UserError) as caught:
        settings.lookup(name).get()
    message = str(caught.value)
    assert message.startswith(f"${name}: {value!r} ") and words in message, message
    assert "unset it" in message and "\n" not in message


def test_values_are_read_at_call_time_and_empty_means_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LORABENCH_MEMORY_FLOOR", "1g")
    assert settings.MEMORY_FLOOR.get() == 1 << 30
    monkeypatch.setenv("LORABENCH_MEMORY_FLOOR", "")
    assert settings.MEMORY_FLOOR.get() == 512 << 20
    monkeypatch.delenv("LORABENCH_MEMORY_FLOOR")
    assert settings.MEMORY_FLOOR.get() == 512 << 20
    monkeypatch.delenv("LORABENCH_MEM_CAP", raising=False)
    assert settings.MEM_CAP.get() is None
    monkeypatch.setenv("LORABENCH_CACHE", "~/elsewhere")
    assert settings.CACHE.value() == Path.home() / "elsewhere"
    assert (
        settings.STACK.get({"LORABENCH_STACK": " rocm7.2-hf5.5 "}) == "rocm7.2-hf5.5"
    )  # a recorded environment


def test_the_data_override_of_a_script_is_absent_when_the_variable_is(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from harness.config import load_setup

    exp_a = ROOT / "benchmarks" / "setups" / "exp_a.toml"
    monkeypatch.delenv("LORABENCH_DATA", raising=False)
    assert settings.data_source_sets() == []
    assert load_setup(exp_a, settings.data_source_sets()).data.source == "b-mc2/sql-create-context"
    monkeypatch.setenv("LORABENCH_DATA", "/data/train.jsonl")
    assert load_setup(exp_a, settings.data_source_sets()).data.source == "/data/train.jsonl"


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("4096", 4096),
        ("2g", 2 << 30),
        ("2G", 2 << 30),
        ("512MiB", 512 << 20),
        ("512mb", 512 << 20),
        ("1.5g", 3 << 29),
        (" 8k ", 8 << 10),
        ("1t", 1 << 40),
    ],
)
def test_sizes(text: str, size: int) -> None:
    assert settings.parse_size(text) == size


@pytest.mark.parametrize("text", ["", "g", "lots", "2x", "-1", "0k", "1e999t", "2 g b"])
def test_what_is_not_a_size(text: str) -> None:
    with pytest.raises(ValueError, match="is not a size"):
        settings.parse_size(text)


def test_doctor_settings_lists_every_variable_and_refuses_a_bad_value(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LORABENCH_MIN_FREE", "1g")
    assert main(["doctor", "--settings"]) == 0
    out = capsys.readouterr().out
    lines = {line.split()[0]: line for line in out.splitlines()[1:]}
    assert set(lines) == set(settings.REGISTRY)
    assert " 1g " in lines["LORABENCH_MIN_FREE"] and "free disk a run needs" in lines["LORABENCH_MIN_FREE"]
    assert "unset: default 512m" in lines["LORABENCH_MEMORY_FLOOR"]
    assert main(["doctor", "--settings", "--json"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["LORABENCH_MIN_FREE"]["value"] == "1g" and rows["LORABENCH_UID"]["read_by"] == "compose.yaml"
    monkeypatch.setenv("LORABENCH_MEM_CAP", "banana")
    assert main(["doctor", "--settings"]) == 2
    out = capsys.readouterr().out
    assert "✗ LORABENCH_MEM_CAP" in out and "$LORABENCH_MEM_CAP: 'banana' is not a size" in out


def test_help_points_at_the_settings_list(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "lorabench doctor --settings" in " ".join(capsys.readouterr().out.split())


def test_a_retired_switch_still_set_is_named_with_what_replaced_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A removed switch is read by nothing: a user who still sets one is told so, not left believing it
    changed the run (`--debug` replaced LORABENCH_DEBUG)."""
    monkeypatch.setenv("LORABENCH_DEBUG", "1")
    monkeypatch.setenv("LORABENCH_BYTECODE_CACHE", "0")
    assert main(["doctor", "--settings"]) == 0
    out, err = capsys.readouterr()
    assert "$LORABENCH_DEBUG is set but does nothing now: pass --debug" in out
    assert "$LORABENCH_BYTECODE_CACHE is set but does nothing now" in out
    # Every command says it, once per variable, before it runs.
    assert err.count("lorabench: warning: $LORABENCH_DEBUG is set but does nothing now") == 1
    monkeypatch.delenv("LORABENCH_DEBUG")
    monkeypatch.delenv("LORABENCH_BYTECODE_CACHE")
    assert main(["doctor", "--settings"]) == 0
    assert "does nothing now" not in "".join(capsys.readouterr())
