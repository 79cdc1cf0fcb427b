"""passes.normalize.attr_key: the stand-in by which CSE merges ops and a stage's hash
names its constants. Equal values give equal keys, different values different ones,
for typed arrays by their bytes and for object arrays (exact rationals, integers past
64 bits) by their elements, not the elements' addresses."""
from __future__ import annotations

from fractions import Fraction

import numpy as np

from tv_mlir.passes.normalize import attr_key


def _objects(*xs: object) -> np.ndarray:
    a = np.empty(len(xs), dtype=object)
    a[:] = xs
    return a


def test_object_arrays_by_value() -> None:
    big = 10 ** 30
    assert attr_key(_objects(Fraction(1, 3), big)) == attr_key(_objects(Fraction(1, 3), big + 0))
    assert attr_key(_objects(Fraction(1, 3), big)) != attr_key(_objects(Fraction(2, 3), big))
    assert attr_key(_objects(1, 2)) != attr_key(_objects(1, 2).reshape(2, 1))


def test_typed_arrays_by_bytes_dtype_and_shape() -> None:
    a = np.arange(6, dtype=np.float32)
    assert attr_key(a) == attr_key(a.copy())
    assert attr_key(a) != attr_key(a.astype(np.float64))
    assert attr_key(a) != attr_key(a.reshape(2, 3))
    b = a.copy()
    b[3] = -0.0 if b[3] == 0 else b[3] + 1
    assert attr_key(a) != attr_key(b)
