"""Value ranges of the reference's integer and i1 values (tv_mlir/stages/ranges.py), and
what staged proofs do with them: a stage's integer / i1 inputs narrowed to their interval
(`Options.input_bounds`, a decided i1 input a constant), and a select on a decided
condition taking its chosen branch's finiteness (stages/finite.py)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from tv_mlir.algebra import Kind, SymbolicAlgebra
from tv_mlir.algebra.fast import FF, FIN, FastAlgebra
from tv_mlir.api import prepare, verify
from tv_mlir.driver import prove_pair
from tv_mlir.errors import UsageError
from tv_mlir.execute.interp import Interpreter
from tv_mlir.frontend.classify import check_signatures
from tv_mlir.frontend.read import load_module
from tv_mlir.ir import TensorType
from tv_mlir.options import Options
from tv_mlir.prove.fingerprints import random_inputs
from tv_mlir.semantics.fixed_width import int_width
from tv_mlir.stages import ranges as ranges_mod
from tv_mlir.stages import run as stages_run
from tv_mlir.stages.finite import finite_values
from tv_mlir.stages.ranges import Interval, value_ranges

QUICK = dict(full_size_check="off", second_witness=False, stage_min_elements=0, cache=False)


def returned(text: str, bounds: list[tuple[int, int] | None] | None = None) -> list[Interval | None]:
    """The intervals of the values a hand-written module returns, in order (the reader
    renames SSA values, so they are found through the return)."""
    m = load_module(text)
    rg = value_ranges(m, bounds or [])
    return [rg.intervals.get(v) for v in m.main.body.returns]


def iv(lo: int, hi: int) -> Interval:
    return Interval(lo, hi)


I8_FULL, I32_FULL = iv(-128, 127), iv(-(1 << 31), (1 << 31) - 1)


def test_inputs_constants_iota_and_moves() -> None:
    got = returned("""
func.func @main(%x: tensor<4xi32>, %f: tensor<4xf32>) -> (tensor<4xi32>, tensor<2x3xi32>, tensor<3xi32>,
    tensor<2x4xi32>, tensor<4x2xi32>, tensor<2xi32>, tensor<8xi32>, tensor<4xi32>, tensor<6xi32>, tensor<2xi32>,
    tensor<3x1xi32>, tensor<4xi1>, tensor<4xf32>) {
  %c = stablehlo.constant dense<[3, -2, 7]> : tensor<3xi32>
  %io = stablehlo.iota dim = 1 : tensor<2x3xi32>
  %b = stablehlo.broadcast_in_dim %x, dims = [1] : (tensor<4xi32>) -> tensor<2x4xi32>
  %t = stablehlo.transpose %b, dims = [1, 0] : (tensor<2x4xi32>) -> tensor<4x2xi32>
  %s = stablehlo.slice %x [1:3] : (tensor<4xi32>) -> tensor<2xi32>
  %cat = stablehlo.concatenate %x, %x, dim = 0 : (tensor<4xi32>, tensor<4xi32>) -> tensor<8xi32>
  %rev = stablehlo.reverse %x, dims = [0] : tensor<4xi32>
  %z = stablehlo.constant dense<-5> : tensor<i32>
  %pad = stablehlo.pad %x, %z, low = [1], high = [1], interior = [0] : (tensor<4xi32>, tensor<i32>) -> tensor<6xi32>
  %i = stablehlo.constant dense<1> : tensor<i32>
  %ds = stablehlo.dynamic_slice %x, %i, sizes = [2] : (tensor<4xi32>, tensor<i32>) -> tensor<2xi32>
  %idx = stablehlo.constant dense<[[0], [2], [3]]> : tensor<3x1xi32>
  %g = "stablehlo.gather"(%x, %idx) <{dimension_numbers = #stablehlo.gather<offset_dims = [1],
      start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false,
      slice_sizes = array<i64: 1>}> : (tensor<4xi32>, tensor<3x1xi32>) -> tensor<3x1xi32>
  %p = stablehlo.constant dense<[true, false, true, true]> : tensor<4xi1>
  return %x, %io, %c, %b, %t, %s, %cat, %rev, %pad, %ds, %g, %p, %f : tensor<4xi32>, tensor<2x3xi32>,
    tensor<3xi32>, tensor<2x4xi32>, tensor<4x2xi32>, tensor<2xi32>, tensor<8xi32>, tensor<4xi32>, tensor<6xi32>,
    tensor<2xi32>, tensor<3x1xi32>, tensor<4xi1>, tensor<4xf32>
}
""", [(0, 63)])
    x = iv(0, 63)
    assert got == [x, iv(0, 2), iv(-2, 7), x, x, x, x, x, iv(-5, 63), x, x, iv(0, 1), None]
    # Without bounds a program input has its type's range.
    assert returned("""
func.func @main(%x: tensor<4xi8>, %u: tensor<4xui16>, %p: tensor<4xi1>) -> (tensor<4xi8>, tensor<4xui16>, tensor<4xi1>) {
  return %x, %u, %p : tensor<4xi8>, tensor<4xui16>, tensor<4xi1>
}
""") == [I8_FULL, iv(0, 65535), iv(0, 1)]


def test_an_iota_longer_than_its_type_counts_has_the_type_range() -> None:
    assert returned("""
func.func @main() -> (tensor<300xi8>, tensor<100xi8>) {
  %a = stablehlo.iota dim = 0 : tensor<300xi8>
  %b = stablehlo.iota dim = 0 : tensor<100xi8>
  return %a, %b : tensor<300xi8>, tensor<100xi8>
}
""") == [I8_FULL, iv(0, 99)]


ARITH = """
func.func @main(%x: tensor<4xi32>, %y: tensor<4xi32>, %s: tensor<4xi8>, %u: tensor<4xui8>) -> (tensor<4xi32>,
    tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>,
    tensor<4xi8>, tensor<4xi8>, tensor<4xi8>, tensor<4xui8>, tensor<4xi32>) {
  %add = stablehlo.add %x, %y : tensor<4xi32>
  %sub = stablehlo.subtract %x, %y : tensor<4xi32>
  %mul = stablehlo.multiply %x, %y : tensor<4xi32>
  %neg = stablehlo.negate %x : tensor<4xi32>
  %abs = stablehlo.abs %x : tensor<4xi32>
  %max = stablehlo.maximum %x, %y : tensor<4xi32>
  %min = stablehlo.minimum %x, %y : tensor<4xi32>
  %lo = stablehlo.constant dense<0> : tensor<4xi32>
  %hi = stablehlo.constant dense<2> : tensor<4xi32>
  %cl = stablehlo.clamp %lo, %x, %hi : tensor<4xi32>
  %sadd = stablehlo.add %s, %s : tensor<4xi8>
  %sneg = stablehlo.negate %s : tensor<4xi8>
  %sabs = stablehlo.abs %s : tensor<4xi8>
  %usub = stablehlo.subtract %u, %u : tensor<4xui8>
  %div = stablehlo.divide %x, %y : tensor<4xi32>
  return %add, %sub, %mul, %neg, %abs, %max, %min, %cl, %sadd, %sneg, %sabs, %usub, %div : tensor<4xi32>,
    tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>,
    tensor<4xi8>, tensor<4xi8>, tensor<4xi8>, tensor<4xui8>, tensor<4xi32>
}
"""


def test_arithmetic_by_intervals() -> None:
    got = returned(ARITH, [(-3, 5), (2, 4), (0, 60), (0, 9)])
    assert got[:8] == [iv(-1, 9), iv(-7, 3), iv(-12, 20), iv(-5, 3), iv(0, 5), iv(2, 5), iv(-3, 4), iv(0, 2)]
    assert got[8:11] == [iv(0, 120), iv(-60, 0), iv(0, 60)]
    # Anything else (an integer division) has its type's range.
    assert got[12] == I32_FULL


def test_arithmetic_that_can_wrap_has_the_type_range() -> None:
    """Two's complement: 100 + 100 in i8 wraps, so does -(-128) and abs(-128), and an
    unsigned 0 - 9."""
    got = returned(ARITH, [(-3, 5), (2, 4), (-128, 100), (0, 9)])
    assert got[8:12] == [I8_FULL, I8_FULL, I8_FULL, iv(0, 255)]
    big = returned(ARITH, [(0, 1 << 20), (0, 1 << 12), (0, 1), (0, 1)])
    assert big[0] == iv(0, (1 << 20) + (1 << 12)) and big[2] == I32_FULL  # 2**32 does not fit


def test_conversions() -> None:
    got = returned("""
func.func @main(%x: tensor<4xi32>, %p: tensor<4xi1>, %f: tensor<4xf32>) -> (tensor<4xi8>, tensor<4xui8>,
    tensor<4xi32>, tensor<4xi1>, tensor<4xi8>) {
  %a = stablehlo.convert %x : (tensor<4xi32>) -> tensor<4xi8>
  %b = stablehlo.convert %x : (tensor<4xi32>) -> tensor<4xui8>
  %c = stablehlo.convert %p : (tensor<4xi1>) -> tensor<4xi32>
  %d = stablehlo.convert %x : (tensor<4xi32>) -> tensor<4xi1>
  %e = stablehlo.convert %f : (tensor<4xf32>) -> tensor<4xi8>
  return %a, %b, %c, %d, %e : tensor<4xi8>, tensor<4xui8>, tensor<4xi32>, tensor<4xi1>, tensor<4xi8>
}
""", [(0, 63)])
    assert got == [iv(0, 63), iv(0, 63), iv(0, 1), iv(0, 1), I8_FULL]
    wide = returned("""
func.func @main(%x: tensor<4xi32>, %y: tensor<4xi32>) -> (tensor<4xi8>, tensor<4xui8>, tensor<4xi1>, tensor<4xi1>) {
  %a = stablehlo.convert %x : (tensor<4xi32>) -> tensor<4xi8>
  %b = stablehlo.convert %y : (tensor<4xi32>) -> tensor<4xui8>
  %c = stablehlo.convert %x : (tensor<4xi32>) -> tensor<4xi1>
  %d = stablehlo.convert %y : (tensor<4xi32>) -> tensor<4xi1>
  return %a, %b, %c, %d : tensor<4xi8>, tensor<4xui8>, tensor<4xi1>, tensor<4xi1>
}
""", [(1, 300), (-1, 0)])
    assert wide == [I8_FULL, iv(0, 255), iv(1, 1), iv(0, 1)]
    assert returned("""
func.func @main(%x: tensor<4xi32>) -> tensor<4xi1> {
  %c = stablehlo.convert %x : (tensor<4xi32>) -> tensor<4xi1>
  return %c : tensor<4xi1>
}
""", [(0, 0)]) == [iv(0, 0)]


COMPARE = """
func.func @main(%x: tensor<4xi32>, %y: tensor<4xi32>, %f: tensor<4xf32>) -> (tensor<4xi1>, tensor<4xi1>,
    tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>) {
  %lt = stablehlo.compare LT, %x, %y, SIGNED : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
  %le = stablehlo.compare LE, %x, %y, SIGNED : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
  %gt = stablehlo.compare GT, %x, %y, SIGNED : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
  %ge = stablehlo.compare GE, %x, %y, SIGNED : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
  %eq = stablehlo.compare EQ, %x, %y, SIGNED : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
  %ne = stablehlo.compare NE, %x, %y, SIGNED : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
  %ff = stablehlo.compare LT, %f, %f, FLOAT : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  return %lt, %le, %gt, %ge, %eq, %ne, %ff : tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>,
    tensor<4xi1>, tensor<4xi1>, tensor<4xi1>
}
"""


@pytest.mark.parametrize(("x", "y", "want"), [
    ((0, 3), (4, 9), (1, 1, 0, 0, 0, 1)),  # x < y everywhere
    ((0, 4), (4, 9), (None, 1, 0, None, None, None)),  # they meet at 4
    ((5, 9), (0, 5), (0, None, None, 1, None, None)),
    ((7, 7), (7, 7), (0, 1, 0, 1, 1, 0)),
    ((0, 9), (3, 4), (None,) * 6),
])
def test_compares_are_decided_by_intervals(x: tuple[int, int], y: tuple[int, int],
                                           want: tuple[int | None, ...]) -> None:
    got = returned(COMPARE, [x, y])
    assert [g.value if g else "?" for g in got[:6]] == list(want)
    assert got[6] == iv(0, 1)  # floats are not analysed


def test_logic_select_and_reductions() -> None:
    text = """
func.func @main(%p: tensor<4xi1>, %q: tensor<4xi1>, %x: tensor<4xi32>, %y: tensor<4xi32>) -> (tensor<4xi1>,
    tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi32>, tensor<i1>, tensor<i1>, tensor<i32>, tensor<i32>,
    tensor<i32>, tensor<4xi32>) {
  %and = stablehlo.and %p, %q : tensor<4xi1>
  %or = stablehlo.or %p, %q : tensor<4xi1>
  %not = stablehlo.not %p : tensor<4xi1>
  %xor = stablehlo.xor %p, %q : tensor<4xi1>
  %sel = stablehlo.select %p, %x, %y : tensor<4xi1>, tensor<4xi32>
  %t = stablehlo.constant dense<true> : tensor<i1>
  %f = stablehlo.constant dense<false> : tensor<i1>
  %all = stablehlo.reduce(%p init: %t) applies stablehlo.and across dimensions = [0] : (tensor<4xi1>, tensor<i1>) -> tensor<i1>
  %any = stablehlo.reduce(%q init: %f) applies stablehlo.or across dimensions = [0] : (tensor<4xi1>, tensor<i1>) -> tensor<i1>
  %m = stablehlo.constant dense<-2147483648> : tensor<i32>
  %mx = stablehlo.reduce(%x init: %m) applies stablehlo.maximum across dimensions = [0] : (tensor<4xi32>, tensor<i32>) -> tensor<i32>
  %big = stablehlo.constant dense<100> : tensor<i32>
  %mn = stablehlo.reduce(%x init: %big) applies stablehlo.minimum across dimensions = [0] : (tensor<4xi32>, tensor<i32>) -> tensor<i32>
  %z = stablehlo.constant dense<0> : tensor<i32>
  %sum = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [0] : (tensor<4xi32>, tensor<i32>) -> tensor<i32>
  %xx = stablehlo.xor %x, %y : tensor<4xi32>
  return %and, %or, %not, %xor, %sel, %all, %any, %mx, %mn, %sum, %xx : tensor<4xi1>, tensor<4xi1>, tensor<4xi1>,
    tensor<4xi1>, tensor<4xi32>, tensor<i1>, tensor<i1>, tensor<i32>, tensor<i32>, tensor<i32>, tensor<4xi32>
}
"""
    decided = returned(text, [(1, 1), (0, 0), (3, 5), (10, 12)])
    assert decided[:7] == [iv(0, 0), iv(1, 1), iv(0, 0), iv(1, 1), iv(3, 5), iv(1, 1), iv(0, 0)]
    assert decided[7:] == [iv(3, 5), iv(3, 5), I32_FULL, I32_FULL]  # a sum may wrap; bitwise ops: any
    free = returned(text, [None, (0, 0), (3, 5), (10, 12)])
    assert free[:7] == [iv(0, 0), iv(0, 1), iv(0, 1), iv(0, 1), iv(3, 12), iv(0, 1), iv(0, 0)]
    m = load_module(text)
    rg = value_ranges(m, [(1, 1), (0, 0), (3, 5), (10, 12)])
    ret = m.main.body.returns
    assert rg.decided()[ret[0]] is False and rg.decided()[ret[5]] is True and ret[4] not in rg.decided()


def test_an_empty_reduction_is_its_init() -> None:
    assert returned("""
func.func @main(%x: tensor<0xi32>) -> tensor<i32> {
  %big = stablehlo.constant dense<100> : tensor<i32>
  %mn = stablehlo.reduce(%x init: %big) applies stablehlo.minimum across dimensions = [0] : (tensor<0xi32>, tensor<i32>) -> tensor<i32>
  return %mn : tensor<i32>
}
""", [(3, 5)]) == [iv(100, 100)]


def test_loop_values_are_left_out() -> None:
    """A loop's carried values change trip by trip: names defined inside regions are not
    analysed, and the loop's results have their type's range."""
    m = load_module("""
func.func @main(%x: tensor<i32>) -> tensor<i32> {
  %0 = stablehlo.constant dense<0> : tensor<i32>
  %1:2 = stablehlo.while(%i = %0, %v = %x) : tensor<i32>, tensor<i32>
   cond {
    %c = stablehlo.constant dense<3> : tensor<i32>
    %p = stablehlo.compare LT, %i, %c, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %one = stablehlo.constant dense<1> : tensor<i32>
    %n = stablehlo.add %i, %one : tensor<i32>
    %w = stablehlo.add %v, %v : tensor<i32>
    stablehlo.return %n, %w : tensor<i32>, tensor<i32>
  }
  return %1#1 : tensor<i32>
}
""")
    rg = value_ranges(m, [(0, 3)])
    loop = next(op for op in m.main.body.ops if op.name == "stablehlo.while")
    inner = {a for r in loop.regions for a in r.args} | {v for r in loop.regions for op in r.walk() for v in op.results}
    assert not inner & set(rg.intervals)
    assert rg.intervals[m.main.body.returns[0]] == I32_FULL


# ---------------------------------------------------------------------------
# What a proof does with the bounds


def test_an_i1_input_of_one_value_is_that_constant() -> None:
    for alg in (FastAlgebra(), SymbolicAlgebra()):
        on, _ = alg.inputs("p", (3,), Kind.BOOL, bounds=(1, 1))
        off, _ = alg.inputs("q", (3,), Kind.BOOL, bounds=(0, 0))
        free, _ = alg.inputs("r", (3,), Kind.BOOL, bounds=(0, 1))
        assert list(on) == [True] * 3 and list(off) == [False] * 3
        assert not any(isinstance(x, bool) for x in free)
    types = [TensorType((16,), "i1"), TensorType((16,), "f32"), TensorType((16,), "i1")]
    plain = random_inputs(types)
    fixed = random_inputs(types, bounds=[(1, 1), None, (0, 0)])
    for a, b in zip(plain, fixed):
        assert b[0].all() and not b[2].any()
        np.testing.assert_array_equal(a[1], b[1])  # the other draws do not change


CLAMPED = """
func.func @main(%x: tensor<4xi32>) -> tensor<4xi32> {
  %lo = stablehlo.constant dense<2> : tensor<4xi32>
  %hi = stablehlo.constant dense<3> : tensor<4xi32>
  %c = stablehlo.clamp %lo, %x, %hi : tensor<4xi32>
  return %c : tensor<4xi32>
}
"""
IDENTITY = """
func.func @main(%x: tensor<4xi32>) -> tensor<4xi32> {
  return %x : tensor<4xi32>
}
"""
GATED = """
func.func @main(%p: tensor<4xi1>, %x: tensor<4xf32>) -> tensor<4xf32> {
  %z = stablehlo.constant dense<0.0> : tensor<4xf32>
  %s = stablehlo.select %p, %x, %z : tensor<4xi1>, tensor<4xf32>
  return %s : tensor<4xf32>
}
"""
UNGATED = """
func.func @main(%p: tensor<4xi1>, %x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
"""


def test_input_bounds_meet_the_assumed_bounds() -> None:
    """clamp(2, x, 3) is x for x in [2, 3]: the lower end from input_bounds, the upper one
    from --assume."""
    opts = Options(stages=False, full_size_check="off", second_witness=False)
    ref, other = prepare(CLAMPED, opts), prepare(IDENTITY, opts)
    check_signatures(ref, other)
    both = replace(opts, assume={"arg0": (0, 4)}, input_bounds=((0, 2, 9),))
    assert prove_pair(ref, other, both).verdict == "equivalent"
    assert prove_pair(ref, other, replace(opts, input_bounds=((0, 2, 9),))).verdict == "not-equivalent"
    assert prove_pair(ref, other, replace(opts, assume={"arg0": (0, 4)})).verdict == "not-equivalent"
    with pytest.raises(UsageError):
        prove_pair(ref, other, replace(opts, assume={"arg0": (0, 4)}, input_bounds=((0, 5, 9),)))
    for core in ("own", "z3"):
        g, u = prepare(GATED, opts), prepare(UNGATED, opts)
        check_signatures(g, u)
        assert prove_pair(g, u, replace(opts, core=core, input_bounds=((0, 1, 1),))).verdict == "equivalent"
        assert prove_pair(g, u, replace(opts, core=core)).verdict == "not-equivalent"


# ---------------------------------------------------------------------------
# End to end: flax's embedding lookup, cut into stages

# nn.Embed: idx = where(tok < 0, tok + V, tok); ok = (idx >= 0) & (idx <= V - 1);
# x = select(ok, E[idx], NaN). The reference goes on from x; the other program computes
# from the gathered rows and applies the mask last, and writes h - h (NaN at an infinite
# h) as select(h == h, 0, 0) (0 there): equal for every token id in [0, V), where every x
# is finite.
EMBED = """
  %zero = stablehlo.constant dense<0> : tensor<6xi32>
  %vocab = stablehlo.constant dense<8> : tensor<6xi32>
  %neg = stablehlo.compare LT, %tok, %zero, SIGNED : (tensor<6xi32>, tensor<6xi32>) -> tensor<6xi1>
  %wrapped = stablehlo.add %tok, %vocab : tensor<6xi32>
  %idx = stablehlo.select %neg, %wrapped, %tok : tensor<6xi1>, tensor<6xi32>
  %idx2 = stablehlo.reshape %idx : (tensor<6xi32>) -> tensor<6x1xi32>
  %z1 = stablehlo.constant dense<0> : tensor<6x1xi32>
  %last = stablehlo.constant dense<7> : tensor<6x1xi32>
  %ge = stablehlo.compare GE, %idx2, %z1, SIGNED : (tensor<6x1xi32>, tensor<6x1xi32>) -> tensor<6x1xi1>
  %le = stablehlo.compare LE, %idx2, %last, SIGNED : (tensor<6x1xi32>, tensor<6x1xi32>) -> tensor<6x1xi1>
  %ok2 = stablehlo.and %ge, %le : tensor<6x1xi1>
  %true = stablehlo.constant dense<true> : tensor<i1>
  %ok = stablehlo.reduce(%ok2 init: %true) applies stablehlo.and across dimensions = [1]
      : (tensor<6x1xi1>, tensor<i1>) -> tensor<6xi1>
  %rows = "stablehlo.gather"(%E, %idx2) <{dimension_numbers = #stablehlo.gather<offset_dims = [1],
      collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false,
      slice_sizes = array<i64: 1, 4>}> : (tensor<8x4xf32>, tensor<6x1xi32>) -> tensor<6x4xf32>
  %okb = stablehlo.broadcast_in_dim %ok, dims = [0] : (tensor<6xi1>) -> tensor<6x4xi1>
  %nan = stablehlo.constant dense<0x7FC00000> : tensor<6x4xf32>
  %zf = stablehlo.constant dense<0.0> : tensor<6x4xf32>
"""
SIGNATURE = "func.func @main(%E: tensor<8x4xf32>, %tok: tensor<6xi32>, %w: tensor<4x4xf32>) -> tensor<6x4xf32> {"
EMBED_REF = SIGNATURE + EMBED + """
  %x = stablehlo.select %okb, %rows, %nan : tensor<6x4xi1>, tensor<6x4xf32>
  %h = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<6x4xf32>, tensor<4x4xf32>) -> tensor<6x4xf32>
  %d = stablehlo.subtract %h, %h : tensor<6x4xf32>
  %a = stablehlo.multiply %h, %h : tensor<6x4xf32>
  %b = stablehlo.add %a, %d : tensor<6x4xf32>
  %c = stablehlo.multiply %b, %x : tensor<6x4xf32>
  %t = stablehlo.subtract %c, %c : tensor<6x4xf32>
  %u = stablehlo.add %t, %c : tensor<6x4xf32>
  return %u : tensor<6x4xf32>
}
"""
OTHER_TAIL = """
  %h = stablehlo.dot_general %rows, %w, contracting_dims = [1] x [0] : (tensor<6x4xf32>, tensor<4x4xf32>) -> tensor<6x4xf32>
  %e = stablehlo.compare EQ, %h, %h : (tensor<6x4xf32>, tensor<6x4xf32>) -> tensor<6x4xi1>
  %d = stablehlo.select %e, %zf, %zf : tensor<6x4xi1>, tensor<6x4xf32>
  %a = stablehlo.multiply %h, %h : tensor<6x4xf32>
  %b = stablehlo.add %a, %d : tensor<6x4xf32>
  %c0 = stablehlo.multiply %b, %rows : tensor<6x4xf32>
  %c = stablehlo.select %okb, %c0, %nan : tensor<6x4xi1>, tensor<6x4xf32>
  %e2 = stablehlo.compare EQ, %c, %c : (tensor<6x4xf32>, tensor<6x4xf32>) -> tensor<6x4xi1>
  %t = stablehlo.select %e2, %zf, %zf : tensor<6x4xi1>, tensor<6x4xf32>
"""
EMBED_OTHER = SIGNATURE + EMBED + OTHER_TAIL + """
  %u = stablehlo.add %t, %c : tensor<6x4xf32>
  return %u : tensor<6x4xf32>
}
"""
# The bug twin: c + c where the reference has 0 + c.
EMBED_BUG = SIGNATURE + EMBED + OTHER_TAIL + """
  %u = stablehlo.add %c, %c : tensor<6x4xf32>
  return %u : tensor<6x4xf32>
}
"""
TOKENS = {"arg1": (0, 8)}
# The mutation tests below make a stage fail at free inputs, where each local proof runs
# to its timeout (0.5 s by default, hundreds of them: a minute). At 0.1 s the lookup still
# proves clean stage by stage (the first test), so a failure there is the mutation's.
EMBED_QUICK = dict(QUICK, timeout_s=0.1)


def _clean(v: object) -> bool:
    """Every stage proved at its first try: none failed, none widened, no whole proof."""
    st = v.stages  # type: ignore[attr-defined]
    return bool(st["used"]) and not {"failed", "covered", "whole", "widened"} & set(st) \
        and all(r["verdict"] == "equivalent" and r["how"] == "proved" for r in st["list"])


def test_the_embedding_lookup_is_proved_stage_by_stage_without_ieee_classes() -> None:
    v = verify(EMBED_REF, EMBED_OTHER, assume=TOKENS, **EMBED_QUICK)
    assert v.verdict == "equivalent", v.reason
    assert _clean(v), {k: x for k, x in v.stages.items() if k != "list"}
    # The stages as proved: no input may be +-inf or NaN, the mask is the constant True,
    # and every float value of every stage has the finite class (no symbolic class).
    opts = Options(assume=TOKENS, **QUICK)  # type: ignore[arg-type]
    ref, other = prepare(EMBED_REF, opts), prepare(EMBED_OTHER, opts)
    check_signatures(ref, other)
    cut = stages_run._cut(ref, other, opts, None)
    assert len(cut.stages) >= stages_run.MIN_STAGES
    rg = value_ranges(ref, cut.bounds)
    finite = finite_values(ref, True, rg.decided())
    masks = 0
    for stage in cut.stages:
        assert stages_run._ieee(stage, finite) == (), stage.name
        bounds = dict((k, (lo, hi)) for k, lo, hi in stages_run._bounded(stage, rg))
        types = stage.ref.main.arg_types
        masks += sum(1 for k, t in enumerate(types) if t.is_bool and bounds.get(k) == (1, 1))
        for module in (stage.ref, stage.other):
            alg = FastAlgebra()
            args = [alg.inputs(f"in{k}", t.shape, Kind.of(t), t.is_unsigned, int_width(t) or 64,
                               bounds=bounds.get(k))[0] for k, t in enumerate(module.global_arg_types())]
            for out in Interpreter(module, alg).run(args):
                floats = [x for x in np.asarray(out).reshape(-1) if isinstance(x, FF)]
                assert all(isinstance(x.k, int) and x.k == FIN for x in floats), stage.name
    assert masks > 0  # some stage takes the mask, as the constant it is


def test_the_bug_twin_is_still_not_equivalent() -> None:
    v = verify(EMBED_REF, EMBED_BUG, assume=TOKENS, **QUICK)
    assert v.verdict == "not-equivalent", v.reason
    assert v.stages["used"]


def test_without_the_bounds_pass_through_a_stage_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """The mutation the test above guards against: stage inputs as wide as their type (the
    mask a free Boolean, the tokens unbounded)."""
    monkeypatch.setattr(stages_run, "_bounded", lambda stage, ranges: ())
    v = verify(EMBED_REF, EMBED_OTHER, assume=TOKENS, **EMBED_QUICK)
    assert v.verdict == "equivalent"  # by a longer span or the whole proof...
    assert not _clean(v)  # ...after a stage failed at free inputs


def test_without_the_decided_select_a_stage_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """The other mutation: select(ok, rows, NaN) taken as possibly NaN, so the stage after
    it takes its value with a free IEEE class, where c - c and select(c == c, 0, 0) part."""
    monkeypatch.setattr(ranges_mod.Ranges, "decided", lambda self: {})
    v = verify(EMBED_REF, EMBED_OTHER, assume=TOKENS, **EMBED_QUICK)
    assert v.verdict == "equivalent"
    assert not _clean(v)


def test_the_bounds_are_part_of_the_stage_hash() -> None:
    opts = Options(assume=TOKENS, **QUICK)  # type: ignore[arg-type]
    ref, other = prepare(EMBED_REF, opts), prepare(EMBED_OTHER, opts)
    check_signatures(ref, other)
    cut = stages_run._cut(ref, other, opts, None)
    rg = value_ranges(ref, cut.bounds)
    bounded = [s for s in cut.stages if stages_run._bounded(s, rg)]
    assert bounded
    finite = finite_values(ref, True, rg.decided())
    _, with_bounds = stages_run._prove_stages(bounded[:1], replace(opts, cache=False), finite, {}, rg)
    _, without = stages_run._prove_stages(bounded[:1], replace(opts, cache=False), finite, {}, None)
    assert set(with_bounds) != set(without)


def test_finite_facts_flax_needs() -> None:
    """The lattice facts flax's layers need (stages/finite.py): a decided select is its
    branch; chlo.square (RMSNorm), a positive base's power (RoPE), is_finite and
    log(|sum exp|) (logsumexp), a scatter-add of finite rows (the embedding gradient)."""
    m = load_module("""
func.func @main(%x: tensor<4xf32>, %p: tensor<4xi1>, %i: tensor<2x1xi32>, %u: tensor<2xf32>) -> (tensor<4xf32>,
    tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %nan = stablehlo.constant dense<0x7FC00000> : tensor<4xf32>
  %sel = stablehlo.select %p, %x, %nan : tensor<4xi1>, tensor<4xf32>
  %sq = chlo.square %x : tensor<4xf32> -> tensor<4xf32>
  %ten = stablehlo.constant dense<10000.0> : tensor<4xf32>
  %pw = stablehlo.power %ten, %x : tensor<4xf32>
  %e = stablehlo.exponential %x : tensor<4xf32>
  %ab = stablehlo.abs %e : tensor<4xf32>
  %lg = stablehlo.log %ab : tensor<4xf32>
  %fin = stablehlo.is_finite %x : (tensor<4xf32>) -> tensor<4xi1>
  %z = stablehlo.constant dense<0.0> : tensor<4xf32>
  %g = stablehlo.select %fin, %x, %z : tensor<4xi1>, tensor<4xf32>
  %sc = "stablehlo.scatter"(%x, %i, %u) <{scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0],
      scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, indices_are_sorted = false, unique_indices = false}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
  }) : (tensor<4xf32>, tensor<2x1xi32>, tensor<2xf32>) -> tensor<4xf32>
  return %sel, %sq, %pw, %lg, %g, %sc, %e : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>,
    tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
""")
    ret = m.main.body.returns
    always = value_ranges(m, [None, (1, 1)]).decided()
    assert set(ret[1:]) <= finite_values(m, True, always)
    assert ret[0] in finite_values(m, True, always)
    assert ret[0] not in finite_values(m, True, value_ranges(m).decided())  # p free: NaN is possible
    assert ret[0] not in finite_values(m, True)
