"""The command line as a new user meets it: every --help opens with whole sentences, and a bare
`lorabench` is a user mistake (one `error:` line, exit 2), as the README's error rules say."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys

import pytest

from harness import cli
from harness.cli import build_parser

# A whole sentence: a capital letter first, a full stop before the first blank line, no developer
# notation such as a backquoted command name in front.
SENTENCE = re.compile(r"^[A-Z][^\n`].*?[.?!](\s|$)", re.DOTALL)


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_the_top_level_help_opens_with_a_whole_sentence() -> None:
    description = build_parser().description or ""
    assert SENTENCE.match(description), description


@pytest.mark.parametrize("name", sorted(_subparsers()))
def test_every_command_help_opens_with_a_whole_sentence(name: str) -> None:
    description = _subparsers()[name].description or ""
    first_paragraph = description.split("\n\n")[0]
    assert SENTENCE.match(first_paragraph), f"lorabench {name} --help opens with: {first_paragraph[:120]!r}"


def test_a_developer_docstring_is_caught() -> None:
    # The check itself can fail: the old openings are not whole sentences.
    assert not SENTENCE.match("`lorabench run`: one setup × one seed, from data to a result record.")
    assert not SENTENCE.match("")


def test_bare_lorabench_is_an_error_line_and_exit_2() -> None:
    done = subprocess.run([sys.executable, "-m", "harness.cli"], capture_output=True, text=True, check=False)
    assert done.returncode == 2
    assert "lorabench: error: no command given" in done.stderr
    assert done.stdout == ""


def _json_help(parser: argparse.ArgumentParser) -> str | None:
    return next((a.help for a in parser._actions if "--json" in a.option_strings), None)


def _commands_with_results() -> dict[str, argparse.ArgumentParser]:
    """Every command that prints results, `stacks`' actions one by one (report and compare: their own)."""
    commands = {
        n: p for n, p in _subparsers().items() if n not in ("fetch", "publish", "stacks", "report", "compare")
    }
    stacks = next(a for a in _subparsers()["stacks"]._actions if isinstance(a, argparse._SubParsersAction))
    commands.update({f"stacks {n}": p for n, p in stacks.choices.items()})
    return commands


@pytest.mark.parametrize("name", sorted(_commands_with_results()))
def test_json_exists_and_means_the_same_on_every_command_that_prints_results(name: str) -> None:
    from harness.commands._output import JSON_HELP

    text = _json_help(_commands_with_results()[name])
    assert text is not None and text.startswith(JSON_HELP), f"lorabench {name} --json: {text!r}"


def test_json_on_stdout_is_json_alone() -> None:
    import json

    env_cmd = [sys.executable, "-m", "harness.cli"]
    for args in (["stacks", "verify", "cpu", "--json"], ["doctor", "--no-guard", "--json"]):
        done = subprocess.run([*env_cmd, *args], capture_output=True, text=True, check=False)
        assert done.returncode in (0, 2), done.stderr
        json.loads(done.stdout)  # nothing but the JSON


def _modules_after(argv: list[str]) -> set[str]:
    """The harness modules a fresh interpreter holds once the command line for `argv` is built."""
    code = (
        "import sys; from harness import cli; cli.build_parser(sys.argv[1:]); "
        "print(*sorted(m for m in sys.modules if m.startswith('harness.')))"
    )
    done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, check=True)
    return set(done.stdout.split())


def test_a_command_imports_only_its_own_module() -> None:
    # `lorabench guard` paid ~0.6 s for the scorecard stack and the run's launch code before it read its
    # first argument; every command module stays out unless its command is named.
    loaded = _modules_after(["--debug", "guard", "--help"])
    assert "harness.commands.guard" in loaded
    assert not loaded & {"harness.commands.report", "harness.commands.run", "harness.report.scorecard"}


def test_the_top_level_help_still_lists_every_command() -> None:
    for argv in (["--help"], ["--help", "run"], ["nosuch"], []):
        loaded = _modules_after(argv)
        assert {f"harness.commands.{name}" for name in cli.command_names()} <= loaded, argv
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "--help", "run"], capture_output=True, text=True, check=True
    )
    assert all(name in done.stdout for name in ("bench", "guard", "report", "stacks"))


@pytest.mark.parametrize("own_command_line", [True, False])
def test_the_command_s_process_ends_without_the_last_collection_and_a_caller_s_does_not(
    own_command_line: bool,
) -> None:
    """`lorabench` as its own process freezes the garbage collector as it ends (every atexit handler still
    runs): the interpreter's last collection over every module's objects is skipped. A caller that passes
    its own arguments (a test, a tool) keeps its collector as it was."""
    call = "cli.main()" if own_command_line else "cli.main(['guard', '--help'])"
    script = (
        "import atexit, gc, sys\n"
        "from harness import cli\n"
        "atexit.register(lambda: print('frozen', gc.get_freeze_count() > 0, flush=True))\n"
        "sys.argv = ['lorabench', 'guard', '--help']\n"
        f"try:\n    {call}\nexcept SystemExit:\n    pass\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == f"frozen {own_command_line}"
