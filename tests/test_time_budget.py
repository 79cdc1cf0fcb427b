"""The verification's time budget (`--time-budget`, prove/deadline.py): a proof past the
deadline stops and is `unknown`, naming the stage and the phase where the time ran out,
the stages before it keep their verdicts, later proofs do not start, and a stage's own time
limit (stages/pool.py) still works around it.

No test here waits for a real budget: the slow stage moves the budget's clock past its
deadline (`deadline.now`), and the proof must then stop within a tick (TICK_S) of its
alarm. Without the alarm (a budget read only when a proof starts) the slow stage sleeps
SLOW_S and proves, and the tests fail."""
from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tv_mlir import driver
from tv_mlir.algebra import fast
from tv_mlir.api import prepare, verify
from tv_mlir.cli import _options, _parser
from tv_mlir.errors import UsageError
from tv_mlir.options import Options
from tv_mlir.prove import deadline
from tv_mlir.report import to_text
from tv_mlir.stages import pool

SHARDED = Path(__file__).resolve().parents[1] / "testdata" / "sharded"
PAIR = (str(SHARDED / "mlp_tp.ref.mlir"), str(SHARDED / "mlp_tp.shardy.mlir"))
# Staged (stage_min_elements=0) so that one stage can run out while the others prove.
QUICK: dict[str, Any] = dict(full_size_check="off", second_witness=False, stage_min_elements=0, cache=False)
SLOW_S = 6.0  # how long the slow op sleeps when nothing stops it (the alarm ticks every second)


@pytest.fixture
def slow_max(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[float]]:
    """The first symbolic `maximum` (mlp_tp's relu: one stage of five) moves the budget's
    clock a day on and sleeps SLOW_S; it records how long it slept."""
    slept: list[float] = []
    original = fast.FastAlgebra.f_max
    shift = [0.0]
    real_now = deadline.now
    monkeypatch.setattr(deadline, "now", lambda: real_now() + shift[0])

    def f_max(self: fast.FastAlgebra, a: Any, b: Any, is_max: bool) -> Any:
        if not slept:
            shift[0] = 86_400.0
            t0 = time.monotonic()
            slept.append(0.0)
            while time.monotonic() - t0 < SLOW_S:
                time.sleep(0.01)
                slept[0] = time.monotonic() - t0
        return original(self, a, b, is_max)
    monkeypatch.setattr(fast.FastAlgebra, "f_max", f_max)
    yield slept


def test_a_stage_past_the_budget_is_unknown_and_named_while_the_stages_before_it_prove(
        slow_max: list[float]) -> None:
    v = verify(*PAIR, **QUICK)
    assert slow_max and slow_max[0] < SLOW_S - 2  # stopped by the alarm, not by the sleep's end
    assert v.verdict == "unknown" and v.stages is not None
    records = v.stages["list"]
    failed = v.stages["failed"]
    k = failed["stage"]
    assert 0 < k < len(records) - 1  # a middle stage: some before it, some after
    assert all(r["verdict"] == "equivalent" for r in records[:k])  # they finished
    assert "ran out in this proof's symbolic runs" in failed["reason"]
    assert all("spent before this proof began" in r["reason"] for r in records[k + 1:])
    assert f"the first stage that fails is {failed['name']}" in v.reason
    assert "the pair proved whole: unknown" in to_text(v)


def test_without_the_budget_the_slow_stage_proves(slow_max: list[float]) -> None:
    """The same pair with the budget's deadline never reached (the clock moves, the budget
    is far larger): the sleep ends and the pair is proved, so the test above sees the budget
    and nothing else."""
    v = verify(*PAIR, time_budget_s=1e9, **QUICK)
    assert v.verdict == "equivalent" and slow_max[0] >= SLOW_S


def test_a_proof_started_after_the_deadline_is_unknown_at_once() -> None:
    opts = Options(deadline=deadline.now() - 1.0)
    ref, other = prepare(PAIR[0], opts), prepare(PAIR[1], opts)
    v = driver.prove_pair(ref, other, opts)
    assert v.verdict == "unknown" and "spent before this proof began" in v.reason
    assert driver.prove_pair(ref, other, Options()).verdict == "equivalent"  # no deadline: proved


def test_a_stage_time_limit_around_the_budget_still_fires() -> None:
    """stages/pool.py's in-process stage limit is an alarm too: inside a proof's budget it
    still ends the stage (with its own exception), and it is set again after a proof that
    ended before it."""
    t0 = time.monotonic()
    with pytest.raises(pool._JobTimeout):
        with pool._time_limit(0.3), deadline.time_limit(deadline.now() + 3600):
            while time.monotonic() - t0 < 10:
                time.sleep(0.01)
    assert time.monotonic() - t0 < 5
    t0 = time.monotonic()
    with pytest.raises(pool._JobTimeout):
        with pool._time_limit(0.3):
            with deadline.time_limit(deadline.now() + 3600):
                pass  # ends at once: the outer alarm is set again for its remaining time
            while time.monotonic() - t0 < 10:
                time.sleep(0.01)
    assert time.monotonic() - t0 < 5


def test_the_budget_option() -> None:
    assert _options(_parser().parse_args(["verify", "a", "b", "--time-budget", "90"])).time_budget_s == 90
    assert _options(_parser().parse_args(["verify", "a", "b"])).time_budget_s == Options.time_budget_s
    for bad in (0, -1, float("inf"), True):
        with pytest.raises(UsageError):
            Options(time_budget_s=bad)
    with pytest.raises(UsageError):
        Options(deadline=float("nan"))


def test_a_tick_in_a_finalizer_waits_for_the_next(monkeypatch: pytest.MonkeyPatch) -> None:
    """z3's objects free their C side in `__del__`; an exception raised there is printed and
    dropped (sys.unraisablehook). The tick that lands in one passes, the next one raises."""
    dropped: list[Any] = []
    monkeypatch.setattr(sys, "unraisablehook", dropped.append)

    class Slow:
        def __del__(self) -> None:
            t0 = time.monotonic()
            while time.monotonic() - t0 < 1.5:
                time.sleep(0.01)

    t0 = time.monotonic()
    with pytest.raises(deadline.OutOfTime):
        with deadline.time_limit(deadline.now() + 0.2):
            Slow()  # freed at once: the first tick (0.2 s) lands in its __del__
            while time.monotonic() - t0 < 10:
                time.sleep(0.01)
    assert not dropped
    assert time.monotonic() - t0 < 5


# x / w has an IEEE class that depends on the inputs (w may be 0); the maximum after it is
# where the slow op sleeps.
DIVIDED = """func.func @main(%x: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<4xf32> {
  %d = stablehlo.divide %x, %w : tensor<4xf32>
  %m = stablehlo.maximum ORDER : tensor<4xf32>
  return %m : tensor<4xf32>
}"""


def test_out_of_time_names_where_input_dependent_classes_began(slow_max: list[float]) -> None:
    """What made the flax pairs without their token-id --assume crawl (NaN fills, docs/jax.md)
    is said when the time runs out, as when a term budget is passed."""
    v = verify(DIVIDED.replace("ORDER", "%d, %x"), DIVIDED.replace("ORDER", "%x, %d"), stages=False,
               full_size_check="off", second_witness=False, cache=False)
    assert v.verdict == "unknown" and "ran out in this proof's symbolic runs" in v.reason
    assert "had an IEEE class that depends on the inputs" in v.reason
    assert "the first from stablehlo.divide at <text>:2:" in v.reason


def test_the_xla_child_protocol_is_not_cut_short() -> None:
    """An exception between a request to the XLA child and its reply would leave the reply
    to be read as the next request's answer: code of that module finishes first."""
    def slow_call() -> float:
        t0 = time.monotonic()
        while time.monotonic() - t0 < 1.5:
            time.sleep(0.01)
        return time.monotonic() - t0
    protocol = type(slow_call)(slow_call.__code__, {"__name__": "tv_mlir.execute.xla_child", "time": time})
    finished: list[float] = []
    t0 = time.monotonic()
    with pytest.raises(deadline.OutOfTime):
        with deadline.time_limit(deadline.now() + 0.2):
            finished.append(protocol())  # the ticks at 0.2 s and 1.2 s land in it and wait
            while time.monotonic() - t0 < 10:
                time.sleep(0.01)
    assert finished and finished[0] >= 1.5
    assert time.monotonic() - t0 < 5
