"""Rule (k)'s poles (docs/shrinking.md, rule k "poles"): a count in a denominator. Rule (k)
read a divide as a product, so 1 / (k - c) counted like a polynomial in the count k; it is
one only where k != c, and a pole at a count the original size reaches and the shrunk one
does not is inf or NaN in one twin there only. Pair: testdata/shrink_rules/gen_pole.py
(manifest_pole.json; XLA at the original size on inputs with exactly c positive entries).
The same offset in a clip (`count_offset`: max(k - 20, 0)) split at the clip's constant 0
instead of at k = 20. Verdicts with the full-size check and the second witness off, so that the rule is what
keeps the bug visible."""
from __future__ import annotations

import json

import pytest

import tv_mlir
from tests.conftest import RULES_OFF, TESTDATA, count_facts
from tv_mlir.api import prepare
from tv_mlir.options import Options
from tv_mlir.shrink import counts
from tv_mlir.shrink.pair import _raw
from tv_mlir.shrink.plan import ShrinkPlan, plan

D = TESTDATA / "shrink_rules"
POLE = json.loads((D / "manifest_pole.json").read_text())
# The bug twins' refutation is one solver query of ~3 s CPU; z3's timeout is wall-clock, so
# at load 8 (four tests beside) the default 60 s ran out and the verdict was `unknown`.
SOLVER_S = 600.0


def _files(kind: str, pair: str = "pole_nan") -> tuple[str, str]:
    return str(D / f"{pair}.small.ref.mlir"), str(D / f"{pair}.small.{kind}.mlir")


def _plan(kind: str, pair: str = "pole_nan") -> ShrinkPlan:
    ref, other = _files(kind, pair)
    return plan(_raw(ref, prepare(ref, Options())).module, _raw(other, prepare(other, Options())).module)


def _counted(kind: str, pair: str = "pole_nan") -> int:
    return next(e.verified for e in _plan(kind, pair).entries if e.where == "x dim 0")


def test_pole_manifest_lists_the_pairs_ran_on_xla() -> None:
    assert [e["pair"] for e in POLE] == ["pole_nan", "count_offset"]
    assert all(e["ran_on_xla"] for e in POLE)
    for e in POLE:
        for f in e["files"].values():
            assert (D / f).exists(), f


def test_without_poles_the_nan_hides(monkeypatch: pytest.MonkeyPatch) -> None:
    # The hole: 1 / (k - 20) read as a polynomial, the 32 entries shrink to 8, where no
    # count reaches 20, and the bug twin (NaN at 20 positives on XLA) is proved equal.
    monkeypatch.setattr(counts, "POLES", False)
    monkeypatch.setattr(counts, "RATIONAL", False)  # alone it asks 16: still below the pole
    assert _counted("bug") == 8
    assert tv_mlir.verify(*_files("bug"), **RULES_OFF).verdict == "equivalent"


def test_the_pole_keeps_its_count_and_the_nan_is_found() -> None:
    assert counts.POLES is True
    assert _counted("bug") == 32
    v = tv_mlir.verify(*_files("bug"), **RULES_OFF, timeout_s=SOLVER_S)
    assert v.verdict == "not-equivalent", v.reason
    assert v.counterexample is not None and v.counterexample.confirmed_at == "original sizes"


def test_a_denominator_without_a_positive_zero_still_shrinks() -> None:
    # s / (k + 1) and s * (1 / (1 + k)): the pole is at k = -1, which no count reaches.
    # 8, not 4: the pair's bound adds both programs' denominators (rule k "rational
    # degrees", counts.RATIONAL: D = 1 + 1 + 1), more than this pair needs.
    assert _counted("ok") == 8
    assert tv_mlir.verify(*_files("ok"), **RULES_OFF).verdict == "equivalent"


def test_without_offsets_the_missing_clip_hides(monkeypatch: pytest.MonkeyPatch) -> None:
    # s + 0.1 max(k - 20, 0) against s: the clip's constant is 0, the split is at k = 20.
    monkeypatch.setattr(counts, "OFFSETS", False)
    assert _counted("bug", "count_offset") == 4
    assert tv_mlir.verify(*_files("bug", "count_offset"), **RULES_OFF).verdict == "equivalent"


def test_a_clip_after_an_offset_keeps_its_split() -> None:
    assert counts.OFFSETS is True
    assert _counted("bug", "count_offset") == 32
    v = tv_mlir.verify(*_files("bug", "count_offset"), **RULES_OFF, timeout_s=SOLVER_S)
    assert v.verdict == "not-equivalent", v.reason
    assert v.counterexample is not None and v.counterexample.confirmed_at == "original sizes"
    assert tv_mlir.verify(*_files("ok", "count_offset"), **RULES_OFF).verdict == "equivalent"


def _flow(text: str) -> tuple[int, int]:
    return counts.outer_degree(*count_facts(text))


MOD = """module @jit_f {
  func.func public @main(%arg0: tensor<32xf32>) -> tensor<f32> {
    %z = stablehlo.constant dense<0.000000e+00> : tensor<32xf32>
    %p = stablehlo.compare GT, %arg0, %z : (tensor<32xf32>, tensor<32xf32>) -> tensor<32xi1>
    %m = stablehlo.convert %p : (tensor<32xi1>) -> tensor<32xf32>
    %c0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %k = stablehlo.reduce(%m init: %c0) applies stablehlo.add across dimensions = [0] : (tensor<32xf32>, tensor<f32>) -> tensor<f32>
    %s = stablehlo.reduce(%arg0 init: %c0) applies stablehlo.add across dimensions = [0] : (tensor<32xf32>, tensor<f32>) -> tensor<f32>
    %c = stablehlo.constant dense<C> : tensor<f32>
    %two = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    DENOM
    %r = stablehlo.divide %s, %q : tensor<f32>
    return %r : tensor<f32>
  }
}
"""


@pytest.mark.parametrize("c, denom, threshold", [
    ("2.000000e+01", "%q = stablehlo.subtract %k, %c : tensor<f32>", 20),  # k - 20
    ("2.000000e+01", "%q0 = stablehlo.subtract %c, %k : tensor<f32>\n    %q = stablehlo.negate %q0 : tensor<f32>", 20),
    ("2.100000e+01", "%q0 = stablehlo.multiply %two, %k : tensor<f32>\n    %q = stablehlo.subtract %q0, %c : tensor<f32>", 10),
    ("1.000000e+00", "%q = stablehlo.add %k, %c : tensor<f32>", 0),  # k + 1: no positive zero
    ("0.000000e+00", "%q = stablehlo.add %k, %c : tensor<f32>", 0),  # a masked mean's k
])
def test_an_affine_denominator_keeps_its_zero(c: str, denom: str, threshold: int) -> None:
    # (s is a seed here too: both reduces are, so D = 2.)
    d, t = _flow(MOD.replace("C", c).replace("DENOM", denom))
    assert (d, t) == (2, threshold)


def test_a_denominator_of_two_counts_pins() -> None:
    # k * k - 20 (or k1 - k2): its zeros are not located by the affine reading.
    d, _ = _flow(MOD.replace("C", "2.000000e+01").replace(
        "DENOM", "%q0 = stablehlo.multiply %k, %k : tensor<f32>\n    %q = stablehlo.subtract %q0, %c : tensor<f32>"))
    assert d >= counts.UNBOUNDED
