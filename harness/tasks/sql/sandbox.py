"""Run untrusted SQL (model output) against in-memory SQLite databases built from a CREATE TABLE context.

Guarantees: nothing touches disk (`:memory:` or a shared-cache in-memory scratch database; ATTACH,
VACUUM INTO and extensions are denied); an untrusted query may only read; time, memory and result size
are bounded, and a failure is a named outcome, never an exception:
- time: a budget of SQLite VM instructions (`budget.py`), so the same query stops at the same point
  however busy the machine is. Values are capped at MAX_VALUE_BYTES and the byte-heavy built-ins are
  charged for the bytes they move (`charges.py`, issues #27/#38), so one instruction stays short; a
  CPU-time net far behind (`Failure.CLOCK`) is the only machine-dependent outcome. Trusted DDL and
  scoring's rows may be longer (TRUSTED_VALUE_BYTES) until a connection is locked for queries.
- memory: SQLite's heap is capped process-wide (`PRAGMA hard_heap_limit`, 32 MiB; SQLite has no
  per-connection limit); past it the query fails (Failure.MEMORY). Rows handed to Python are capped.
- hostile text: SQL length, expression depth, columns, compound SELECTs, LIKE patterns are capped.

Not a process sandbox: it trusts the sqlite3 library, runs in the caller's process, and relies on
SQLite's memory statistics being compiled in (`tests/sql/test_sql_sandbox.py` checks it).
"""

from __future__ import annotations

import re
import sqlite3
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache

from harness.tasks.sql import charges
from harness.tasks.sql.budget import STATEMENT_INSTRUCTIONS, TICK, Budget, ProgressMeter
from harness.tasks.sql.charges import MAX_VALUE_BYTES

DEFAULT_MAX_ROWS = 10_000
# Bytes of rows handed to Python (text and blobs by length, anything else 8): a result far beyond any
# answer's, small enough that fetching it costs milliseconds.
DEFAULT_MAX_RESULT_BYTES = 4_000_000
MAX_SQL_BYTES = 20_000
# Until a connection is locked for untrusted queries: the context's DDL (a CREATE TABLE of 100
# columns is a schema row over 1,000 bytes) and the rows scoring draws are trusted, may be longer,
# and queries can still read and compare them.
TRUSTED_VALUE_BYTES = 1_000_000
# Scoring 300 answers of either shared data file peaks under 1 MiB of SQLite heap (issue #38); 32 MiB
# ends the byte-heavy DISTINCT/UNION/GROUP BY keys and sorts that only memory bounds (a 990-byte key
# per row) well inside a CPU second (reports/benchmarks/cpu/hostile_sql.txt).
HEAP_LIMIT_BYTES = 32 * 2**20
# Pragmas that only read the schema; every other pragma (including those that write a setting,
# e.g. `query_only = 0`, or touch files, e.g. `wal_checkpoint`) is denied.
_READ_ONLY_PRAGMAS = frozenset(
    {
        "table_info",
        "table_xinfo",
        "table_list",
        "index_list",
        "index_info",
        "index_xinfo",
        "foreign_key_list",
        "function_list",
        "collation_list",
        "pragma_list",
    }
)
# Functions that reach outside the database or could be compiled in on some builds.
_DENIED_FUNCTIONS = frozenset({"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"})
# Functions an untrusted query may not call: the JSON family parses or builds values near the cap in
# one instruction (99 `json_quote` of a 490-byte value per row ran 4.6 CPU s within a budget meant as
# one) and cannot be charged through a wrapper without changing results (a Python function drops the
# JSON subtype that nested JSON functions read). Text-to-SQL answers on these datasets never use it.
_UNCHARGEABLE_PREFIXES = ("json", "->")
# Action codes an untrusted query may need; everything else (writes, schema changes, transactions,
# ATTACH/DETACH, ANALYZE, savepoints, virtual tables) is denied.
_QUERY_ACTIONS = frozenset(
    {
        sqlite3.SQLITE_SELECT,
        sqlite3.SQLITE_READ,
        sqlite3.SQLITE_FUNCTION,
        sqlite3.SQLITE_RECURSIVE,
        sqlite3.SQLITE_PRAGMA,
    }
)
# Limits set on every connection: they bound memory and parser work for hostile text. A value (and so
# a table row or sort record) of at most MAX_VALUE_BYTES keeps every single-instruction function short.
_LIMITS: Mapping[int, int] = {
    sqlite3.SQLITE_LIMIT_LENGTH: TRUSTED_VALUE_BYTES,  # lowered to MAX_VALUE_BYTES by `_lock`
    sqlite3.SQLITE_LIMIT_SQL_LENGTH: MAX_SQL_BYTES,
    sqlite3.SQLITE_LIMIT_COLUMN: 500,
    sqlite3.SQLITE_LIMIT_EXPR_DEPTH: 200,
    sqlite3.SQLITE_LIMIT_COMPOUND_SELECT: 50,
    sqlite3.SQLITE_LIMIT_VDBE_OP: 250_000,
    sqlite3.SQLITE_LIMIT_FUNCTION_ARG: 100,
    sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH: 1_000,
    sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER: 1_000,
    sqlite3.SQLITE_LIMIT_ATTACHED: 0,
    sqlite3.SQLITE_LIMIT_TRIGGER_DEPTH: 1,
    sqlite3.SQLITE_LIMIT_WORKER_THREADS: 0,
}


class Failure(StrEnum):
    """Why a query produced no result."""

    ERROR = "error"  # SQLite rejected or failed it (syntax, unknown column, several statements...)
    BUDGET = "budget"  # ran past its budget of VM instructions and was interrupted (deterministic)
    CLOCK = "clock"  # stopped by the CPU-time safety net: the one failure that depends on the machine
    DENIED = "denied"  # the authorizer refused an action (ATTACH, a write, a pragma, an extension)
    TOO_MANY_ROWS = "too_many_rows"  # returned more rows than the cap
    TOO_LARGE = "too_large"  # its rows would take more bytes than the cap
    MEMORY = "memory"  # SQLite's heap cap was reached (a huge sort, a huge string built many times)


@dataclass(frozen=True)
class QueryResult:
    """Rows of a query that ran, or the named failure and SQLite's message."""

    rows: tuple[tuple[object, ...], ...] = ()
    failure: Failure | None = None
    message: str = ""

    @property
    def is_ok(self) -> bool:
        return self.failure is None


@dataclass(frozen=True)
class Column:
    name: str
    decl_type: str  # as written in the context, e.g. "VARCHAR"; affinity follows SQLite's rules


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]


@dataclass(frozen=True)
class Schema:
    """Tables of a context. `ddl` is what gets executed to build a database."""

    tables: tuple[Table, ...]
    ddl: str


class ContextError(ValueError):
    """The context's CREATE TABLE statements could not be executed."""


_CREATE_RE = re.compile(r"CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?([^\s(]+)\s*\(([^()]*)\)", re.IGNORECASE)


def quote_identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _unquote(name: str) -> str:
    if len(name) >= 2 and name[0] + name[-1] in ('""', "``", "[]"):
        return name[1:-1]
    return name


def _parse_simple_context(context: str) -> tuple[Table, ...] | None:
    """Tables of a sql-create-context style context, merged by name; None when the context is not
    only simple `CREATE TABLE name (col TYPE, ...)` statements.

    Why not just execute it: the dataset repeats a table with different column subsets
    ("CREATE TABLE Person (name ...); CREATE TABLE Person (age ...)") and uses keywords as names
    (`table`, `order`); merging and quoting keeps those rows scorable.
    """
    statements = [s.strip() for s in context.split(";") if s.strip()]
    merged: dict[str, tuple[str, dict[str, Column]]] = {}
    for statement in statements:
        match = _CREATE_RE.fullmatch(statement)
        if match is None:
            return None
        table_name = _unquote(match.group(1))
        _, columns = merged.setdefault(table_name.lower(), (table_name, {}))
        for part in match.group(2).split(","):
            words = part.split()
            if not words:
                return None
            column = Column(_unquote(words[0]), " ".join(words[1:]))
            columns.setdefault(column.name.lower(), column)
    return tuple(Table(name, tuple(cols.values())) for name, cols in merged.values())


def _ddl(tables: Sequence[Table]) -> str:
    statements = []
    for table in tables:
        cols = ", ".join(f"{quote_identifier(c.name)} {c.decl_type}".rstrip() for c in table.columns)
        statements.append(f"CREATE TABLE {quote_identifier(table.name)} ({cols});")
    return "\n".join(statements)


def _setup_authorizer(
    action: int, arg1: str | None, arg2: str | None, _db: str | None, _src: str | None
) -> int:
    # Context DDL is dataset text, not model output, but still may not reach outside the database.
    if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH, sqlite3.SQLITE_PRAGMA):
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in _DENIED_FUNCTIONS:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def _query_authorizer(
    action: int, arg1: str | None, arg2: str | None, _db: str | None, _src: str | None
) -> int:
    if action not in _QUERY_ACTIONS:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_PRAGMA and (arg1 or "").lower() not in _READ_ONLY_PRAGMAS:
        return sqlite3.SQLITE_DENY
    function = (arg2 or "").lower() if action == sqlite3.SQLITE_FUNCTION else ""
    if function in _DENIED_FUNCTIONS or function.startswith(_UNCHARGEABLE_PREFIXES):
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def _connect(uri: str = ":memory:") -> sqlite3.Connection:
    conn = sqlite3.connect(uri, isolation_level=None, check_same_thread=True, uri=uri != ":memory:")
    # Process-wide and only ever lowered (see the module docstring); setting it again is harmless.
    conn.execute(f"PRAGMA hard_heap_limit = {HEAP_LIMIT_BYTES}")
    # Sorts and temp b-trees of a huge query would otherwise spill to files in the temp directory.
    conn.execute("PRAGMA temp_store = MEMORY")
    # Builds without loadable-extension support lack the method: loading is impossible there anyway.
    if hasattr(conn, "enable_load_extension"):
        conn.enable_load_extension(False)
    for limit, value in _LIMITS.items():
        conn.setlimit(limit, value)
    charges.register(conn, _LIMITS)
    conn.set_authorizer(_setup_authorizer)
    return conn


@lru_cache(maxsize=4096)
def parse_schema(context: str) -> Schema:
    """Tables and columns of a context (cached: the same context is built many times).
    Raises ContextError when the context does not execute."""
    tables = _parse_simple_context(context)
    ddl = _ddl(tables) if tables is not None else context
    conn = _connect()
    try:
        conn.executescript(ddl)
        if tables is None:
            conn.set_authorizer(None)  # reading the catalogue needs the pragma the setup denies
            names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            tables = tuple(
                Table(
                    n,
                    tuple(
                        Column(r[1], r[2]) for r in conn.execute(f"PRAGMA table_info({quote_identifier(n)})")
                    ),
                )
                for n in names
            )
    except sqlite3.Error as exc:
        raise ContextError(f"context does not build: {exc}") from exc
    finally:
        conn.close()
    return Schema(tables, ddl)


SQLITE_INT_MAX = 2**63 - 1


def _storable(value: object) -> object:
    """SQLite integers are 64-bit: a bigger literal from model output (e.g. a 30-digit number) is stored
    as a float, as SQLite itself does with such a literal in SQL text, instead of raising OverflowError."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > SQLITE_INT_MAX:
        return float(value)
    return value


def _lock(conn: sqlite3.Connection) -> None:
    # Belt and braces behind the authorizer: the connection refuses writes even if a read slips by.
    conn.set_authorizer(None)  # the setup authorizer denies every pragma, this trusted one included
    conn.execute("PRAGMA query_only = ON")
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
    conn.set_authorizer(_query_authorizer)


def _insert_rows(
    conn: sqlite3.Connection, schema: Schema, rows: Mapping[str, Sequence[Sequence[object]]] | None
) -> None:
    for table in schema.tables:
        table_rows = (rows or {}).get(table.name)
        if table_rows:
            marks = ", ".join("?" * len(table.columns))
            conn.executemany(
                f"INSERT INTO {quote_identifier(table.name)} VALUES ({marks})",
                [tuple(map(_storable, row)) for row in table_rows],
            )


class ScratchDatabase:
    """One in-memory database of a context seen through three connections: a trusted writer that swaps
    rows in (`load`), and two locked readers for untrusted queries, `forward` and `backward` (tables scanned
    in reverse: a result that changes with the scan order leaves part of its answer to chance).

    Why not one connection per row set: the readers keep their compiled statements across loads (re-locking
    would expire them), so a query costs microseconds instead of a recompile. The database's random
    shared-cache name is never shown to the queries. Raises ContextError."""

    def __init__(self, context: str) -> None:
        self.schema = parse_schema(context)
        uri = f"file:lorabench-{uuid.uuid4().hex}?mode=memory&cache=shared"
        self.writer = _connect(uri)
        self._readers: list[sqlite3.Connection] = []
        try:
            self.writer.executescript(self.schema.ddl)
            self.writer.set_authorizer(None)  # trusted: only this class's own statements
            for reverse in (False, True):
                reader = _connect(uri)
                self._readers.append(reader)
                reader.set_authorizer(None)
                if reverse:
                    reader.execute("PRAGMA reverse_unordered_selects = ON")
                _lock(reader)
        except sqlite3.Error as exc:
            self.close()
            raise ContextError(f"context does not build: {exc}") from exc
        self.forward, self.backward = self._readers

    def load(self, rows: Mapping[str, Sequence[Sequence[object]]] | None) -> None:
        """Replace every table's rows. Raises ContextError when they do not fit."""
        try:
            self.writer.execute("BEGIN")
            for table in self.schema.tables:
                self.writer.execute(f"DELETE FROM {quote_identifier(table.name)}")
            _insert_rows(self.writer, self.schema, rows)
            self.writer.execute("COMMIT")
        except (sqlite3.Error, ValueError, OverflowError) as exc:
            if self.writer.in_transaction:
                self.writer.execute("ROLLBACK")
            raise ContextError(f"rows do not fit the context: {exc}") from exc

    def close(self) -> None:
        for conn in (*self._readers, self.writer):
            conn.close()

    def __enter__(self) -> ScratchDatabase:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def build_database(
    context: str, rows: Mapping[str, Sequence[Sequence[object]]] | None = None
) -> sqlite3.Connection:
    """A locked in-memory database with the context's tables and `rows` (table name -> rows, values in
    column order) inserted; only reads are allowed afterwards. Raises ContextError."""
    schema = parse_schema(context)
    conn = _connect()
    try:
        conn.executescript(schema.ddl)
        conn.set_authorizer(None)  # trusted inserts
        _insert_rows(conn, schema, rows)
        _lock(conn)
    except (sqlite3.Error, ValueError, OverflowError) as exc:
        conn.close()
        raise ContextError(f"context does not build: {exc}") from exc
    return conn


def _size(row: Sequence[object]) -> int:
    return 16 + sum(len(v) if isinstance(v, str | bytes) else 8 for v in row)


def _fetch_capped(cursor: sqlite3.Cursor, max_rows: int, max_bytes: int) -> QueryResult:
    """The statement's rows, fetched in batches and stopped as soon as they pass the row or byte cap."""
    rows: list[tuple[object, ...]] = []
    # A value is at most MAX_VALUE_BYTES, so rows are measured only once they could pass the cap.
    bound_per_row = 16 + len(cursor.description) * (MAX_VALUE_BYTES + 8)
    size, measured = 0, 0
    while batch := cursor.fetchmany(256):
        rows += batch
        if size + (len(rows) - measured) * bound_per_row > max_bytes:
            size += sum(map(_size, rows[measured:]))
            measured = len(rows)
        if len(rows) > max_rows:
            return QueryResult(failure=Failure.TOO_MANY_ROWS, message=f"more than {max_rows} rows")
        if size > max_bytes:
            return QueryResult(failure=Failure.TOO_LARGE, message=f"rows over {max_bytes} bytes")
    return QueryResult(rows=tuple(rows))


def _database_error(exc: sqlite3.DatabaseError, meter: ProgressMeter, budget: Budget) -> QueryResult:
    """Name why SQLite stopped the statement: the instruction budget (the meter interrupted it), the
    CPU safety net, the authorizer, or an error in the statement itself."""
    if meter.is_over_budget:
        return QueryResult(
            failure=Failure.BUDGET,
            message=f"ran past the budget of {budget.instructions:,} VM instructions",
        )
    if budget.net_fired:
        return _stopped_by_net(budget)
    if "not authorized" in str(exc) or "prohibited" in str(exc):
        return QueryResult(failure=Failure.DENIED, message=str(exc))
    return QueryResult(failure=Failure.ERROR, message=str(exc))


def run_query(
    conn: sqlite3.Connection,
    sql: str,
    *,
    budget: Budget | None = None,
    max_rows: int = DEFAULT_MAX_ROWS,
    max_bytes: int = DEFAULT_MAX_RESULT_BYTES,
) -> QueryResult:
    """Run one untrusted statement on a database from `build_database` within what is left of
    `budget` (charged with what it runs; a statement budget of its own when None), the row cap and
    the byte cap."""
    budget = Budget(STATEMENT_INSTRUCTIONS) if budget is None else budget
    if budget.net_fired:
        return _stopped_by_net(budget)
    if budget.left < TICK:
        return QueryResult(
            failure=Failure.BUDGET, message=f"no instructions left of the {budget.instructions:,} budget"
        )
    meter = budget.progress_handler()
    conn.set_progress_handler(meter, TICK)
    charges.set_meter(meter)
    cursor: sqlite3.Cursor | None = None
    try:
        cursor = conn.execute(sql)
        if cursor.description is None:
            return QueryResult(failure=Failure.ERROR, message="not a query: it returns no result set")
        return _fetch_capped(cursor, max_rows, max_bytes)
    except MemoryError:
        return QueryResult(
            failure=Failure.MEMORY, message=f"over SQLite's {HEAP_LIMIT_BYTES >> 20} MiB heap cap"
        )
    except sqlite3.DatabaseError as exc:
        return _database_error(exc, meter, budget)
    except Exception as exc:  # untrusted text must never raise: ProgrammingError, Warning, NUL bytes...
        return QueryResult(failure=Failure.ERROR, message=f"{type(exc).__name__}: {exc}")
    finally:
        if cursor is not None:
            cursor.close()  # an unfinished statement would keep its shared-cache table locks
        conn.set_progress_handler(None, 0)
        charges.set_meter(None)
        meter.settle()


def _stopped_by_net(budget: Budget) -> QueryResult:
    return QueryResult(
        failure=Failure.CLOCK,
        message=f"stopped by the safety net after {budget.net_cpu_s:.3g} s of CPU (depends on the machine, not deterministic)",
    )


def run_sql(
    sql: str,
    context: str,
    rows: Mapping[str, Sequence[Sequence[object]]] | None = None,
    *,
    budget: Budget | None = None,
    max_rows: int = DEFAULT_MAX_ROWS,
) -> QueryResult:
    """Build a database from `context` (empty unless `rows`), run `sql` on it, close it."""
    try:
        conn = build_database(context, rows)
    except ContextError as exc:
        return QueryResult(failure=Failure.ERROR, message=str(exc))
    try:
        return run_query(conn, sql, budget=budget, max_rows=max_rows)
    finally:
        conn.close()
