"""Whole runs per case (tv_mlir/driver.py `_pinned_split`; docs/cases.md "Whole runs per
case"): outputs the term-level cases leave open are proved by running both programs again
with each group's input elements pinned to each of their values, the solver not asked.

The term-level cases are forced open here (their solver calls close these pairs on some
runs and not on others: z3's time on them is heavy-tailed), so the whole runs are what
decides."""
from __future__ import annotations

import itertools

import pytest

import tv_mlir
from conftest import TESTDATA, assert_confirmed_at_original_sizes, blind_first_search
from tv_mlir import driver
from tv_mlir.prove import cases

FLASH = TESTDATA / "clients6" / "flash_decode_sp"
REF = TESTDATA / "clients6" / "masked_split_softmax.ref.mlir"
SPLIT = TESTDATA / "clients6" / "masked_split_softmax.split.mlir"
BUG_LAST = TESTDATA / "cases" / "masked_split_softmax_bug_last.split.mlir"


@pytest.fixture(autouse=True)
def _term_cases_open(monkeypatch: pytest.MonkeyPatch) -> None:
    def never(*args: object, **kw: object) -> cases.Cases:
        return cases.Cases("open", "by cases: forced open (test)")
    monkeypatch.setattr(cases, "prove_by_cases", never)


def _flash(**kw: object) -> tv_mlir.Verdict:
    return tv_mlir.verify(f"{FLASH}.ref.mlir", f"{FLASH}.partitioned.mlir", assume={"lens": (1, 17)},
                          cache=False, timeout_s=2, **kw)


def test_flash_decode_proved_by_whole_runs() -> None:
    """Two rows, each output row reading its own length: two groups of 16 runs."""
    v = _flash()
    assert v.verdict == "equivalent", v.reason
    assert v.stats["pinned_runs"] == 32


@pytest.mark.parametrize("budget", [4, 3])
def test_masked_softmax_proved_by_whole_runs_within_their_budget(monkeypatch: pytest.MonkeyPatch,
                                                                 budget: int) -> None:
    monkeypatch.setattr(driver, "PINNED_RUNS", budget)
    v = tv_mlir.verify(REF, SPLIT, assume={"arg2": (1, 5)}, cache=False, timeout_s=2)
    if budget == 4:
        assert v.verdict == "equivalent", v.reason
        assert v.stats["pinned_runs"] == 4
    else:
        assert v.verdict == "unknown" and "pinned_runs" not in v.stats, v.reason


@pytest.fixture
def _first_random_runs_blind(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first run's random inputs draw n = 4 and show the twin's difference by
    themselves, and its solver finds a model: both skipped, so that the twin reaches the
    whole runs, whose own random runs stay."""
    blind_first_search(monkeypatch)


@pytest.mark.usefixtures("_first_random_runs_blind")
def test_a_twin_wrong_only_at_the_last_value_is_refuted_by_its_run() -> None:
    """n = 4, the range's last value, is the only one where the twin differs: its run shows
    the difference on its random inputs, and XLA confirms it at the original sizes."""
    v = tv_mlir.verify(REF, BUG_LAST, assume={"arg2": (1, 5)}, cache=False, timeout_s=2)
    assert_confirmed_at_original_sizes(v)
    assert "arg2 = 4, pinned" in v.reason
    assert v.counterexample is not None and v.counterexample.inputs["arg2"] == 4


@pytest.mark.usefixtures("_first_random_runs_blind")
def test_the_same_twin_proved_if_the_last_value_is_not_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the test above guards: an enumeration one value short proves the twin."""
    def short(atoms):  # type: ignore[no-untyped-def]
        return itertools.product(*(range(a.lo, a.hi) for a in atoms))
    monkeypatch.setattr(cases, "assignments", short)
    v = tv_mlir.verify(REF, BUG_LAST, assume={"arg2": (1, 5)}, cache=False, timeout_s=2)
    assert v.verdict == "equivalent", v.reason


def test_not_while_proving_shrunk_programs() -> None:
    """Shrunk programs do not enumerate (Options.by_cases), whole runs neither."""
    from tv_mlir.api import prepare
    from tv_mlir.options import Options

    options = Options(stages=False, jobs=1, assume={"arg2": (1, 5)}, timeout_s=2)
    ref, other = (prepare(str(f), options) for f in (REF, SPLIT))
    assert driver.prove_pair(ref, other, options).verdict == "equivalent"
    v = driver.prove_pair(ref, other, options, {8: 4})
    assert v.verdict == "unknown" and "pinned_runs" not in v.stats


def test_ring_buffer_decode_with_its_position_in_one_window() -> None:
    """testdata/clients7's ring-buffer KV cache (`unknown` without an assumption: jnp's `%`
    and nested selects stay apart, docs/jax.md "Seventh batch"): with `pos` in one window,
    each run has `pos % 16` a literal and the slot writes fold."""
    ring = TESTDATA / "clients7" / "ring_kv_decode"
    v = tv_mlir.verify(f"{ring}.ref.mlir", f"{ring}.partitioned.mlir", assume={"pos": (0, 16)},
                       cache=False, timeout_s=2)
    assert v.verdict == "equivalent", v.reason
    assert v.stats["pinned_runs"] == 16
