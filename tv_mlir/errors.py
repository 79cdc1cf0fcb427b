"""The exception hierarchy. Each carries the MLIR location it concerns, so the CLI can
print one line that points at the offending op."""
from __future__ import annotations


class TvError(Exception):
    """Base class: a message and, when known, an MLIR location."""

    exit_code = 3

    def __init__(self, message: str, loc: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.loc = loc

    def one_line(self) -> str:
        text = self.message if not self.loc else f"{self.message} at {self.loc}"
        return " ".join(text.split())


class UsageError(TvError):
    """Bad invocation or inputs that cannot be compared (e.g. signature mismatch)."""


class ParseError(TvError):
    """The input is not a readable StableHLO module."""


class ShapeError(TvError):
    """An op's operands or attributes are inconsistent with its types."""


class Unsupported(TvError):
    """An op or form the semantics does not cover. Becomes an `unknown` verdict."""

    exit_code = 2

    def __init__(self, message: str, loc: str | None = None, op: str | None = None) -> None:
        super().__init__(message, loc)
        self.op = op


class Interrupted(BaseException):
    """SIGINT or SIGTERM arrived: the run stops (exit 128 + signal number). A BaseException,
    like KeyboardInterrupt, so that no `except Exception` on the way swallows it."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"interrupted by signal {signum}")
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum
