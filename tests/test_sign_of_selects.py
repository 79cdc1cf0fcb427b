"""Signs of selects from their conditions (algebra/fast.py `_branch_sign`): a branch is
counted with the sign its select's condition gives it where it is taken. LayerNorm's
variance E[x^2] - E[x]^2 clipped at 0 (flax writes max(v, 0)) plus eps is then known
positive and its rsqrt finite; it was an input-dependent IEEE class, spread to every value
after it (a GPT-2 forward passed its term budget)."""
from __future__ import annotations

from typing import Any

import numpy as np

from tv_mlir.algebra import Kind
from tv_mlir.algebra import terms as T
from tv_mlir.algebra.fast import FIN, NONNEG_SIGN, POS_SIGN, FastAlgebra, known_sign


def _x(alg: FastAlgebra) -> Any:
    x, _ = alg.inputs("x", (1,), Kind.FLOAT)
    return x


def _sign(x: Any) -> int:
    return known_sign(T.element_terms(x[0])[0])


def _const(alg: FastAlgebra, c: float) -> np.ndarray:
    return alg.full((1,), c, Kind.FLOAT)


def test_a_value_clipped_below_at_zero_is_non_negative() -> None:
    alg = FastAlgebra()
    x = _x(alg)
    for clipped in (alg.max(x, _const(alg, 0.0), Kind.FLOAT), alg.max(_const(alg, 0.0), x, Kind.FLOAT)):
        assert _sign(clipped) == NONNEG_SIGN
        eps = alg.add(clipped, _const(alg, 1e-6), Kind.FLOAT)
        assert _sign(eps) == POS_SIGN
        assert alg.uf("rsqrt", [eps])[0].k == FIN


def test_what_the_condition_does_not_say_stays_unknown() -> None:
    alg = FastAlgebra()
    x = _x(alg)
    # min(x, 0) <= 0, max(x, -1) may be negative, max(2x, 0) is >= 0 (a multiple of x).
    assert _sign(alg.min(x, _const(alg, 0.0), Kind.FLOAT)) == 0
    shifted = alg.max(x, _const(alg, -1.0), Kind.FLOAT)
    assert _sign(shifted) == 0
    assert alg.uf("rsqrt", [alg.add(shifted, _const(alg, 1e-6), Kind.FLOAT)])[0].k != FIN
    two = alg.mul(_const(alg, 2.0), x, Kind.FLOAT)
    assert _sign(alg.max(two, _const(alg, 0.0), Kind.FLOAT)) == NONNEG_SIGN
    # The other branch's sign still counts: max(x, y) with y unknown is unknown.
    y, _ = alg.inputs("y", (1,), Kind.FLOAT)
    assert _sign(alg.max(x, y, Kind.FLOAT)) == 0
