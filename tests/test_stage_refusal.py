"""The staged proof's size refusal (stages/run.py, `over_any_stage`; helper-54, docs/jax.md "At
Llama-3-8B widths"): a pair whose reference has an op over the encoding's budget
(driver.MAX_ELEMENTS, the tensor elements of one stage's program) and is over
REFUSE_ELEMENTS in all is not cut: no stage can hold that op, so the lineage's numeric runs
(65 s CPU and 6.5 GB on the 8B fwd+bwd) would only end at the same `unknown`. Smaller pairs
are cut as before."""
from __future__ import annotations

from pathlib import Path

import pytest

import tv_mlir
from tv_mlir.stages import run

_OUTER = """
func.func public @main(%a: tensor<Nxf32>, %b: tensor<Nxf32>) -> tensor<f32> {
  %0 = stablehlo.broadcast_in_dim %a, dims = [0] : (tensor<Nxf32>) -> tensor<NxNxf32>
  %1 = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<Nxf32>) -> tensor<NxNxf32>
  %2 = stablehlo.multiply %0, %1 : tensor<NxNxf32>
  %c = stablehlo.constant dense<0.0> : tensor<f32>
  %3 = stablehlo.reduce(%2 init: %c) applies stablehlo.add across dimensions = [0, 1]
      : (tensor<NxNxf32>, tensor<f32>) -> tensor<f32>
  return %3 : tensor<f32>
}
"""


def _verify(tmp_path: Path, n: int) -> tv_mlir.Verdict:
    path = tmp_path / f"outer{n}.mlir"
    path.write_text(_OUTER.replace("N", str(n)))
    return tv_mlir.verify(str(path), str(path), shrink=False)


def test_an_op_no_stage_can_hold_refuses_the_cut(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # 3000 x 3000 = 9 M elements per value, 27 M in the program: refused before any run, the
    # op named.
    v = _verify(tmp_path, 3000)
    assert v.verdict == "unknown" and "too large to encode" in v.reason
    assert v.stages is not None and v.stages["reason"].startswith("not cut: stablehlo.broadcast_in_dim")
    # Loosened (no refusal): the pair goes to the cut, which reads its ops.
    monkeypatch.setattr(run, "REFUSE_ELEMENTS", 10**12)
    v = _verify(tmp_path, 3000)
    assert v.verdict == "unknown"
    assert v.stages is not None and not v.stages["reason"].startswith("not cut: stablehlo.")


def test_a_smaller_pair_is_still_cut(tmp_path: Path) -> None:
    # 2100 x 2100 = 4.4 M per value (over the stage budget), 13 M in all (under REFUSE_ELEMENTS).
    v = _verify(tmp_path, 2100)
    assert v.stages is not None and not v.stages["reason"].startswith("not cut: stablehlo.")


def test_over_any_stage_names_only_ops_over_the_budget(tmp_path: Path) -> None:
    from tv_mlir.api import prepare
    from tv_mlir.options import Options
    for n, over in ((1000, False), (2100, True)):
        path = tmp_path / f"o{n}.mlir"
        path.write_text(_OUTER.replace("N", str(n)))
        assert bool(run.over_any_stage(prepare(str(path), Options()))) == over
