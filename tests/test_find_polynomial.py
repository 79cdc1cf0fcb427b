"""`TermStore.find_polynomial`: the look-up `CutStore._sum_of_partials` makes for every sum
of the other program's partial results. It must find exactly the polynomial `polynomial`
would return when one exists (the same normal form: zero coefficients dropped, integral
Fractions as ints, monomials sorted, exp factors merged) and make nothing when none does."""
from __future__ import annotations

from fractions import Fraction

from tv_mlir.algebra.term import EXP, REAL, TermStore


def test_finds_what_polynomial_returns_and_makes_nothing() -> None:
    s = TermStore()
    x, y, z = s.var("x", REAL), s.var("y", REAL), s.var("z", REAL)
    made = s.add(s.scale(x, 2), y, s.real(3))
    data = dict(s.terms_of(made))
    # The same monomials in another order, with a cancelled one and an integral Fraction.
    (zm, _), = s.terms_of(z)
    shuffled = {m: Fraction(c) for m, c in reversed(list(data.items()))}
    shuffled[zm] = 0
    n = len(s.nodes)
    assert s.find_polynomial(REAL, shuffled) is made
    assert s.polynomial(REAL, shuffled) is made
    # A polynomial no term is: None, and no node made.
    other = dict(data)
    other[zm] = 1
    assert s.find_polynomial(REAL, other) is None
    assert len(s.nodes) == n
    # Coefficients matter: 2x + y + 3 is not x + y + 3.
    halved = {m: (c if m != next(iter(s.terms_of(x)))[0] else 1) for m, c in data.items()}
    assert s.find_polynomial(REAL, halved) is not made
    assert s.polynomial(REAL, other) is s.find_polynomial(REAL, other)


def test_exp_factors_merge_as_in_polynomial() -> None:
    """exp(a) * exp(b) is exp(a + b) in the normal form: the look-up merges them too, so it
    finds the product made before (and a look-up without the merge would miss it)."""
    s = TermStore()
    a, b = s.var("a", REAL), s.var("b", REAL)
    ea, eb = s.uf(EXP, [a]), s.uf(EXP, [b])
    product = s.mul(ea, eb)
    (ma, _), = s.terms_of(ea)
    (mb, _), = s.terms_of(eb)
    joined = {tuple(sorted(ma + mb)): 1}
    assert s.find_polynomial(REAL, joined) is product
    assert s.polynomial(REAL, joined) is product
