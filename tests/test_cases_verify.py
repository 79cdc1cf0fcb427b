"""Proof by cases through `verify` (tv_mlir/prove/cases.py, called by the driver for outputs
the solver leaves unknown; docs/cases.md): the masked split softmax reproducer of
testdata/clients6 with n assumed in [1, 5) is `equivalent`, with a range one past the
budget it stays `unknown`, and its two twins (testdata/gen_cases.py) are `not-equivalent`
with a counterexample XLA confirms."""
from __future__ import annotations

from pathlib import Path

import pytest

import tv_mlir
from conftest import TESTDATA, assert_confirmed_at_original_sizes

REF = TESTDATA / "clients6" / "masked_split_softmax.ref.mlir"
SPLIT = TESTDATA / "clients6" / "masked_split_softmax.split.mlir"
BUG_LE = TESTDATA / "cases" / "masked_split_softmax_bug_le.split.mlir"
BUG_LAST = TESTDATA / "cases" / "masked_split_softmax_bug_last.split.mlir"


def test_reproducer_equivalent() -> None:
    v = tv_mlir.verify(REF, SPLIT, assume={"arg2": (1, 5)}, cache=False, timeout_s=5)
    assert v.verdict == "equivalent", v.reason


def test_reproducer_at_the_budget_equivalent() -> None:
    """64 values of n (most past the 4 positions: every mask all true) are 64 cases."""
    # The solver's final query is unknown before the cases are tried: its timeout is waited
    # for, so it is short here.
    v = tv_mlir.verify(REF, SPLIT, assume={"arg2": (1, 65)}, cache=False, timeout_s=5)
    assert v.verdict == "equivalent", v.reason


def test_reproducer_over_budget_stays_unknown() -> None:
    v = tv_mlir.verify(REF, SPLIT, assume={"arg2": (1, 66)}, cache=False, timeout_s=5)
    assert v.verdict == "unknown", v.reason


@pytest.mark.parametrize("twin", [BUG_LE, BUG_LAST])
def test_twins_not_equivalent(twin: Path) -> None:
    assert_confirmed_at_original_sizes(tv_mlir.verify(REF, twin, assume={"arg2": (1, 5)}, cache=False, timeout_s=5))




def test_not_while_proving_shrunk_programs() -> None:
    """A proof of shrunk programs (`sizes` given) does not enumerate (Options.by_cases): the
    same pair proved as if a class had shrunk is `unknown`, at its own sizes `equivalent`.
    A stage cache key tells the two apart."""
    from dataclasses import replace

    from tv_mlir.api import prepare
    from tv_mlir.driver import prove_pair
    from tv_mlir.options import Options
    from tv_mlir.stages.run import options_fingerprint

    options = Options(stages=False, jobs=1, assume={"arg2": (1, 5)}, timeout_s=5)  # unknowns wait for it
    ref, other = (prepare(str(f), options) for f in (REF, SPLIT))
    assert prove_pair(ref, other, options).verdict == "equivalent"
    assert prove_pair(ref, other, options, {8: 4}).verdict == "unknown"
    assert prove_pair(ref, other, replace(options, by_cases=False)).verdict == "unknown"
    assert options_fingerprint(options) != options_fingerprint(replace(options, by_cases=False))
