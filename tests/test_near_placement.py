"""Values whose fingerprints miss by a float32 rounding are still merged by placement when
their runs are within `sweep.NEAR` of the reference element at the placement's offset
(prove/sweep.py `_by_placement`). The fingerprints round float64 runs to float32, so two
programs that compute one real function in runs that differ by 1e-8 (a literal the
numeric rules treat apart from the symbolic ones; a sum in another order after a
cancellation) meet only where the rounding hides the difference."""
from __future__ import annotations

import numpy as np
import pytest

from tv_mlir.api import verify
from tv_mlir.execute import interp
from tv_mlir.prove import sweep
from tv_mlir.semantics.common import OpContext

N = 64
# The scale sqrt(8) as the lowering writes it and as XLA folds it, then a max that the
# other program writes as -min(-y, -w): a value whose terms differ and that merges only
# by a proof, so only if a fingerprint or a placement nominates it.
REF = f"""func.func @main(%x: tensor<{N}xf32>, %w: tensor<{N}xf32>) -> tensor<{N}xf32> {{
  %c = stablehlo.constant dense<8.0> : tensor<{N}xf32>
  %s = stablehlo.sqrt %c : tensor<{N}xf32>
  %y = stablehlo.divide %x, %s : tensor<{N}xf32>
  %m = stablehlo.maximum %y, %w : tensor<{N}xf32>
  %e = stablehlo.exponential %m : tensor<{N}xf32>
  return %e : tensor<{N}xf32>
}}"""
OTHER = f"""func.func @main(%x: tensor<{N}xf32>, %w: tensor<{N}xf32>) -> tensor<{N}xf32> {{
  %c = stablehlo.constant dense<2.82842708> : tensor<{N}xf32>
  %y = stablehlo.divide %x, %c : tensor<{N}xf32>
  %ny = stablehlo.negate %y : tensor<{N}xf32>
  %nw = stablehlo.negate %w : tensor<{N}xf32>
  %n = stablehlo.minimum %ny, %nw : tensor<{N}xf32>
  %m = stablehlo.negate %n : tensor<{N}xf32>
  %e = stablehlo.exponential %m : tensor<{N}xf32>
  return %e : tensor<{N}xf32>
}}"""


def _placed(monkeypatch: pytest.MonkeyPatch, near: bool) -> int:
    # The numeric runs without the sqrt rounding: they differ by 1e-8 where the terms agree.
    monkeypatch.setattr(interp, "OpContext", lambda *a: OpContext(*a[:4]))
    monkeypatch.setattr(sweep, "NEAR_PLACEMENT", near)
    v = verify(REF, OTHER, cache=False, stages=False, shrink=False)
    assert v.verdict == "equivalent", v.reason
    assert v.stats["failed_merges"] == 0
    return int(v.stats["merged_by_position"])


def test_values_missed_by_a_rounding_are_merged_by_placement(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _placed(monkeypatch, True) > 0
    assert _placed(monkeypatch, False) == 0


def test_a_near_miss_that_is_another_function_is_not_merged(monkeypatch: pytest.MonkeyPatch) -> None:
    """Near is only a nomination: a literal one float32 step off is another function, and
    the proof refuses it (no merge; the difference is below float32 noise, so XLA does
    not reproduce it and the verdict is `unknown`, never `equivalent`)."""
    monkeypatch.setattr(sweep, "NEAR", 1e-3)
    v = verify(REF, OTHER.replace("2.82842708", "2.82842731"), cache=False, stages=False, shrink=False)
    assert v.verdict != "equivalent"
    assert v.stats["merged_by_position"] == 0 and v.stats["failed_merges"] > 0


def test_near_compares_every_run() -> None:
    runs = [np.array([1.0, 2.0]), np.array([3.0, 4.0])]
    assert sweep._near(runs, 1, [np.array([[2.0 + 1e-9]]), np.array([[4.0]])], (0, 0))
    assert not sweep._near(runs, 1, [np.array([[2.0]]), np.array([[4.1]])], (0, 0))
    assert not sweep._near(runs, 1, [np.array([[2.0]])], (0, 0))  # other run counts
