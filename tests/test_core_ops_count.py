"""The throughput figure's numerator (`Algebra.element_ops`, printed as `element_ops` and
`element_ops_per_s` in --json stats and in the bench): both symbolic cores count the same
scalar operations for the same work, whatever their terms, so their figures compare.
One per elementwise result, 2K - 1 per dot result (K products, K - 1 sums), n - 1 per sum
of n, and one select per option past the last of a gather's or scatter's chain."""
from __future__ import annotations

import pytest

from tv_mlir.algebra.base import Kind
from tv_mlir.algebra.fast import FastAlgebra
from tv_mlir.algebra.symbolic import SymbolicAlgebra


@pytest.mark.parametrize("make", [FastAlgebra, SymbolicAlgebra], ids=["own", "z3"])
def test_element_ops_count_the_work(make) -> None:
    alg = make()
    a, _ = alg.inputs("a", (2, 3, 4), Kind.FLOAT)  # (B, M, K)
    b, _ = alg.inputs("b", (2, 5, 4), Kind.FLOAT)  # (B, N, K)
    i, _ = alg.inputs("i", (), Kind.INT, bounds=(0, 3))
    start = alg.element_ops
    alg.dot(a, b, Kind.FLOAT)
    assert alg.element_ops - start == 2 * 3 * 5 * (2 * 4 - 1)
    start = alg.element_ops
    alg.add(a, a, Kind.FLOAT)
    assert alg.element_ops - start == a.size
    start = alg.element_ops
    alg.reduce_sum(a, (2,), Kind.FLOAT)
    assert alg.element_ops - start == 2 * 3 * 3
    start = alg.element_ops
    options = alg.positions(i[()], 3, True)  # a clamped index over 0..3: four options
    assert len(options) == 4
    alg.choose([(c, a[0, 0, p]) for p, c in options], Kind.FLOAT)
    assert alg.element_ops - start == 3
