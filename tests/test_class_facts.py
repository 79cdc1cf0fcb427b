"""Local proofs under the facts the term store keeps of free constants (`prove/known.py`,
docs/classes.md): a `cpos!` cut point is > 0, a `cnn!` one >= 0, an IEEE class cut point
lies in 0..3, an index in its bounds. The normal form already read those facts, so a
class equality such as CLIP's (the reference scales the images by exp(s), the partitioned
program the texts) holds only under them; without them the solver met models the terms
were built to exclude, and CLIP's loss without an epsilon stayed `unknown`.

The twins are pairs whose classes look alike but differ at one point (a zero row, a NaN
from 0 / 0, inf - inf, 0 * inf): they stay `not-equivalent` with an XLA-confirmed
counterexample, or `unknown` where the difference shows only through rsqrt's pole at 0
(the float64 replay stops at a pole: witness/overflow.py); never `equivalent`. A facts
reader loosened one step (a square's cut point read as positive, a class without NaN)
merges two of them into a wrong `equivalent`, which the last test shows."""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import pytest

from conftest import TESTDATA
from tv_mlir import verify
from tv_mlir.algebra import fast
from tv_mlir.algebra import terms as T
from tv_mlir.algebra.term import INT, REAL, Term, TermStore
from tv_mlir.prove import falsify, known, solve
from tv_mlir.prove.known import Bound, Known

CLASSES = TESTDATA / "classes"


def _verify(name: str, **options: Any) -> Any:
    return verify(CLASSES / f"{name}.ref.mlir", CLASSES / f"{name}.other.mlir", cache=False, **options)


def _xla_confirmed(v: Any) -> bool:
    c = v.counterexample
    return c is not None and any(r.confirmed for r in c.replay if "xla" in r.backend)


# -- the facts read per free constant ---------------------------------------------------


def _class_cut(s: TermStore, x: Term) -> Term:
    """A cut point of rsqrt(x)'s class (finite, +inf at 0, NaN below), its range recorded
    as the sweep records it."""
    k = s.fresh("c", INT)
    d = s.ite(s.lt(s.real(0), x), s.int_(fast.FIN), s.ite(s.eq(x, s.real(0)), s.int_(fast.POS), s.int_(fast.NAN)))
    T.record_range(k, d, lambda _: None)
    return k


def _name(t: Term) -> str:
    assert t.leaf is not None
    return str(t.leaf.data)


def test_each_constant_gets_exactly_its_facts() -> None:
    s = TermStore()
    p, q, x = s.fresh("cpos", REAL), s.fresh("cnn", REAL), s.var("x", REAL)
    k = _class_cut(s, q)
    i = s.var("i", INT)
    s.bounds[T.term_id(i)] = (-5, 7)
    j = s.var("j", INT)
    s.bounds[T.term_id(j)] = (-3, 1)
    r = s.fresh("cpos", REAL)  # positive, and at most 1/2 by its definition's range
    fast.note_real_range(r, s.scale(s.to_real(j), Fraction(1, 2)))
    formula = s.and_(*[s.lt(s.real(0), s.add(a, x)) for a in (p, q, r, s.to_real(k), s.to_real(i), s.to_real(j))])
    got = {b.name: (b.lo, b.hi, b.lo_open) for b in Known().bounds(formula)}
    assert got == {
        _name(p): (0, None, True),
        _name(q): (0, None, False),
        _name(k): (0, 3, False),
        "i": (-5, 7, False),
        "j": (-3, 1, False),
        _name(r): (0, Fraction(1, 2), True),
    }


def test_a_bound_holds_where_it_says() -> None:
    s = TermStore()
    v = s.var("v", REAL)
    b = Bound(v, "v", REAL, Fraction(0), Fraction(3), lo_open=True)
    assert [b.holds(Fraction(x)) for x in (-1, 0, 1, 3, 4)] == [False, False, True, True, False]


# -- hypotheses in the solver and in the refutation -------------------------------------


def _under_facts(s: TermStore, n: int) -> list[Term]:
    """Formulas valid where their constants' facts hold and not without them: a class kept
    by a positive finite scale (CLIP's case split) and a positive cut point's test."""
    out: list[Term | bool] = []
    for _ in range(n):
        k = _class_cut(s, s.fresh("cnn", REAL))
        inf = s.or_(s.eq(k, s.int_(fast.POS)), s.eq(k, s.int_(fast.NEG)))
        scaled = s.ite(s.eq(k, s.int_(fast.NAN)), s.int_(fast.NAN), s.ite(inf, k, s.int_(fast.FIN)))
        out.append(s.eq(k, scaled))
        p = s.fresh("cpos", REAL)
        out.append(s.not_(s.eq(p, s.real(0))))
    return [f for f in out if isinstance(f, Term)]


def _valid(f: Term, facts: bool) -> bool:
    bounds = Known().bounds(f) if facts else []
    return solve.valid(solve.assuming(T.formula(f), [(T.formula(b.var), b) for b in bounds]), 10.0)


def test_the_solver_proves_under_the_facts_only() -> None:
    s = TermStore()
    for f in _under_facts(s, 2):
        assert _valid(f, facts=True)
        assert not _valid(f, facts=False)


def test_refutations_stay_inside_the_facts(monkeypatch: pytest.MonkeyPatch) -> None:
    s = TermStore()
    formulas = _under_facts(s, 12)
    assert len(formulas) == 24
    facts = Known()
    for f in formulas:
        assert not falsify.refuted(f, facts.bounds(f)), f
    # A refuter that draws as if nothing were known refutes some: what the bounds prevent.
    monkeypatch.setattr(falsify, "_bounded_value", lambda rng, b, ints: falsify._random_value(rng, b.sort, ints))
    assert any(falsify.refuted(f, facts.bounds(f)) for f in formulas)


def test_a_refutation_is_a_point_inside_the_facts() -> None:
    s = TermStore()
    for n in range(8):
        k = _class_cut(s, s.fresh("cnn", REAL))
        f = s.eq(k, s.int_(n % 4))  # false for three classes of 0..3
        assert isinstance(f, Term)
        bounds = Known().bounds(f)
        got = falsify.refutation(f, bounds)
        assert got is not None
        assert all(b.holds(got.env[b.name]) for b in bounds)


# -- pairs ------------------------------------------------------------------------------


def test_clip_small_is_equivalent() -> None:
    """CLIP's shape in small: the reference scales the images by exp(s), the other program
    the texts, rows normalised without an epsilon, then the row log-softmax."""
    v = _verify("clip_small")
    assert v.verdict == "equivalent", v.reason
    assert v.stats["failed_merges"] == 0


def test_clip_small_needs_the_facts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(known, "_bound", lambda atom: None)
    v = _verify("clip_small", timeout_s=0.1)  # the output's query cannot succeed either way
    assert v.stats["failed_merges"] > 0


@pytest.mark.parametrize("name", ["zero_row_guard_div", "nan_guard_div", "nan_minus_nan_div", "zero_times_inf",
                                  "rsqrt_other_sum"])
def test_a_class_twin_is_caught(name: str) -> None:
    v = _verify(name)
    assert v.verdict == "not-equivalent", v.reason
    assert _xla_confirmed(v)


@pytest.mark.parametrize("name", ["zero_row_guard", "inf_minus_inf"])
def test_a_difference_through_rsqrt_at_0_is_never_equivalent(name: str) -> None:
    v = _verify(name)
    assert v.verdict != "equivalent", v.reason


def _square_read_positive(b: Bound) -> Bound:
    return dataclasses.replace(b, lo_open=True) if b.name.startswith(fast.NONNEGATIVE_CUT_PREFIX + "!") else b


def _class_without_nan(b: Bound) -> Bound:
    return dataclasses.replace(b, hi=2) if b.sort == INT and (b.lo, b.hi) == (0, 3) else b


@pytest.mark.parametrize("loosen,name", [(_square_read_positive, "zero_row_guard_div"),
                                         (_class_without_nan, "nan_guard_div")])
def test_a_loosened_facts_reader_merges_a_twin(loosen: Callable[[Bound], Bound], name: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The twins above have teeth: one fact read one step too strong proves them equal."""
    original = known._bound

    def loosened(atom: Term) -> Bound | None:
        b = original(atom)
        return None if b is None else loosen(b)

    monkeypatch.setattr(known, "_bound", loosened)
    assert _verify(name).verdict == "equivalent"
