"""Refuting spurious models of the final query with the laws of the approximated functions
that the term layer folds with (tv_mlir/prove/refine.py; docs/architecture.md, "Sweep
refinement (helper-67)").

The reproducer: softmax(top_k(x)) against the same after a split top-k. The sweep merges the
other program's first top-k value with the reference's max (equal numbers, proved equal), so
the other side computes exp(m - m) = exp(0), folded to 1, where the reference computes
exp(v0 - m), equal to it only because top_k sorts. Without the law exp(0) = 1 the solver
picked exponential(0) = 1/3 and the verdict was `unknown`."""
from __future__ import annotations

from dataclasses import replace

import pytest
import z3

import tv_mlir
from conftest import TESTDATA, assert_confirmed_at_original_sizes
from tv_mlir.prove import refine
from tv_mlir.prove.solve import Query, solve_local

CLIENTS6 = TESTDATA / "clients6"
REF = CLIENTS6 / "topk_softmax.ref.mlir"


def test_topk_softmax_equivalent() -> None:
    v = tv_mlir.verify(REF, CLIENTS6 / "topk_softmax.split.mlir")
    assert v.verdict == "equivalent", v.reason


def test_topk_softmax_unknown_without_refinement(monkeypatch: pytest.MonkeyPatch) -> None:
    """The mechanism: with the lemmas off the same pair is left `unknown` (its only model sets
    exponential(0) to another value than 1, which XLA does not reproduce)."""
    monkeypatch.setattr(refine, "REFINE", False)
    v = tv_mlir.verify(REF, CLIENTS6 / "topk_softmax.split.mlir")
    assert v.verdict == "unknown", v.reason


# Bug twins of the split program: a slice off by one (x[1:3] for x[2:4]), a normaliser
# without the max subtracted (exp(v) summed where the numerator has exp(v - m)), a
# numerator shifted by one (exp(v - m + 1): exp at 1 has no exact value, so a table that
# claimed one would prove it).
@pytest.mark.parametrize("twin", ["bug_slice", "bug_sum", "bug_shift"])
def test_topk_softmax_bug_twins(twin: str) -> None:
    v = tv_mlir.verify(REF, CLIENTS6 / f"topk_softmax_{twin}.split.mlir")
    assert_confirmed_at_original_sizes(v)


# -- the lemmas on small queries: each law where it holds, and nowhere else ------------------

x = z3.Real("x")
exp, log, sqrt, tanh = (z3.Function(n, z3.RealSort(), z3.RealSort()) for n in ("exponential", "log", "sqrt", "tanh"))


def _status(*formulas: z3.BoolRef) -> str:
    return solve_local(Query(0, z3.And(*formulas)), 5.0).status


@pytest.mark.parametrize("formulas, status", [
    ((exp(x) != 1, x == 0), "unsat"),  # exp 0 = 1
    ((exp(x) != 1, x == 1), "sat"),  # no exact value at 1
    ((exp(x) != 1, x * x == 0), "unsat"),  # the point is the model's, the lemma congruence's
    ((exp(x) <= 0,), "unsat"),  # exp > 0
    ((log(x) != 0, x == 1), "unsat"),  # log 1 = 0
    ((log(x) <= 0, x > 1), "sat"),  # no sign law for log
    ((sqrt(x) <= 0,), "sat"),  # sqrt 0 = 0: positive only where its argument is
    ((sqrt(x) <= 0, x > 0), "unsat"),
    ((sqrt(x) != z3.RealVal("3/2"), x == z3.RealVal("9/4")), "unsat"),
    ((sqrt(x) != z3.RealVal("3/2"), x == 2), "sat"),
    ((tanh(x) <= 0, x > 0), "sat"),  # no sign law for tanh
])
def test_lemmas(formulas: tuple[z3.BoolRef, ...], status: str) -> None:
    assert _status(*formulas) == status


def test_lemmas_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(refine, "REFINE", False)
    assert _status(exp(x) != 1, x == 0) == "sat"
    assert _status(exp(x) <= 0) == "sat"


# -- on while proving shrunk programs too (shrink/same_witness.py) ----------------------------

def test_shrunk_programs_are_proved_with_refinement() -> None:
    """Shrinking's Newton bound no longer rests on the verifier being unable to fold exp(p)
    of a polynomial p that is 0: the atoms it reads as varying are witnessed varying by a
    numeric run (shrink/same_witness.py, tests/test_same_witness.py hold the six red-team
    twins that hid before). So shrunk programs are proved with the refinement as well: the
    same pair, proved as shrunk programs (a class 8 -> 4 in `sizes`), is `equivalent` as at
    its own sizes; with the refinement off it is `unknown` in both."""
    from tv_mlir.api import prepare
    from tv_mlir.driver import prove_pair
    from tv_mlir.options import Options
    from tv_mlir.stages.run import options_fingerprint

    options = Options(stages=False, jobs=1)
    ref, other = (prepare(str(f), options) for f in (REF, CLIENTS6 / "topk_softmax.split.mlir"))
    assert prove_pair(ref, other, options).verdict == "equivalent"
    assert prove_pair(ref, other, options, {8: 4}).verdict == "equivalent"
    assert prove_pair(ref, other, replace(options, refine_models=False), {8: 4}).verdict == "unknown"
    # A stage proved with refinement is not a cached answer for a stage proved without.
    assert options_fingerprint(options) != options_fingerprint(Options(stages=False, jobs=1, refine_models=False))
