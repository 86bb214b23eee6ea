"""SQLite built-ins that move many bytes in one VM instruction, charged to the statement's budget
for those bytes (issue #27, issue #38 item 6).

Why: the budget counts VM instructions (`budget.py`), and one built-in call on values near the 1,000-byte
cap can run for seconds (reports/benchmarks/cpu/hostile_sql.txt). Each function below charges the budget
(`charge`), then runs SQLite's own implementation on a helper connection under the same limits, so results
do not change:
- every call: CALL_INSTRUCTIONS;
- bytes read and returned: one instruction per BYTES_PER_INSTRUCTION;
- functions that try one argument at every position of the other (instr, replace, LIKE, GLOB, trim with
  a character set): the product of the two lengths, charged before they run.
Charges are computed from the values alone, so the count stays deterministic. `printf`/`format` refuse a
width or precision over the value cap (`%.*c` with 1e9 ran 8 s in one instruction).
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Callable, Mapping

from harness.tasks.sql.budget import ProgressMeter

MAX_VALUE_BYTES = 1_000  # the longest value a locked query may make (see sandbox.py)
CALL_INSTRUCTIONS = 100
BYTES_PER_INSTRUCTION = 16

_PRINTF_SPEC = re.compile(r"%[-+ 0#,!]*(\*|\d+)?(?:\.(\*|\d+))?(?:ll|l)?(.)", re.DOTALL)
_helper = threading.local()
_running = threading.local()  # the meter of the statement this thread runs now (`metered`)
# Returned for a result the helper refuses as too big: a locked caller then refuses it with SQLite's
# own "string or blob too big", as the built-in would have.
_OVER_CAP = b"\0" * (MAX_VALUE_BYTES + 1)
# The most bytes a randomblob or zeroblob is charged for: the helper refuses more (its length limit).
_BLOB_CHARGE_BYTES = 2**20


class OverBudget(Exception):
    """Raised inside a charged function: SQLite stops the statement, `run_query` names the budget."""


def set_meter(meter: ProgressMeter | None) -> None:
    """The meter that charged functions on this thread charge from now on (None: none)."""
    _running.meter = meter


def charge(instructions: int) -> None:
    meter = getattr(_running, "meter", None)
    if meter is not None and not meter.charge(instructions):
        raise OverBudget


def _helper_connection(limits: Mapping[int, int]) -> sqlite3.Connection:
    """A plain connection that still has SQLite's own built-ins, under the sandbox's limits (the
    caller's length limit included: a trusted value may be longer than MAX_VALUE_BYTES until its
    connection is locked, and a result over a locked caller's limit is refused there)."""
    conn = getattr(_helper, "conn", None)
    if conn is None:
        conn = sqlite3.connect(":memory:")
        for limit, value in limits.items():
            conn.setlimit(limit, value)
        _helper.conn = conn
    return conn


def _run_builtin(sql: str, args: tuple[object, ...]) -> object:
    try:
        return _helper.conn.execute(sql, args).fetchone()[0]
    except sqlite3.DataError as exc:
        if "too big" not in str(exc):
            raise
        return _OVER_CAP


def _text_length(value: object) -> int:
    """Bytes of a value as SQLite holds it: UTF-8 for text, at most 24 characters for a number."""
    if isinstance(value, str):
        return len(value) if value.isascii() else len(value.encode("utf-8", "surrogatepass"))
    return len(value) if isinstance(value, bytes) else 24


def _int_arg(value: object) -> int:
    try:
        return abs(int(float(value)))  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return 0  # SQLite reads a non-number as 0


def _product_cost(args: tuple[object, ...]) -> int:
    """instr(h, n), replace(x, y, z), like(p, x), glob(p, x), trim(x, y): the second argument tried
    at every position of the first (or the reverse)."""
    if len(args) < 2:
        return _linear_cost(args)
    a, b = (_text_length(v) for v in args[:2])
    rest = sum(_text_length(v) for v in args[2:])
    return CALL_INSTRUCTIONS + (max(1, a) * max(1, b) + rest) // BYTES_PER_INSTRUCTION


def _linear_cost(args: tuple[object, ...]) -> int:
    return CALL_INSTRUCTIONS + sum(_text_length(v) for v in args) // BYTES_PER_INSTRUCTION


def _blob_cost(args: tuple[object, ...]) -> int:
    """randomblob(n), zeroblob(n): the n bytes asked for."""
    return CALL_INSTRUCTIONS + min(_int_arg(args[0]), _BLOB_CHARGE_BYTES) // BYTES_PER_INSTRUCTION


def _format_cost(args: tuple[object, ...]) -> int:
    """strftime(format, ...): each character of the format may be a conversion costing a number's
    formatting, some 16 bytes' worth."""
    return (
        CALL_INSTRUCTIONS
        + _text_length(args[0])
        + sum(_text_length(v) for v in args[1:]) // BYTES_PER_INSTRUCTION
    )


_Cost = Callable[[tuple[object, ...]], int]
# (name, number of arguments, cost before the call, deterministic); the result's bytes are charged after.
CHARGED_BUILTINS: tuple[tuple[str, int, _Cost, bool], ...] = (
    ("instr", 2, _product_cost, True),
    ("replace", 3, _product_cost, True),
    ("like", 2, _product_cost, True),
    ("like", 3, _product_cost, True),
    ("glob", 2, _product_cost, True),
    *((name, n, _product_cost, True) for name in ("trim", "ltrim", "rtrim") for n in (1, 2)),
    *((name, 1, _linear_cost, True) for name in ("upper", "lower", "hex", "quote", "length", "soundex")),
    *((name, n, _linear_cost, True) for name in ("substr", "substring") for n in (2, 3)),
    ("zeroblob", 1, _blob_cost, True),
    ("randomblob", 1, _blob_cost, False),  # not deterministic: SQLite must call it per row
    # A format of many '%J' or '%f' conversions: each one formats a number (10 CPU s uncharged).
    ("strftime", -1, _format_cost, False),  # not deterministic: 'now'
)


def _charged_builtin(name: str, n_args: int, cost: _Cost, limits: Mapping[int, int]) -> Callable[..., object]:
    """SQLite's own `name` (run by the helper connection, same semantics), charged first."""
    sql = f"SELECT {name}({', '.join('?' * n_args)})"

    def call(*args: object) -> object:
        charge(cost(args))
        _helper_connection(limits)
        result = _run_builtin(sql if n_args >= 0 else f"SELECT {name}({', '.join('?' * len(args))})", args)
        charge(_text_length(result) // BYTES_PER_INSTRUCTION)
        return result

    return call


def _printf_size(args: tuple[object, ...], fmt: str) -> int:
    """The largest width or precision `fmt` asks for, `*` read from `args`."""
    largest, next_arg = 0, 1
    for spec in _PRINTF_SPEC.finditer(fmt):
        width, precision, conversion = spec.groups()
        for part in (width, precision):
            if part == "*":
                size = _int_arg(args[next_arg]) if next_arg < len(args) else 0
                next_arg += 1
            else:
                size = int(part) if part else 0
            largest = max(largest, size)
        next_arg += conversion != "%"
    return largest


def _safe_printf(limits: Mapping[int, int]) -> Callable[..., object]:
    def call(*args: object) -> object:
        """SQLite's printf, refusing a width or precision above MAX_VALUE_BYTES."""
        if not args or args[0] is None:
            return None
        fmt = args[0] if isinstance(args[0], str) else str(args[0])
        charge(CALL_INSTRUCTIONS + len(fmt) // BYTES_PER_INSTRUCTION)
        size = _printf_size(args, fmt)
        if size > MAX_VALUE_BYTES:
            raise ValueError(f"printf width or precision {size} over the {MAX_VALUE_BYTES} cap")
        result = (
            _helper_connection(limits)
            .execute(f"SELECT printf({', '.join('?' * len(args))})", args)
            .fetchone()[0]
        )
        charge(_text_length(result) // BYTES_PER_INSTRUCTION)
        return result

    return call


def register(conn: sqlite3.Connection, limits: Mapping[int, int]) -> None:
    """Replace the byte-heavy built-ins of `conn` by their charged wrappers."""
    printf = _safe_printf(limits)
    for name in ("printf", "format"):
        conn.create_function(name, -1, printf, deterministic=True)
    for name, n_args, cost, deterministic in CHARGED_BUILTINS:
        conn.create_function(
            name, n_args, _charged_builtin(name, n_args, cost, limits), deterministic=deterministic
        )
