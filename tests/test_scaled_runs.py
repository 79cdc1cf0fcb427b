"""Random runs at small input scales (stages/lift.scaled_runs): a bug only small values
show is caught once the unit-scale runs agree, before any stage is proved.

The pair clips an update by its norm, `u = g * min(1, 1/||g||)`, of a gradient divided by
2 (the reference) or by 4 (the other): `clip_by_global_norm` and a mean divided by the
wrong count, as the FSDP AdamW step's `wrong_divisor` mutant (docs/jax.md). Whenever
||g / 4|| >= 1 both clips give g / ||g|| bit for bit (powers of two scale exactly), which is
every unit-scale random run; with the inputs scaled down the norm falls below 1 and the
update doubles."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from test_stages import UNREACHABLE_OTHER, UNREACHABLE_REF  # a stage widening covers

from tv_mlir.api import prepare, verify
from tv_mlir.execute.xla import XlaRunner
from tv_mlir.options import Options
from tv_mlir.prove.fingerprints import random_inputs
from tv_mlir.stages import lift, lineage
from tv_mlir.stages import run as stages_run
from tv_mlir.verdict import Verdict

CLIP = """
func.func @main(%x: tensor<4x8xf32>, %w: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %g0 = stablehlo.dot_general %x, %x, contracting_dims = [0] x [0] : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %g1 = stablehlo.dot_general %g0, %w, contracting_dims = [1] x [0] : (tensor<8x8xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %c = stablehlo.constant dense<DIVISOR> : tensor<8x4xf32>
  %g = stablehlo.divide %g1, %c : tensor<8x4xf32>
  %sq = stablehlo.multiply %g, %g : tensor<8x4xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%sq init: %zero) applies stablehlo.add across dimensions = [0, 1] : (tensor<8x4xf32>, tensor<f32>) -> tensor<f32>
  %n = stablehlo.sqrt %s : tensor<f32>
  %one = stablehlo.constant dense<1.0> : tensor<f32>
  %inv = stablehlo.divide %one, %n : tensor<f32>
  %f = stablehlo.minimum %one, %inv : tensor<f32>
  %fb = stablehlo.broadcast_in_dim %f, dims = [] : (tensor<f32>) -> tensor<8x4xf32>
  %u = stablehlo.multiply %g, %fb : tensor<8x4xf32>
  %out = stablehlo.subtract %w, %u : tensor<8x4xf32>
  return %out : tensor<8x4xf32>
}
"""
REF, OTHER = CLIP.replace("DIVISOR", "2.0"), CLIP.replace("DIVISOR", "4.0")
# Cut into stages (the pair is far below the default --stage-min-elements).
QUICK: dict[str, Any] = dict(full_size_check="off", second_witness=False, stage_min_elements=0, cache=False)


def _xla(text: str, arrays: list[np.ndarray]) -> np.ndarray:
    return np.asarray(XlaRunner().run(text, [np.asarray(a, np.float32) for a in arrays])[0])


def test_the_pair_differs_only_at_small_scales() -> None:
    """Ground truth on XLA: the lineage's random-normal runs agree as drawn and differ
    scaled down (else the tests below would not test the scaled runs)."""
    types = prepare(REF, Options()).global_arg_types()
    runs = random_inputs(types)[lineage.RUNS]
    for arrays in runs:
        assert np.array_equal(_xla(REF, arrays), _xla(OTHER, arrays))
    scaled = lift.scaled_runs(runs, [])
    assert {r.power for r in scaled} == set(lift.SCALE_POWERS) and len(scaled) == len(runs) * len(lift.SCALE_POWERS)
    assert any(np.abs(_xla(REF, r.arrays) - _xla(OTHER, r.arrays)).max() > 1e-3 for r in scaled)


def test_scaled_runs_catch_it() -> None:
    v = verify(REF, OTHER, **QUICK)
    assert v.verdict == "not-equivalent", v.reason
    c = v.counterexample
    assert c is not None and c.confirmed and c.found_by.startswith("random run scaled by 2^-")
    assert c.replay and c.replay[-1].confirmed  # XLA shows it
    assert v.stages is not None and v.stages["scaled"] == c.found_by and v.stages["proved"] == 0
    # The witness is real: XLA on the reported inputs gives the two reported values.
    arrays = [np.asarray(x, np.float32) for x in c.inputs.values()]  # in the signature's order
    idx = tuple(c.index)
    assert _xla(REF, arrays)[idx] != _xla(OTHER, arrays)[idx]


def test_without_scaled_runs_the_staged_proof_does_not_catch_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Switched off, the stage with the clip fails (its counterexample needs sqrt, which
    XLA does not reproduce), the unit-scale runs give nothing to lift, and the pair goes to
    the whole proof (stubbed here as `unknown`: it spends its whole budget on this pair)."""
    monkeypatch.setattr(lift, "SCALED_RUNS", False)
    whole: list[int] = []
    real = stages_run.prove_pair

    def whole_proof(ref: Any, other: Any, options: Options, *args: Any) -> Verdict:
        if not options.stages:  # a stage's proof (`stage_options`): the real one
            return real(ref, other, options, *args)
        whole.append(1)
        return Verdict("unknown", "the whole proof (stubbed)")

    monkeypatch.setattr(stages_run, "prove_pair", whole_proof)
    v = verify(REF, OTHER, **QUICK)
    assert v.verdict == "unknown" and whole == [1], v.reason
    assert v.stages is not None and "scaled" not in v.stages and v.stages["failed"]["verdict"] != "equivalent"
    assert v.counterexample is None or not v.counterexample.found_by.startswith("random run scaled")


def test_scaling_keeps_integers_and_bounds() -> None:
    """Only floats whose --assume bounds hold 0 are scaled (toward 0 they stay inside);
    integers (indices, counts) and floats bounded away from 0 are kept as drawn."""
    f = np.array([1.5, -3.0])
    i = np.array([3, 4], dtype=np.int64)
    runs = lift.scaled_runs([[f, i, f, f]], [None, None, (0, 10), (1, 2)], powers=(2,))
    assert len(runs) == 1 and runs[0].power == 2
    a = runs[0].arrays
    assert np.array_equal(a[0], f / 4) and a[1] is i and np.array_equal(a[2], f / 4) and a[3] is f
    # A run with nothing to scale is the unit-scale run again: not repeated.
    assert lift.scaled_runs([[i]], []) == []


def test_a_pair_too_large_for_the_early_runs_gets_them_at_its_failed_stage(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past `lift.EARLY_SCALED_ELEMENTS` the stages are proved first; the clip's stage fails
    and its lift, finding nothing at unit scale, compares the scaled runs and names it."""
    monkeypatch.setattr(lift, "EARLY_SCALED_ELEMENTS", 0)
    v = verify(REF, OTHER, **QUICK)
    assert v.verdict == "not-equivalent", v.reason
    c = v.counterexample
    assert c is not None and c.confirmed and c.found_by.startswith("random run scaled by 2^-")
    assert v.stages is not None and v.stages["scaled"] == c.found_by and v.stages["failed"]["verdict"] != "equivalent"
    assert f"the first stage that fails is {v.stages['failed']['name']}" in v.reason


def _count_lifts(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per lift of random runs (unit-scale or scaled) the staged proof makes."""
    calls: list[int] = []
    real = stages_run.numeric_witness

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)
    monkeypatch.setattr(stages_run, "numeric_witness", spy)
    return calls


def test_a_stage_widening_covers_runs_no_lift(monkeypatch: pytest.MonkeyPatch) -> None:
    """When the lineage's runs agree, a failed stage's lift (every random run, then the
    scaled runs) waits until widening has not covered it: a covered stage leaves no bug to
    find, and on a large pair the runs cost more than the widening (the 405B scan's second
    witness: 64% of its CPU)."""
    monkeypatch.setattr(lift, "EARLY_SCALED_ELEMENTS", 0)
    calls = _count_lifts(monkeypatch)
    v = verify(UNREACHABLE_REF, UNREACHABLE_OTHER, **QUICK)
    assert v.verdict == "equivalent", v.reason
    assert v.stages is not None and v.stages["covered"]["verdict"] == "not-equivalent"
    assert not calls


def test_a_stage_widening_does_not_cover_is_still_lifted(monkeypatch: pytest.MonkeyPatch) -> None:
    """The clip pair's failed stage is a real difference: widening does not cover it, and
    the lift after it finds the bug on the scaled runs (unit-scale first, then scaled)."""
    monkeypatch.setattr(lift, "EARLY_SCALED_ELEMENTS", 0)
    calls = _count_lifts(monkeypatch)
    v = verify(REF, OTHER, **QUICK)
    assert v.verdict == "not-equivalent", v.reason
    assert len(calls) == 2 and v.stages is not None and "covered" not in v.stages
