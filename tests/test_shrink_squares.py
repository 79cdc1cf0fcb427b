"""`chlo.square` in Newton's argument (docs/shrinking.md, "Squares"; testdata/gen_squares.py,
testdata/squares/manifest.json: every twin run on XLA at its original sizes). jax's
`lax.square` is the verifier's x * x: its degree is twice its operand's (degree.SQUARE_DEGREE)
and it has a constant term exactly where its operand has one (degree.SQUARE_TERMS). Each
reading is held by its plan, by the plan with the reading off or loosened (the tokens shrink
to where the bug hides), and by the verdicts: bug twins `not-equivalent` confirmed at the
original sizes with the rules alone, correct twins `equivalent` by default."""
from __future__ import annotations

from typing import Any

import pytest

import tv_mlir
from tests.conftest import RULES_OFF, TESTDATA, GeneratedPairs, assert_confirmed_at_original_sizes
from tv_mlir.api import prepare
from tv_mlir.options import Options
from tv_mlir.shrink import degree
from tv_mlir.shrink import plan as plan_module
from tv_mlir.shrink.pair import _raw
from tv_mlir.shrink.plan import ClassEntry, plan

D = TESTDATA / "squares"
PAIRS = GeneratedPairs(D)
MANIFEST = PAIRS.manifest
# Rule a's note on a counted class (its size a value ordered with every literal).
COUNTED = "its size values stay in order with every literal"


_files = PAIRS.files


def _tokens(pair: str, kind: str = "bug") -> ClassEntry:
    ref, other = _files(pair, kind)
    r, o = _raw(ref, prepare(ref, Options())).module, _raw(other, prepare(other, Options())).module
    return next(e for e in plan(r, o).entries if e.where.startswith("x dim 0"))


def _counted(pair: str, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Whether the plan of the pair's correct twin counts the tokens' class."""
    seen: set[int] = set()
    real = plan_module._degrees

    def spy(*args: Any) -> Any:
        degrees, counted = real(*args)
        seen.update(counted)
        return degrees, counted
    monkeypatch.setattr(plan_module, "_degrees", spy)
    return _tokens(pair, "ok").cls in seen


def test_manifest_lists_every_pair_ran_on_xla() -> None:
    assert set(MANIFEST) == {"square_degree", "square_const"}
    for e in MANIFEST.values():
        assert e["ran_on_xla"], e
        for f in e["files"].values():
            assert (D / f).exists(), f


def test_a_square_has_twice_its_operands_degree(monkeypatch: pytest.MonkeyPatch) -> None:
    # p_4 = sum(square(square(x))) has degree 4: the tokens keep 4, where the bug's
    # two-token form of p_4 differs. A square read as an atom (degree 1) with its constant
    # term read exactly (so the tokens are not counted either): 2 tokens, the bug hidden.
    assert _tokens("square_degree").verified >= 4
    monkeypatch.setattr(degree, "SQUARE_DEGREE", False)
    assert _tokens("square_degree").verified == 2


def test_a_square_of_a_term_with_none_does_not_count_the_class(monkeypatch: pytest.MonkeyPatch) -> None:
    # sum(square(square(x))) and sum(square(x)): x has no constant term, nor has its
    # square. Read as "may" (constant_terms' reading of an op it does not list) the tokens
    # were counted (a size value rule a orders with every literal), as every RMSNorm's
    # hidden class was (then ordered with the vocabulary's sizes: the 8B forward kept 160
    # words).
    assert not _counted("square_degree", monkeypatch)
    monkeypatch.setattr(degree, "SQUARE_TERMS", False)
    assert _counted("square_degree", monkeypatch)


def test_a_squares_constant_term_counts_the_class(monkeypatch: pytest.MonkeyPatch) -> None:
    # sum(square(x + 1)) = p_2 + 2 p_1 + T: T is a size value ordered with the bug's 2.
    # Loosened (a square never has a constant term): T shrinks to 2, the bug hidden.
    entry = _tokens("square_const")
    assert entry.verified > 2 and COUNTED in entry.argument
    real = degree._Terms._compute

    def loose(self: Any, v: str) -> bool:
        d = self.degrees.facts.defs.get(v)
        if d is not None and d[0].name == degree.SQUARE and self.degrees.has(v) and self.degrees.of(v) > 0:
            return False
        return bool(real(self, v))
    monkeypatch.setattr(degree._Terms, "_compute", loose)
    assert _tokens("square_const").verified == 2


@pytest.mark.parametrize("pair", sorted(MANIFEST))
def test_bug_twin_is_found_by_the_rules(pair: str) -> None:
    v = tv_mlir.verify(*_files(pair, "bug"), timeout_s=60, cache=False, **RULES_OFF)
    assert_confirmed_at_original_sizes(v)


@pytest.mark.parametrize("pair", sorted(MANIFEST))
def test_correct_twin_is_equivalent(pair: str) -> None:
    v = tv_mlir.verify(*_files(pair, "ok"), timeout_s=60, cache=False)
    assert v.verdict == "equivalent", v.reason
