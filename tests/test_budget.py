"""Budgets of the own core's term store: a runaway expansion stops with an `unknown` that
names it, never by exhausting memory; inside a scoped budget a check gives up without
taking the proof with it."""
from __future__ import annotations

import pytest

from tv_mlir import driver, verify
from tv_mlir.algebra.term import REAL, TermBudget, TermStore


def test_scoped_budget_stops_a_blow_up_and_is_lifted_after() -> None:
    s = TermStore()
    xs = [s.var(f"x{i}", REAL) for i in range(12)]
    with pytest.raises(TermBudget):
        with s.budget(2_000):
            p = s.real(1)
            for x in xs:  # (1 + x0)(1 + x1)... has 2**12 monomials
                p = s.mul(p, s.add(s.real(1), x))
    q = s.mul(s.add(xs[0], xs[1]), s.add(xs[2], xs[3]))  # the store's own limit again
    assert len(q.data) == 4


def test_store_limit_counts_monomials() -> None:
    s = TermStore(limit=300)
    xs = [s.var(f"x{i}", REAL) for i in range(30)]
    with pytest.raises(TermBudget):
        s.mul(s.sum(xs[:15], REAL), s.sum(xs[15:], REAL))  # the vars and sums take ~120, the product 226


def _floordiv(body: str) -> str:
    # i8 ids widened to i32: 4i cannot wrap (the range analysis sees |i| <= 128), so
    # floor(4i/3) = i + floor(i/3) holds, and only the solver proves it.
    head = """func.func @main(%a: tensor<8xi8>) -> tensor<8xi32> {
  %i = stablehlo.convert %a : (tensor<8xi8>) -> tensor<8xi32>
  %c3 = stablehlo.constant dense<3> : tensor<8xi32>
  %z = stablehlo.constant dense<0> : tensor<8xi32>
  %one = stablehlo.constant dense<1> : tensor<8xi32>
"""
    return head + body + "}\n"


# floor division as jnp emits it: truncate, then one down where the signs differ and the
# remainder is not 0.
_FLOOR = """  %q{n} = stablehlo.divide {x}, %c3 : tensor<8xi32>
  %r{n} = stablehlo.remainder {x}, %c3 : tensor<8xi32>
  %neg{n} = stablehlo.compare LT, {x}, %z, SIGNED : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi1>
  %nz{n} = stablehlo.compare NE, %r{n}, %z, SIGNED : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi1>
  %adj{n} = stablehlo.and %neg{n}, %nz{n} : tensor<8xi1>
  %qm{n} = stablehlo.subtract %q{n}, %one : tensor<8xi32>
  %f{n} = stablehlo.select %adj{n}, %qm{n}, %q{n} : tensor<8xi1>, tensor<8xi32>
"""
_FLOORDIV_A = _floordiv("""  %c4 = stablehlo.constant dense<4> : tensor<8xi32>
  %m = stablehlo.multiply %i, %c4 : tensor<8xi32>
""" + _FLOOR.format(n=0, x="%m") + "  return %f0 : tensor<8xi32>\n")
_FLOORDIV_B = _floordiv(_FLOOR.format(n=0, x="%i") + """  %s = stablehlo.add %i, %f0 : tensor<8xi32>
  return %s : tensor<8xi32>
""")


def test_expansion_past_its_budget_is_unknown_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pair whose output reaches the full expansion (the local proofs leave it to the
    solver) is `equivalent`; with an expansion budget too small for it, `unknown` saying so."""
    a, b = _FLOORDIV_A, _FLOORDIV_B
    assert verify(a, b).verdict == "equivalent"
    monkeypatch.setattr(driver, "EXPANSION_TERMS", 1)
    v = verify(a, b)
    assert v.verdict == "unknown"
    assert "full expansion" in v.reason and "1 terms" in v.reason
