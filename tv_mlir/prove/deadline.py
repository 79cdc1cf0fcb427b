"""The verification's time budget (`Options.time_budget_s`, `--time-budget`): a deadline every
proof of one verification shares, the stage proofs (in this process or in workers) and the
whole proofs after them.

Why a total: each stage proof has its own limit (`--stage-timeout`) and each solver query
its own (`--timeout`), but a pair cut into 63 stages may spend 63 stage limits, and the
whole proof that follows a failed stage had no limit at all (the FSDP step's
`wrong_divisor` mutant ran for 13 min CPU in it, docs/jax.md; with `--time-budget 300` it
is `unknown` after 336 s wall, naming stage 1 of 62 and the phase). Past the deadline a
proof stops where it is and is `unknown`; a proof that starts after it is `unknown` at
once. Running out only ever loses a proof, so the budget cannot make a verdict wrong.

How: SIGALRM, ticking every TICK_S while a proof runs (only the main thread receives
signals; elsewhere the deadline is read when a proof starts). A tick rather than one alarm
at the deadline: an exception raised in a `__del__` (z3's objects have one) would be
printed and dropped, so a tick that lands in one waits for the next. A call into C (a
solver check, an assertion z3 preprocesses) delays the tick until it returns: that run
overran its 300 s by 36 s wall, at load 9 with the process at a quarter of a core. An
alarm already set around the proof (a stage's own limit, stages/pool.py) keeps working:
its handler is called when its time comes, at most one tick late, and its timer is set
again when the proof ends."""
from __future__ import annotations

import math
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# How often a running proof looks at the clock: the budget is overrun by at most this (plus
# a solver call in C, which finishes its own short timeout before the handler runs).
TICK_S = 1.0


def now() -> float:
    """Seconds since the epoch: one clock for every process of a verification (stage workers
    read the deadline the parent set)."""
    return time.time()


def deadline_after(budget_s: float) -> float:
    return now() + budget_s


def remaining(deadline: float | None) -> float:
    """Seconds left before `deadline` (inf without one; <= 0 once it passed)."""
    return math.inf if deadline is None else deadline - now()


class OutOfTime(BaseException):
    """The time budget ran out inside a proof. A BaseException, so that no `except Exception`
    on the way (an op's fallback, a job's guard) swallows it: only the proof that set the
    limit catches it."""

    hint: str = ""  # what the proof knows of why it was slow, for the verdict (driver._class_origin)


@contextmanager
def time_limit(deadline: float | None) -> Iterator[None]:
    """OutOfTime in the body once `now()` passes `deadline` (None: no limit)."""
    if deadline is None or threading.current_thread() is not threading.main_thread() \
            or not hasattr(signal, "setitimer"):
        yield
        return
    outer: Any = signal.getsignal(signal.SIGALRM)
    outer_delay, outer_interval = signal.getitimer(signal.ITIMER_REAL)
    outer_at = time.monotonic() + outer_delay if outer_delay > 0 else None
    handed_over = False

    def fire(signum: int, frame: Any) -> None:
        nonlocal handed_over
        if _deferred(frame):  # the next tick raises (the outer limit's exception too)
            return
        if now() >= deadline:
            raise OutOfTime(f"past the deadline by {now() - deadline:.1f} s")
        if outer_at is not None and time.monotonic() >= outer_at and callable(outer):
            handed_over = True  # the outer limit's own exception: its timer is not set again
            outer(signum, frame)

    first = min(TICK_S, max(deadline - now(), 1e-3))
    if outer_at is not None:
        first = min(first, max(outer_at - time.monotonic(), 1e-3))
    signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, first, TICK_S)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, outer)
        if outer_at is not None and not handed_over:
            signal.setitimer(signal.ITIMER_REAL, max(outer_at - time.monotonic(), 1e-3), outer_interval)


# Modules whose code an exception must not cut short: the parent's side of the XLA child's
# pickle protocol (execute/xla_child.py). A request sent whose reply is left unread would be
# read as the answer to the next request, another module's outputs, in a later verification
# of this process: a replay confirming what XLA never showed.
DEFERRED_MODULES = frozenset({"tv_mlir.execute.xla_child"})


def _deferred(frame: Any) -> bool:
    """The signal arrived where an exception must wait for the next tick: inside a `__del__`
    (z3's objects free their C side there; an exception raised there is printed and dropped)
    or inside DEFERRED_MODULES."""
    while frame is not None:
        if frame.f_code.co_name == "__del__" or frame.f_globals.get("__name__") in DEFERRED_MODULES:
            return True
        frame = frame.f_back
    return False
