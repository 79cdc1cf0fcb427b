"""Replayed outputs compared (witness/replay.py `values_differ`): integers exactly, floats
within tolerances. A counterexample on a ui64 random draw or an int64 count differs by a
few units at values near 2**40 and more; a float tolerance there called them equal, and
the counterexample stayed unconfirmed."""
from __future__ import annotations

import numpy as np

from tv_mlir.witness.replay import values_differ


def test_integers_compare_exactly_at_any_size() -> None:
    assert values_differ(2**40, 2**40 + 1, rtol=1e-4, atol=1e-6)
    assert values_differ(np.uint64(2**63 + 5), np.uint64(2**63 + 6), rtol=1e-4, atol=1e-6)
    assert not values_differ(np.int64(7), 7)
    assert values_differ(True, False) and not values_differ(np.bool_(True), True)


def test_floats_keep_their_tolerance() -> None:
    assert not values_differ(1.0, 1.0 + 1e-9)
    assert values_differ(1.0, 1.001)
    assert not values_differ(1e12, 1e12 + 1.0, rtol=1e-4, atol=1e-6)  # a float rounding, not a difference
    assert values_differ("nan", 1.0) and not values_differ("inf", float("inf"))
