"""The soundness net of tests/test_ops_xla.py for the ops of issue 15: chlo's special
functions and next_after, bit counting and bitcast_convert, windows (reduce_window,
select_and_scatter) and convolution. The same harness: each case runs on XLA, on the
numeric algebra and on both symbolic algebras (evaluated at the same inputs, uninterpreted
functions with their numeric values), and all must agree; mutation tests show that a
wrong rule is caught. `test_ops_xla.test_every_table_op_is_covered` counts these cases."""
from __future__ import annotations

import numpy as np
import pytest
from test_ops_xla import Case, Inputs, M, bf16, f32, ints, nice, rng_for, unif

from conftest import check_against_xla
from tv_mlir.algebra import NumericAlgebra, SymbolicAlgebra
from tv_mlir.algebra import fast as fast_mod
from tv_mlir.algebra import numeric as numeric_mod

CASES: list[Case] = []


def case(name: str, text: str, inputs: Inputs, **kw) -> None:
    CASES.append(Case(name, text, inputs, **kw))


# ---------------------------------------------------------------------------
# chlo special functions: f(a) on finite inputs across the poles and domain edges, and f(a / c)
# on the +-inf / NaN that x/0 makes (the uninterpreted functions' IEEE classes).

_SPECIAL_UNARY = {
    # op: (lo, hi, edge values)
    "erfc": (-4, 10, (0.0, 0.5, -1.0, 9.5, 12.0)),
    "erf_inv": (-0.999, 0.999, (0.0, 1.0, -1.0, 1.5, -2.0, 0.9999)),
    # Poles at 0, -1, -2 (+inf), negative non-integers, large arguments.
    "lgamma": (-6, 30, (0.0, -1.0, -2.0, -2.5, 1.0, 2.0, 0.5, 1e-3)),
    # Poles (XLA: NaN), zeros of neither sign problem, small and large arguments.
    "digamma": (-6, 30, (0.0, -1.0, -3.0, -2.5, 1.0, 1e-3, 0.25, 100.0)),
}


def _special_case(op: str, lo: float, hi: float, edges) -> None:
    sig = "(%a: tensor<12xf32>, %c: tensor<12xf32>) -> (tensor<12xf32>, tensor<12xf32>)"
    body = f"""
    %d = stablehlo.divide %a, %c : tensor<12xf32>
    %0 = chlo.{op} %a : tensor<12xf32> -> tensor<12xf32>
    %1 = chlo.{op} %d : tensor<12xf32> -> tensor<12xf32>
    return %0, %1 : tensor<12xf32>, tensor<12xf32>
    """
    case(f"special_{op}", M(sig, body),
         lambda r: [np.concatenate([f32([0, 3, -3]), unif(r, (9,), lo, hi, edges=edges)]), f32([0, 0, 0] + [1] * 9)],
         rtol=2e-5, atol=1e-5)


for _op, (_lo, _hi, _edges) in _SPECIAL_UNARY.items():
    _special_case(_op, _lo, _hi, _edges)

_BINARY_SIG = "(%a: tensor<16xf32>, %b: tensor<16xf32>, %c: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>)"


def _binary_body(op: str) -> str:
    return f"""
    %d = stablehlo.divide %b, %c : tensor<16xf32>
    %0 = chlo.{op} %a, %b : tensor<16xf32>, tensor<16xf32> -> tensor<16xf32>
    %1 = chlo.{op} %a, %d : tensor<16xf32>, tensor<16xf32> -> tensor<16xf32>
    return %0, %1 : tensor<16xf32>, tensor<16xf32>
    """


# polygamma(n, x): n = 0 is digamma; positive integers; a fractional and a negative n (NaN);
# poles at x = 0, -1, -3 (inf for odd n, NaN for even n).
case("special_polygamma", M(_BINARY_SIG, _binary_body("polygamma")),
     lambda r: [f32([0, 1, 2, 3, 0.5, -1, 1, 2, 4, 0, 1, 2, 3, 1, 2, 0]),
                f32([1, 2, 0.5, 3.5, 1, 1, 0, -1, 2, -2.5, -0.5, 10, 0.1, -3, 30, 7.25]),
                f32([0, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 0, 1, 1])], rtol=2e-5, atol=1e-5)

# zeta(s, q): q at poles 0, -1, -2 with even, odd, fractional s and s = 1; s < 1 (NaN);
# negative fractional q. s stays away from 1, where XLA's f32 zeta loses digits.
case("special_zeta", M(_BINARY_SIG, _binary_body("zeta")),
     lambda r: [f32([2, 3, 1, 0.5, 4, 2, 2.5, 10, 2, 3, 3, 1.5, 2, 5, 2, 1]),
                f32([1, 2, 1, 1, 0.5, -1, 3, 1, 0, 0, -0.5, -2, 30, 0.25, 7.5, -1]),
                f32([1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 0, 1, 1, 1])], rtol=2e-5, atol=1e-5)

# next_after(x, y): both directions, through zero (the smallest subnormal), equal operands,
# NaN and infinite targets, and the neighbours of the largest float.
case("special_next_after", M(_BINARY_SIG, _binary_body("next_after")),
     lambda r: [f32([1, 1, -1, -1, 0, 0, 2.5, 3, 0, 5, -7, 3.4028234663852886e38, 1e-3, -0.5, 100, 0]),
                f32([2, 0, 0, -2, 1, -1, 2.5, 0, 0, 1, 1, 1, -1, 3, -1, 1]),
                f32([1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1, 1])], rtol=0, atol=0)

case("special_next_after_bf16", M(
    "(%a: tensor<6xbf16>, %b: tensor<6xbf16>) -> tensor<6xbf16>", """
    %0 = chlo.next_after %a, %b : tensor<6xbf16>, tensor<6xbf16> -> tensor<6xbf16>
    return %0 : tensor<6xbf16>
    """), lambda r: [f32([1, 1, -1, 0, 2.5, 3]), f32([2, 0, 0, -1, 2.5, 4])], rtol=0, atol=0)

# gelu without the tanh approximation, as jax lowers it: x/2 * erfc(-x/sqrt 2).
case("special_gelu_exact", M(
    "(%x: tensor<3x4xf32>) -> tensor<3x4xf32>", """
    %h = stablehlo.constant dense<5.000000e-01> : tensor<3x4xf32>
    %0 = stablehlo.multiply %h, %x : tensor<3x4xf32>
    %1 = stablehlo.negate %x : tensor<3x4xf32>
    %s = stablehlo.constant dense<0.707106769> : tensor<3x4xf32>
    %2 = stablehlo.multiply %1, %s : tensor<3x4xf32>
    %3 = chlo.erfc %2 : tensor<3x4xf32> -> tensor<3x4xf32>
    %4 = stablehlo.multiply %0, %3 : tensor<3x4xf32>
    return %4 : tensor<3x4xf32>
    """), lambda r: [nice(r, (3, 4), lim=4)])


# ---------------------------------------------------------------------------
# popcnt, count_leading_zeros, bitcast_convert

I32_MIN, I32_MAX = -(2**31), 2**31 - 1
I64_MIN, I64_MAX = -(2**63), 2**63 - 1

case("popcnt_clz", M(
    "(%a: tensor<12xi32>, %b: tensor<8xui8>, %c: tensor<8xi8>, %d: tensor<6xi64>, %e: tensor<6xui32>) -> (tensor<12xi32>, tensor<12xi32>, tensor<8xui8>, tensor<8xui8>, tensor<8xi8>, tensor<8xi8>, tensor<6xi64>, tensor<6xi64>, tensor<6xui32>, tensor<6xui32>)", """
    %0 = stablehlo.popcnt %a : tensor<12xi32>
    %1 = stablehlo.count_leading_zeros %a : tensor<12xi32>
    %2 = stablehlo.popcnt %b : tensor<8xui8>
    %3 = stablehlo.count_leading_zeros %b : tensor<8xui8>
    %4 = stablehlo.popcnt %c : tensor<8xi8>
    %5 = stablehlo.count_leading_zeros %c : tensor<8xi8>
    %6 = stablehlo.popcnt %d : tensor<6xi64>
    %7 = stablehlo.count_leading_zeros %d : tensor<6xi64>
    %8 = stablehlo.popcnt %e : tensor<6xui32>
    %9 = stablehlo.count_leading_zeros %e : tensor<6xui32>
    return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9 : tensor<12xi32>, tensor<12xi32>, tensor<8xui8>, tensor<8xui8>, tensor<8xi8>, tensor<8xi8>, tensor<6xi64>, tensor<6xi64>, tensor<6xui32>, tensor<6xui32>
    """),
    # Zero, all ones (-1), the sign bit alone, the largest value, powers of two, random.
    lambda r: [ints(r, (12,), -100000, 100000, edges=(0, -1, I32_MIN, I32_MAX, 1, 2**30, -2, 255)),
               np.array([0, 255, 128, 1, 127, 7, 64, 200]), np.array([0, -1, -128, 127, 1, -7, 64, -100]),
               np.array([0, -1, I64_MIN, I64_MAX, 2**40 + 5, -(2**33)]), np.array([0, 2**32 - 1, 2**31, 1, 2**31 - 1, 12345])])

_BITCAST_SIG = ("(%f: tensor<8xf32>, %i: tensor<8xi32>, %u: tensor<3x4xui8>, %h: tensor<4x2xi16>, %b: tensor<6xbf16>, %g: tensor<6xf16>) -> "
                "(tensor<8xi32>, tensor<8xui32>, tensor<8x4xi8>, tensor<8xf32>, tensor<3xi32>, tensor<4xf32>, tensor<8x2xi16>, tensor<6xi16>, tensor<6xui16>, tensor<6xf16>, tensor<6x2xui8>, tensor<3xf32>)")

case("bitcast_convert", M(_BITCAST_SIG, """
    %0 = stablehlo.bitcast_convert %f : (tensor<8xf32>) -> tensor<8xi32>
    %1 = stablehlo.bitcast_convert %f : (tensor<8xf32>) -> tensor<8xui32>
    %2 = stablehlo.bitcast_convert %f : (tensor<8xf32>) -> tensor<8x4xi8>
    %3 = stablehlo.bitcast_convert %i : (tensor<8xi32>) -> tensor<8xf32>
    %4 = stablehlo.bitcast_convert %u : (tensor<3x4xui8>) -> tensor<3xi32>
    %5 = stablehlo.bitcast_convert %h : (tensor<4x2xi16>) -> tensor<4xf32>
    %6 = stablehlo.bitcast_convert %i : (tensor<8xi32>) -> tensor<8x2xi16>
    %7 = stablehlo.bitcast_convert %b : (tensor<6xbf16>) -> tensor<6xi16>
    %8 = stablehlo.bitcast_convert %g : (tensor<6xf16>) -> tensor<6xui16>
    %9 = stablehlo.bitcast_convert %b : (tensor<6xbf16>) -> tensor<6xf16>
    %10 = stablehlo.bitcast_convert %g : (tensor<6xf16>) -> tensor<6x2xui8>
    %bf = stablehlo.slice %b [0:6] : (tensor<6xbf16>) -> tensor<6xbf16>
    %b2 = stablehlo.reshape %bf : (tensor<6xbf16>) -> tensor<3x2xbf16>
    %11 = stablehlo.bitcast_convert %b2 : (tensor<3x2xbf16>) -> tensor<3xf32>
    return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11 : tensor<8xi32>, tensor<8xui32>, tensor<8x4xi8>, tensor<8xf32>, tensor<3xi32>, tensor<4xf32>, tensor<8x2xi16>, tensor<6xi16>, tensor<6xui16>, tensor<6xf16>, tensor<6x2xui8>, tensor<3xf32>
    """),
    # Negative floats (sign bit set: negative i32, large ui32, bytes past 127); integers whose
    # bits are +-inf, a NaN and a subnormal as f32; byte and half-word orders.
    lambda r: [f32([1, -1, 0.5, -2.75, 3.4e38, 1e-30, 0, 12345.678]),
               np.array([0x7F800000, -0x800000, 0x7FC00000, 1, 0x3F800000, -0x40800000, I32_MIN, I32_MAX]),
               np.array([[0, 0, 128, 63], [255, 255, 255, 255], [1, 2, 3, 128]]),
               np.array([[0, 16256], [-32768, -16512], [1, 0], [-1, 32767]]),
               bf16([1, -1.5, 0.0078125, -3e38, 0, 2]), f32([1, -1.5, 0.0078125, -65504, 0, 2.5])])


# ---------------------------------------------------------------------------
# Tests


@pytest.mark.parametrize("c", CASES, ids=[c.name for c in CASES])
def test_op_against_xla(xla, c: Case) -> None:
    inputs = c.inputs(rng_for(c.name))
    check_against_xla(xla, c.text, inputs, rtol=c.rtol, atol=c.atol, xla_text=c.xla_text)
    if c.raw:
        check_against_xla(xla, c.text, inputs, rtol=c.rtol, atol=c.atol, pipeline="none", xla_text=c.xla_text)


def _case(name: str) -> Case:
    return next(c for c in CASES if c.name == name)


def _must_fail(xla, name: str, match: str = r"(numeric|symbolic) output \d") -> str:
    c = _case(name)
    with pytest.raises(AssertionError, match=match) as info:
        check_against_xla(xla, c.text, c.inputs(rng_for(c.name)), rtol=c.rtol, atol=c.atol, xla_text=c.xla_text)
    return str(info.value)


# -- mutations: special functions


def test_mutation_numeric_erfc_is_erf(xla, monkeypatch) -> None:
    monkeypatch.setitem(numeric_mod.FUNCS, "erfc", numeric_mod.FUNCS["erf"])
    assert "numeric output" in _must_fail(xla, "special_erfc")


def test_mutation_numeric_digamma_scipy_poles(xla, monkeypatch) -> None:
    # scipy's digamma is -inf at 0 where XLA's is NaN: the pole convention is checked.
    import scipy.special as sc

    monkeypatch.setitem(numeric_mod.FUNCS, "digamma", sc.psi)
    assert "numeric output" in _must_fail(xla, "special_digamma")


def test_mutation_symbolic_zeta_arguments_swapped(xla, monkeypatch) -> None:
    # The rule applies the function to its operands in order: zeta(q, s) is caught.
    orig = SymbolicAlgebra.uf
    monkeypatch.setattr(SymbolicAlgebra, "uf",
                        lambda self, name, args: orig(self, name, args[::-1] if name == "zeta" else args))
    assert "symbolic output" in _must_fail(xla, "special_zeta")


def test_mutation_own_terms_lgamma_claimed_finite(xla, monkeypatch) -> None:
    # lgamma has poles: an algebra that called it finite everywhere would be unsound.
    # The evaluator meets lgamma's value at a pole (0) where the class said finite.
    monkeypatch.setattr(fast_mod, "FINITE_UFS", fast_mod.FINITE_UFS | {"lgamma"})
    assert "lgamma" in _must_fail(xla, "special_lgamma", match="no value at this point")


def test_mutation_next_after_type_ignored(xla, monkeypatch) -> None:
    # The neighbour depends on the type: f64 steps on bf16 values are caught.
    monkeypatch.setitem(numeric_mod.FUNCS, "next_after_bf16", numeric_mod.FUNCS["next_after_f64"])
    assert "numeric output" in _must_fail(xla, "special_next_after_bf16")


def test_numeric_algebra_has_every_special_function() -> None:
    from tv_mlir.algebra.base import NON_OP_UNINTERPRETED

    missing = [n for n in NON_OP_UNINTERPRETED if n not in numeric_mod.FUNCS]
    assert not missing
    NumericAlgebra().uf("erfc", [np.zeros(2)])


# -- bit ops


def test_bitcast_f64_and_signed_zero_numeric(xla) -> None:
    # The numeric algebra reinterprets bits exactly at every width, signed zeros and NaN
    # payload bits included (the symbolic model has neither, so this is numeric only; f64's
    # bits do not fit the float64 the tests' evaluator would read them from).
    text = M("(%a: tensor<5xf64>, %b: tensor<5xi64>, %c: tensor<4xf32>) -> (tensor<5xi64>, tensor<5xf64>, tensor<5x2xui32>, tensor<4xi32>)", """
    %0 = stablehlo.bitcast_convert %a : (tensor<5xf64>) -> tensor<5xi64>
    %1 = stablehlo.bitcast_convert %b : (tensor<5xi64>) -> tensor<5xf64>
    %2 = stablehlo.bitcast_convert %a : (tensor<5xf64>) -> tensor<5x2xui32>
    %3 = stablehlo.bitcast_convert %c : (tensor<4xf32>) -> tensor<4xi32>
    return %0, %1, %2, %3 : tensor<5xi64>, tensor<5xf64>, tensor<5x2xui32>, tensor<4xi32>
    """)
    check_against_xla(xla, text, [np.array([1.0, -0.0, 1e300, -2.5, 5e-324]),
                                  np.array([0x7FF0000000000000, -1, 1, I64_MIN, 0x3FF0000000000000]),
                                  f32([-0.0, 0.0, 1.0, -1.0])], rtol=0, atol=0, symbolic=False)


def test_mutation_popcnt_ignores_sign(xla, monkeypatch) -> None:
    # Counting the bits of |x| instead of the two's complement pattern: caught in every algebra.
    from tv_mlir.semantics import TABLE

    orig = TABLE["stablehlo.popcnt"]

    def wrong(ctx, op, args):
        return orig(ctx, op, [ctx.alg.abs(args[0], ctx.kind(0))])

    monkeypatch.setitem(TABLE, "stablehlo.popcnt", wrong)
    assert "output" in _must_fail(xla, "popcnt_clz")


def test_mutation_clz_counts_every_power(xla, monkeypatch) -> None:
    # clz counts the powers of two above x; a rule that counts all of them is caught.
    from tv_mlir.semantics import bits as bits_mod

    monkeypatch.setattr(bits_mod, "_indicator", lambda alg, cond, x: bits_mod._full(alg, x, 1))
    assert "output" in _must_fail(xla, "popcnt_clz")


def test_mutation_bitcast_big_endian_symbolic(xla, monkeypatch) -> None:
    # The pieces of a narrowing bitcast come lowest bits first (XLA's CPU is little-endian).
    from tv_mlir.semantics import bits as bits_mod

    orig = bits_mod._low_bits
    monkeypatch.setattr(bits_mod, "_low_bits", lambda alg, x, k, n: orig(alg, x, (24 - k) if n == 8 else k, n))
    assert "symbolic output" in _must_fail(xla, "bitcast_convert")


def test_mutation_bitcast_numeric_big_endian(xla, monkeypatch) -> None:
    from tv_mlir.semantics import bits as bits_mod

    orig = bits_mod._np_dtype
    monkeypatch.setattr(bits_mod, "_np_dtype", lambda t: orig(t).newbyteorder(">"))
    assert "numeric output" in _must_fail(xla, "bitcast_convert")
