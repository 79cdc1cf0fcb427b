"""A solver call's limit is z3's work count, not wall time, and a call that has not ended in
a short slice is started again with another seed (tv_mlir/prove/solve.py: RLIMIT_PER_S,
CPU_SLACK, WALL_CAP, RESTART_SLICES). Both are about a verdict not changing with the machine's
load or with what the process built before: CI failed on tests/test_cases.py when a merge
the sweep needed ran out of its 0.5 s wall at load ~3, and on one order of that file's
tests when a 0.03 s sat query ran out its 20 s."""
from __future__ import annotations

import time
from typing import Any

import pytest
import z3

from tv_mlir.prove import solve
from tv_mlir.prove.solve import Query


def _cubic() -> Query:
    """A small nonlinear query z3 answers (sat) after ~24 k work units."""
    x, y = z3.Reals("x y")
    return Query(0, z3.And(x * x * x + y * y * y == 7 * x * y + 1, x > 0, y > 0, x * y > 3), refine=False)


def test_the_work_count_ends_a_call_long_before_its_wall_time(monkeypatch: pytest.MonkeyPatch) -> None:
    q = _cubic()
    assert solve.solve_local(q, 30.0).status == "sat"
    monkeypatch.setattr(solve, "RLIMIT_PER_S", 100)  # 3,000 units for 30 s
    monkeypatch.setattr(solve, "RESTART_SLICES", ())
    t = time.monotonic()
    out = solve.solve_local(q, 30.0)
    assert (out.status, out.reason) == ("unknown", "timeout")  # z3's "max. resource limit exceeded"
    assert time.monotonic() - t < 10.0


def test_a_work_limit_z3_reports_as_canceled_is_a_timeout_not_an_interrupt(monkeypatch: pytest.MonkeyPatch) -> None:
    """Some of z3's tactics end on the work limit with "canceled", the reason an interrupt
    gives too: read as Ctrl-C, it ended a make test worker with KeyboardInterrupt."""
    x, y, z = z3.Reals("x y z")
    f = z3.Function("f", z3.RealSort(), z3.RealSort())
    q = Query(0, z3.And(x * y * z == 1, x + y + z == 10, f(x * y) > f(z) * x), refine=False)
    monkeypatch.setattr(solve, "RESTART_SLICES", ())
    monkeypatch.setattr(solve, "RLIMIT_PER_S", 1000)  # 1,000 units: "canceled" (z3 4.13)
    s = solve._solver(1.0)
    s.add(q.formula)
    assert s.check() == z3.unknown and s.reason_unknown() == "canceled"
    assert (solve.solve_local(q, 1.0).status, solve.solve_local(q, 1.0).reason) == ("unknown", "timeout")
    monkeypatch.setattr(solve, "RLIMIT_PER_S", None)
    assert solve.solve_local(q, 30.0).status == "sat"


def test_an_interrupt_is_still_one() -> None:
    """interrupt_solvers (the CLI's Ctrl-C, from its signal thread) during a check: raised."""
    import threading

    a, b = z3.Ints("a b")
    s = z3.Solver()
    s.set("timeout", 60000)
    s.add(a * b == 1000000016000000063, a > 1, b > 1)  # a semiprime: z3 does not factor it fast
    timer = threading.Timer(0.3, solve.interrupt_solvers)
    timer.start()
    t = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        solve._check(s)
    assert time.monotonic() - t < 30.0
    timer.join()
    assert solve.solve_local(_cubic(), 30.0).status == "sat"  # the flag went with the interrupt


def test_the_worker_counts_the_same_work(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(solve, "RLIMIT_PER_S", 100)
    assert solve._solve_text(_cubic().smt2(), 30.0) == ("unknown", "timeout")
    monkeypatch.setattr(solve, "RLIMIT_PER_S", None)
    assert solve._solve_text(_cubic().smt2(), 30.0) == ("sat", "")


def test_wall_time_is_the_last_resort() -> None:
    assert solve.wall_s(2.0) == pytest.approx(2.0 * solve.WALL_CAP)
    assert solve.cpu_s(2.0) == pytest.approx(2.0 * solve.CPU_SLACK)
    # Past z3's 32-bit work limit the wall timeout alone bounds the call, unstretched.
    huge = 2 * (2**32) / solve.RLIMIT_PER_S
    assert solve.wall_s(huge) == huge and solve.cpu_s(huge) is None


def _semiprime() -> Query:
    a, b = z3.Ints("a b")  # z3 does not factor it fast: a check that runs until stopped
    return Query(0, z3.And(a * b == 1000000016000000063, a > 1, b > 1), refine=False)


def test_cpu_time_of_the_checking_thread_ends_a_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the work count and the wall cap out of reach, the call ends when its own thread
    has used CPU_SLACK x its timeout of CPU, reported as a timeout (z3 says "interrupted":
    not read as Ctrl-C); a thread burning CPU beside it does not count against it; the next
    call is not cut short by the interrupt."""
    import threading

    monkeypatch.setattr(solve, "RLIMIT_PER_S", 10**9 // 30)  # ~1e9 units for 30 s: not reached
    monkeypatch.setattr(solve, "WALL_CAP", 100.0)
    monkeypatch.setattr(solve, "CPU_SLACK", 0.02)  # 0.6 s of CPU for 30 s
    monkeypatch.setattr(solve, "RESTART_SLICES", ())
    stop = threading.Event()

    def burn() -> None:
        while not stop.is_set():
            sum(range(10000))
    burner = threading.Thread(target=burn)
    burner.start()
    try:
        c0, t0 = time.thread_time(), time.monotonic()
        out = solve.solve_local(_semiprime(), 30.0)
        used, wall = time.thread_time() - c0, time.monotonic() - t0
    finally:
        stop.set()
        burner.join()
    assert (out.status, out.reason) == ("unknown", "timeout")
    assert 0.5 <= used <= 2.0, used  # its own thread's CPU, not the burner's
    assert wall < 20.0
    assert solve.solve_local(_cubic(), 30.0).status == "sat"


def test_a_worker_has_its_own_cpu_backstop(monkeypatch: pytest.MonkeyPatch) -> None:
    """The query as a worker process runs it (SMT-LIB text, a forked child's watchdog)."""
    monkeypatch.setattr(solve, "RLIMIT_PER_S", 10**9 // 30)
    monkeypatch.setattr(solve, "WALL_CAP", 100.0)
    monkeypatch.setattr(solve, "CPU_SLACK", 0.02)
    t0 = time.monotonic()
    assert solve.solve_all([_semiprime(), _semiprime()], 30.0, jobs=2) == \
        [solve.Outcome(0, "unknown", "timeout")] * 2
    assert time.monotonic() - t0 < 20.0


class _Recorded:
    """A z3 solver that remembers its timeout and the seed it was given."""

    def __init__(self, solver: z3.Solver, timeout_s: float) -> None:
        self.solver, self.timeout_s, self.seed = solver, timeout_s, 0

    def set(self, name: str, value: Any) -> None:
        if name == "random_seed":
            self.seed = value
        self.solver.set(name, value)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.solver, name)


def test_a_call_out_of_its_slice_is_started_again_with_another_seed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first two runs 'time out'; the third, with seed 2 and what is left of the time,
    answers. Without the restarts the query is unknown."""
    runs: list[_Recorded] = []
    real_solver, real_check = solve._solver, solve._check
    monkeypatch.setattr(solve, "_solver", lambda t: _Recorded(real_solver(t), t))

    def check(s: _Recorded) -> Any:
        runs.append(s)
        return z3.unknown if len(runs) <= 2 else real_check(s.solver)

    monkeypatch.setattr(solve, "_check", check)
    monkeypatch.setattr(solve, "_reason", lambda s: "timeout")
    out = solve.solve_local(_cubic(), 20.0)
    assert out.status == "sat"
    assert [s.seed for s in runs] == [0, 1, 2]
    slices = [s.timeout_s for s in runs]
    assert slices[:2] == pytest.approx([20.0 * r for r in solve.RESTART_SLICES])
    assert sum(slices) == pytest.approx(20.0)

    runs.clear()
    monkeypatch.setattr(solve, "RESTART_SLICES", ())
    assert solve.solve_local(_cubic(), 20.0).status == "unknown"
    assert len(runs) == 1
