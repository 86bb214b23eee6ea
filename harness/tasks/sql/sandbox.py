"""Run untrusted SQL (model output) against in-memory SQLite databases built from a CREATE TABLE context.

What it guarantees: nothing touches disk (the database is `:memory:`, temporary storage is kept in
memory, ATTACH/DETACH and so VACUUM INTO are denied, extension loading is denied); an untrusted query
may only read (SELECT, WITH, recursive CTEs, ordinary functions, a short list of read-only pragmas);
every query has a wall-clock budget enforced by a progress handler, a cap on returned rows and a cap on
the size of any one value. A failure is a named outcome, never an exception.

What it does not cover: this is not a process sandbox. It trusts the sqlite3 library itself, it runs
in the caller's process, and memory is bounded only indirectly (by the time budget, the row cap and
SQLITE_LIMIT_LENGTH), not by a hard heap limit, because SQLite's heap limit is process-wide.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache

DEFAULT_BUDGET_S = 1.0
DEFAULT_MAX_ROWS = 10_000
# How many VM instructions between two clock reads: small enough that a 1 s budget overshoots by
# microseconds, large enough that the clock read costs nothing measurable.
_PROGRESS_EVERY = 1_000

# Pragmas that only read the schema; every other pragma (including those that write a setting,
# e.g. `query_only = 0`, or touch files, e.g. `wal_checkpoint`) is denied.
_READ_ONLY_PRAGMAS = frozenset(
    {"table_info", "table_xinfo", "table_list", "index_list", "index_info", "index_xinfo",
     "foreign_key_list", "function_list", "collation_list", "pragma_list"}
)
# Functions that reach outside the database or could be compiled in on some builds.
_DENIED_FUNCTIONS = frozenset({"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"})
# Action codes an untrusted query may need; everything else (writes, schema changes, transactions,
# ATTACH/DETACH, ANALYZE, savepoints, virtual tables) is denied.
_QUERY_ACTIONS = frozenset(
    {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE,
     sqlite3.SQLITE_PRAGMA}
)
# Limits set on every connection: they bound memory and parser work for hostile text.
_LIMITS: Mapping[int, int] = {
    sqlite3.SQLITE_LIMIT_LENGTH: 1_000_000,
    sqlite3.SQLITE_LIMIT_SQL_LENGTH: 100_000,
    sqlite3.SQLITE_LIMIT_COLUMN: 500,
    sqlite3.SQLITE_LIMIT_EXPR_DEPTH: 200,
    sqlite3.SQLITE_LIMIT_COMPOUND_SELECT: 50,
    sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH: 1_000,
    sqlite3.SQLITE_LIMIT_ATTACHED: 0,
    sqlite3.SQLITE_LIMIT_TRIGGER_DEPTH: 1,
    sqlite3.SQLITE_LIMIT_WORKER_THREADS: 0,
}


class Failure(StrEnum):
    """Why a query produced no result."""

    ERROR = "error"  # SQLite rejected or failed it (syntax, unknown column, several statements...)
    TIMEOUT = "timeout"  # ran past its budget and was interrupted
    DENIED = "denied"  # the authorizer refused an action (ATTACH, a write, a pragma, an extension)
    TOO_MANY_ROWS = "too_many_rows"  # returned more rows than the cap


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


def _setup_authorizer(action: int, arg1: str | None, arg2: str | None, _db: str | None, _src: str | None) -> int:
    # Context DDL is dataset text, not model output, but still may not reach outside the database.
    if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH, sqlite3.SQLITE_PRAGMA):
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in _DENIED_FUNCTIONS:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def _query_authorizer(action: int, arg1: str | None, arg2: str | None, _db: str | None, _src: str | None) -> int:
    if action not in _QUERY_ACTIONS:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_PRAGMA and (arg1 or "").lower() not in _READ_ONLY_PRAGMAS:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in _DENIED_FUNCTIONS:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def _connect() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=True)
    # Sorts and temp b-trees of a huge query would otherwise spill to files in the temp directory.
    conn.execute("PRAGMA temp_store = MEMORY")
    # Builds without loadable-extension support lack the method: loading is impossible there anyway.
    if hasattr(conn, "enable_load_extension"):
        conn.enable_load_extension(False)
    for limit, value in _LIMITS.items():
        conn.setlimit(limit, value)
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
                Table(n, tuple(Column(r[1], r[2]) for r in conn.execute(f"PRAGMA table_info({quote_identifier(n)})")))
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


def build_database(context: str, rows: Mapping[str, Sequence[Sequence[object]]] | None = None) -> sqlite3.Connection:
    """A locked in-memory database with the context's tables and `rows` (table name -> rows, values in
    column order) inserted; only reads are allowed afterwards. Raises ContextError."""
    schema = parse_schema(context)
    conn = _connect()
    try:
        conn.executescript(schema.ddl)
        for table in schema.tables:
            table_rows = (rows or {}).get(table.name)
            if table_rows:
                marks = ", ".join("?" * len(table.columns))
                conn.executemany(
                    f"INSERT INTO {quote_identifier(table.name)} VALUES ({marks})",
                    [tuple(map(_storable, row)) for row in table_rows],
                )
    except sqlite3.Error as exc:
        conn.close()
        raise ContextError(f"context does not build: {exc}") from exc
    # Belt and braces behind the authorizer: the connection refuses writes even if a read slips by.
    conn.set_authorizer(None)  # the setup authorizer denies every pragma, this trusted one included
    conn.execute("PRAGMA query_only = ON")
    conn.set_authorizer(_query_authorizer)
    return conn


def _progress_guard(deadline: float, fired: list[bool]) -> Callable[[], int]:
    def guard() -> int:
        if time.monotonic() > deadline:
            fired.append(True)
            return 1  # non-zero interrupts the statement
        return 0

    return guard


def run_query(
    conn: sqlite3.Connection, sql: str, *, budget_s: float = DEFAULT_BUDGET_S, max_rows: int = DEFAULT_MAX_ROWS
) -> QueryResult:
    """Run one untrusted statement on a database from `build_database`, within the budget and row cap."""
    fired: list[bool] = []
    conn.set_progress_handler(_progress_guard(time.monotonic() + budget_s, fired), _PROGRESS_EVERY)
    try:
        cursor = conn.execute(sql)
        if cursor.description is None:
            return QueryResult(failure=Failure.ERROR, message="not a query: it returns no result set")
        rows = cursor.fetchmany(max_rows + 1)
        if len(rows) > max_rows:
            return QueryResult(failure=Failure.TOO_MANY_ROWS, message=f"more than {max_rows} rows")
        return QueryResult(rows=tuple(rows))
    except sqlite3.DatabaseError as exc:
        if fired:
            return QueryResult(failure=Failure.TIMEOUT, message=f"ran past the {budget_s:g} s budget")
        if "not authorized" in str(exc) or "prohibited" in str(exc):
            return QueryResult(failure=Failure.DENIED, message=str(exc))
        return QueryResult(failure=Failure.ERROR, message=str(exc))
    except (sqlite3.Error, sqlite3.Warning, ValueError, OverflowError) as exc:
        # ProgrammingError ("one statement at a time"), Warning, embedded NUL characters...
        return QueryResult(failure=Failure.ERROR, message=str(exc))
    finally:
        conn.set_progress_handler(None, 0)


def run_sql(
    sql: str,
    context: str,
    rows: Mapping[str, Sequence[Sequence[object]]] | None = None,
    *,
    budget_s: float = DEFAULT_BUDGET_S,
    max_rows: int = DEFAULT_MAX_ROWS,
) -> QueryResult:
    """Build a database from `context` (empty unless `rows`), run `sql` on it, close it."""
    try:
        conn = build_database(context, rows)
    except ContextError as exc:
        return QueryResult(failure=Failure.ERROR, message=str(exc))
    try:
        return run_query(conn, sql, budget_s=budget_s, max_rows=max_rows)
    finally:
        conn.close()
