"""A select's branch class counts only where the select takes it (`FastAlgebra.f_select`,
`_cls_where`): optax's clip_by_global_norm is select(norm < max_norm, g, g / norm *
max_norm), whose divided branch has an IEEE class that depends on the inputs (norm may be
0) but is taken only where norm >= max_norm > 0. Read through the cut variables the sweep
makes of the condition and the classes, the clipped gradients are finite, and so is
everything computed from them (an Adam or adafactor update over ~200 weights had a
symbolic class per element, each a failed local proof of ~0.1 s)."""
from __future__ import annotations

import numpy as np
import pytest

from tv_mlir.algebra import fast
from tv_mlir.api import verify

CLIP = """func.func @main(%g: tensor<8xf32>) -> tensor<8xf32> {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %sq = stablehlo.multiply %g, %g : tensor<8xf32>
  %s = stablehlo.reduce(%sq init: %z) applies stablehlo.add across dimensions = [0] : (tensor<8xf32>, tensor<f32>) -> tensor<f32>
  %n = stablehlo.sqrt %s : tensor<f32>
  %one = stablehlo.constant dense<MAXNORM> : tensor<f32>
  %trig = stablehlo.compare LT, %n, %one : (tensor<f32>, tensor<f32>) -> tensor<i1>
  %nb = stablehlo.broadcast_in_dim %n, dims = [] : (tensor<f32>) -> tensor<8xf32>
  %ob = stablehlo.broadcast_in_dim %one, dims = [] : (tensor<f32>) -> tensor<8xf32>
  %d = stablehlo.divide %g, %nb : tensor<8xf32>
  %c = stablehlo.multiply %d, %ob : tensor<8xf32>
  %t = stablehlo.select %trig, %g, %c : tensor<i1>, tensor<8xf32>
  %u = stablehlo.multiply %t, %t : tensor<8xf32>
  %r = stablehlo.add %u, %t : tensor<8xf32>
  return %r : tensor<8xf32>
}"""


def _classes(text: str, monkeypatch: pytest.MonkeyPatch, on: bool) -> int:
    monkeypatch.setattr(fast, "SELECT_CLASSES", on)
    v = verify(text, text, cache=False, stages=False, shrink=False)
    assert v.verdict == "equivalent", v.reason
    return int(v.stats["symbolic_classes"])


def test_a_clipped_gradient_is_finite(monkeypatch: pytest.MonkeyPatch) -> None:
    text = CLIP.replace("MAXNORM", "1.0")
    # The divide and the multiply by max_norm: 2 x 8 elements (the other program, the
    # same ops, shares them); the select and what follows it are finite.
    assert _classes(text, monkeypatch, True) == 2 * 8
    assert _classes(text, monkeypatch, False) > 2 * 8


def test_a_condition_that_does_not_exclude_the_pole_leaves_the_class(monkeypatch: pytest.MonkeyPatch) -> None:
    """With max_norm 0 the condition norm < 0 never holds, so the divided branch is taken
    at norm = 0 too: its class stays open."""
    text = CLIP.replace("MAXNORM", "0.0")
    assert _classes(text, monkeypatch, True) == _classes(text, monkeypatch, False)


def test_decides() -> None:
    from tv_mlir.algebra.term import REAL, TermStore

    s = TermStore()
    n = s.var("n", REAL)
    below = s.lt(n, s.real(1))  # n < 1
    assert fast._decides(below, False, s.eq(n, s.real(0))) is False  # n >= 1: n != 0
    assert fast._decides(below, True, s.eq(n, s.real(0))) is None  # n < 1 says nothing of n == 0
    assert fast._decides(below, False, s.lt(s.scale(n, -2), s.real(-2))) is None  # -2n < -2: n > 1, open
    assert fast._decides(below, False, s.le(s.scale(n, -2), s.real(-2))) is True  # -2n <= -2
    at = s.eq(n, s.real(3))
    assert fast._decides(at, True, s.lt(n, s.real(3))) is False and fast._decides(at, True, s.le(n, s.real(3)))
    assert fast._decides(at, False, s.eq(s.scale(n, 2), s.real(6))) is False  # n != 3: 2n != 6
    assert fast._decides(s.not_(below), True, s.eq(n, s.real(0))) is False  # through a negation


@pytest.mark.parametrize("max_norm", ["1.0", "0.0"])
def test_the_clip_agrees_with_xla(xla, max_norm: str) -> None:
    """The rule in both algebras against XLA: a gradient of norm 0 (the divided branch's
    0/0, taken only with max_norm 0), a small one and one to clip."""
    from conftest import check_against_xla

    text = CLIP.replace("MAXNORM", max_norm)
    for g in (np.zeros(8), np.full(8, 0.1), np.arange(8.0) - 3.5):
        check_against_xla(xla, text, [g.astype(np.float32)])


COSINE_MAX = """func.func @main(%x: tensor<12x4xf32>) -> tensor<12xf32> {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %sq = stablehlo.multiply %x, %x : tensor<12x4xf32>
  %s = stablehlo.reduce(%sq init: %z) applies stablehlo.add across dimensions = [1] : (tensor<12x4xf32>, tensor<f32>) -> tensor<12xf32>
  %r = stablehlo.rsqrt %s : tensor<12xf32>
  %rb = stablehlo.broadcast_in_dim %r, dims = [0] : (tensor<12xf32>) -> tensor<12x4xf32>
  %u = stablehlo.multiply %x, %rb : tensor<12x4xf32>
  %l = stablehlo.dot_general %u, %u, contracting_dims = [1] x [1] : (tensor<12x4xf32>, tensor<12x4xf32>) -> tensor<12x12xf32>
  %m = stablehlo.reduce(%l init: %ninf) applies stablehlo.maximum across dimensions = [1] : (tensor<12x12xf32>, tensor<f32>) -> tensor<12xf32>
  return %m : tensor<12xf32>
}"""


def test_a_max_over_classes_that_depend_on_the_inputs_stays_within_the_budget(monkeypatch: pytest.MonkeyPatch
                                                                               ) -> None:
    """The row max of cosine similarities without an epsilon (x * rsqrt(sum x^2) is NaN at
    x = 0): each running max's class is narrowed under its comparison, and unbounded, each
    narrowing walked the whole chain so far through its cut variables (~1.4x more work per
    element: a row of 16 had no verdict in 100 s). No narrowing walks past CLASS_WHERE_NODES."""
    from tv_mlir.algebra.term import TermStore

    most = [0]
    narrow, walk = fast.FastAlgebra._cls_where, TermStore.walk

    def counted(self: fast.FastAlgebra, k: object, cond: object, when: bool) -> object:
        seen = [0]

        def walk_counted(roots: object) -> object:
            for t in walk(self.store, roots):
                seen[0] += 1
                yield t
        monkeypatch.setattr(self.store, "walk", walk_counted, raising=False)
        try:
            return narrow(self, k, cond, when)
        finally:
            monkeypatch.delattr(self.store, "walk")
            most[0] = max(most[0], seen[0])

    monkeypatch.setattr(fast.FastAlgebra, "_cls_where", counted)
    v = verify(COSINE_MAX, COSINE_MAX, cache=False, stages=False, shrink=False)
    assert v.verdict == "equivalent", v.reason
    # A bound of its own, not the module's: raising the budget past it fails here too.
    assert most[0] <= 1_000, most[0]
