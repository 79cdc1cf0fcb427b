"""Once the verdict has its counterexample, the other obligations' are not settled
(driver._settle, `thorough` False): a ViT train step's dropped all-reduce reaches 68
outputs and 413 replica obligations, and replaying each (two whole-program runs, 24 more
around a point through approximated ops) took 20 minutes after the first counterexample
came in 13 s. An exact difference still decides its obligation `not-equivalent`; one
through approximated ops is `unknown` (only a replay could confirm it); the verdict's own
counterexample is settled in full."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import TESTDATA
from tv_mlir import driver
from tv_mlir.api import verify

TWO = """module @{name} {{
  func.func public @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {{
    %c = stablehlo.constant dense<{c}> : tensor<4xf32>
    %y = stablehlo.multiply %x, %c : tensor<4xf32>
    %e = stablehlo.tanh %y : tensor<4xf32>
    return %y, %e : tensor<4xf32>, tensor<4xf32>
  }}
}}"""


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    calls: list[bool] = []
    real = driver.settle

    def counting(cex, w, thorough=True):  # noqa: ANN001, ANN202
        calls.append(thorough)
        return real(cex, w, thorough)

    monkeypatch.setattr(driver, "settle", counting)
    return calls


def test_a_bug_in_many_outputs_is_settled_once(settled: list[bool]) -> None:
    v = verify(TESTDATA / "sharded" / "dp_train_step.ref.mlir",
               TESTDATA / "sharded" / "dp_train_step_bug_psum_grads.shardy.mlir", cache=False)
    assert v.verdict == "not-equivalent" and v.counterexample is not None and v.counterexample.confirmed
    differing = [o for o in v.outputs if o.verdict == "not-equivalent"]
    assert len(differing) >= 2
    assert sum(1 for o in differing if "not replayed" in o.detail) == len(differing) - 1
    assert settled.count(True) >= 1 and False not in settled


def test_an_unsettled_difference_through_an_approximation_is_unknown(tmp_path: Path, settled: list[bool]) -> None:
    """x * 3 against x * 2, and tanh of each: the first output's exact difference is the
    verdict's counterexample; the second differs only through tanh, which the terms leave
    uninterpreted, so without its replay it is not claimed."""
    (tmp_path / "a.mlir").write_text(TWO.format(name="a", c="2.0"))
    (tmp_path / "b.mlir").write_text(TWO.format(name="b", c="3.0"))
    v = verify(tmp_path / "a.mlir", tmp_path / "b.mlir", cache=False, shrink=False)
    assert v.verdict == "not-equivalent", v.reason
    assert v.outputs[0].verdict == "not-equivalent" and "not replayed" not in v.outputs[0].detail
    assert v.outputs[1].verdict == "unknown" and "approximated" in v.outputs[1].detail, v.outputs[1].detail
    assert settled == [True]
