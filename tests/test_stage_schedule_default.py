"""The reference's order as the default cut order (`stages.run.SCHEDULE` on), and its one
exception: a loop body's chain keeps the program's order (docs/stages.md, "The other
program in the reference's order")."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import capture_stages
from tv_mlir.api import prepare, verify
from tv_mlir.frontend.classify import check_signatures
from tv_mlir.options import Options
from tv_mlir.stages import loops
from tv_mlir.stages import run as stages_run

TESTDATA = Path(__file__).resolve().parents[1] / "testdata"
LAYOUTS = TESTDATA / "layouts"
SCAN = TESTDATA / "stages"
QUICK = dict(full_size_check="off", second_witness=False, stage_min_elements=0, cache=False)


def test_schedule_is_on_by_default() -> None:
    assert stages_run.SCHEDULE is True


def test_two_layouts_is_cut_finer_in_the_reference_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """XLA's backward of tanh(tanh(x @ w) @ w) in its own order leaves one stage with most of
    the ops (proved whole, tests/test_stage_layouts.py); in the reference's order every stage
    is a few ops and each holds on its own (none fails, none widened, no whole proof)."""
    seen = capture_stages(monkeypatch)
    v = verify(LAYOUTS / "two_layouts.ref.mlir", LAYOUTS / "two_layouts.partitioned.mlir", **QUICK)
    assert v.verdict == "equivalent", v.reason
    st = v.stages
    assert st["used"] and "failed" not in st and "whole" not in st and "widened" not in st, st
    assert len(seen) >= 10 and max(s.ref_ops for s in seen) <= 5, [s.ref_ops for s in seen]


def test_the_swapped_copy_stays_not_equivalent_in_the_reference_order() -> None:
    """The bug twin of the pair above (the all-gathered copy of w with its dp halves
    swapped), cut in the reference's order: the difference is found and XLA confirms it."""
    v = verify(LAYOUTS / "two_layouts.ref.mlir", LAYOUTS / "two_layouts_bug_swapped_copy.partitioned.mlir",
               **QUICK)
    assert v.verdict == "not-equivalent", v.reason
    assert v.counterexample is not None and v.counterexample.confirmed


def _body_stages(schedule_bodies: bool, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The stages of scan_L4's partitioned pair that its loop body's chain makes (the body
    cut in the reference's order when `schedule_bodies`)."""
    if schedule_bodies:
        real = stages_run._cut

        def anywhere(*args: Any, **kwargs: Any) -> stages_run.Cut:
            kwargs["schedule"] = True
            return real(*args, **kwargs)

        monkeypatch.setattr(stages_run, "_cut", anywhere)
    options = Options(stage_min_elements=0)
    ref = prepare(str(SCAN / "scan_L4.ref.mlir"), options)
    other = prepare(str(SCAN / "scan_L4.partitioned.mlir"), options)
    check_signatures(ref, other)
    cut = stages_run._cut(ref, other, options, None)
    return [s for s in cut.stages if f": {loops.BODY}" in s.name]


def test_a_loop_body_is_cut_in_the_programs_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """The partitioned scan's body in the reference's order is cut finer, and one of its
    stages takes the layer's weight slice and the copy XLA reads in its place as two free
    inputs: it fails at free inputs, and a body's links are not widened (one induction), so
    the pair would end `unknown` (tests/test_stages.py's scan test, which proves the body
    whole in the program's order: it does not cut there). The rule removed, this fails."""
    kept = _body_stages(False, monkeypatch)
    assert len(kept) == 1, [s.name for s in kept]
    finer = _body_stages(True, monkeypatch)
    assert len(finer) > 10
    # Every input finite: the claim is only easier, and a stage that fails still fails.
    finite = {r for s in finer for r in s.slots}
    records, _ = stages_run._prove_stages(finer, Options(jobs=1, cache=False), finite)
    assert any(r.verdict == "not-equivalent" for r in records), [(r.name, r.verdict) for r in records]
