"""The refutation before a local solver call (`prove/falsify.py`): a formula is left out of
the solver's batch only when it evaluates to False at some assignment of its free constants
(with a function for each uninterpreted name), which makes it unprovable for the solver.

Valid formulas must never be refuted, including ones whose evaluation meets a value SMT-LIB
leaves open (1/0) or applies one function to equal arguments; the loosened refuters below
(an open value read as False, a function that answers equal arguments differently) refute
them, which is what these tests catch. End to end, the pairs where refutation happens keep
their verdicts (the bug twin not-equivalent, the correct pair equivalent) with the switch on
and off."""
from __future__ import annotations

import random
from fractions import Fraction

import pytest
import z3

from conftest import TESTDATA
from tv_mlir import verify
from tv_mlir.algebra import term_eval
from tv_mlir.algebra.term import BOOL, INT, REAL, Term, TermStore
from tv_mlir.algebra.term_z3 import Z3Translator
from tv_mlir.prove import falsify


def _valid(t: Term) -> bool:
    s = z3.Solver()
    s.add(z3.Not(Z3Translator(t.store).to_z3(t)))
    return s.check() == z3.unsat


def _valid_formulas(s: TermStore) -> list[Term]:
    """Valid formulas that the normal form does not fold to True, each over fresh names
    (so each has its own seed)."""
    out: list[Term] = []
    for k in range(12):
        x, y = s.var(f"x{k}", REAL), s.var(f"y{k}", REAL)
        i, j = s.var(f"i{k}", INT), s.var(f"j{k}", INT)
        fx, fy = s.uf("f", [x]), s.uf("f", [y])
        # A function applied to equal arguments (an interpretation must be a function).
        out.append(s.or_(s.not_(s.eq(x, y)), s.eq(fx, fy)))
        # 1/x met at x == 0 by the disjunction's other side: the evaluation raises there.
        ir = s.to_real(i)
        out.append(s.or_(s.eq(ir, s.real(0)), s.eq(s.mul(ir, s.inv(ir)), s.real(1))))
        # An index test: only values near the literal meet it.
        out.append(s.eq(s.ite(s.eq(i, s.int_(5)), s.sub(i, s.int_(5)), s.int_(0)), s.int_(0)))
        gi, gj = s.uf("g", [i], INT), s.uf("g", [j], INT)
        out.append(s.or_(s.not_(s.eq(i, j)), s.eq(gi, gj)))
    return [f for f in out if isinstance(f, Term)]


def test_valid_formulas_are_never_refuted() -> None:
    s = TermStore()
    formulas = _valid_formulas(s)
    assert len(formulas) == 48
    for f in formulas:
        assert _valid(f)
        assert not falsify.refuted(f), f


def test_loosened_refuters_refute_valid_formulas(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test above has teeth: with an open value read as a refutation, or a function
    table that is not kept (equal arguments, other values), valid formulas are refuted."""
    s = TermStore()
    formulas = _valid_formulas(s)
    original = term_eval.evaluate

    def open_is_false(t, env, funcs=None):  # type: ignore[no-untyped-def]
        try:
            return original(t, env, funcs)
        except ZeroDivisionError:
            return False

    monkeypatch.setattr(term_eval, "evaluate", open_is_false)
    assert any(falsify.refuted(f) for f in formulas)
    monkeypatch.undo()

    rng = random.Random(0)
    monkeypatch.setattr(falsify._Interpretation, "__call__",
                        lambda self, t, args: falsify._random_value(rng, t.sort, [0, 1]))
    assert any(falsify.refuted(f) for f in formulas)


def test_pairs_that_differ_are_refuted() -> None:
    """What it is for: a partial lookup against the whole one (equal only when the index
    falls in this device's rows), a dropped summand, a wrong function argument."""
    s = TermStore()
    i, a, b = s.var("i", INT), s.var("a", REAL), s.var("b", REAL)
    partial = s.ite(s.eq(i, s.int_(5)), a, s.real(0))
    whole = s.ite(s.eq(i, s.int_(5)), a, b)
    cases = [s.eq(partial, whole), s.eq(s.add(a, b), a), s.eq(s.uf("f", [a]), s.uf("f", [b])),
             s.eq(s.to_real(s.bits("and", 8, True, [i, s.int_(3)])), s.to_real(i))]
    for f in cases:
        assert isinstance(f, Term) and not _valid(f)
        assert falsify.refuted(f), f


def test_refutation_is_a_model_of_the_negation() -> None:
    """The refuting point, put into the solver's own formula, makes it False (z3 checks)."""
    s = TermStore()
    i, a, b = s.var("i", INT), s.var("a", REAL), s.var("b", REAL)
    fa = s.uf("f", [a])
    f = s.eq(s.ite(s.eq(i, s.int_(2)), s.mul(fa, b), s.real(0)), s.mul(fa, b))
    assert isinstance(f, Term)
    got = falsify.refutation(f)
    assert got is not None
    z = Z3Translator(s).to_z3(f)
    sub = [(z3.Int("i"), z3.IntVal(got.env["i"])), (z3.Real("a"), z3.RealVal(Fraction(got.env["a"]))),
           (z3.Real("b"), z3.RealVal(Fraction(got.env["b"])))]
    (name, sorts, sort, args), value = next(iter(got.funcs.items()))
    assert (name, sorts, sort) == ("f", (REAL,), REAL) and args == (got.env["a"],)
    g = z3.Function("g", z3.RealSort(), z3.RealSort())
    fz = z3.Function("f", z3.RealSort(), z3.RealSort())
    z = z3.substitute_funs(z, (fz, g(z3.Var(0, z3.RealSort()))))
    s2 = z3.Solver()
    s2.add(g(z3.RealVal(Fraction(got.env["a"]))) == z3.RealVal(Fraction(value)))
    s2.add(z3.substitute(z, *sub))
    assert s2.check() == z3.unsat  # the formula is False at that point, whatever g does elsewhere


def test_booleans_and_names_of_two_sorts() -> None:
    s = TermStore()
    p = s.var("p", BOOL)
    assert isinstance(p, Term)
    assert falsify.refuted(p)  # p is not valid: p = False refutes it
    assert not falsify.refuted(s.or_(p, s.not_(p)) if isinstance(s.or_(p, s.not_(p)), Term) else True)
    x_real, x_int = s.var("x", REAL), s.var("x", INT)
    f = s.eq(s.add(x_real, s.to_real(x_int)), s.real(1))
    assert isinstance(f, Term) and not falsify.refuted(f)  # two constants to z3, one name here: left alone


@pytest.mark.parametrize("name,verdict", [("ring_matmul", "equivalent"),
                                          ("ring_matmul_bug_direction", "not-equivalent")])
def test_pairs_keep_their_verdicts(name: str, verdict: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sharded ring matmul's sweep refutes formulas (device-local partial products meet
    whole ones on the random runs); its verdicts and merges are those without refutation."""
    ref, other = TESTDATA / "sharded/ring_matmul.ref.mlir", TESTDATA / f"sharded/{name}.shardy.mlir"
    seen: list[bool] = []
    original = falsify.refuted

    def spy(e, bounds=()):  # type: ignore[no-untyped-def]
        got = original(e, bounds)
        seen.append(got)
        return got

    monkeypatch.setattr(falsify, "refuted", spy)
    on = verify(ref, other, cache=False)
    assert any(seen)
    monkeypatch.setattr(falsify, "REFUTE", False)
    off = verify(ref, other, cache=False)
    assert on.verdict == off.verdict == verdict
    keys = ("merged", "failed_merges", "cut_points", "merged_by_instance")
    assert {k: on.stats.get(k) for k in keys} == {k: off.stats.get(k) for k in keys}
