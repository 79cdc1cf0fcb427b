"""Canonical guards (algebra/univariate.py) memoise pieces and truth sets per term. A
piece's ends are the domain of the atom being solved for, and a term with no atom of its
own (a constant branch) is read over several atoms' domains, so the memo is per (term,
atom). Keyed by the term alone (found by tests/core_fuzz.py, seed 3097 of `--sym`): the
constant 288's pieces made over y in [250, 289] were reused over an atom x with another
domain, and ite(x == 1, 288, 20) <= 128 lost its x == 1 piece and folded to True, so a
select on it took one branch everywhere."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from tv_mlir.algebra.term import INT, TermStore
from tv_mlir.algebra.term_eval import evaluate

sys.path.insert(0, str(Path(__file__).parent))
import core_fuzz  # noqa: E402


def test_a_constant_branch_read_over_two_atoms() -> None:
    s = TermStore()
    y, x = s.var("y", INT), s.var("x", INT)
    s.bounds[y.leaf.id] = (250, 289)
    s.bounds[x.leaf.id] = (-2 ** 31, 2 ** 31 - 1)
    # A guard over the bounded y first: the constant 288's pieces over y's domain.
    first = s.ite(s.le(s.ite(s.eq(y, s.int_(288)), s.int_(288), s.int_(20), canonical=True), s.int_(128)),
                  s.int_(20), s.int_(-9), canonical=True)
    got = s.ite(s.le(s.ite(s.eq(x, s.int_(1)), s.int_(288), s.int_(20), canonical=True), s.int_(128)),
                s.int_(20), s.int_(-9), canonical=True)
    for xv in (-5, 0, 1, 2, 1000):
        assert evaluate(got, {"x": xv, "y": 260}) == (-9 if xv == 1 else 20), xv
    for yv in (250, 287, 288, 289):
        assert evaluate(first, {"x": 0, "y": yv}) == (-9 if yv == 288 else 20), yv


# One op's elements over two atoms: y (assumed in [250, 290)) and x (unbounded).
PROGRAM = """module @m {
  func.func public @main(%y: tensor<1xi32>, %a: tensor<1xi32>) -> tensor<2xi32> {
    %yy = stablehlo.concatenate %y, %a, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %k = stablehlo.constant dense<[288, 1]> : tensor<2xi32>
    %c288 = stablehlo.constant dense<288> : tensor<2xi32>
    %c20 = stablehlo.constant dense<20> : tensor<2xi32>
    %cm9 = stablehlo.constant dense<-9> : tensor<2xi32>
    %c128 = stablehlo.constant dense<128> : tensor<2xi32>
    %e = stablehlo.compare EQ, %yy, %k : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi1>
    %t = stablehlo.select %e, %c288, %c20 : tensor<2xi1>, tensor<2xi32>
    %q = stablehlo.compare LE, %t, %c128 : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi1>
    %r = stablehlo.select %q, %c20, %cm9 : tensor<2xi1>, tensor<2xi32>
    return %r : tensor<2xi32>
  }
}"""


def test_the_program_terms_keep_the_guard() -> None:
    sets = [[np.array([y], np.int32), np.array([a], np.int32)] for y in (260, 288) for a in (0, 1, 7)]
    assert core_fuzz.symbolic_mismatch(PROGRAM, {"arg0": (250, 290)}, sets) is None
