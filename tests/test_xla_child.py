"""XLA runs in a child process (`execute/xla_child.py`): an XLA CHECK failure aborts the
process that compiles the module, so the verifier itself must not be that process."""
from __future__ import annotations

import os
import signal

import numpy as np
import pytest

from tv_mlir.execute.xla import XlaRunError, XlaRunner
from tv_mlir.execute.xla_child import IsolatedXlaRunner

DOUBLE = """func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = stablehlo.add %x, %x : tensor<4xf32>
  return %r : tensor<4xf32>
}"""
# An unreduced sharding over a dimension the mesh axis does not divide (what shrinking a
# jax `unreduced` dot to one row makes): XLA's SPMD export aborts on a failed CHECK.
ABORTS = """module @m attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["dp"=2, "tp"=4]>
  func.func public @main(%x: tensor<1x2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>},
                         %w: tensor<2x1xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"tp"}, {}]>})
      -> (tensor<1x1xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {}]>}) {
    %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<1x2xf32>, tensor<2x1xf32>) -> tensor<1x1xf32>
    %1 = sdy.sharding_constraint %0 <@mesh, [{"dp"}, {}], unreduced={"tp"}> : tensor<1x1xf32>
    %2 = sdy.sharding_constraint %1 <@mesh, [{"dp"}, {}]> : tensor<1x1xf32>
    return %2 : tensor<1x1xf32>
  }
}"""


@pytest.fixture
def runner() -> IsolatedXlaRunner:
    r = IsolatedXlaRunner()
    yield r
    r.close()


def test_the_child_computes_what_xla_computes(runner: IsolatedXlaRunner) -> None:
    x = np.array([1.5, -2.0, 0.25, 3.0])
    (got,) = runner.run(DOUBLE, [x])
    (want,) = XlaRunner().run(DOUBLE, [x])
    assert got.dtype == want.dtype and np.array_equal(got, want)
    with pytest.raises(XlaRunError, match="parse"):  # the child's errors arrive as they were raised
        runner.run("not a module", [x])


def test_an_xla_abort_is_an_error_naming_the_check_and_the_next_run_goes_on(runner: IsolatedXlaRunner) -> None:
    ones = [np.ones((1, 2)), np.ones((2, 1))]
    with pytest.raises(XlaRunError, match="signal 6.*Check failed"):
        runner.run_global(ABORTS, ones, 8, [(1, 1)])
    # The same module is not sent again (a new child costs an import of jax) ...
    pid = runner._proc.pid if runner._proc is not None else None
    with pytest.raises(XlaRunError, match="Check failed"):
        runner.run_global(ABORTS, ones, 8, [(1, 1)])
    assert (runner._proc.pid if runner._proc is not None else None) == pid
    # ... and another one runs in a new child.
    (got,) = runner.run(DOUBLE, [np.ones(4)])
    assert np.array_equal(got, np.full(4, 2.0, np.float32))


def test_a_child_killed_from_outside_is_an_error_too(runner: IsolatedXlaRunner) -> None:
    runner.run(DOUBLE, [np.ones(4)])
    assert runner._proc is not None
    os.kill(runner._proc.pid, signal.SIGKILL)
    with pytest.raises(XlaRunError, match="signal 9"):
        runner.run(DOUBLE.replace("add %x, %x", "multiply %x, %x"), [np.ones(4)])


REF = """func.func @main(%x: tensor<1x2xf32>, %w: tensor<2x1xf32>) -> tensor<1x1xf32> {
  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<1x2xf32>, tensor<2x1xf32>) -> tensor<1x1xf32>
  %1 = stablehlo.tanh %0 : tensor<1x1xf32>
  return %1 : tensor<1x1xf32>
}"""


def test_a_verdict_whose_replay_xla_aborts_on_names_the_check() -> None:
    """The unreduced program with a bug (the partial sums doubled) and a tanh, so that the
    difference needs XLA to confirm it: XLA aborts compiling it, and the verifier still
    gives a verdict that says why it is not confirmed."""
    from tv_mlir.api import verify

    bad = ABORTS.replace("%2 = sdy.sharding_constraint %1 <@mesh, [{\"dp\"}, {}]> : tensor<1x1xf32>\n    return %2",
                         "%2 = sdy.sharding_constraint %1 <@mesh, [{\"dp\"}, {}]> : tensor<1x1xf32>\n"
                         "    %3 = stablehlo.add %2, %2 : tensor<1x1xf32>\n"
                         "    %4 = stablehlo.tanh %3 : tensor<1x1xf32>\n    return %4")
    assert bad != ABORTS
    v = verify(REF, bad, cache=False, shrink=False)
    assert v.verdict == "unknown", (v.verdict, v.reason)
    assert "XLA could not run it" in v.reason and "Check failed" in v.reason, v.reason


TRIPLE = DOUBLE.replace("%r = stablehlo.add %x, %x", "%d = stablehlo.add %x, %x : tensor<4xf32>\n  %r = stablehlo.add %d, %x")


def test_a_call_interrupted_before_its_reply_leaves_no_reply_for_the_next(
        runner: IsolatedXlaRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    """A timeout's signal (or Ctrl-C) between a request and its reply: the next call, on
    another module, gets its own outputs, not the interrupted call's reply."""
    import tv_mlir.execute.xla_child as xc

    x = np.array([1.0, 2.0, 3.0, 4.0])
    runner.run(DOUBLE, [x])  # the child is up
    real_load = xc.pickle.load

    def interrupted(f):  # the request went out; the signal lands before the reply is read
        raise KeyboardInterrupt

    monkeypatch.setattr(xc.pickle, "load", interrupted)
    with pytest.raises(KeyboardInterrupt):
        runner.run(DOUBLE, [x])
    monkeypatch.setattr(xc.pickle, "load", real_load)
    (got,) = runner.run(TRIPLE, [x])
    assert np.array_equal(got, 3 * x.astype(np.float32))
