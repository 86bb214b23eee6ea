"""The one exception type for user mistakes: the CLI prints its message, never a traceback."""

import os
import re


class UserError(Exception):
    """Bad input from the user: the message names the field, the value and the fix."""


class ConfigError(UserError):
    """Every problem found in one config, listed together (one line each)."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"{source}: {len(problems)} problem(s) in the config:\n{lines}")


class InputRefused(UserError):
    """An input the trainer refused before any work was done (a LoRA target that names no module, a
    rank above the model's width, a row longer than max_length tokens): like any input check, one line
    and exit 2, and no record — the run never started."""


class RunStopped(Exception):
    """A check decided the run must not go on; `status` is the record's status (failed / diverged)."""

    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


# The fix for an environment fault, by errno: what the user can do about it.
_OS_FIXES = {
    "ENOSPC": "free space on that disk, or give a folder on another one",
    "EDQUOT": "free space within your quota, or give a folder elsewhere",
    "EROFS": "that filesystem is read-only; give a writable folder",
    "EACCES": "no permission there; give a folder you may write, or fix its permissions",
    "EPERM": "not permitted there; give a folder you may write",
    "ENOENT": "it, or a folder on its path, does not exist (or was removed meanwhile); create it or give another path",
    "ENOTDIR": "a part of that path is a file, not a folder; give another path",
    "EISDIR": "that is a folder where a file was expected; give a file",
    "EEXIST": "something is already there; remove it or choose another name",
    "EMFILE": "too many open files; raise `ulimit -n`",
    "ENOMEM": "the machine is out of memory; close other jobs or lower the batch size",
}


def describe_os_error(exc: OSError) -> str:
    """One line for an environment fault: which file, what happened, what to do."""
    import errno

    name = errno.errorcode.get(exc.errno or 0, "")
    where = f"{exc.filename}: " if exc.filename else ""
    fix = _OS_FIXES.get(name, "check the path and the disk")
    return f"{where}{exc.strerror or exc} ({name or type(exc).__name__}); {fix}"


def os_error_within(exc: BaseException, filename: str | None = None) -> OSError | None:
    """The I/O fault behind an exception, or None. safetensors writes from Rust, so a full disk arrives
    as SafetensorError("… (os error 28)") from an adapter or a checkpoint save, not as an OSError."""
    if isinstance(exc, OSError):
        return exc
    code = re.search(r"os error (\d+)", str(exc))
    return OSError(int(code[1]), os.strerror(int(code[1])), filename) if code else None
