"""Progress of a staged proof on stderr: a live bar when stderr is a terminal (rich), one
line per finished stage when `--progress` asks for it elsewhere (a CI log), nothing
otherwise (stdout and --json stay clean)."""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Any

LINE_S = 5.0  # seconds between two lines when stderr is not a terminal


@dataclass
class StageBar:
    total: int
    force: bool = False
    reused: int = 0  # stages that wait for nobody: same hash as another stage
    cached: int = 0
    _done: int = 0
    _start: float = field(default_factory=time.perf_counter)
    _last: float = 0.0
    _live: Any = None
    _task: Any = None

    def __post_init__(self) -> None:
        self._done = self.reused
        if sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._live = Progress(TextColumn("stages"), BarColumn(), MofNCompleteColumn(),
                                  TextColumn("{task.fields[note]}"), TimeElapsedColumn(), TimeRemainingColumn(),
                                  console=Console(stderr=True), transient=True)
            self._live.start()
            self._task = self._live.add_task("stages", total=self.total, completed=self._done, note=self._note())

    def _note(self) -> str:
        return f"({self.reused} reused, {self.cached} cached)"

    def done(self, name: str, verdict: str) -> None:
        self._done += 1
        if self._live is not None:
            self._live.update(self._task, completed=self._done, note=self._note())
        elif self.force and (time.perf_counter() - self._last >= LINE_S or self._done == self.total):
            self._last = time.perf_counter()
            elapsed = time.perf_counter() - self._start
            left = self.total - self._done
            eta = elapsed / max(self._done - self.reused, 1) * left
            print(f"tv-mlir: stages {self._done}/{self.total} {self._note()}: {name} {verdict}, "
                  f"{elapsed:.1f} s, about {eta:.0f} s left", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None
