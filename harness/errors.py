"""The one exception type for user mistakes: the CLI prints its message, never a traceback."""


class UserError(Exception):
    """Bad input from the user: the message names the field, the value and the fix."""


class ConfigError(UserError):
    """Every problem found in one config, listed together (one line each)."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"{source}: {len(problems)} problem(s) in the config:\n{lines}")


class RunStopped(Exception):
    """A check decided the run must not go on; `status` is the record's status (failed / diverged)."""

    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
