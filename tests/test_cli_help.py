"""The command line as a new user meets it: every --help opens with whole sentences, and a bare
`lorabench` is a user mistake (one `error:` line, exit 2), as the README's error rules say."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys

import pytest

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
