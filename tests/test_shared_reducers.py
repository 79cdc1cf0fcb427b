"""Structural sharing across the two programs (execute/interp.py, SharedValues) must tell
reductions with different reducers apart: a reduce whose body is `add` and one whose body
is `maximum`, over the very same argument arrays with the same dimensions and result type,
are two values. SharedValues.key left the body out (only whether it is a simple reducer),
so the second program took the first one's sum for its max and the pair was proved
`equivalent` (found by helper-75, 2026-12-07); the key now holds each region's reducer.
Each pair's bug twin is confirmed not-equivalent with the sharing off, so the pairs are real bugs."""
from __future__ import annotations

from pathlib import Path

import pytest

import tv_mlir
from tv_mlir.execute import interp

PAIRS = [("add", "maximum"), ("maximum", "minimum"), ("add", "multiply")]


def _reduce(body_op: str) -> str:
    return ("func.func @main(%x: tensor<4xf32>) -> tensor<f32> {\n"
            "  %z = stablehlo.constant dense<0.0> : tensor<f32>\n"
            "  %r = stablehlo.reduce(%x init: %z) across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>\n"
            "    reducer(%a: tensor<f32>, %b: tensor<f32>) {\n"
            f"      %s = stablehlo.{body_op} %a, %b : tensor<f32>\n"
            "      stablehlo.return %s : tensor<f32>\n"
            "    }\n"
            "  return %r : tensor<f32>\n}\n")


def _verify(tmp_path: Path, a: str, b: str) -> tv_mlir.Verdict:
    (tmp_path / "a.mlir").write_text(_reduce(a))
    (tmp_path / "b.mlir").write_text(_reduce(b))
    return tv_mlir.verify(str(tmp_path / "a.mlir"), str(tmp_path / "b.mlir"), cache=False, shrink=False)


@pytest.mark.parametrize("a,b", PAIRS)
def test_the_pair_is_a_bug_without_sharing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, a: str, b: str) -> None:
    monkeypatch.setattr(interp, "_commutative_body", lambda op: False)
    v = _verify(tmp_path, a, b)
    assert v.verdict == "not-equivalent", v.reason
    assert v.counterexample is not None and v.counterexample.confirmed


@pytest.mark.parametrize("a,b", PAIRS)
def test_reducers_are_not_shared_across_bodies(tmp_path: Path, a: str, b: str) -> None:
    v = _verify(tmp_path, a, b)
    assert v.verdict == "not-equivalent", v.reason
