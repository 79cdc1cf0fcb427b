"""A witness found at the shrunk sizes and embedded into the original sizes stays inside the
inputs' assumptions (`shrink/embed.py` `fills_for`): the elements the witness does not set
were zeros, so labels assumed in 2..15 came back with 0 among them, a counterexample outside
the domain the verdict is about (found by tests/core_fuzz.py)."""
from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import TESTDATA
from tv_mlir.api import verify
from tv_mlir.shrink.embed import fills_for

D = TESTDATA / "shrink_rules"


@pytest.mark.parametrize("pair,lo,hi", [("label_smooth", 2, 16), ("label_half", 3, 64)])
def test_an_embedded_witness_keeps_the_assumed_labels(pair: str, lo: int, hi: int) -> None:
    v = verify(D / f"{pair}.small.ref.mlir", D / f"{pair}.small.bug.mlir", cache=False, assume={"arg1": (lo, hi)})
    assert v.verdict == "not-equivalent", v.reason
    c = v.counterexample
    assert c is not None and c.embedded and c.confirmed_at == "original sizes", c
    labels = np.asarray(list(c.inputs.values())[1])
    assert labels.min() >= lo and labels.max() < hi, (labels.min(), labels.max())


def test_fills() -> None:
    assert fills_for([None, (0, 9), (-3, 4), (2, 15), (-9, -2), (3, 3)]) == [0, 0, 0, 2, -2, 3]


UI64_EQ = """module @m {
  func.func public @main(%x: tensor<4xui64>) -> tensor<4xi1> {
    %c = stablehlo.constant dense<C> : tensor<4xui64>
    %0 = stablehlo.compare EQ, %x, %c : (tensor<4xui64>, tensor<4xui64>) -> tensor<4xi1>
    return %0 : tensor<4xi1>
  }
}"""


@pytest.mark.parametrize("constant,lo,hi,want", [
    (5, 2**63 - 20, 2**63 + 21, "equivalent"),  # an assumption across 2**63: drawn below it
    (5, 2**63, 2**63 + 21, "unknown"),  # wholly above: the numeric runs cannot hold it
    (2**63 + 2, 0, 100, "equivalent"),  # a ui64 literal past int64 in the lookups' evaluation
])
def test_ui64_past_int64_is_a_verdict_not_an_internal_error(tmp_path, constant: int, lo: int, hi: int,  # noqa: ANN001
                                                            want: str) -> None:
    f = tmp_path / "m.mlir"
    f.write_text(UI64_EQ.replace("C", str(constant)))
    v = verify(f, f, cache=False, assume={"arg0": (lo, hi)})
    assert v.verdict == want, v.reason
