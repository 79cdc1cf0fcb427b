"""Comparisons that known bounds of an integer atom decide (algebra/term.py
`_decided_by_bounds`): a*x + b against 0 where x's range decides it. A difference of two
bounded atoms is not decided by either one's range: x > y with x, y in 0..100 was folded to
False by y's range alone (the loop kept the last atom it met), so a select on it took its
else branch everywhere and a pair that differs whenever x > y came out `equivalent`."""
from __future__ import annotations

from pathlib import Path

from tv_mlir.algebra import Kind
from tv_mlir.algebra.fast import FastAlgebra
from tv_mlir.api import verify

REF = """module @ref {
  func.func public @main(%x: tensor<4xi32>, %y: tensor<4xi32>) -> tensor<4xi32> {
    %p = stablehlo.compare GT, %x, %y : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
    %m = stablehlo.add %x, %y : tensor<4xi32>
    %s = stablehlo.subtract %x, %y : tensor<4xi32>
    %r = stablehlo.select %p, %m, %s : tensor<4xi1>, tensor<4xi32>
    return %r : tensor<4xi32>
  }
}"""
# The sum computed in i8: it wraps where x + y > 127, which x > y allows in 0..100.
OTHER = """module @bug {
  func.func public @main(%x: tensor<4xi32>, %y: tensor<4xi32>) -> tensor<4xi32> {
    %p = stablehlo.compare GT, %x, %y : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
    %x8 = stablehlo.convert %x : (tensor<4xi32>) -> tensor<4xi8>
    %y8 = stablehlo.convert %y : (tensor<4xi32>) -> tensor<4xi8>
    %m8 = stablehlo.add %x8, %y8 : tensor<4xi8>
    %m = stablehlo.convert %m8 : (tensor<4xi8>) -> tensor<4xi32>
    %s = stablehlo.subtract %x, %y : tensor<4xi32>
    %r = stablehlo.select %p, %m, %s : tensor<4xi1>, tensor<4xi32>
    return %r : tensor<4xi32>
  }
}"""


def _bounded(alg: FastAlgebra, name: str, lo: int, hi: int):  # noqa: ANN202
    arr, _ = alg.inputs(name, (1,), Kind.INT, False, 32, bounds=(lo, hi))
    return arr


def test_two_bounded_atoms_are_not_decided_by_one_range() -> None:
    alg = FastAlgebra()
    x, y = _bounded(alg, "x", 0, 100), _bounded(alg, "y", 0, 100)
    for direction in ("GT", "LT", "GE", "LE", "EQ", "NE"):
        got = alg.compare(direction, x, y, Kind.INT, False)[0]
        assert not isinstance(got, bool), (direction, got)


def test_one_bounded_atom_still_decides() -> None:
    alg = FastAlgebra()
    x = _bounded(alg, "x", 0, 100)
    assert alg.compare("LT", x, alg.full((1,), 101, Kind.INT), Kind.INT, False)[0] is True
    assert alg.compare("GT", x, alg.full((1,), -1, Kind.INT), Kind.INT, False)[0] is True
    assert not isinstance(alg.compare("LT", x, alg.full((1,), 50, Kind.INT), Kind.INT, False)[0], bool)


def test_the_wrapping_sum_behind_a_comparison_is_found(tmp_path: Path) -> None:
    (tmp_path / "ref.mlir").write_text(REF)
    (tmp_path / "other.mlir").write_text(OTHER)
    v = verify(tmp_path / "ref.mlir", tmp_path / "other.mlir", cache=False,
               assume={"arg0": (0, 101), "arg1": (0, 101)})
    assert v.verdict == "not-equivalent", v.reason
    c = v.counterexample
    assert c is not None and c.confirmed
    x, y = (int(c.inputs[n][c.index[0]]) for n in ("arg0", "arg1"))
    assert 0 <= y < x <= 100 and x + y > 127, (x, y)
