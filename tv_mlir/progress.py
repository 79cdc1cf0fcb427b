"""One line per phase of a long run, on stderr so that --json output stays one object."""
from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tv_mlir.options import Options


def progress(options: Options, message: str) -> None:
    if options.progress:
        print(f"tv-mlir: {message}", file=sys.stderr, flush=True)


TICK_S = 10.0  # seconds between two lines of a long phase


@dataclass
class Ticker:
    """Wraps an interpreter observer (called once per top-level op) and prints a line every
    TICK_S seconds: the symbolic execution of a large program is one phase of minutes,
    which should not look like a hang."""

    options: Options
    what: str  # "ref" or "other"
    total: int  # ops of the program, nested ones included (an upper bound of the observed ones)
    observer: Callable[..., Any] | None
    status: Callable[[], str] = lambda: ""  # extra text for each line (values merged so far)
    _seen: int = 0
    _start: float = field(default_factory=time.perf_counter)
    _last: float = field(default_factory=time.perf_counter)

    def __call__(self, op: Any, results: Any) -> Any:
        out = self.observer(op, results) if self.observer is not None else None
        self._seen += 1
        now = time.perf_counter()
        if now - self._last >= TICK_S:
            self._last = now
            extra = self.status()
            progress(self.options, f"symbolic execution of {self.what}: op {self._seen} of "
                                   f"{self.total} ({now - self._start:.0f} s){', ' + extra if extra else ''}")
        return out
