"""Newton's atoms witnessed (docs/shrinking.md, "Atoms witnessed (helper-71)";
shrink/same_witness.py): an atom ConstantTerms reads as a fresh variable along a shrunk class
(its argument not the same at every position for `Same`) must be seen varying along that
class on a numeric run of the shrunk programs, else the class is counted. With it, shrunk
programs are proved with the sweep refinement (prove/refine.py) on: the six red-team twins
whose atom `Same` reads as varying though it is 1 everywhere (exp(clamp(x, 0, 0)), ...),
which the refined solver folds, stay `not-equivalent` (confirmed at the original sizes);
with the witness off (or loosened) they are `equivalent` at the shrunk sizes."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.conftest import TESTDATA, GeneratedPairs, assert_confirmed_at_original_sizes
from tv_mlir.api import prepare
from tv_mlir.options import Options
from tv_mlir.prove import refine
from tv_mlir.shrink import constant_terms, same_witness
from tv_mlir.shrink.pair import shrink_pair

R7, R8 = GeneratedPairs(TESTDATA / "redteam7"), GeneratedPairs(TESTDATA / "redteam8")
TOKENS = "x dim 0"
# Sums of an atom that is 1 at every token, which `Same` reads as varying; the bug twin
# writes the count as 2, the size the tokens shrink to when the atom is a fresh variable.
NOT_FOLDED = {"fixed_poly": R7, "fixed_clamp": R8, "fixed_minmax": R8, "fixed_abs_neg": R8,
              "fixed_and_zero": R8, "fixed_xor_self": R8}
# Batch 7/8 holes that `Same` reads (with its rule): held by the witness alone with `Same`'s
# rules off (SAME_VALUES, ATOM_CANCELS, POWER_ZERO, PIECES).
SAME_HOLES = {"fixed_square": R7, "fixed_rsqrt": R7, "fixed_reduce": R7, "fixed_commute": R7,
              "fixed_max_self": R7, "fixed_pow0": R8}


def _shrunk(pairs: GeneratedPairs, pair: str, kind: str = "bug") -> int:
    """The tokens' verified size as api.verify plans it (through shrink_pair, which runs
    the witnesses)."""
    ref, other = pairs.files(pair, kind)
    res = shrink_pair(ref, other, prepare(ref, Options()), prepare(other, Options()))
    assert res is not None
    return next(e.verified for e in res.plan.entries if e.where.startswith(TOKENS))


def _verify(pairs: GeneratedPairs, pair: str, kind: str) -> Any:
    """The rules alone (no full-size check, no second witness), through api.verify."""
    return pairs.verify(pair, kind, rules_only=True)


def _prove_shrunk(pairs: GeneratedPairs, pair: str, kind: str) -> str:
    """The verdict of driver.prove_pair on the pair as shrink_pair shrinks it (the witnesses
    as set), given the shrunk sizes as api.verify gives them: the path whose refinement
    driver.py keeps on for shrunk programs."""
    from tv_mlir.assume import shrunk_sizes
    from tv_mlir.driver import prove_pair

    ref, other = pairs.files(pair, kind)
    options = Options(stages=False, jobs=1, timeout_s=60)
    res = shrink_pair(ref, other, prepare(ref, options), prepare(other, options))
    assert res is not None
    sizes = shrunk_sizes({"applied": True, **res.plan.summary()})
    assert sizes
    return prove_pair(prepare(res.ref_text, options), prepare(res.other_text, options), options, sizes).verdict


@pytest.mark.parametrize("pair", sorted(NOT_FOLDED))
def test_an_atom_that_is_one_everywhere_keeps_the_tokens_past_the_bug(pair: str,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    assert _shrunk(NOT_FOLDED[pair], pair) > 2
    monkeypatch.setattr(same_witness, "WITNESS", False)
    assert _shrunk(NOT_FOLDED[pair], pair) == 2


@pytest.mark.parametrize("pair", sorted(NOT_FOLDED))
def test_a_loosened_witness_hides_the_atom(pair: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Any value read as varying (no margin, no dims): every atom is "seen" and the tokens
    # shrink to the bug's 2.
    monkeypatch.setattr(same_witness, "varies", lambda values, dims: True)
    assert _shrunk(NOT_FOLDED[pair], pair) == 2


@pytest.mark.parametrize("pair", sorted(NOT_FOLDED))
def test_bug_twin_is_found_by_the_rules(pair: str) -> None:
    assert_confirmed_at_original_sizes(_verify(NOT_FOLDED[pair], pair, "bug"))


@pytest.mark.parametrize("pair", sorted(NOT_FOLDED))
def test_the_refined_solver_refutes_the_bug_at_the_witnessed_sizes(pair: str,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # With the witness the tokens stay past 2, where the bug's 2 is no count: refuted with
    # the lemmas on. Without it, at 2 tokens the refined solver folds exp(0) to 1, the sum
    # is 2 and the bug twin is `equivalent` there (it is not at 16): what the witness holds.
    assert refine.REFINE
    assert _prove_shrunk(NOT_FOLDED[pair], pair, "bug") == "not-equivalent"
    monkeypatch.setattr(same_witness, "WITNESS", False)
    assert _prove_shrunk(NOT_FOLDED[pair], pair, "bug") == "equivalent"


@pytest.mark.parametrize("pair", sorted(NOT_FOLDED))
def test_correct_twin_needs_refinement_at_the_shrunk_sizes(pair: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The correct twin counts with a sum of ones: the refined solver proves it at the
    # witnessed sizes (exp(0) = 1); without the lemmas exp(0) is free and it is `unknown`.
    assert _prove_shrunk(NOT_FOLDED[pair], pair, "ok") == "equivalent"
    monkeypatch.setattr(refine, "REFINE", False)
    assert _prove_shrunk(NOT_FOLDED[pair], pair, "ok") == "unknown"


@pytest.mark.parametrize("pair", sorted(SAME_HOLES))
def test_the_witness_alone_holds_sames_holes(pair: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for switch in ("SAME_VALUES", "ATOM_CANCELS", "POWER_ZERO", "PIECES"):
        monkeypatch.setattr(constant_terms, switch, False)
    assert _shrunk(SAME_HOLES[pair], pair) > 2
    monkeypatch.setattr(same_witness, "WITNESS", False)
    assert _shrunk(SAME_HOLES[pair], pair) == 2


def test_shrunk_programs_are_proved_with_refinement() -> None:
    """driver.prove_pair keeps Options.refine_models for shrunk programs (`sizes` given):
    clients6's top-k softmax, proved as shrunk programs, is `equivalent` as at its own sizes
    (it is `unknown` without the lemmas: test_sweep_refine)."""
    from tv_mlir.driver import prove_pair

    options = Options(stages=False, jobs=1)
    clients6 = TESTDATA / "clients6"
    ref, other = (prepare(str(f), options) for f in (clients6 / "topk_softmax.ref.mlir",
                                                       clients6 / "topk_softmax.split.mlir"))
    assert prove_pair(ref, other, options, {8: 4}).verdict == "equivalent"


# -- varies: the witness's test of one observed value ---------------------------------------

def test_varies_along_the_dims_asked_only() -> None:
    x = np.array([[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]])  # varies along dim 0, not along dim 1
    assert same_witness.varies(x, (0,))
    assert not same_witness.varies(x, (1,))
    assert same_witness.varies(x, (0, 1))


def test_varies_needs_more_than_the_margin() -> None:
    one = np.ones(4)
    assert not same_witness.varies(one + np.array([0, 1e-12, -1e-12, 0]), (0,))  # float64 rounding
    assert same_witness.varies(one + np.array([0, 1e-3, 0, 0]), (0,))
    assert not same_witness.varies(np.array([1e9, 1e9 + 1]), (0,))  # within 1e-6 of its size


def test_varies_ignores_non_finite_elements_and_single_positions() -> None:
    assert not same_witness.varies(np.array([1.0, np.inf, np.nan, 1.0]), (0,))
    assert same_witness.varies(np.array([1.0, np.inf, 2.0]), (0,))
    assert not same_witness.varies(np.ones((1, 4)), (0,))  # one position: nothing to compare
    assert not same_witness.varies(np.float64(3.0), ())


def test_a_pair_without_atoms_is_not_run(monkeypatch: pytest.MonkeyPatch) -> None:
    # No atom along a shrunk class (sum(x * 0 + 0.5 + 0.25)): nothing to witness, no run.
    calls: list[Any] = []
    real = same_witness.observe

    def counted(*args: Any) -> Any:
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(same_witness, "observe", counted)
    ref, other = R8.files("count_scaled_sum", "ok")
    assert shrink_pair(ref, other, prepare(ref, Options()), prepare(other, Options())) is not None
    assert calls == []
    ref, other = R8.files("fixed_clamp", "ok")  # an atom: run
    assert shrink_pair(ref, other, prepare(ref, Options()), prepare(other, Options())) is not None
    assert calls


def test_inputs_too_large_to_draw_count_the_atoms(monkeypatch: pytest.MonkeyPatch) -> None:
    # A plan whose inputs pass the witness's element budget is not drawn for (the 8B pairs
    # without their bounds: 11 GB): its atoms are not witnessed, so their classes are counted.
    from tv_mlir.shrink import zero_witness

    monkeypatch.setattr(zero_witness, "WITNESS_ELEMENTS", 1)

    def refuse(*args: Any) -> Any:
        raise AssertionError("no run for inputs past the budget")

    monkeypatch.setattr(same_witness, "observe", refuse)
    assert _shrunk(R8, "fixed_clamp") > 2


def _plan(ref: str, other: str) -> list[tuple[int, int, str]]:
    res = shrink_pair(ref, other, prepare(ref, Options()), prepare(other, Options()))
    assert res is not None
    return [(e.original, e.verified, e.where) for e in res.plan.entries]


def test_atoms_in_a_scan_body_are_witnessed(monkeypatch: pytest.MonkeyPatch) -> None:
    # stages/scan_L4: the layers' softmax and RMSNorm atoms are in a scan's body. Observed
    # there (any trip), the plan is the one without the witness; seen at the top level only,
    # they go unwitnessed and the hidden class is counted (4 -> 8).
    ref, other = str(TESTDATA / "stages" / "scan_L4.ref.mlir"), str(TESTDATA / "stages" / "scan_L4.shardy.mlir")
    on = _plan(ref, other)
    monkeypatch.setattr(same_witness, "WITNESS", False)
    assert _plan(ref, other) == on
    monkeypatch.setattr(same_witness, "WITNESS", True)
    monkeypatch.setattr(same_witness, "NESTED", False)
    assert _plan(ref, other) != on
