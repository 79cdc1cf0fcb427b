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


def test_the_throughput_is_per_cpu_second() -> None:
    """`element_ops_per_s` divides by the symbolic phase's CPU seconds (`symbolic_cpu_s`),
    not its wall seconds: a verify made to wait (here: sleeping inside the phase, as a
    loaded machine's other jobs would take turns) keeps its figure."""
    import time

    from conftest import TESTDATA
    from tv_mlir import verify
    from tv_mlir.execute import interp

    pair = (TESTDATA / "pairs" / "dot_transpose.a.mlir", TESTDATA / "pairs" / "dot_transpose.b.mlir")
    run = interp.Interpreter.run

    def slow_run(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        time.sleep(0.3)
        return run(self, *args, **kwargs)

    mp = pytest.MonkeyPatch()
    mp.setattr(interp.Interpreter, "run", slow_run)
    try:
        s = verify(*pair, cache=False).stats
    finally:
        mp.undo()
    assert s["symbolic_s"] >= 0.6 > s["symbolic_cpu_s"], s
    assert s["element_ops_per_s"] == round(s["element_ops"] / max(s["symbolic_cpu_s"], 1e-6)), s
