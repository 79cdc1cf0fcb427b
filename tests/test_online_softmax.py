"""exp(x) * exp(y) = exp(x + y) in the term normal form (`TermStore._exps`): an online
softmax (flash attention, ring attention with one pass) rescales its partial sums by
exp(m_old - m_new), and is the reference's softmax only through that identity. With exp
fully uninterpreted such a pair was `unknown` (its counterexample held only for functions
that are not exp, and XLA did not reproduce it)."""
from __future__ import annotations

from fractions import Fraction

import pytest

from conftest import TESTDATA
from tv_mlir.algebra.term import EXP, REAL, TermStore
from tv_mlir.api import verify
from tv_mlir.testing import assert_not_equivalent

CLIENTS = TESTDATA / "clients"


def test_products_of_exponentials_are_one_exponential() -> None:
    s = TermStore()
    a, b, c = (s.var(n, REAL) for n in "abc")
    ea, eb = s.uf(EXP, [a]), s.uf(EXP, [b])
    assert s.mul(ea, s.uf(EXP, [s.sub(b, a)])) is eb
    assert s.mul(ea, ea) is s.uf(EXP, [s.scale(a, 2)])
    assert s.div(eb, ea) is s.uf(EXP, [s.sub(b, a)])
    assert s.mul(s.scale(ea, 3), s.inv(s.scale(ea, 3))) is s.real(1)
    # A sum of exponentials is no exponential, and exp is not multiplicative.
    assert s.mul(s.add(ea, eb), ea) is not s.uf(EXP, [s.add(s.scale(a, 2), b)])
    assert s.add(ea, eb) is not s.uf(EXP, [s.add(a, b)])
    assert s.mul(ea, eb) is not s.uf(EXP, [s.mul(a, b)])
    # The identity inside a polynomial: c * exp(a) * exp(-a) + exp(b) is c + exp(b).
    p = s.add(s.mul(s.mul(c, ea), s.uf(EXP, [s.neg(a)])), eb)
    assert p is s.add(c, eb)
    assert s.scale(ea, Fraction(1, 2)) is not s.uf(EXP, [s.sub(a, s.real(1))])


def test_ring_attention_with_an_online_softmax_is_equivalent() -> None:
    for form in ("shardy", "partitioned"):
        v = verify(CLIENTS / "ring_flash.ref.mlir", CLIENTS / f"ring_flash.{form}.mlir", cache=False)
        assert v.verdict == "equivalent", (form, v.reason)


@pytest.mark.parametrize("line,bug", [
    # exp(m_new - m_old) where exp(m_old - m_new) belongs (the second block's rescale)
    ("%31 = stablehlo.subtract %9, %30 : tensor<1x2x1xf32>", "%31 = stablehlo.subtract %30, %9 : tensor<1x2x1xf32>"),
    # den where den * exp(m_old - m_new) belongs (abs keeps the line: den > 0)
    ("%40 = stablehlo.multiply %22, %32 : tensor<1x2x1xf32>", "%40 = stablehlo.abs %22 : tensor<1x2x1xf32>"),
], ids=["rescale_reversed", "denominator_not_rescaled"])
def test_a_wrong_rescale_is_caught(line: str, bug: str) -> None:
    good = (CLIENTS / "ring_flash.shardy.mlir").read_text()
    assert good.count(line) == 1
    assert_not_equivalent(CLIENTS / "ring_flash.ref.mlir", good.replace(line, bug), confirmed=True, cache=False)
