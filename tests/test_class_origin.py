"""A run past its term budget names where floats of an input-dependent IEEE class began
(prove/cuts.CutStore.first_symbolic_class): such a class spreads to every value computed
from it and costs a class term per element, which is how the flax Llama forward passed the
8M-term budget before its lookup's NaN fill was decided by the token bounds."""
from __future__ import annotations

from pathlib import Path

import pytest

from tv_mlir import driver
from tv_mlir.algebra.fast import FastAlgebra
from tv_mlir.algebra.term import TermStore
from tv_mlir.api import verify
from tv_mlir.prove.local import LocalProver

PROGRAM = """
func.func @main(%x: tensor<6x6xf32>, %y: tensor<6x6xf32>) -> tensor<6x6xf32> {{
  %d = {divisor}
  %q = stablehlo.divide %x, %d : tensor<6x6xf32> loc("the_divide")
  %m = stablehlo.dot_general %q, %q, contracting_dims = [1] x [0] : (tensor<6x6xf32>, tensor<6x6xf32>) -> tensor<6x6xf32>
  %n = stablehlo.dot_general %m, %q, contracting_dims = [1] x [0] : (tensor<6x6xf32>, tensor<6x6xf32>) -> tensor<6x6xf32>
  return %n : tensor<6x6xf32>
}}
"""
ANY_DIVISOR = "stablehlo.add %y, %y : tensor<6x6xf32>"
POSITIVE_DIVISOR = "stablehlo.exponential %y : tensor<6x6xf32>"


def _pair(tmp_path: Path, divisor: str) -> tuple[Path, Path]:
    a, b = tmp_path / "a.mlir", tmp_path / "b.mlir"
    text = PROGRAM.format(divisor=divisor)  # the same program twice: the reference's run is the point
    a.write_text(text)
    b.write_text(text)
    return a, b


@pytest.fixture
def small_store(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(driver, "FastAlgebra", lambda: FastAlgebra(store=TermStore(limit=4000)))


def test_the_budget_reason_names_where_input_dependent_classes_began(tmp_path: Path, small_store: None) -> None:
    a, b = _pair(tmp_path, ANY_DIVISOR)
    v = verify(a, b, cache=False, shrink=False, stages=False)
    assert v.verdict == "unknown"
    assert "passed its budget" in v.reason
    assert "IEEE class that depends on the inputs" in v.reason and "stablehlo.divide at the_divide" in v.reason
    assert v.stats["symbolic_classes"] > 0


def test_a_positive_divisor_leaves_every_class_known(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, POSITIVE_DIVISOR)
    v = verify(a, b, cache=False, shrink=False, stages=False)
    assert v.verdict == "equivalent"
    assert v.stats["symbolic_classes"] == 0
    a, b = _pair(tmp_path, ANY_DIVISOR)
    v = verify(a, b, cache=False, shrink=False, stages=False)
    assert v.stats["symbolic_classes"] >= 36  # the quotient's 36 elements at least




def _doubled(how: str) -> str:
    return f"""
func.func @main(%x: tensor<2x2xf32>, %y: tensor<2x2xf32>) -> tensor<2x2xf32> {{
  %d = stablehlo.add %y, %y : tensor<2x2xf32>
  %q = stablehlo.divide %x, %d : tensor<2x2xf32> loc("the_divide")
  %two = stablehlo.constant dense<2.0> : tensor<2x2xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<2x2xf32>
  %n = {how} : tensor<2x2xf32>
  return %n : tensor<2x2xf32>
}}
"""


def test_an_output_past_the_expansion_budget_names_where_its_class_began(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """q - q against 0 q (0, or NaN where q is not finite, on both sides; q + q against
    2 q has been one class term since the class of a sum is one flat form,
    tests/test_sum_class.py) with no local proof closing anything and the full expansion's
    budget made tiny: the output is `unknown`, and its reason says where the
    input-dependent class came from (a user's Adam step with nothing assumed of its step
    count ended so, before the class of a sum with a finite operand was the operand's own)."""
    monkeypatch.setattr(driver, "EXPANSION_TERMS", 10)
    monkeypatch.setattr(LocalProver, "prove_pairs", lambda self, pairs, *a, **k: [None] * len(pairs))
    a, b = tmp_path / "a.mlir", tmp_path / "b.mlir"
    a.write_text(_doubled("stablehlo.subtract %q, %q"))
    b.write_text(_doubled("stablehlo.multiply %q, %zero"))
    v = verify(a, b, cache=False, shrink=False, stages=False)
    assert v.verdict == "unknown", v.reason
    assert "full expansion" in v.reason and "stablehlo.divide at the_divide" in v.reason, v.reason
