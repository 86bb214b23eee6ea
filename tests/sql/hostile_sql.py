"""Byte-heavy hostile SQL (issue #38 item 6): statements that do few VM instructions and move many
bytes in each, so an instruction count alone lets them run for seconds. Each must end by its own
budget (Failure.BUDGET) or SQLite's heap cap (Failure.MEMORY), never the CPU-time safety net.

Shared by tests/sql/test_sql_hostile_bytes.py (which limit ends each) and
dev/bench_hostile_sql.py (the CPU seconds each takes, before and after the byte charges).
"""

from __future__ import annotations

from harness.tasks.sql.sandbox import Failure

CONTEXT = "CREATE TABLE t (a VARCHAR, b INTEGER)"
ROWS = {"t": [(f"a{i}", i) for i in range(20)]}


def _rows(columns: str, first: str, step: str, limit: str = "") -> str:
    """An endless (or LIMITed) recursive CTE `c(columns)` passing values along row by row."""
    return f"WITH RECURSIVE c({columns}) AS (SELECT {first} UNION ALL SELECT {step} FROM c{limit}) "


def _args(expression: str, count: int = 99) -> str:
    return ", ".join([expression] * count)


_TEXT_990 = _rows("n, s", "1, printf('%.990c', 'a')", "n + 1, s")
_MULTIBYTE_990 = _rows("n, s", "1, printf('%.495c', 'é')", "n + 1, s")
_ARROW = "s -> '$[300]'"
_TEXT_490 = _rows("n, s", "1, printf('%.490c', 'q')", "n + 1, s")
# 80 characters to strip with, the one that matches last: trim tries each of them per character.
_REPLACE = "replace(s, 'a', 'b')"
_STRIP = "printf('%.79c', 'b') || 'a'"

# name: (sql, the failure that must end it). The first five are issue #38's, as it timed them;
# the JSON family is denied to untrusted queries (sandbox.py).
HOSTILE_SQL: dict[str, tuple[str, Failure]] = {
    "trim(1 kB, 80 chars) per row": (
        _TEXT_990 + f"SELECT COUNT(*) FROM c WHERE trim(s, {_STRIP}) = 'z'",
        Failure.BUDGET,
    ),
    "min() of 99 randomblob(990) per row": (
        _rows("n", "1", "n + 1") + f"SELECT COUNT(*) FROM c WHERE min({_args('randomblob(990)')}) IS NULL",
        Failure.BUDGET,
    ),
    "count(DISTINCT hex(randomblob(495))), 100k rows": (
        _rows("n", "1", "n + 1", " LIMIT 100000") + "SELECT COUNT(DISTINCT hex(randomblob(495))) FROM c",
        Failure.BUDGET,
    ),
    "99 quote() of a 490-char column per row": (
        _TEXT_490 + f"SELECT COUNT(*) FROM c WHERE min({_args('quote(s)')}) IS NULL",
        Failure.BUDGET,
    ),
    "endless UNION CTE of 990-byte values": (
        "WITH RECURSIVE c(s) AS (SELECT randomblob(990) UNION SELECT randomblob(990) FROM c) SELECT COUNT(*) FROM c",
        Failure.BUDGET,
    ),
    # Ten more of the same family.
    "ltrim(1 kB, 80 chars) per row": (
        _TEXT_990 + f"SELECT COUNT(*) FROM c WHERE ltrim(s, {_STRIP}) = 'z'",
        Failure.BUDGET,
    ),
    "rtrim(1 kB, 80 multibyte chars) per row": (
        _rows("n, s", "1, printf('%.495c', 'é')", "n + 1, s")
        + "SELECT COUNT(*) FROM c WHERE rtrim(s, printf('%.79c', 'ü') || 'é') = 'z'",
        Failure.BUDGET,
    ),
    "99 upper() of 990 bytes per row": (
        _TEXT_990 + f"SELECT COUNT(*) FROM c WHERE min({_args('upper(s)')}) IS NULL",
        Failure.BUDGET,
    ),
    "99 lower() of 990 bytes per row": (
        _TEXT_990 + f"SELECT COUNT(*) FROM c WHERE min({_args('lower(s)')}) IS NULL",
        Failure.BUDGET,
    ),
    "99 hex() of 495 bytes per row": (
        _rows("n, s", "1, printf('%.495c', 'h')", "n + 1, s")
        + f"SELECT COUNT(*) FROM c WHERE min({_args('hex(s)')}) IS NULL",
        Failure.BUDGET,
    ),
    "99 substr() near the end of 990 multibyte bytes per row": (
        _MULTIBYTE_990 + f"SELECT COUNT(*) FROM c WHERE min({_args('substr(s, 490, 3)')}) IS NULL",
        Failure.BUDGET,
    ),
    "99 zeroblob(990) per row": (
        _rows("n", "1", "n + 1")
        + f"SELECT COUNT(*) FROM c WHERE min({_args('zeroblob(990 - n % 2)')}) IS NULL",
        Failure.BUDGET,
    ),
    "99 replace() of 990 bytes per row": (
        _TEXT_990 + f"SELECT COUNT(*) FROM c WHERE min({_args(_REPLACE)}) IS NULL",
        Failure.BUDGET,
    ),
    "endless UNION CTE, 985-byte shared prefix keys": (
        _rows("s, n", "printf('%.985c', 'k'), 1", "s, n + 1").replace("UNION ALL", "UNION")
        + "SELECT COUNT(*) FROM c",
        Failure.MEMORY,
    ),
    "COUNT(DISTINCT) of 990-byte keys, shared prefix": (
        _TEXT_990 + "SELECT COUNT(DISTINCT s || n) FROM c",
        Failure.MEMORY,
    ),
    "GROUP BY 490-byte keys, 300k rows": (
        _rows("n, s", "1, printf('%.485c', 'g')", "n + 1, s", " LIMIT 300000")
        + "SELECT COUNT(*) FROM (SELECT s || n AS k FROM c GROUP BY k)",
        Failure.MEMORY,
    ),
    "99 quote(randomblob(495)) per row": (
        _rows("n", "1", "n + 1")
        + f"SELECT COUNT(*) FROM c WHERE min({_args('quote(randomblob(495))', 49)}) IS NULL",
        Failure.BUDGET,
    ),
    "99 length() of 990 multibyte bytes per row": (
        _MULTIBYTE_990 + f"SELECT COUNT(*) FROM c WHERE min({_args('length(s)')}) IS NULL",
        Failure.BUDGET,
    ),
    "99 soundex() of 990 bytes per row": (
        _TEXT_990 + f"SELECT COUNT(*) FROM c WHERE min({_args('soundex(s)')}) IS NULL",
        Failure.BUDGET,
    ),
    "99 strftime() of 99 '%J' per row": (
        _rows("n, s", "1, replace(printf('%.99c', 'x'), 'x', '%J')", "n + 1, s")
        + f"SELECT COUNT(*) FROM c WHERE min({_args('strftime(s, n)')}) IS NULL",
        Failure.BUDGET,
    ),
    "99 json_quote() of 490 bytes per row": (
        _TEXT_490 + f"SELECT COUNT(*) FROM c WHERE min({_args('json_quote(s)')}) IS NULL",
        Failure.DENIED,
    ),
    "99 '->' on a 990-byte JSON array per row": (
        _rows("n, s", "1, '[' || replace(printf('%.330c', 'x'), 'x', '1,') || '1]'", "n + 1, s")
        + f"SELECT COUNT(*) FROM c WHERE min({_args(_ARROW)}) IS NULL",
        Failure.DENIED,
    ),
}
