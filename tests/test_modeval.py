"""The one-point refutation in front of the indicator-form check (algebra/modeval.py): it
may only skip the check where the check would fail. Every pair the check proves must
evaluate to equal values; pairs that differ must (almost always) be told apart."""
from __future__ import annotations

import random

import pytest

from tv_mlir.algebra import checks, modeval
from tv_mlir.algebra.term import REAL, Term, TermStore


def _store() -> tuple[TermStore, Term, Term, Term]:
    s = TermStore()
    return s, s.var("x", REAL), s.var("y", REAL), s.var("z", REAL)


def _proved_pairs(s: TermStore, x: Term, y: Term, z: Term) -> list[tuple[Term, Term]]:
    """Pairs the indicator form proves and plain normal form does not: selects scaled into
    their branches, sums of selects on one condition, nested selects, selects inside an
    uninterpreted function's argument and under a reciprocal."""
    c, d = s.lt(s.real(0), x), s.lt(s.real(0), y)
    two, three = s.real(2), s.real(3)
    inner = s.ite(d, s.mul(x, y), three)
    exp = lambda t: s.uf("exponential", [t])  # noqa: E731
    return [
        (s.add(s.mul(two, s.ite(c, z, s.real(0))), s.mul(three, s.ite(d, x, s.real(0)))),
         s.add(s.ite(c, s.mul(two, z), s.real(0)), s.ite(d, s.mul(three, x), s.real(0)))),
        (s.add(s.ite(c, x, y), s.ite(c, y, x)), s.add(x, y)),
        (s.add(s.ite(c, s.add(inner, z), s.mul(two, x)), s.mul(s.real(5), s.ite(d, y, z))),
         s.add(s.ite(c, s.add(inner, z), s.mul(two, x)), s.ite(d, s.mul(s.real(5), y), s.mul(s.real(5), z)))),
        (s.mul(exp(s.ite(c, x, y)), s.sub(s.ite(c, x, y), s.ite(c, y, x))),
         s.mul(exp(s.ite(c, x, y)), s.ite(c, s.sub(x, y), s.sub(y, x)))),
        (s.mul(s.inv(s.add(s.mul(x, x), s.real(1))), s.ite(c, s.mul(two, z), z)),
         s.ite(c, s.mul(two, s.mul(z, s.inv(s.add(s.mul(x, x), s.real(1))))), s.mul(z, s.inv(s.add(s.mul(x, x), s.real(1)))))),
    ]


def test_pairs_the_indicator_check_proves_are_never_refuted() -> None:
    s, x, y, z = _store()
    for a, b in _proved_pairs(s, x, y, z):
        assert a is not b
        assert checks._indicator_zero(s, s.sub(a, b)), "the pair should be one the check proves"
        for salt in (b"", b"1", b"2"):
            assert not modeval.differs(a, b, salt)


def _differing_pairs(s: TermStore, x: Term, y: Term, z: Term) -> list[tuple[Term, Term]]:
    c, d = s.lt(s.real(0), x), s.lt(s.real(0), y)
    exp = lambda t: s.uf("exponential", [t])  # noqa: E731
    return [
        (s.ite(c, x, y), s.ite(d, x, y)),
        (s.ite(c, x, s.real(0)), x),
        (s.add(s.ite(c, x, y), s.ite(c, y, x)), s.add(s.add(x, y), s.real(1))),
        (exp(s.ite(c, x, y)), exp(s.ite(c, y, x))),
        (s.ite(s.and_(c, d), x, y), s.ite(s.or_(c, d), x, y)),
        (s.mul(s.inv(s.add(x, s.real(1))), s.ite(c, z, y)), s.mul(s.inv(s.add(x, s.real(2))), s.ite(c, z, y))),
    ]


def test_pairs_that_differ_are_refuted_and_the_expansion_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    s, x, y, z = _store()
    expanded: list[int] = []
    real = checks._indicator_zero
    monkeypatch.setattr(checks, "_indicator_zero", lambda st, t: expanded.append(t.id) or real(st, t))
    for a, b in _differing_pairs(s, x, y, z):
        assert modeval.differs(a, b)
        assert not checks._own_indicator_zero(a, b)
    assert expanded == []
    a, b = _proved_pairs(s, x, y, z)[1]
    assert checks._own_indicator_zero(a, b) and len(expanded) == 1


def test_random_select_sums_agree_with_the_check() -> None:
    """Random sums k * select(c, p, q) * f against the same sums with k * f moved into the
    branches, and half of them with one coefficient changed: every unchanged pair is
    proved by the check and not refuted; every changed one is refuted."""
    rng = random.Random(7)
    s, x, y, z = _store()
    atoms = [x, y, z]
    conds = [s.lt(s.real(0), x), s.lt(y, z), s.eq(s.add(x, z), s.real(1))]
    for _ in range(40):
        left, right = s.real(0), s.real(0)
        changed = rng.random() < 0.5
        for k in range(3):
            c, p, q, f = rng.choice(conds), rng.choice(atoms), rng.choice(atoms), rng.choice(atoms)
            if p is q:
                q = s.add(q, s.real(1))
            n = rng.randint(1, 4)
            m = n + rng.randint(1, 3) if changed and k == 0 else n
            left = s.add(left, s.mul(s.real(n), s.mul(s.ite(c, p, q), f)))
            right = s.add(right, s.ite(c, s.mul(s.real(m), s.mul(p, f)), s.mul(s.real(m), s.mul(q, f))))
        proved = checks._indicator_zero(s, s.sub(left, right))
        assert proved is not changed
        assert modeval.differs(left, right) is changed
