"""Every bundled testdata pair gets its expected verdict; every not-equivalent verdict
carries a counterexample on which real XLA shows the difference."""
from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import TESTDATA
from tv_mlir.api import verify
from tv_mlir.witness.replay import values_differ
from tv_mlir.witness.settle import concrete_inputs

CASES = []
for folder in ("pairs", "hand"):
    for name, entry in json.loads((TESTDATA / folder / "manifest.json").read_text()).items():
        CASES.append(pytest.param(folder, name, entry["expect"], id=f"{folder}/{name}"))


@pytest.mark.parametrize("folder,name,expect", CASES)
def test_pair_verdict(folder: str, name: str, expect: str, xla) -> None:
    a = TESTDATA / folder / f"{name}.a.mlir"
    b = TESTDATA / folder / f"{name}.b.mlir"
    v = verify(a, b, timeout_s=60)
    assert v.verdict == expect, v.reason
    if expect != "not-equivalent":
        assert v.counterexample is None
        return
    c = v.counterexample
    assert c is not None and c.replay and c.confirmed and c.confirmed_at == "original sizes", c
    xla_replay = [r for r in c.replay if r.backend == "xla"]
    assert xla_replay and xla_replay[0].confirmed and not xla_replay[0].error, c.replay
    # The witness really separates the programs on XLA (f32), not only in our interpreter.
    types = [t for t in _arg_types(a)]
    inputs = concrete_inputs(c, types)
    ra = xla.run(a.read_text(), inputs)[c.output][tuple(c.index)]
    rb = xla.run(b.read_text(), inputs)[c.output][tuple(c.index)]
    assert values_differ(ra, rb, rtol=1e-4, atol=1e-5), (ra, rb, c)


def _arg_types(path):
    from tv_mlir.frontend.read import load_module

    return load_module(path).main.arg_types


def test_div_mul_counterexample_is_at_zero_divisor() -> None:
    # x / y * y against x: the only difference is at y == 0, where the reference is NaN.
    v = verify(TESTDATA / "pairs/div_mul.a.mlir", TESTDATA / "pairs/div_mul.b.mlir")
    c = v.counterexample
    assert v.verdict == "not-equivalent"
    ys = np.array(list(c.inputs.values())[1], dtype=float)
    assert ys[tuple(c.index)] == 0
    assert c.ref_value == "nan" and c.other_value != "nan"


def test_softmax_shift_is_never_not_equivalent() -> None:
    # Equal as real functions, but only provable through exp(x - m) = exp(x) / exp(m),
    # which an uninterpreted exp does not give: the answer must be unknown.
    v = verify(TESTDATA / "pairs/softmax_shift.a.mlir", TESTDATA / "pairs/softmax_shift.b.mlir")
    assert v.verdict == "unknown"
    assert "exponential" in v.approximations


def test_variance_forms_name_the_approximation() -> None:
    v = verify(TESTDATA / "pairs/variance_rsqrt.a.mlir", TESTDATA / "pairs/variance_rsqrt.b.mlir")
    assert v.verdict == "equivalent"
    assert v.approximations == ["rsqrt"]
