"""The soundness net: every op in `tv_mlir.semantics.TABLE` runs on real XLA, on the numeric
algebra and on the symbolic algebra (evaluated at the same inputs, uninterpreted functions
included, see conftest.ZEval), and the three must agree.

Inputs come from a fixed seed per case and are already rounded to the parameter's dtype.
The semantics model deliberately differs from XLA in a few places, so inputs avoid them:
  - integers here stay inside their types (tests/test_fixed_width.py holds every integer
    type's wrap-around, edge values and shifts to XLA);
  - floats are exact reals: no f32 overflow (exp stays small), and results that f32
    rounds are compared with rtol ~1e-5 (additions use dyadic values, which are exact);
  - signed zeros are not modelled: no -0 reaches a division, TOTALORDER or atan2;
  - NaN sign is not modelled symbolically: a NaN's place in TOTALORDER (x86: 0/0 is a
    *negative* NaN, below -inf) is an uninterpreted predicate, and the harness supplies
    the sign (`nan_sign`, positive unless a case says otherwise: jax canonicalises NaNs
    to +NaN in its sort comparator).

Hand-written cases are inline; the forms jax emits (take, take_along_axis, .at[].set/.add,
vmapped gathers/scatters, argmax, argsort, top_k, fori_loop, cond, switch, ...) are
committed under testdata/ops/ (made by testdata/ops/gen_ops.py)."""
from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass

import ml_dtypes
import numpy as np
import pytest

from conftest import TESTDATA, check_against_xla, prepared, symbolic_values
from tv_mlir.algebra import NumericAlgebra, SymbolicAlgebra
from tv_mlir.algebra import symbolic as symbolic_mod
from tv_mlir.algebra.fast import FastAlgebra
from tv_mlir.frontend.read import load_module
from tv_mlir.semantics import TABLE

OPS_DIR = TESTDATA / "ops"
I32_MIN, I32_MAX = -(2**31), 2**31 - 1

Inputs = Callable[[np.random.Generator], list[np.ndarray]]


@dataclass(frozen=True)
class Case:
    name: str
    text: str
    inputs: Inputs
    rtol: float = 1e-5
    atol: float = 1e-6
    raw: bool = False  # also run without normalization: func.call, composite, custom_call rules
    xla_text: str | None = None  # an equivalent module for XLA, when XLA cannot compile `text`


CASES: list[Case] = []


def case(name: str, text: str, inputs: Inputs, **kw) -> None:
    CASES.append(Case(name, text, inputs, **kw))


def M(sig: str, body: str, extra: str = "") -> str:
    """A module with one public @main: `sig` is `(args) -> (results)`, `body` its ops and return."""
    lines = "\n".join("    " + ln.strip() for ln in body.strip().splitlines())
    return f"module @m {{\n  func.func public @main{sig} {{\n{lines}\n  }}\n{extra}}}\n"


# ---------------------------------------------------------------------------
# Inputs


def rng_for(name: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(name.encode()))


def f32(values) -> np.ndarray:
    return np.asarray(values, dtype=np.float32).astype(np.float64)


def bf16(values) -> np.ndarray:
    return np.asarray(values, dtype=np.float64).astype(ml_dtypes.bfloat16).astype(np.float64)


def with_edges(rng: np.random.Generator, flat: np.ndarray, edges, shape) -> np.ndarray:
    flat = flat.reshape(-1).copy()
    edges = list(edges)[: flat.size]
    flat[: len(edges)] = edges
    return rng.permutation(flat).reshape(shape)


def nice(rng, shape, lim=40, den=4, edges=(0.0,)) -> np.ndarray:
    """Dyadic values k/den: sums and most products are exact in f32."""
    n = int(np.prod(shape)) if shape else 1
    flat = rng.integers(-lim * den, lim * den + 1, size=n) / den
    return f32(with_edges(rng, flat, edges, shape))


def unif(rng, shape, lo, hi, edges=()) -> np.ndarray:
    n = int(np.prod(shape)) if shape else 1
    return f32(with_edges(rng, rng.uniform(lo, hi, size=n), edges, shape))


def ints(rng, shape, lo, hi, edges=()) -> np.ndarray:
    n = int(np.prod(shape)) if shape else 1
    return with_edges(rng, rng.integers(lo, hi + 1, size=n), edges, shape).astype(np.int64)


def bools(rng, shape) -> np.ndarray:
    return rng.integers(0, 2, size=shape).astype(bool)


def div_pair(rng, n, lim=40) -> list[np.ndarray]:
    """(a, c) with a / c = NaN, +inf, -inf at the first three positions (0/0, 3/0, -2.5/0)
    and exact finite quotients elsewhere (c in {1, 2, 4}; never -0)."""
    a = np.concatenate([[0.0, 3.0, -2.5], nice(rng, (n - 3,), lim=lim, edges=(0.0, 1.0, -1.0))])
    c = np.concatenate([[0.0, 0.0, 0.0], rng.choice([1.0, 2.0, 4.0], size=n - 3)])
    return [f32(a), f32(c)]


def scalar_i32(v: int) -> np.ndarray:
    return np.asarray(v, dtype=np.int64)


# ---------------------------------------------------------------------------
# Elementwise arithmetic

case("arith_f32", M(
    "(%a: tensor<3x4xf32>, %b: tensor<3x4xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>)", """
    %0 = stablehlo.add %a, %b : tensor<3x4xf32>
    %1 = stablehlo.subtract %a, %b : tensor<3x4xf32>
    %2 = stablehlo.multiply %a, %b : tensor<3x4xf32>
    %3 = stablehlo.negate %a : tensor<3x4xf32>
    return %0, %1, %2, %3 : tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>
    """),
    lambda r: [nice(r, (3, 4), edges=(0.0, -1.0, 1048576.0, -65536.5, 0.25)),
               nice(r, (3, 4), edges=(0.0, 0.0, -3.0, 1048576.0))])

case("arith_i32", M(
    "(%a: tensor<10xi32>, %b: tensor<10xi32>) -> (tensor<10xi32>, tensor<10xi32>, tensor<10xi32>, tensor<10xi32>)", """
    %0 = stablehlo.add %a, %b : tensor<10xi32>
    %1 = stablehlo.subtract %a, %b : tensor<10xi32>
    %2 = stablehlo.multiply %a, %b : tensor<10xi32>
    %3 = stablehlo.negate %a : tensor<10xi32>
    return %0, %1, %2, %3 : tensor<10xi32>, tensor<10xi32>, tensor<10xi32>, tensor<10xi32>
    """),
    # |a|, |b| < 40000: products stay inside i32 (ints are mathematical in the model).
    lambda r: [ints(r, (10,), -40000, 40000, edges=(0, -1, 39999)), ints(r, (10,), -40000, 40000, edges=(0, 1, -39999))])

case("divide_f32", M(
    "(%a: tensor<12xf32>, %b: tensor<12xf32>) -> tensor<12xf32>", """
    %0 = stablehlo.divide %a, %b : tensor<12xf32>
    return %0 : tensor<12xf32>
    """),
    # x/0 = +-inf, 0/0 = NaN, 0/x = 0.
    lambda r: [nice(r, (12,), edges=(0.0, 0.0, 3.0, -5.0, 1e6)),
               f32([0, 2, 0, 0, -4, 0.5, 3, -7, 1.5, 8, -0.25, 100])])

case("int_div_rem", M(
    "(%a: tensor<12xi32>, %b: tensor<12xi32>) -> (tensor<12xi32>, tensor<12xi32>)", """
    %0 = stablehlo.divide %a, %b : tensor<12xi32>
    %1 = stablehlo.remainder %a, %b : tensor<12xi32>
    return %0, %1 : tensor<12xi32>, tensor<12xi32>
    """),
    # XLA: x / 0 = -1, x % 0 = x; truncation toward zero; remainder takes the dividend's sign.
    lambda r: [np.array([7, -7, 7, -7, 0, 5, I32_MAX, I32_MIN, -1, 13, 0, 6]),
               np.array([2, 2, -2, -2, 3, 0, 7, 0, 0, -5, 0, 6])])

case("remainder_f32", M(
    "(%a: tensor<10xf32>, %b: tensor<10xf32>, %c: tensor<10xf32>) -> (tensor<10xf32>, tensor<10xf32>, tensor<10xf32>)", """
    %z = stablehlo.constant dense<0.0> : tensor<10xf32>
    %d = stablehlo.divide %c, %z : tensor<10xf32>
    %0 = stablehlo.remainder %a, %b : tensor<10xf32>
    %1 = stablehlo.remainder %a, %d : tensor<10xf32>
    %2 = stablehlo.remainder %d, %b : tensor<10xf32>
    return %0, %1, %2 : tensor<10xf32>, tensor<10xf32>, tensor<10xf32>
    """),
    # fmod: sign of the dividend; x % 0 = NaN; x % inf = x; inf % y = NaN.
    lambda r: [f32([7.25, -7.25, 7.25, -7.25, 0, 3, 1e6, -2.5, 4, 5.5]),
               f32([2.5, 2.5, -2.5, -2.5, 3, 0, 7, 0.75, 2, 1]),
               f32([1, -1, 0, 2, -3, 1, 0, 5, -1, 1])])

case("minmax_f32", M(
    "(%a: tensor<12xf32>, %b: tensor<12xf32>) -> (tensor<12xf32>, tensor<12xf32>, tensor<12xf32>, tensor<12xf32>)", """
    %d = stablehlo.divide %a, %b : tensor<12xf32>
    %0 = stablehlo.maximum %d, %a : tensor<12xf32>
    %1 = stablehlo.minimum %d, %a : tensor<12xf32>
    %2 = stablehlo.maximum %a, %b : tensor<12xf32>
    %3 = stablehlo.minimum %b, %a : tensor<12xf32>
    return %0, %1, %2, %3 : tensor<12xf32>, tensor<12xf32>, tensor<12xf32>, tensor<12xf32>
    """),
    # XLA's max/min propagate NaN; +-inf from x/0.
    lambda r: div_pair(r, 12))

case("ieee_arith", M(
    "(%a: tensor<14xf32>, %c: tensor<14xf32>, %b: tensor<14xf32>, %e: tensor<14xf32>) -> (tensor<14xf32>, tensor<14xf32>, tensor<14xf32>, tensor<14xf32>, tensor<14xf32>, tensor<14xi1>)", """
    %d = stablehlo.divide %a, %c : tensor<14xf32>
    %f = stablehlo.divide %b, %e : tensor<14xf32>
    %0 = stablehlo.add %d, %f : tensor<14xf32>
    %1 = stablehlo.subtract %d, %f : tensor<14xf32>
    %2 = stablehlo.multiply %d, %f : tensor<14xf32>
    %3 = stablehlo.divide %d, %f : tensor<14xf32>
    %4 = stablehlo.remainder %d, %f : tensor<14xf32>
    %5 = stablehlo.compare LE, %d, %f, FLOAT : (tensor<14xf32>, tensor<14xf32>) -> tensor<14xi1>
    return %0, %1, %2, %3, %4, %5 : tensor<14xf32>, tensor<14xf32>, tensor<14xf32>, tensor<14xf32>, tensor<14xf32>, tensor<14xi1>
    """),
    # Every pair of classes: d in {NaN, +inf, -inf, finite}, f in {+inf, -inf, 0, finite, NaN}.
    lambda r: [f32([0, 0, 0, 1, 1, 1, -1, -1, -1, 5, 0, 2, 2, -3]), f32([0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 1]),
               f32([1, -1, 0, 1, -1, 0, 1, -1, 0, 0, 0, 0, -3, 2]), f32([0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 1, 1, 1, 0])])

case("minmax_int_bool", M(
    "(%a: tensor<8xi32>, %b: tensor<8xi32>, %p: tensor<8xi1>, %q: tensor<8xi1>) -> (tensor<8xi32>, tensor<8xi32>, tensor<8xi1>, tensor<8xi1>)", """
    %0 = stablehlo.maximum %a, %b : tensor<8xi32>
    %1 = stablehlo.minimum %a, %b : tensor<8xi32>
    %2 = stablehlo.maximum %p, %q : tensor<8xi1>
    %3 = stablehlo.minimum %p, %q : tensor<8xi1>
    return %0, %1, %2, %3 : tensor<8xi32>, tensor<8xi32>, tensor<8xi1>, tensor<8xi1>
    """),
    lambda r: [ints(r, (8,), -9, 9, edges=(I32_MIN, I32_MAX, 5, 0)), ints(r, (8,), -9, 9, edges=(I32_MAX, I32_MIN, 5, -1)),
               bools(r, (8,)), bools(r, (8,))])

case("abs_sign_neg", M(
    "(%a: tensor<12xf32>, %b: tensor<12xf32>, %i: tensor<6xi32>) -> (tensor<12xf32>, tensor<12xf32>, tensor<12xf32>, tensor<6xi32>, tensor<6xi32>, tensor<6xi32>)", """
    %d = stablehlo.divide %a, %b : tensor<12xf32>
    %0 = stablehlo.abs %d : tensor<12xf32>
    %1 = stablehlo.sign %d : tensor<12xf32>
    %2 = stablehlo.negate %d : tensor<12xf32>
    %3 = stablehlo.abs %i : tensor<6xi32>
    %4 = stablehlo.sign %i : tensor<6xi32>
    %5 = stablehlo.negate %i : tensor<6xi32>
    return %0, %1, %2, %3, %4, %5 : tensor<12xf32>, tensor<12xf32>, tensor<12xf32>, tensor<6xi32>, tensor<6xi32>, tensor<6xi32>
    """),
    lambda r: div_pair(r, 12) + [np.array([0, -5, 5, I32_MAX, -I32_MAX, 1])])

case("rounding", M(
    "(%a: tensor<16xf32>, %b: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)", """
    %d = stablehlo.divide %a, %b : tensor<16xf32>
    %0 = stablehlo.floor %d : tensor<16xf32>
    %1 = stablehlo.ceil %d : tensor<16xf32>
    %2 = stablehlo.round_nearest_even %d : tensor<16xf32>
    %3 = stablehlo.round_nearest_afz %d : tensor<16xf32>
    return %0, %1, %2, %3 : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
    """),
    # Ties both ways, and non-finite values through x/0.
    lambda r: [f32([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.7, -3.7, 0, 1000000.5, -7.25, 4, 3, -3, 0, 2.75]),
               f32([1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 2])])

case("compare_float", M(
    "(%a: tensor<12xf32>, %b: tensor<12xf32>, %c: tensor<12xf32>) -> (tensor<12xi1>, tensor<12xi1>, tensor<12xi1>, tensor<12xi1>, tensor<12xi1>, tensor<12xi1>)", """
    %d = stablehlo.divide %a, %c : tensor<12xf32>
    %0 = stablehlo.compare EQ, %d, %b, FLOAT : (tensor<12xf32>, tensor<12xf32>) -> tensor<12xi1>
    %1 = stablehlo.compare NE, %d, %b, FLOAT : (tensor<12xf32>, tensor<12xf32>) -> tensor<12xi1>
    %2 = stablehlo.compare LT, %d, %b, FLOAT : (tensor<12xf32>, tensor<12xf32>) -> tensor<12xi1>
    %3 = stablehlo.compare LE, %d, %b, FLOAT : (tensor<12xf32>, tensor<12xf32>) -> tensor<12xi1>
    %4 = stablehlo.compare GT, %d, %b, FLOAT : (tensor<12xf32>, tensor<12xf32>) -> tensor<12xi1>
    %5 = stablehlo.compare GE, %d, %b : (tensor<12xf32>, tensor<12xf32>) -> tensor<12xi1>
    return %0, %1, %2, %3, %4, %5 : tensor<12xi1>, tensor<12xi1>, tensor<12xi1>, tensor<12xi1>, tensor<12xi1>, tensor<12xi1>
    """),
    # Ties (a == b), NaN (0/0) and +-inf (x/0) on the left.
    lambda r: [f32([1, 2, -3, 0, 5, -1, 2.5, 7, 0, -2, 3, 3]),
               f32([1, 3, -3, 0, 4, 0, 2.5, -7, 1, -2, 3, 1e6]),
               f32([1, 1, 1, 0, 0, 0, 1, 1, 1, 2, 1, 1])])

case("compare_totalorder", M(
    "(%a: tensor<10xf32>, %b: tensor<10xf32>, %c: tensor<10xf32>, %m: tensor<10xi1>) -> (tensor<10xi1>, tensor<10xi1>, tensor<10xi1>, tensor<10xi1>, tensor<10xi1>, tensor<10xi1>)", """
    %nan = stablehlo.constant dense<0x7FC00000> : tensor<10xf32>
    %inf = stablehlo.divide %b, %c : tensor<10xf32>
    %x = stablehlo.select %m, %nan, %a : tensor<10xi1>, tensor<10xf32>
    %0 = stablehlo.compare LT, %x, %inf, TOTALORDER : (tensor<10xf32>, tensor<10xf32>) -> tensor<10xi1>
    %1 = stablehlo.compare EQ, %x, %inf, TOTALORDER : (tensor<10xf32>, tensor<10xf32>) -> tensor<10xi1>
    %2 = stablehlo.compare GE, %x, %inf, TOTALORDER : (tensor<10xf32>, tensor<10xf32>) -> tensor<10xi1>
    %3 = stablehlo.compare NE, %x, %x, TOTALORDER : (tensor<10xf32>, tensor<10xf32>) -> tensor<10xi1>
    %4 = stablehlo.compare GT, %x, %a, TOTALORDER : (tensor<10xf32>, tensor<10xf32>) -> tensor<10xi1>
    %5 = stablehlo.compare LE, %inf, %x, TOTALORDER : (tensor<10xf32>, tensor<10xf32>) -> tensor<10xi1>
    return %0, %1, %2, %3, %4, %5 : tensor<10xi1>, tensor<10xi1>, tensor<10xi1>, tensor<10xi1>, tensor<10xi1>, tensor<10xi1>
    """),
    # Positive NaN (constant) against +-inf (b/0 with b != 0) and finite values.
    lambda r: [f32([1, -2, 3, 0, 5, 7, -1, 2, 4, 1e6]),
               f32([1, -2, 5, 3, 5, -1, -1, 2, 1, 1]),
               f32([0, 0, 1, 0, 1, 0, 1, 1, 0, 1]),
               np.array([1, 1, 0, 0, 1, 0, 1, 0, 0, 1], dtype=bool)])

case("compare_int", M(
    "(%a: tensor<8xi32>, %b: tensor<8xi32>, %u: tensor<6xui32>, %v: tensor<6xui32>, %p: tensor<4xi1>, %q: tensor<4xi1>) -> (tensor<8xi1>, tensor<8xi1>, tensor<8xi1>, tensor<6xi1>, tensor<6xi1>, tensor<4xi1>, tensor<4xi1>)", """
    %0 = stablehlo.compare LT, %a, %b, SIGNED : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi1>
    %1 = stablehlo.compare GE, %a, %b, SIGNED : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi1>
    %2 = stablehlo.compare EQ, %a, %b : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi1>
    %3 = stablehlo.compare LT, %u, %v, UNSIGNED : (tensor<6xui32>, tensor<6xui32>) -> tensor<6xi1>
    %4 = stablehlo.compare NE, %u, %v, UNSIGNED : (tensor<6xui32>, tensor<6xui32>) -> tensor<6xi1>
    %5 = stablehlo.compare LT, %p, %q, UNSIGNED : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
    %6 = stablehlo.compare GE, %p, %q, UNSIGNED : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
    return %0, %1, %2, %3, %4, %5, %6 : tensor<8xi1>, tensor<8xi1>, tensor<8xi1>, tensor<6xi1>, tensor<6xi1>, tensor<4xi1>, tensor<4xi1>
    """),
    lambda r: [np.array([I32_MIN, I32_MAX, -1, 0, 5, 5, -7, 3]), np.array([I32_MAX, I32_MIN, 0, -1, 5, 6, -7, -3]),
               np.array([0, 2**32 - 1, 7, 2**31, 3, 9]), np.array([1, 0, 7, 2**31 - 1, 2**32 - 2, 9]),
               np.array([0, 0, 1, 1], dtype=bool), np.array([0, 1, 0, 1], dtype=bool)])

case("select_clamp", M(
    "(%p: tensor<3x4xi1>, %s: tensor<i1>, %a: tensor<3x4xf32>, %b: tensor<3x4xf32>, %i: tensor<3x4xi32>, %j: tensor<3x4xi32>) -> (tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xi32>, tensor<3x4xi1>)", """
    %0 = stablehlo.select %p, %a, %b : tensor<3x4xi1>, tensor<3x4xf32>
    %1 = stablehlo.select %s, %a, %b : (tensor<i1>, tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    %2 = stablehlo.select %p, %i, %j : tensor<3x4xi1>, tensor<3x4xi32>
    %c = stablehlo.compare GT, %i, %j, SIGNED : (tensor<3x4xi32>, tensor<3x4xi32>) -> tensor<3x4xi1>
    %3 = stablehlo.select %s, %p, %c : (tensor<i1>, tensor<3x4xi1>, tensor<3x4xi1>) -> tensor<3x4xi1>
    return %0, %1, %2, %3 : tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xi32>, tensor<3x4xi1>
    """),
    lambda r: [bools(r, (3, 4)), np.array(False), nice(r, (3, 4)), nice(r, (3, 4)),
               ints(r, (3, 4), -5, 5, edges=(I32_MIN, I32_MAX)), ints(r, (3, 4), -5, 5)])

case("clamp", M(
    "(%x: tensor<12xf32>, %c: tensor<12xf32>, %lo: tensor<f32>, %hi: tensor<f32>, %tlo: tensor<12xf32>, %thi: tensor<12xf32>, %i: tensor<6xi32>) -> (tensor<12xf32>, tensor<12xf32>, tensor<6xi32>)", """
    %d = stablehlo.divide %x, %c : tensor<12xf32>
    %0 = stablehlo.clamp %lo, %d, %hi : (tensor<f32>, tensor<12xf32>, tensor<f32>) -> tensor<12xf32>
    %1 = stablehlo.clamp %tlo, %x, %thi : tensor<12xf32>
    %ilo = stablehlo.constant dense<-3> : tensor<i32>
    %ihi = stablehlo.constant dense<4> : tensor<i32>
    %2 = stablehlo.clamp %ilo, %i, %ihi : (tensor<i32>, tensor<6xi32>, tensor<i32>) -> tensor<6xi32>
    return %0, %1, %2 : tensor<12xf32>, tensor<12xf32>, tensor<6xi32>
    """),
    # Scalar bounds; NaN/inf operands; tensor bounds with lo > hi at some positions (-> hi).
    lambda r: div_pair(r, 12, lim=8) + [
               f32(-1.5), f32(2.0), nice(r, (12,), lim=4), nice(r, (12,), lim=4),
               np.array([I32_MIN, -3, 0, 4, 5, I32_MAX])])

case("logic_i1", M(
    "(%p: tensor<8xi1>, %q: tensor<8xi1>) -> (tensor<8xi1>, tensor<8xi1>, tensor<8xi1>, tensor<8xi1>)", """
    %0 = stablehlo.and %p, %q : tensor<8xi1>
    %1 = stablehlo.or %p, %q : tensor<8xi1>
    %2 = stablehlo.xor %p, %q : tensor<8xi1>
    %3 = stablehlo.not %p : tensor<8xi1>
    return %0, %1, %2, %3 : tensor<8xi1>, tensor<8xi1>, tensor<8xi1>, tensor<8xi1>
    """),
    lambda r: [np.array([0, 0, 1, 1, 0, 1, 1, 0], dtype=bool), np.array([0, 1, 0, 1, 1, 1, 0, 0], dtype=bool)])

case("shifts_i32", M(
    "(%a: tensor<8xi32>, %n: tensor<8xi32>) -> (tensor<8xi32>, tensor<8xi32>, tensor<8xi32>)", """
    %0 = stablehlo.shift_left %a, %n : tensor<8xi32>
    %1 = stablehlo.shift_right_logical %a, %n : tensor<8xi32>
    %2 = stablehlo.shift_right_arithmetic %a, %n : tensor<8xi32>
    return %0, %1, %2 : tensor<8xi32>, tensor<8xi32>, tensor<8xi32>
    """), lambda r: [ints(r, (8,), -1000, 1000, edges=(-1, -7)), np.array([0, 1, 3, 31, 32, 40, -1, 5])])

case("logic_i32", M(
    "(%a: tensor<8xi32>, %b: tensor<8xi32>) -> (tensor<8xi32>, tensor<8xi32>, tensor<8xi32>, tensor<8xi32>)", """
    %0 = stablehlo.and %a, %b : tensor<8xi32>
    %1 = stablehlo.or %a, %b : tensor<8xi32>
    %2 = stablehlo.xor %a, %b : tensor<8xi32>
    %3 = stablehlo.not %a : tensor<8xi32>
    return %0, %1, %2, %3 : tensor<8xi32>, tensor<8xi32>, tensor<8xi32>, tensor<8xi32>
    """),
    lambda r: [np.array([I32_MIN, I32_MAX, -1, 0, 12345, -12345, 0x0F0F0F0F, 7]),
               np.array([-1, I32_MIN, I32_MAX, -1, -6789, 6789, -0x0F0F0F10, 0])])

case("logic_ui8", M(
    "(%a: tensor<6xui8>, %b: tensor<6xui8>) -> (tensor<6xui8>, tensor<6xui8>, tensor<6xui8>)", """
    %0 = stablehlo.not %a : tensor<6xui8>
    %1 = stablehlo.xor %a, %b : tensor<6xui8>
    %2 = stablehlo.or %a, %b : tensor<6xui8>
    return %0, %1, %2 : tensor<6xui8>, tensor<6xui8>, tensor<6xui8>
    """),
    lambda r: [np.array([0, 255, 128, 1, 170, 77]), np.array([255, 0, 127, 1, 85, 200])])

# ---------------------------------------------------------------------------
# Conversions

case("convert_f32_int_bool", M(
    "(%a: tensor<12xf32>, %c: tensor<12xf32>, %i: tensor<6xi32>, %p: tensor<4xi1>) -> (tensor<12xi32>, tensor<12xi1>, tensor<6xf32>, tensor<6xi1>, tensor<4xf32>, tensor<4xi32>)", """
    %d = stablehlo.divide %a, %c : tensor<12xf32>
    %0 = stablehlo.convert %d : (tensor<12xf32>) -> tensor<12xi32>
    %1 = stablehlo.convert %d : (tensor<12xf32>) -> tensor<12xi1>
    %2 = stablehlo.convert %i : (tensor<6xi32>) -> tensor<6xf32>
    %3 = stablehlo.convert %i : (tensor<6xi32>) -> tensor<6xi1>
    %4 = stablehlo.convert %p : (tensor<4xi1>) -> tensor<4xf32>
    %5 = stablehlo.convert %p : (tensor<4xi1>) -> tensor<4xi32>
    return %0, %1, %2, %3, %4, %5 : tensor<12xi32>, tensor<12xi1>, tensor<6xf32>, tensor<6xi1>, tensor<4xf32>, tensor<4xi32>
    """),
    # Truncation toward zero, NaN -> 0 / true, +-inf saturate; finite values stay in i32 range.
    lambda r: [f32([-2.7, -0.5, 0.5, 2.999, 1e6 + 0.5, -123456.75, 0, 0, 5, -5, 2e9, -2e9]),
               f32([1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1]),
               np.array([0, -7, 16777216, -16777216, 1, I32_MIN]), np.array([0, 1, 1, 0], dtype=bool)])

case("convert_bf16", M(
    "(%a: tensor<8xf32>, %b: tensor<8xbf16>, %c: tensor<8xbf16>, %i: tensor<4xi32>) -> (tensor<8xbf16>, tensor<8xf32>, tensor<8xbf16>, tensor<8xi32>, tensor<4xbf16>)", """
    %0 = stablehlo.convert %a : (tensor<8xf32>) -> tensor<8xbf16>
    %s = stablehlo.add %b, %c : tensor<8xbf16>
    %1 = stablehlo.convert %s : (tensor<8xbf16>) -> tensor<8xf32>
    %2 = stablehlo.multiply %0, %b : tensor<8xbf16>
    %3 = stablehlo.convert %b : (tensor<8xbf16>) -> tensor<8xi32>
    %4 = stablehlo.convert %i : (tensor<4xi32>) -> tensor<4xbf16>
    return %0, %1, %2, %3, %4 : tensor<8xbf16>, tensor<8xf32>, tensor<8xbf16>, tensor<8xi32>, tensor<4xbf16>
    """),
    # Values exact in bf16 (8 significant bits), so rounding to bf16 is the identity.
    lambda r: [bf16([-1.5, -1, 0, 0.5, 1, 1.5, 3, 0.75]), bf16(r.integers(-15, 16, 8) / 2), bf16(r.integers(-15, 16, 8) / 2),
               np.array([0, -3, 100, 256])])

case("reduce_precision", M(
    "(%a: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)", """
    %0 = stablehlo.reduce_precision %a, format = e5m10 : tensor<8xf32>
    %1 = stablehlo.reduce_precision %a, format = e8m7 : tensor<8xf32>
    return %0, %1 : tensor<8xf32>, tensor<8xf32>
    """),
    # Values exact in f16 and bf16: the rounding is the identity, which is all the model says.
    lambda r: [f32([0, 1.5, -3.25, 0.125, 100, -2048, 0.5, 7])])

# ---------------------------------------------------------------------------
# power, is_finite, chlo

case("power_const_exponents", M(
    "(%a: tensor<8xf32>, %i: tensor<5xi32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<5xi32>)", """
    %e3 = stablehlo.constant dense<3.0> : tensor<8xf32>
    %em2 = stablehlo.constant dense<-2.0> : tensor<8xf32>
    %e0 = stablehlo.constant dense<0.0> : tensor<8xf32>
    %eh = stablehlo.constant dense<0.5> : tensor<8xf32>
    %ei = stablehlo.constant dense<[0, 1, 2, 3, 5]> : tensor<5xi32>
    %0 = stablehlo.power %a, %e3 : tensor<8xf32>
    %1 = stablehlo.power %a, %em2 : tensor<8xf32>
    %2 = stablehlo.power %a, %e0 : tensor<8xf32>
    %3 = stablehlo.power %a, %eh : tensor<8xf32>
    %4 = stablehlo.power %i, %ei : tensor<5xi32>
    return %0, %1, %2, %3, %4 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<5xi32>
    """),
    # 0^-2 = inf, 0^0 = 1, (-x)^0.5 = NaN; integer exponents are exact products.
    lambda r: [f32([0, 2, -3, 0.5, 1.5, -0.25, 10, 4]), np.array([-7, 5, -3, -2, 9])])

case("power_real_exponent", M(
    "(%a: tensor<12xf32>, %b: tensor<12xf32>) -> tensor<12xf32>", """
    %0 = stablehlo.power %a, %b : tensor<12xf32>
    return %0 : tensor<12xf32>
    """),
    # Uninterpreted: 0^-1.5 = inf, (-2)^0.5 = NaN, (-2)^3 = -8, 0^0 = 1.
    lambda r: [f32([2, 0, -2, -2, 0, 1.5, 9, 0.25, 3, -1, 7, 0]),
               f32([0.5, -1.5, 0.5, 3, 0, 2.25, -0.5, 1.75, -2, 4, 1, 2.5])])

case("is_finite", M(
    "(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xi1>", """
    %d = stablehlo.divide %a, %b : tensor<8xf32>
    %0 = stablehlo.is_finite %d : (tensor<8xf32>) -> tensor<8xi1>
    return %0 : tensor<8xi1>
    """),
    lambda r: [f32([0, 1, -1, 0, 3, 1e6, -2, 5]), f32([0, 0, 0, 1, 2, 1, 4, 0])])

case("chlo_square_broadcast", M(
    "(%a: tensor<3x4xf32>, %v: tensor<4xf32>, %s: tensor<3x3xf32>, %w: tensor<3xf32>, %o: tensor<1x4xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x3xf32>, tensor<3x3xf32>, tensor<3x3xf32>, tensor<3x4xf32>, tensor<3x4xf32>)", """
    %0 = chlo.broadcast_add %a, %v {broadcast_dimensions = array<i64: 1>} : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
    %1 = chlo.broadcast_subtract %v, %a {broadcast_dimensions = array<i64: 1>} : (tensor<4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    %2 = chlo.broadcast_multiply %a, %v : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
    %3 = chlo.broadcast_divide %s, %w : (tensor<3x3xf32>, tensor<3xf32>) -> tensor<3x3xf32>
    %4 = chlo.broadcast_maximum %s, %w {broadcast_dimensions = array<i64: 1>} : (tensor<3x3xf32>, tensor<3xf32>) -> tensor<3x3xf32>
    %5 = chlo.broadcast_minimum %w, %s : (tensor<3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
    %6 = chlo.broadcast_add %o, %a : (tensor<1x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    %7 = chlo.square %a : tensor<3x4xf32> -> tensor<3x4xf32>
    return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x3xf32>, tensor<3x3xf32>, tensor<3x3xf32>, tensor<3x4xf32>, tensor<3x4xf32>
    """),
    lambda r: [nice(r, (3, 4)), nice(r, (4,)), nice(r, (3, 3)), f32([1, 2, -4]), nice(r, (1, 4))])

# XLA only legalizes chlo broadcasts whose broadcast_dimensions are numpy's trailing
# alignment; a leading mapping ([0] on a square operand, where trailing alignment would
# silently give the transpose) is checked against the equivalent broadcast_in_dim program.
case("chlo_broadcast_leading_dims", M(
    "(%s: tensor<3x3xf32>, %w: tensor<3xf32>, %t: tensor<2x3x4xf32>, %m: tensor<2x4xf32>) -> (tensor<3x3xf32>, tensor<3x3xf32>, tensor<2x3x4xf32>)", """
    %0 = chlo.broadcast_add %s, %w {broadcast_dimensions = array<i64: 0>} : (tensor<3x3xf32>, tensor<3xf32>) -> tensor<3x3xf32>
    %1 = chlo.broadcast_divide %w, %s {broadcast_dimensions = array<i64: 0>} : (tensor<3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
    %2 = chlo.broadcast_maximum %t, %m {broadcast_dimensions = array<i64: 0, 2>} : (tensor<2x3x4xf32>, tensor<2x4xf32>) -> tensor<2x3x4xf32>
    return %0, %1, %2 : tensor<3x3xf32>, tensor<3x3xf32>, tensor<2x3x4xf32>
    """),
    lambda r: [nice(r, (3, 3), edges=(1.0,)), f32([1, 2, -4]), nice(r, (2, 3, 4)), nice(r, (2, 4))],
    xla_text=M(
    "(%s: tensor<3x3xf32>, %w: tensor<3xf32>, %t: tensor<2x3x4xf32>, %m: tensor<2x4xf32>) -> (tensor<3x3xf32>, tensor<3x3xf32>, tensor<2x3x4xf32>)", """
    %wb = stablehlo.broadcast_in_dim %w, dims = [0] : (tensor<3xf32>) -> tensor<3x3xf32>
    %0 = stablehlo.add %s, %wb : tensor<3x3xf32>
    %1 = stablehlo.divide %wb, %s : tensor<3x3xf32>
    %mb = stablehlo.broadcast_in_dim %m, dims = [0, 2] : (tensor<2x4xf32>) -> tensor<2x3x4xf32>
    %2 = stablehlo.maximum %t, %mb : tensor<2x3x4xf32>
    return %0, %1, %2 : tensor<3x3xf32>, tensor<3x3xf32>, tensor<2x3x4xf32>
    """))

# ---------------------------------------------------------------------------
# Uninterpreted functions: f(a) on finite inputs across the domain edges, and f(a / c) on
# the +-inf / NaN that x/0 makes. The symbolic side is evaluated with the real function.

_UF_UNARY = {
    # op: (lo, hi, edge values)
    "stablehlo.exponential": (-10, 10, (0.0, 1.0, -1.0, 80.0)),
    "stablehlo.log": (0.01, 100, (0.0, -1.0, 1.0, 1e-3, -1e6)),
    "stablehlo.log_plus_one": (-0.99, 50, (-1.0, -2.0, 0.0, 1e-4, -0.5)),
    "stablehlo.exponential_minus_one": (-5, 5, (0.0, 1e-4, -1.0)),
    "stablehlo.tanh": (-5, 5, (0.0, 20.0, -20.0)),
    "stablehlo.logistic": (-10, 10, (0.0, 30.0, -30.0)),
    "stablehlo.sqrt": (0, 100, (0.0, -1.0, 2.0, -1e-3)),
    "stablehlo.rsqrt": (0.01, 100, (0.0, -1.0, 0.25, 4.0)),
    "stablehlo.cbrt": (-30, 30, (0.0, -8.0, 27.0, 1e6)),
    "stablehlo.sine": (-3, 3, (0.0, 1.0, -3.0)),
    "stablehlo.cosine": (-3, 3, (0.0, 1.0, -3.0)),
    "stablehlo.tan": (-1.2, 1.2, (0.0, 1.0, -1.0)),
    "chlo.tan": (-1.2, 1.2, (0.0, 0.5, -1.0)),
    "chlo.erf": (-3, 3, (0.0, 0.5, -4.0)),
}


def _uf_case(op: str, lo: float, hi: float, edges) -> None:
    sig = "(%a: tensor<12xf32>, %c: tensor<12xf32>) -> (tensor<12xf32>, tensor<12xf32>)"
    if op.startswith("chlo."):
        f = lambda x: f"{op} {x} : tensor<12xf32> -> tensor<12xf32>"  # noqa: E731
    else:
        f = lambda x: f"{op} {x} : tensor<12xf32>"  # noqa: E731
    body = f"""
    %d = stablehlo.divide %a, %c : tensor<12xf32>
    %0 = {f('%a')}
    %1 = {f('%d')}
    return %0, %1 : tensor<12xf32>, tensor<12xf32>
    """
    # c: mostly 1 (d = a), zeros give d = +-inf and NaN (a = 0 at the first zero edge).
    case(f"uf_{op.split('.')[0]}_{op.split('.')[1]}", M(sig, body),
         lambda r: [np.concatenate([f32([0, 3, -3]), unif(r, (9,), lo, hi, edges=edges)]),
                    f32([0, 0, 0] + [1] * 9)],
         atol=2e-6)


for _op, (_lo, _hi, _edges) in _UF_UNARY.items():
    _uf_case(_op, _lo, _hi, _edges)

case("uf_atan2", M(
    "(%a: tensor<12xf32>, %b: tensor<12xf32>, %c: tensor<12xf32>) -> (tensor<12xf32>, tensor<12xf32>)", """
    %d = stablehlo.divide %a, %c : tensor<12xf32>
    %0 = stablehlo.atan2 %a, %b : tensor<12xf32>
    %1 = stablehlo.atan2 %d, %b : tensor<12xf32>
    return %0, %1 : tensor<12xf32>, tensor<12xf32>
    """),
    lambda r: [f32([0, 0, 1, -1, 2.5, -3, 0.5, 7, 0, 4, -2, 1]), f32([0, -1, 0, 0, 1, -2, -0.5, 3, 2, -4, 5, 1]),
               f32([1, 1, 1, 1, 0, 0, 1, 1, 0, 1, 1, 1])], atol=2e-6)

case("uf_chained", M(
    "(%a: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)", """
    %0 = stablehlo.log %a : tensor<8xf32>
    %1 = stablehlo.exponential %0 : tensor<8xf32>
    %2 = stablehlo.sqrt %a : tensor<8xf32>
    %3 = stablehlo.multiply %2, %2 : tensor<8xf32>
    return %1, %3 : tensor<8xf32>, tensor<8xf32>
    """),
    # exp(log 0) = exp(-inf) = 0, exp(log -1) = NaN: classes flow through uninterpreted apps.
    lambda r: [f32([0, -1, 1, 2.5, 0.125, 9, -4, 100])], rtol=2e-5)

# ---------------------------------------------------------------------------
# Shape ops

case("reshape_transpose_reverse", M(
    "(%a: tensor<2x3x4xf32>) -> (tensor<6x4xf32>, tensor<4x2x3xf32>, tensor<2x3x4xf32>, tensor<24xf32>)", """
    %0 = stablehlo.reshape %a : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
    %1 = stablehlo.transpose %a, dims = [2, 0, 1] : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
    %2 = stablehlo.reverse %a, dims = [0, 2] : tensor<2x3x4xf32>
    %3 = stablehlo.reshape %1 : (tensor<4x2x3xf32>) -> tensor<24xf32>
    return %0, %1, %2, %3 : tensor<6x4xf32>, tensor<4x2x3xf32>, tensor<2x3x4xf32>, tensor<24xf32>
    """),
    lambda r: [nice(r, (2, 3, 4))])

case("broadcast_in_dim", M(
    "(%a: tensor<3xf32>, %b: tensor<2x3xf32>, %s: tensor<f32>, %o: tensor<1x3xi32>) -> (tensor<2x3x4xf32>, tensor<3x4x2xf32>, tensor<2x2xf32>, tensor<4x3xi32>)", """
    %0 = stablehlo.broadcast_in_dim %a, dims = [1] : (tensor<3xf32>) -> tensor<2x3x4xf32>
    %1 = stablehlo.broadcast_in_dim %b, dims = [2, 0] : (tensor<2x3xf32>) -> tensor<3x4x2xf32>
    %2 = stablehlo.broadcast_in_dim %s, dims = [] : (tensor<f32>) -> tensor<2x2xf32>
    %3 = stablehlo.broadcast_in_dim %o, dims = [0, 1] : (tensor<1x3xi32>) -> tensor<4x3xi32>
    return %0, %1, %2, %3 : tensor<2x3x4xf32>, tensor<3x4x2xf32>, tensor<2x2xf32>, tensor<4x3xi32>
    """),
    lambda r: [nice(r, (3,)), nice(r, (2, 3)), f32(2.5), ints(r, (1, 3), -9, 9)])

case("concatenate_slice", M(
    "(%a: tensor<2x3xf32>, %e: tensor<2x0xf32>, %b: tensor<2x2xf32>, %x: tensor<6x5xf32>) -> (tensor<2x5xf32>, tensor<2x3xf32>, tensor<3x2xf32>, tensor<0x5xf32>)", """
    %0 = stablehlo.concatenate %a, %e, %b, dim = 1 : (tensor<2x3xf32>, tensor<2x0xf32>, tensor<2x2xf32>) -> tensor<2x5xf32>
    %1 = stablehlo.slice %x [1:5:2, 0:5:2] : (tensor<6x5xf32>) -> tensor<2x3xf32>
    %2 = stablehlo.slice %x [3:6, 3:5] : (tensor<6x5xf32>) -> tensor<3x2xf32>
    %3 = stablehlo.slice %x [2:2, 0:5] : (tensor<6x5xf32>) -> tensor<0x5xf32>
    return %0, %1, %2, %3 : tensor<2x5xf32>, tensor<2x3xf32>, tensor<3x2xf32>, tensor<0x5xf32>
    """),
    lambda r: [nice(r, (2, 3)), np.zeros((2, 0)), nice(r, (2, 2)), nice(r, (6, 5))])

case("iota_constant", M(
    "(%a: tensor<3x4xi32>, %x: tensor<2x3xf32>) -> (tensor<3x4xi32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi1>)", """
    %i = stablehlo.iota dim = 1 : tensor<3x4xi32>
    %0 = stablehlo.add %a, %i : tensor<3x4xi32>
    %f = stablehlo.iota dim = 0 : tensor<2x3xf32>
    %1 = stablehlo.multiply %x, %f : tensor<2x3xf32>
    %k = stablehlo.constant dense<[[1.5, 0x7FC00000, 0xFF800000], [0x7F800000, -2.0, 0.0]]> : tensor<2x3xf32>
    %2 = stablehlo.add %x, %k : tensor<2x3xf32>
    %t = stablehlo.constant dense<[[true, false, true], [false, false, true]]> : tensor<2x3xi1>
    %c = stablehlo.compare LT, %x, %k, FLOAT : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
    %3 = stablehlo.xor %t, %c : tensor<2x3xi1>
    return %0, %1, %2, %3 : tensor<3x4xi32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi1>
    """),
    lambda r: [ints(r, (3, 4), -100, 100), nice(r, (2, 3))])

case("pad", M(
    "(%a: tensor<3x4xf32>, %v: tensor<f32>, %e: tensor<0x3xf32>, %i: tensor<2x2xi32>) -> (tensor<5x10xf32>, tensor<2x3xf32>, tensor<1x2xf32>, tensor<4x4xi32>)", """
    %0 = stablehlo.pad %a, %v, low = [-1, 2], high = [1, -2], interior = [1, 2] : (tensor<3x4xf32>, tensor<f32>) -> tensor<5x10xf32>
    %1 = stablehlo.pad %e, %v, low = [1, 0], high = [1, 0], interior = [3, 0] : (tensor<0x3xf32>, tensor<f32>) -> tensor<2x3xf32>
    %2 = stablehlo.pad %a, %v, low = [-2, -1], high = [0, -1], interior = [0, 0] : (tensor<3x4xf32>, tensor<f32>) -> tensor<1x2xf32>
    %z = stablehlo.constant dense<-7> : tensor<i32>
    %3 = stablehlo.pad %i, %z, low = [0, -1], high = [1, 1], interior = [1, 2] : (tensor<2x2xi32>, tensor<i32>) -> tensor<4x4xi32>
    return %0, %1, %2, %3 : tensor<5x10xf32>, tensor<2x3xf32>, tensor<1x2xf32>, tensor<4x4xi32>
    """),
    lambda r: [nice(r, (3, 4)), f32(-0.5), np.zeros((0, 3)), ints(r, (2, 2), -9, 9)])

case("dynamic_slice_oob", M(
    "(%x: tensor<5x4xf32>, %i0: tensor<i32>, %j0: tensor<i32>, %i1: tensor<i32>, %j1: tensor<i32>, %i2: tensor<i32>, %j2: tensor<i32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>)", """
    %0 = stablehlo.dynamic_slice %x, %i0, %j0, sizes = [2, 3] : (tensor<5x4xf32>, tensor<i32>, tensor<i32>) -> tensor<2x3xf32>
    %1 = stablehlo.dynamic_slice %x, %i1, %j1, sizes = [2, 3] : (tensor<5x4xf32>, tensor<i32>, tensor<i32>) -> tensor<2x3xf32>
    %2 = stablehlo.dynamic_slice %x, %i2, %j2, sizes = [2, 3] : (tensor<5x4xf32>, tensor<i32>, tensor<i32>) -> tensor<2x3xf32>
    return %0, %1, %2 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
    """),
    # In range, past the end (clamped to 3 and 1), negative (clamped to 0).
    lambda r: [nice(r, (5, 4)), scalar_i32(2), scalar_i32(1), scalar_i32(7), scalar_i32(4), scalar_i32(-3), scalar_i32(-1)])

case("dynamic_update_slice_oob", M(
    "(%x: tensor<5x4xf32>, %u: tensor<2x3xf32>, %i0: tensor<i32>, %j0: tensor<i32>, %i1: tensor<i32>, %j1: tensor<i32>) -> (tensor<5x4xf32>, tensor<5x4xf32>)", """
    %0 = stablehlo.dynamic_update_slice %x, %u, %i0, %j0 : (tensor<5x4xf32>, tensor<2x3xf32>, tensor<i32>, tensor<i32>) -> tensor<5x4xf32>
    %1 = stablehlo.dynamic_update_slice %x, %u, %i1, %j1 : (tensor<5x4xf32>, tensor<2x3xf32>, tensor<i32>, tensor<i32>) -> tensor<5x4xf32>
    return %0, %1 : tensor<5x4xf32>, tensor<5x4xf32>
    """),
    lambda r: [nice(r, (5, 4)), nice(r, (2, 3)), scalar_i32(1), scalar_i32(0), scalar_i32(9), scalar_i32(-2)])

case("gather_general", M(
    "(%x: tensor<4x5x3xf32>, %idx: tensor<2x3x2xi32>) -> tensor<2x3x2x3xf32>", """
    %0 = "stablehlo.gather"(%x, %idx) <{dimension_numbers = #stablehlo.gather<offset_dims = [2, 3], collapsed_slice_dims = [1], start_index_map = [1, 0], index_vector_dim = 2>, indices_are_sorted = false, slice_sizes = array<i64: 2, 1, 3>}> : (tensor<4x5x3xf32>, tensor<2x3x2xi32>) -> tensor<2x3x2x3xf32>
    return %0 : tensor<2x3x2x3xf32>
    """),
    # Index vectors (dim1, dim0) with out-of-range and negative starts: clamped per dimension.
    lambda r: [nice(r, (4, 5, 3)), np.array([[[0, 0], [4, 2], [7, 3]], [[-1, -5], [2, 9], [3, 1]]])])

case("scatter_window", M(
    "(%x: tensor<4x5xf32>, %idx: tensor<3x2xi32>, %u: tensor<3x2x2xf32>) -> (tensor<4x5xf32>, tensor<4x5xf32>)", """
    %0 = "stablehlo.scatter"(%x, %idx, %u) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1, 2], scatter_dims_to_operand_dims = [0, 1], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%p: tensor<f32>, %q: tensor<f32>):
      %s = stablehlo.add %p, %q : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }) : (tensor<4x5xf32>, tensor<3x2xi32>, tensor<3x2x2xf32>) -> tensor<4x5xf32>
    %1 = "stablehlo.scatter"(%x, %idx, %u) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1, 2], scatter_dims_to_operand_dims = [0, 1], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%p: tensor<f32>, %q: tensor<f32>):
      %s = stablehlo.multiply %p, %q : tensor<f32>
      %t = stablehlo.maximum %s, %q : tensor<f32>
      stablehlo.return %t : tensor<f32>
    }) : (tensor<4x5xf32>, tensor<3x2xi32>, tensor<3x2x2xf32>) -> tensor<4x5xf32>
    return %0, %1 : tensor<4x5xf32>, tensor<4x5xf32>
    """),
    # 2x2 windows: (1, 2) in range, (3, 1) sticks out (whole update skipped), (0, 0) fits;
    # the windows do not overlap, so the non-commutative second combiner has one order.
    lambda r: [nice(r, (4, 5), lim=4), np.array([[1, 2], [3, 1], [0, 0]]), nice(r, (3, 2, 2), lim=4)])

# ---------------------------------------------------------------------------
# Reductions, contractions, orderings

case("reduce_sum_dims", M(
    "(%a: tensor<2x3x4xf32>, %i: tensor<3x4xi32>, %p: tensor<3x4xi1>) -> (tensor<3xf32>, tensor<f32>, tensor<4xi32>, tensor<3xi1>, tensor<4xi1>, tensor<3xf32>)", """
    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %0 = stablehlo.reduce(%a init: %z) applies stablehlo.add across dimensions = [0, 2] : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<3xf32>
    %1 = stablehlo.reduce(%a init: %z) applies stablehlo.add across dimensions = [0, 1, 2] : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<f32>
    %zi = stablehlo.constant dense<0> : tensor<i32>
    %2 = stablehlo.reduce(%i init: %zi) applies stablehlo.add across dimensions = [0] : (tensor<3x4xi32>, tensor<i32>) -> tensor<4xi32>
    %t = stablehlo.constant dense<true> : tensor<i1>
    %f = stablehlo.constant dense<false> : tensor<i1>
    %3 = stablehlo.reduce(%p init: %t) applies stablehlo.and across dimensions = [1] : (tensor<3x4xi1>, tensor<i1>) -> tensor<3xi1>
    %4 = stablehlo.reduce(%p init: %f) applies stablehlo.or across dimensions = [0] : (tensor<3x4xi1>, tensor<i1>) -> tensor<4xi1>
    %one = stablehlo.constant dense<1.0> : tensor<f32>
    %s = stablehlo.slice %a [0:1, 0:3, 0:4] : (tensor<2x3x4xf32>) -> tensor<1x3x4xf32>
    %5 = stablehlo.reduce(%s init: %one) applies stablehlo.multiply across dimensions = [0, 2] : (tensor<1x3x4xf32>, tensor<f32>) -> tensor<3xf32>
    return %0, %1, %2, %3, %4, %5 : tensor<3xf32>, tensor<f32>, tensor<4xi32>, tensor<3xi1>, tensor<4xi1>, tensor<3xf32>
    """),
    lambda r: [nice(r, (2, 3, 4)), ints(r, (3, 4), -1000, 1000), np.array([[1, 1, 1, 1], [1, 0, 1, 0], [0, 0, 0, 0]], dtype=bool)])

case("reduce_max_min", M(
    "(%a: tensor<3x5xf32>, %c: tensor<3x5xf32>, %i: tensor<3x5xi32>) -> (tensor<3xf32>, tensor<5xf32>, tensor<3xi32>, tensor<3xi1>)", """
    %d = stablehlo.divide %a, %c : tensor<3x5xf32>
    %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %pinf = stablehlo.constant dense<0x7F800000> : tensor<f32>
    %0 = stablehlo.reduce(%d init: %ninf) applies stablehlo.maximum across dimensions = [1] : (tensor<3x5xf32>, tensor<f32>) -> tensor<3xf32>
    %1 = stablehlo.reduce(%d init: %pinf) applies stablehlo.minimum across dimensions = [0] : (tensor<3x5xf32>, tensor<f32>) -> tensor<5xf32>
    %lo = stablehlo.constant dense<-2147483648> : tensor<i32>
    %2 = stablehlo.reduce(%i init: %lo) applies stablehlo.maximum across dimensions = [1] : (tensor<3x5xi32>, tensor<i32>) -> tensor<3xi32>
    %fin = stablehlo.is_finite %d : (tensor<3x5xf32>) -> tensor<3x5xi1>
    %t = stablehlo.constant dense<true> : tensor<i1>
    %3 = stablehlo.reduce(%fin init: %t) applies stablehlo.minimum across dimensions = [1] : (tensor<3x5xi1>, tensor<i1>) -> tensor<3xi1>
    return %0, %1, %2, %3 : tensor<3xf32>, tensor<5xf32>, tensor<3xi32>, tensor<3xi1>
    """),
    # Row 0 has a NaN (0/0, propagates), row 1 a +inf; column maxima with ties.
    lambda r: [f32([[0, 1, 2, 2, -1], [5, 3, -2, 3, 1], [-7, -7, 4, 4, 0.5]]),
               f32([[0, 1, 1, 1, 1], [0, 1, 1, 1, 1], [1, 1, 1, 1, 2]]),
               np.array([[3, 3, -1, 0, I32_MIN], [I32_MAX, 0, 1, 2, 3], [-5, -4, -4, -9, -5]])])

case("reduce_empty", M(
    "(%a: tensor<0x3xf32>, %b: tensor<2x0xf32>) -> (tensor<3xf32>, tensor<0xf32>, tensor<2xf32>, tensor<2xf32>)", """
    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %0 = stablehlo.reduce(%a init: %z) applies stablehlo.add across dimensions = [0] : (tensor<0x3xf32>, tensor<f32>) -> tensor<3xf32>
    %1 = stablehlo.reduce(%a init: %z) applies stablehlo.add across dimensions = [1] : (tensor<0x3xf32>, tensor<f32>) -> tensor<0xf32>
    %2 = stablehlo.reduce(%b init: %ninf) applies stablehlo.maximum across dimensions = [1] : (tensor<2x0xf32>, tensor<f32>) -> tensor<2xf32>
    %3 = stablehlo.reduce(%b init: %z) applies stablehlo.add across dimensions = [1] : (tensor<2x0xf32>, tensor<f32>) -> tensor<2xf32>
    return %0, %1, %2, %3 : tensor<3xf32>, tensor<0xf32>, tensor<2xf32>, tensor<2xf32>
    """),
    lambda r: [np.zeros((0, 3)), np.zeros((2, 0))])

case("reduce_argmax_body", M(
    "(%a: tensor<3x6xf32>, %b: tensor<3x6xf32>) -> (tensor<3xf32>, tensor<3xi32>, tensor<6xf32>)", """
    %iota = stablehlo.iota dim = 1 : tensor<3x6xi32>
    %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %c0 = stablehlo.constant dense<0> : tensor<i32>
    %0:2 = stablehlo.reduce(%a init: %ninf), (%iota init: %c0) across dimensions = [1] : (tensor<3x6xf32>, tensor<3x6xi32>, tensor<f32>, tensor<i32>) -> (tensor<3xf32>, tensor<3xi32>)
    reducer(%x: tensor<f32>, %y: tensor<f32>) (%i: tensor<i32>, %j: tensor<i32>) {
      %gt = stablehlo.compare GT, %x, %y, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %eq = stablehlo.compare EQ, %x, %y, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %lt = stablehlo.compare LT, %i, %j, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %tie = stablehlo.and %eq, %lt : tensor<i1>
      %pick = stablehlo.or %gt, %tie : tensor<i1>
      %v = stablehlo.select %gt, %x, %y : tensor<i1>, tensor<f32>
      %k = stablehlo.select %pick, %i, %j : tensor<i1>, tensor<i32>
      stablehlo.return %v, %k : tensor<f32>, tensor<i32>
    }
    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %1 = stablehlo.reduce(%b init: %z) across dimensions = [0] : (tensor<3x6xf32>, tensor<f32>) -> tensor<6xf32>
    reducer(%x: tensor<f32>, %y: tensor<f32>) {
      %ax = stablehlo.abs %x : tensor<f32>
      %ay = stablehlo.abs %y : tensor<f32>
      %m = stablehlo.maximum %ax, %ay : tensor<f32>
      stablehlo.return %m : tensor<f32>
    }
    return %0#0, %0#1, %1 : tensor<3xf32>, tensor<3xi32>, tensor<6xf32>
    """),
    # Ties: the lowest index of the maximum wins.
    lambda r: [f32([[1, 5, 5, 2, 5, 0], [-3, -3, -3, -3, -3, -3], [0, 7, -1, 7.5, 7.5, 2]]), nice(r, (3, 6))])

case("dot_general", M(
    "(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>, %l: tensor<3x2x4x5xf32>, %r: tensor<5x2x4x6xf32>, %i: tensor<2x3xi32>, %j: tensor<3x2xi32>, %e: tensor<2x0xf32>, %f: tensor<0x3xf32>, %v: tensor<4xf32>) -> (tensor<3x5xf32>, tensor<2x3x6xf32>, tensor<2x2xi32>, tensor<2x3xf32>, tensor<f32>, tensor<5x3xf32>)", """
    %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
    %1 = stablehlo.dot_general %l, %r, batching_dims = [1] x [1], contracting_dims = [2, 3] x [2, 0] : (tensor<3x2x4x5xf32>, tensor<5x2x4x6xf32>) -> tensor<2x3x6xf32>
    %2 = stablehlo.dot_general %i, %j, contracting_dims = [1] x [0] : (tensor<2x3xi32>, tensor<3x2xi32>) -> tensor<2x2xi32>
    %3 = stablehlo.dot_general %e, %f, contracting_dims = [1] x [0] : (tensor<2x0xf32>, tensor<0x3xf32>) -> tensor<2x3xf32>
    %4 = stablehlo.dot_general %v, %v, contracting_dims = [0] x [0] : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>
    %5 = stablehlo.dot_general %b, %a, contracting_dims = [0] x [1] : (tensor<4x5xf32>, tensor<3x4xf32>) -> tensor<5x3xf32>
    return %0, %1, %2, %3, %4, %5 : tensor<3x5xf32>, tensor<2x3x6xf32>, tensor<2x2xi32>, tensor<2x3xf32>, tensor<f32>, tensor<5x3xf32>
    """),
    lambda r: [nice(r, (3, 4)), nice(r, (4, 5)), nice(r, (3, 2, 4, 5), lim=8), nice(r, (5, 2, 4, 6), lim=8),
               ints(r, (2, 3), -100, 100), ints(r, (3, 2), -100, 100), np.zeros((2, 0)), np.zeros((0, 3)), nice(r, (4,))])

_SORT_LT_F32 = """
    ^bb0(%p: tensor<f32>, %q: tensor<f32>):
      %lt = stablehlo.compare LT, %p, %q, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
"""

case("sort", M(
    "(%a: tensor<3x5xf32>, %b: tensor<6x2xf32>, %i: tensor<7xi32>) -> (tensor<3x5xf32>, tensor<6x2xf32>, tensor<6x2xi32>, tensor<7xi32>)", f"""
    %0 = "stablehlo.sort"(%a) <{{dimension = 1 : i64, is_stable = true}}> ({{
    {_SORT_LT_F32}
    }}) : (tensor<3x5xf32>) -> tensor<3x5xf32>
    %iota = stablehlo.iota dim = 0 : tensor<6x2xi32>
    %1:2 = "stablehlo.sort"(%b, %iota) <{{dimension = 0 : i64, is_stable = true}}> ({{
    ^bb0(%p: tensor<f32>, %q: tensor<f32>, %m: tensor<i32>, %n: tensor<i32>):
      %lt = stablehlo.compare LT, %p, %q, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
    }}) : (tensor<6x2xf32>, tensor<6x2xi32>) -> (tensor<6x2xf32>, tensor<6x2xi32>)
    %2 = "stablehlo.sort"(%i) <{{dimension = 0 : i64, is_stable = true}}> ({{
    ^bb0(%p: tensor<i32>, %q: tensor<i32>):
      %gt = stablehlo.compare GT, %p, %q, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %gt : tensor<i1>
    }}) : (tensor<7xi32>) -> tensor<7xi32>
    return %0, %1#0, %1#1, %2 : tensor<3x5xf32>, tensor<6x2xf32>, tensor<6x2xi32>, tensor<7xi32>
    """),
    # Ties everywhere: a stable argsort keeps equal keys in index order.
    lambda r: [f32([[3, 1, 2, 1, 0], [-1, -1, -1, -1, -1], [5, -2, 7, 0, 7]]),
               f32([[2, 1], [1, 1], [2, 0], [-3, 1], [1, 0], [2, -3]]),
               np.array([4, I32_MIN, 4, I32_MAX, -1, 0, 4])])

case("sort_lexicographic", M(
    "(%k: tensor<8xf32>, %j: tensor<8xi32>, %v: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xi32>, tensor<8xf32>)", """
    %0:3 = "stablehlo.sort"(%k, %j, %v) <{dimension = 0 : i64, is_stable = false}> ({
    ^bb0(%k1: tensor<f32>, %k2: tensor<f32>, %j1: tensor<i32>, %j2: tensor<i32>, %v1: tensor<f32>, %v2: tensor<f32>):
      %lt = stablehlo.compare LT, %k1, %k2, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %eq = stablehlo.compare EQ, %k1, %k2, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %gt = stablehlo.compare GT, %j1, %j2, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %tie = stablehlo.and %eq, %gt : tensor<i1>
      %r = stablehlo.or %lt, %tie : tensor<i1>
      stablehlo.return %r : tensor<i1>
    }) : (tensor<8xf32>, tensor<8xi32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xi32>, tensor<8xf32>)
    return %0#0, %0#1, %0#2 : tensor<8xf32>, tensor<8xi32>, tensor<8xf32>
    """),
    # Primary key ascending with ties, secondary key descending; (k, j) pairs are distinct, so
    # the order is total and stability does not matter.
    lambda r: [f32([2, 1, 2, 1, 0, 2, -1, 1]), np.array([0, 5, 3, -2, 7, 9, 1, 4]), nice(r, (8,))])

case("empty_elementwise", M(
    "(%a: tensor<0x3xf32>, %b: tensor<0x3xf32>, %i: tensor<3x0xi32>) -> (tensor<0x3xf32>, tensor<0x3xi1>, tensor<0x3xi32>, tensor<3x0xf32>, tensor<0x3xf32>, tensor<3x0xi32>)", """
    %0 = stablehlo.add %a, %b : tensor<0x3xf32>
    %1 = stablehlo.compare LT, %a, %b, FLOAT : (tensor<0x3xf32>, tensor<0x3xf32>) -> tensor<0x3xi1>
    %2 = stablehlo.convert %a : (tensor<0x3xf32>) -> tensor<0x3xi32>
    %3 = stablehlo.transpose %a, dims = [1, 0] : (tensor<0x3xf32>) -> tensor<3x0xf32>
    %4 = "stablehlo.sort"(%a) <{dimension = 0 : i64, is_stable = true}> ({
      ^bb0(%p: tensor<f32>, %q: tensor<f32>):
      %lt = stablehlo.compare LT, %p, %q, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
    }) : (tensor<0x3xf32>) -> tensor<0x3xf32>
    %5 = stablehlo.reverse %i, dims = [0] : tensor<3x0xi32>
    return %0, %1, %2, %3, %4, %5 : tensor<0x3xf32>, tensor<0x3xi1>, tensor<0x3xi32>, tensor<3x0xf32>, tensor<0x3xf32>, tensor<3x0xi32>
    """),
    lambda r: [np.zeros((0, 3)), np.zeros((0, 3)), np.zeros((3, 0), dtype=np.int64)])

case("top_k", M(
    "(%a: tensor<3x6xf32>, %i: tensor<2x4xi32>) -> (tensor<3x2xf32>, tensor<3x2xi32>, tensor<2x4xi32>, tensor<2x4xi32>)", """
    %v, %k = chlo.top_k(%a, k = 2) : tensor<3x6xf32> -> (tensor<3x2xf32>, tensor<3x2xi32>)
    %w, %l = chlo.top_k(%i, k = 4) : tensor<2x4xi32> -> (tensor<2x4xi32>, tensor<2x4xi32>)
    return %v, %k, %w, %l : tensor<3x2xf32>, tensor<3x2xi32>, tensor<2x4xi32>, tensor<2x4xi32>
    """),
    # Ties: the lower index comes first.
    lambda r: [f32([[1, 5, 5, 2, 5, 0], [-3, -3, -3, -3, -3, -3], [0, 7, -1, 7.5, 7.5, 2]]),
               np.array([[3, 3, -1, 3], [I32_MIN, I32_MAX, 0, I32_MAX]])])

# ---------------------------------------------------------------------------
# Control flow

case("while_static", M(
    "(%x: tensor<3xf32>, %a: tensor<f32>) -> (tensor<3xf32>, tensor<i32>)", """
    %c0 = stablehlo.constant dense<0> : tensor<i32>
    %0:2 = stablehlo.while(%i = %c0, %acc = %x) : tensor<i32>, tensor<3xf32>
    cond {
      %n = stablehlo.constant dense<4> : tensor<i32>
      %lt = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
    } do {
      %one = stablehlo.constant dense<1> : tensor<i32>
      %i1 = stablehlo.add %i, %one : tensor<i32>
      %ab = stablehlo.broadcast_in_dim %a, dims = [] : (tensor<f32>) -> tensor<3xf32>
      %m = stablehlo.multiply %acc, %ab : tensor<3xf32>
      %s = stablehlo.add %m, %x : tensor<3xf32>
      stablehlo.return %i1, %s : tensor<i32>, tensor<3xf32>
    }
    return %0#1, %0#0 : tensor<3xf32>, tensor<i32>
    """),
    lambda r: [nice(r, (3,), lim=8), f32(0.5)])

_BRANCHES = """({
      %r = stablehlo.negate %x : tensor<4xf32>
      stablehlo.return %r : tensor<4xf32>
    }, {
      %r = stablehlo.multiply %x, %x : tensor<4xf32>
      stablehlo.return %r : tensor<4xf32>
    }, {
      %r = stablehlo.sqrt %x : tensor<4xf32>
      stablehlo.return %r : tensor<4xf32>
    })"""

case("case_index", M(
    "(%x: tensor<4xf32>, %i: tensor<i32>, %j: tensor<i32>, %k: tensor<i32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)", f"""
    %c1 = stablehlo.constant dense<1> : tensor<i32>
    %c7 = stablehlo.constant dense<7> : tensor<i32>
    %0 = "stablehlo.case"(%c1) {_BRANCHES} : (tensor<i32>) -> tensor<4xf32>
    %1 = "stablehlo.case"(%c7) {_BRANCHES} : (tensor<i32>) -> tensor<4xf32>
    %2 = "stablehlo.case"(%i) {_BRANCHES} : (tensor<i32>) -> tensor<4xf32>
    %3 = "stablehlo.case"(%j) {_BRANCHES} : (tensor<i32>) -> tensor<4xf32>
    %4 = "stablehlo.case"(%k) {_BRANCHES} : (tensor<i32>) -> tensor<4xf32>
    return %0, %1, %2, %3, %4 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
    """),
    # Constant and data-dependent indices; out of range (5, -1) runs the last branch.
    lambda r: [f32([4, 0, 2.25, 9]), scalar_i32(0), scalar_i32(5), scalar_i32(-1)])

case("if_pred", M(
    "(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)", """
    %t = stablehlo.constant dense<true> : tensor<i1>
    %0 = "stablehlo.if"(%t) ({
      stablehlo.return %x : tensor<4xf32>
    }, {
      stablehlo.return %y : tensor<4xf32>
    }) : (tensor<i1>) -> tensor<4xf32>
    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %sum = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    %sy = stablehlo.reduce(%y init: %z) applies stablehlo.add across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    %p = stablehlo.compare GT, %sum, %z, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %q = stablehlo.compare GT, %sy, %z, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %1 = "stablehlo.if"(%p) ({
      %a = stablehlo.add %x, %y : tensor<4xf32>
      stablehlo.return %a : tensor<4xf32>
    }, {
      %a = stablehlo.subtract %x, %y : tensor<4xf32>
      stablehlo.return %a : tensor<4xf32>
    }) : (tensor<i1>) -> tensor<4xf32>
    %2 = "stablehlo.if"(%q) ({
      %a = stablehlo.add %x, %y : tensor<4xf32>
      stablehlo.return %a : tensor<4xf32>
    }, {
      %a = stablehlo.log %y : tensor<4xf32>
      stablehlo.return %a : tensor<4xf32>
    }) : (tensor<i1>) -> tensor<4xf32>
    return %0, %1, %2 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
    """),
    # sum(x) > 0 (then-branch), sum(y) < 0 (else-branch, log of negatives and 0).
    lambda r: [f32([1, 2, -0.5, 3]), f32([-1, 0, -2, 0.5])])

_HELPERS = """  func.func private @helper(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.multiply %a, %b : tensor<4xf32>
    %1 = stablehlo.subtract %0, %a : tensor<4xf32>
    return %1 : tensor<4xf32>
  }
  func.func private @double(%a: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.add %a, %a : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
"""

case("call_composite_barrier_custom_call", M(
    "(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)", """
    %0 = func.call @helper(%x, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %1 = stablehlo.composite "tv.double" %0 {decomposition = @double} : (tensor<4xf32>) -> tensor<4xf32>
    %2:2 = stablehlo.optimization_barrier %1, %y : tensor<4xf32>, tensor<4xf32>
    %3 = stablehlo.custom_call @Sharding(%2#0) {mhlo.sharding = "{replicated}"} : (tensor<4xf32>) -> tensor<4xf32>
    %4 = stablehlo.add %3, %2#1 : tensor<4xf32>
    return %4, %3, %2#1 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
    """, extra=_HELPERS),
    lambda r: [nice(r, (4,)), nice(r, (4,))], raw=True)

# stablehlo.dot appears in XLA's partitioner output; mhlo.copy and sdy hints are identities.
case("dot_forms", M(
    "(%a: tensor<3x4xf32>, %b: tensor<4x2xf32>, %v: tensor<4xf32>) -> (tensor<3x2xf32>, tensor<3xf32>, tensor<f32>)", """
    %0 = stablehlo.dot %a, %b : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
    %1 = stablehlo.dot %a, %v : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3xf32>
    %2 = stablehlo.dot %v, %v : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>
    return %0, %1, %2 : tensor<3x2xf32>, tensor<3xf32>, tensor<f32>
    """), lambda r: [nice(r, (3, 4)), nice(r, (4, 2)), nice(r, (4,))])

case("mhlo_copy", M(
    "(%a: tensor<3x4xf32>) -> tensor<3x4xf32>", """
    %0 = mhlo.copy %a : tensor<3x4xf32>
    %1 = stablehlo.add %0, %a : tensor<3x4xf32>
    return %1 : tensor<3x4xf32>
    """), lambda r: [nice(r, (3, 4))], raw=True)

case("sdy_hints", """
module @m attributes {mhlo.num_partitions = 1 : i32} {
  sdy.mesh @mesh = <["x"=1]>
  func.func public @main(%a: tensor<4x2xf32>) -> tensor<4x2xf32> {
    %0 = sdy.sharding_constraint %a <@mesh, [{"x"}, {}]> : tensor<4x2xf32>
    %1 = sdy.reshard %0 <@mesh, [{}, {}]> : tensor<4x2xf32>
    %2 = stablehlo.multiply %1, %a : tensor<4x2xf32>
    return %2 : tensor<4x2xf32>
  }
}
""", lambda r: [nice(r, (4, 2))], raw=True, xla_text=M("(%a: tensor<4x2xf32>) -> tensor<4x2xf32>", """
    %0 = stablehlo.multiply %a, %a : tensor<4x2xf32>
    return %0 : tensor<4x2xf32>
    """))

# ---------------------------------------------------------------------------
# Forms jax emits (testdata/ops/gen_ops.py)

JAX_CASES: dict[str, Inputs] = {
    # Out-of-range (6, -7, 5) and negative (-1 wraps to 4) indices.
    "take_fill": lambda r: [nice(r, (5, 3)), np.array([0, 4, -1, 6, -7, 2])],
    "take_clip_axis1": lambda r: [nice(r, (3, 4)), np.array([0, 3, 9, -2, -9])],
    "getitem_array": lambda r: [nice(r, (5, 3)), np.array([0, 4, -1, 6, -7, 2])],
    "take_along_axis": lambda r: [nice(r, (4, 3)), np.array([[0, 2], [-1, 1], [3, -4], [1, 1]])],
    "at_set": lambda r: [nice(r, (5, 3)), np.array([1, -1, 7, 3]), nice(r, (4, 3))],
    # Duplicates accumulate; out-of-range updates are dropped.
    "at_add": lambda r: [nice(r, (5, 3)), np.array([1, 1, -2, 9, 0, 1]), nice(r, (6, 3))],
    "at_add_2d": lambda r: [nice(r, (4, 3)), np.array([0, 3, 3, 5, -1]), np.array([2, 0, 0, 1, -1]), nice(r, (5,))],
    "at_max_int": lambda r: [ints(r, (6,), -50, 50), np.array([2, 2, 5, -1, 8]), ints(r, (5,), -50, 50)],
    "argmax": lambda r: [f32([[1, 5, 5, 2, 5], [0, 0, 0, 0, 0], [-3, -1, -2, -1, -5], [0.5, 0.25, 0.5, 9, 9]])],
    "argmin_axis0": lambda r: [f32([[1, 5, 2], [1, -5, 2], [0, 3, 2], [0, 7, -2], [4, -5, 2]])],
    "argsort": lambda r: [f32([[3, 1, 2, 1, 0, 3], [-1, -1, -1, -1, -1, -1], [5, -2, 7, 0, 7, 1e6]])],
    "sort_desc": lambda r: [f32([[2, 1], [1, 1], [2, 0], [-3, 1], [1, 5]])],
    "top_k": lambda r: [f32([[1, 5, 5, 2, 5, 0], [-3, -3, -3, -3, -3, -3], [0, 7, -1, 7.5, 7.5, 2]])],
    "fori_loop": lambda r: [f32(0.5), nice(r, (3,), lim=8)],
    "cond_pred": lambda r: [np.array(True), nice(r, (2, 3))],
    "cond_data": lambda r: [f32([[1, -2, 3], [0, 4, -1]])],
    "switch": lambda r: [scalar_i32(5), nice(r, (4,))],
    "dynamic_slice": lambda r: [nice(r, (4, 5)), scalar_i32(-1), scalar_i32(4)],
    "dynamic_update_slice": lambda r: [nice(r, (4, 5)), nice(r, (2, 3)), scalar_i32(3), scalar_i32(-9)],
    "erf_tan": lambda r: [unif(r, (2, 4), -1.2, 1.2, edges=(0.0,))],
    "softmax": lambda r: [nice(r, (3, 4), lim=8)],
    "int_floor_divide": lambda r: [np.array([7, -7, 7, -7, 0, 9, -9, 5]), np.array([2, 2, -2, -2, 3, 0, 4, -5])],
    "bf16_matmul": lambda r: [bf16(r.integers(-8, 8, (2, 3)) / 2), bf16(r.integers(-8, 8, (3, 4)) / 2)],
    "round_clip": lambda r: [f32([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.7, -1.25])],
    "argsort_nan": lambda r: [f32([[1, 0, -2, 0, 3, 1], [0, 0, 5, -5, 2, 0]]), f32([[1, 0, 0, 0, 2, 1], [1, 0, 0, 0, 1, 0]])],
    "argmax_nan": lambda r: [f32([[1, 0, 5, 5], [2, 3, 1, 0], [-1, -2, 4, 0]]), f32([[1, 0, 1, 1], [1, 2, 0, 0], [1, 1, 0, 1]])],
    "vmap_take": lambda r: [nice(r, (3, 5)), np.array([[0, 4, -1, 9], [2, 2, -6, 5], [1, 3, 0, -5]])],
    "vmap_at_add": lambda r: [nice(r, (3, 5)), np.array([[0, 4, 4, 9], [2, 2, -6, 5], [1, -1, 0, -5]]), nice(r, (3, 4))],
}

for _name, _inputs in JAX_CASES.items():
    case(f"jax_{_name}", (OPS_DIR / f"{_name}.mlir").read_text(), _inputs)


# ---------------------------------------------------------------------------
# Tests


@pytest.mark.parametrize("c", CASES, ids=[c.name for c in CASES])
def test_op_against_xla(xla, c: Case) -> None:
    inputs = c.inputs(rng_for(c.name))
    check_against_xla(xla, c.text, inputs, rtol=c.rtol, atol=c.atol, xla_text=c.xla_text)
    if c.raw:
        check_against_xla(xla, c.text, inputs, rtol=c.rtol, atol=c.atol, pipeline="none", xla_text=c.xla_text)


def _op_names(text: str) -> set[str]:
    module = load_module(text)
    names: set[str] = set()
    for f in module.funcs.values():
        names.update(op.name for op in f.body.walk())
    return names


def test_every_table_op_is_covered() -> None:
    from test_ops_xla_more import CASES as MORE_CASES  # issue 15's ops, same harness

    covered: set[str] = set()
    for c in CASES + MORE_CASES:
        covered |= _op_names(c.text)
    missing = sorted(set(TABLE) - covered)
    assert not missing, f"ops in TABLE without a case in tests/test_ops_xla.py or test_ops_xla_more.py: {missing}"
    unknown = sorted(covered - set(TABLE))
    assert not unknown, f"cases use ops that TABLE does not know: {unknown}"


def test_case_names_unique() -> None:
    names = [c.name for c in CASES]
    assert len(names) == len(set(names))


# ---------------------------------------------------------------------------
# Where the model deliberately knows less than XLA: the NaN sign under TOTALORDER.

_NAN_SIGN = M(
    "(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xi1>", """
    %d = stablehlo.divide %a, %b : tensor<4xf32>
    %inf = stablehlo.constant dense<0x7F800000> : tensor<4xf32>
    %0 = stablehlo.compare LT, %d, %inf, TOTALORDER : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
    return %0 : tensor<4xi1>
    """)


def test_totalorder_nan_sign_is_left_open(xla) -> None:
    # x86 makes 0/0 a negative NaN, which TOTALORDER puts below -inf. The numeric algebra
    # reads the sign bit like XLA; the symbolic model leaves a NaN's place open (an
    # uninterpreted predicate), and this case's harness supplies the platform's answer.
    check_against_xla(xla, _NAN_SIGN, [f32([0, 1, 2, 3]), f32([0, 1, 1, 1])], nan_sign=-1)
    alg = SymbolicAlgebra()
    symbolic_values(prepared(_NAN_SIGN), [f32([0, 1, 2, 3]), f32([0, 1, 1, 1])], alg=alg, nan_sign=-1)
    assert "totalorder-nan" in alg.approximations


_F2I = M(
    "(%a: tensor<4xf32>) -> tensor<4xi32>", """
    %0 = stablehlo.convert %a : (tensor<4xf32>) -> tensor<4xi32>
    return %0 : tensor<4xi32>
    """)


def test_convert_saturates_finite_values_out_of_range(xla) -> None:
    check_against_xla(xla, _F2I, [f32([3e9, -3e9, 1, 0])])


# ---------------------------------------------------------------------------
# Mutations: the net must catch an unsound rule in either algebra.


def _case(name: str) -> Case:
    return next(c for c in CASES if c.name == name)


def _must_fail(xla, name: str) -> str:
    c = _case(name)
    with pytest.raises(AssertionError, match=r"(numeric|symbolic) output \d") as info:
        check_against_xla(xla, c.text, c.inputs(rng_for(c.name)), rtol=c.rtol, atol=c.atol, xla_text=c.xla_text)
    return str(info.value)


def test_mutation_symbolic_sub_is_add(xla, monkeypatch) -> None:
    monkeypatch.setattr(SymbolicAlgebra, "sub", lambda self, a, b, kind: SymbolicAlgebra.add(self, a, b, kind))
    assert "symbolic output" in _must_fail(xla, "arith_f32")


def test_mutation_symbolic_max_picks_min(xla, monkeypatch) -> None:
    orig = symbolic_mod.sf_max
    monkeypatch.setattr(symbolic_mod, "sf_max", lambda a, b, is_max: orig(a, b, not is_max))
    assert "symbolic output" in _must_fail(xla, "minmax_f32")


def test_mutation_symbolic_log_zero_is_nan(xla, monkeypatch) -> None:
    # An IEEE-class rule of an uninterpreted function: log 0 = -inf, not NaN.
    orig = symbolic_mod._domain

    def wrong(name, vs, fresh):
        if name == "log":
            return symbolic_mod.If(symbolic_mod._fold_cmp(vs[0], ">", 0), symbolic_mod.FIN, symbolic_mod.NAN)
        return orig(name, vs, fresh)

    monkeypatch.setattr(symbolic_mod, "_domain", wrong)
    assert "symbolic output" in _must_fail(xla, "uf_stablehlo_log")


def test_mutation_symbolic_uf_swapped(xla, monkeypatch) -> None:
    # The evaluator really applies the named function: sine computed as cosine is caught.
    orig = SymbolicAlgebra.uf
    monkeypatch.setattr(SymbolicAlgebra, "uf", lambda self, name, args: orig(self, "cosine" if name == "sine" else name, args))
    assert "symbolic output" in _must_fail(xla, "uf_stablehlo_sine")


def test_mutation_own_terms_sub_is_add(xla, monkeypatch) -> None:
    # The algebra over the project's own terms is held to XLA by the same cases.
    monkeypatch.setattr(FastAlgebra, "sub", lambda self, a, b, kind: FastAlgebra.add(self, a, b, kind))
    assert "(own terms)" in _must_fail(xla, "arith_f32")


def test_mutation_own_terms_log_zero_is_nan(xla, monkeypatch) -> None:
    orig = FastAlgebra._domain

    def wrong(self, name, vs, fresh):
        if name == "log":
            s = self.store
            return self._ite_cls(s.lt(s.real(0), vs[0]), 0, 3)  # FIN, else NaN: log 0 is -inf
        return orig(self, name, vs, fresh)

    monkeypatch.setattr(FastAlgebra, "_domain", wrong)
    assert "(own terms)" in _must_fail(xla, "uf_stablehlo_log")


def test_mutation_own_terms_euclidean_div_for_truncation(xla, monkeypatch) -> None:
    # Integer division must truncate toward zero (XLA), not round down (SMT-LIB div).
    def floor_div(self, a, b):
        if isinstance(a, int) and isinstance(b, int):
            return a // b if b else -1
        s = self.store
        ta, tb = self._int(a), self._int(b)
        return self._fold_int(s.ite(s.eq(tb, s.int_(0)), s.int_(-1), s.idiv(ta, tb)))

    monkeypatch.setattr(FastAlgebra, "_int_trunc_div", floor_div)
    assert "(own terms)" in _must_fail(xla, "int_div_rem")


def test_mutation_numeric_int_div_by_zero(xla, monkeypatch) -> None:
    orig = NumericAlgebra.div

    def wrong(self, a, b, kind):
        out = orig(self, a, b, kind)
        return np.where(b == 0, 0, out) if kind.value == "int" else out

    monkeypatch.setattr(NumericAlgebra, "div", wrong)
    assert "numeric output" in _must_fail(xla, "int_div_rem")


def test_mutation_numeric_round_even_is_afz(xla, monkeypatch) -> None:
    monkeypatch.setattr(NumericAlgebra, "round_even", lambda self, a: NumericAlgebra.round_afz(self, a))
    assert "numeric output" in _must_fail(xla, "rounding")


def test_mutation_gather_no_clamp(xla, monkeypatch) -> None:
    # Both algebras share the shape rules: an unclamped gather start must be caught.
    from tv_mlir.semantics import shape as shape_mod

    monkeypatch.setattr(shape_mod, "_clamped_candidates", lambda alg, s, hi: alg.positions(s, max(hi - 1, 0), clamp=True))
    assert "numeric output" in _must_fail(xla, "gather_general")


def test_totalorder_signed_zeros_numeric(xla) -> None:
    # TOTALORDER puts -0 below +0. Only the numeric algebra (replay, fingerprints) sees
    # signed zeros; the symbolic model treats zero as unsigned, so this is numeric only.
    text = M("(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xi1>, tensor<4xi1>)", """
    %0 = stablehlo.compare LT, %a, %b, TOTALORDER : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
    %1 = stablehlo.compare EQ, %a, %b, TOTALORDER : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
    return %0, %1 : tensor<4xi1>, tensor<4xi1>
    """)
    check_against_xla(xla, text, [f32([-0.0, 0.0, -0.0, 1.0]), f32([0.0, -0.0, -0.0, -0.0])], symbolic=False)
