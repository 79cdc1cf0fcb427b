"""Fixed-width integers (issue 16): XLA computes two's complement of the type's width, and
so must both algebras. Every integer type runs add/subtract/multiply/negate/abs/divide/
remainder/convert/sum/dot on its edge values (INT_MIN, INT_MAX, -1, 0, 1, INT_MIN / -1,
x / 0) on XLA, on the numeric algebra, and on both symbolic algebras evaluated exactly at
the same inputs; then the verifier is asked about pairs that are equal or differ only
through wrap-around."""
from __future__ import annotations

import numpy as np
import pytest

import tv_mlir
from conftest import numeric_values, prepared, symbolic_values
from tv_mlir.algebra import SymbolicAlgebra, intervals
from tv_mlir.algebra.base import type_range
from tv_mlir.algebra.fast import FastAlgebra
from tv_mlir.algebra.term import TermStore
from tv_mlir.semantics import fixed_width

TYPES = ["i2", "i4", "i8", "i16", "i32", "i64", "ui2", "ui4", "ui8", "ui16", "ui32"]
N = 14


def _range(t: str) -> tuple[int, int]:
    return type_range(int(t.lstrip("ui")), not t.startswith("u"))


def _edges(t: str, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    lo, hi = _range(t)
    a = [lo, hi, lo, hi, lo + 1, hi - 1, 0, 1, hi, lo, 7, hi // 2 + 1]
    b = [1, 1, -1 if lo < 0 else 2, hi, 0, 0, lo, hi, 2, 3, -3 if lo < 0 else 3, hi // 2 + 1]
    extra = N - len(a)
    a += [int(x) for x in rng.integers(lo, hi, extra, endpoint=True, dtype=np.int64)] if t != "ui64" else []
    b += [int(x) for x in rng.integers(lo, hi, extra, endpoint=True, dtype=np.int64)] if t != "ui64" else []
    def fit(v: int) -> int:  # the narrowest types cannot hold 7 or -3
        return lo + (v - lo) % (hi - lo + 1)
    return np.array([fit(v) for v in a], dtype=np.int64), np.array([fit(v) for v in b], dtype=np.int64)


def _module(t: str, other: str) -> str:
    v = f"tensor<{N}x{t}>"
    o = f"tensor<{N}x{other}>"
    half = N // 2
    # abs is for signed types only; an unsigned square wraps instead.
    four = f"stablehlo.abs %a : {v}" if not t.startswith("u") else f"stablehlo.multiply %a, %a : {v}"
    return f"""module @m {{
  func.func public @main(%a: {v}, %b: {v}) -> ({v}, {v}, {v}, {v}, {v}, {v}, {v}, {o}, {v}, tensor<2x{t}>, tensor<{t}>, tensor<{N}xi1>) {{
    %0 = stablehlo.add %a, %b : {v}
    %1 = stablehlo.subtract %a, %b : {v}
    %2 = stablehlo.multiply %a, %b : {v}
    %3 = stablehlo.negate %a : {v}
    %4 = {four}
    %5 = stablehlo.divide %a, %b : {v}
    %6 = stablehlo.remainder %a, %b : {v}
    %7 = stablehlo.convert %a : ({v}) -> {o}
    %c = stablehlo.convert %7 : ({o}) -> {v}
    %8 = stablehlo.add %c, %2 : {v}
    %r = stablehlo.reshape %a : ({v}) -> tensor<2x{half}x{t}>
    %z = stablehlo.constant dense<0> : tensor<{t}>
    %9 = stablehlo.reduce(%r init: %z) applies stablehlo.add across dimensions = [1] : (tensor<2x{half}x{t}>, tensor<{t}>) -> tensor<2x{t}>
    %10 = stablehlo.dot_general %a, %b, contracting_dims = [0] x [0] : ({v}, {v}) -> tensor<{t}>
    %11 = stablehlo.compare LT, %0, %a : ({v}, {v}) -> tensor<{N}xi1>
    return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11 : {v}, {v}, {v}, {v}, {v}, {v}, {v}, {o}, {v}, tensor<2x{t}>, tensor<{t}>, tensor<{N}xi1>
  }}
}}
"""


def _other(t: str) -> str:
    # A narrower type of the other signedness: convert wraps both ways.
    return {"i2": "ui2", "i4": "i2", "i8": "ui8", "i16": "i8", "i32": "ui16", "i64": "i32",
            "ui2": "i2", "ui4": "i2", "ui8": "i4", "ui16": "i8", "ui32": "i16"}[t]


def _same(got: np.ndarray, want: np.ndarray, what: str) -> None:
    g = [int(x) for x in np.asarray(got).reshape(-1)]
    w = [int(x) for x in np.asarray(want).reshape(-1)]
    bad = [(i, x, y) for i, (x, y) in enumerate(zip(g, w)) if x != y]
    assert not bad, f"{what}: (index, got, XLA) {bad[:4]}"


def _check(xla, text: str, inputs: list[np.ndarray]) -> None:
    module = prepared(text)
    want = xla.run(text, inputs)
    for i, (g, w) in enumerate(zip(numeric_values(module, inputs), want)):
        _same(g, w, f"numeric output {i}")
    for alg in (SymbolicAlgebra(), FastAlgebra()):
        for i, (g, w) in enumerate(zip(symbolic_values(module, inputs, alg), want)):
            _same(g, w, f"symbolic output {i} ({type(alg).__name__})")


@pytest.mark.parametrize("t", TYPES)
def test_integer_type_against_xla(xla, t: str) -> None:
    a, b = _edges(t, np.random.default_rng(len(t) * 31 + int(t.lstrip("ui"))))
    _check(xla, _module(t, _other(t)), [a, b])


def test_iota_wraps_like_xla(xla) -> None:
    text = """module @m {
  func.func public @main(%a: tensor<300xi8>) -> tensor<300xi8> {
    %0 = stablehlo.iota dim = 0 : tensor<300xi8>
    %1 = stablehlo.add %0, %a : tensor<300xi8>
    return %1 : tensor<300xi8>
  }
}
"""
    _check(xla, text, [np.arange(300, dtype=np.int64) % 256 - 128])


def test_mutation_no_reduction_is_caught(xla, monkeypatch) -> None:
    # Integers computed as mathematical ones (before issue 16) disagree with XLA.
    monkeypatch.setattr(fixed_width, "reduces", lambda op: False)
    a, b = _edges("i8", np.random.default_rng(0))
    with pytest.raises(AssertionError, match="numeric output"):
        _check(xla, _module("i8", "ui8"), [a, b])


def test_mutation_own_terms_without_wrap_is_caught(xla, monkeypatch) -> None:
    monkeypatch.setattr(FastAlgebra, "wrap", lambda self, arr, t: arr)
    a, b = _edges("i16", np.random.default_rng(1))
    with pytest.raises(AssertionError, match="FastAlgebra"):
        _check(xla, _module("i16", "i8"), [a, b])


def test_mutation_z3_core_without_wrap_is_caught(xla, monkeypatch) -> None:
    monkeypatch.setattr(SymbolicAlgebra, "wrap", lambda self, arr, t: arr)
    a, b = _edges("ui16", np.random.default_rng(2))
    with pytest.raises(AssertionError, match="SymbolicAlgebra"):
        _check(xla, _module("ui16", "i8"), [a, b])


# ---------------------------------------------------------------------------
# The range analysis that keeps index arithmetic unwrapped, and the three forms of a wrap.


def _int_var(s: TermStore, name: str, lo: int, hi: int):
    x = s.var(name, "int")
    s.bounds[x.leaf.id] = (lo, hi)
    return x


def test_interval_of_sums_products_and_selects() -> None:
    s = TermStore()
    x, y = _int_var(s, "x", -3, 5), _int_var(s, "y", 0, 10)
    assert intervals.interval(s.add(x, y)) == (-3, 15)
    assert intervals.interval(s.mul(x, y)) == (-30, 50)
    assert intervals.interval(s.sub(s.mul(x, x), y)) == (-10 - 15, 25)  # x*x as an interval product
    assert intervals.interval(s.ite(s.lt(x, y), x, s.int_(100))) == (-3, 100)
    assert intervals.interval(s.imod(s.mul(x, y), s.int_(7))) == (0, 6)
    z = s.var("z", "int")
    assert intervals.interval(s.add(z, s.int_(1))) == intervals.UNBOUNDED


def test_wrap_forms() -> None:
    s = TermStore()
    i = _int_var(s, "i", 0, 127)
    x = _int_var(s, "x", -128, 127)
    # In range: the term itself (an index plus a small offset stays an index).
    assert intervals.wrap(s.add(i, s.int_(-64)), 8, True) is s.add(i, s.int_(-64))
    # One period at most: a select on the affine overflow condition, in range afterwards.
    w = intervals.wrap(s.add(x, s.int_(1)), 8, True)
    assert w.kind == "poly" and s.atom_of(w).kind == "ite"
    assert intervals.interval(w) == (-128, 127)
    # Products: a Euclidean remainder.
    p = intervals.wrap(s.mul(x, x), 8, True)
    assert any(a.kind == "imod" for a in p.args)
    assert intervals.wrap(s.int_(200), 8, True).const == -56


@pytest.mark.parametrize("value", [-129, -128, 0, 127, 128, 255, 256, 1000, -1000])
def test_wrap_select_form_is_exact(value: int) -> None:
    s = TermStore()
    x = _int_var(s, "x", -256, 255)
    w = intervals.wrap(x, 8, True)
    store_eval = s.substitute(w, {x.leaf.id: s.int_(value)})
    if -256 <= value <= 255:
        assert store_eval.const == (value + 128) % 256 - 128


# ---------------------------------------------------------------------------
# The verifier on pairs that differ only by wrap-around, or are equal only with it.


def _fn(t: str, body: str, args: int = 1, rty: str | None = None) -> str:
    params = ", ".join(f"%a{i}: tensor<{t}>" for i in range(args))
    lines = "\n".join("    " + ln.strip() for ln in body.strip().splitlines())
    return f"func.func @main({params}) -> tensor<{rty or t}> {{\n{lines}\n}}\n"


PAIRS = {
    # x + 1 > x is not always true on i8 (x = 127).
    "succ_greater": ("not-equivalent", _fn("i8", """
        %c = stablehlo.constant dense<1> : tensor<i8>
        %s = stablehlo.add %a0, %c : tensor<i8>
        %r = stablehlo.compare GT, %s, %a0, SIGNED : (tensor<i8>, tensor<i8>) -> tensor<i1>
        return %r : tensor<i1>""", rty="i1"), _fn("i8", """
        %r = stablehlo.constant dense<true> : tensor<i1>
        return %r : tensor<i1>""", rty="i1")),
    # A round trip through a narrower type loses the high bits.
    "narrowing_round_trip": ("not-equivalent", _fn("i32", """
        %c = stablehlo.convert %a0 : (tensor<i32>) -> tensor<i8>
        %r = stablehlo.convert %c : (tensor<i8>) -> tensor<i32>
        return %r : tensor<i32>"""), _fn("i32", "return %a0 : tensor<i32>")),
    # (a * 2) / 2 == a only without overflow.
    "double_halve": ("not-equivalent", _fn("i32", """
        %c = stablehlo.constant dense<2> : tensor<i32>
        %s = stablehlo.multiply %a0, %c : tensor<i32>
        %r = stablehlo.divide %s, %c : tensor<i32>
        return %r : tensor<i32>"""), _fn("i32", "return %a0 : tensor<i32>")),
    # abs(INT_MIN) is INT_MIN (XLA's abs op computes it so, see the edge cases above; its
    # algebraic simplifier nevertheless folds abs(x) >= 0 to true, so only the float64
    # replay confirms this witness).
    "abs_non_negative": ("not-equivalent", _fn("i8", """
        %n = stablehlo.abs %a0 : tensor<i8>
        %z = stablehlo.constant dense<0> : tensor<i8>
        %r = stablehlo.compare GE, %n, %z, SIGNED : (tensor<i8>, tensor<i8>) -> tensor<i1>
        return %r : tensor<i1>""", rty="i1"), _fn("i8", """
        %r = stablehlo.constant dense<true> : tensor<i1>
        return %r : tensor<i1>""", rty="i1")),
    # Wrap-around is a ring: (a + b) - b == a, and a*b + a == a*(b + 1), on every width.
    "ring_add": ("equivalent", _fn("i32", """
        %s = stablehlo.add %a0, %a1 : tensor<i32>
        %r = stablehlo.subtract %s, %a1 : tensor<i32>
        return %r : tensor<i32>""", args=2), _fn("i32", "return %a0 : tensor<i32>", args=2)),
    "ring_mul": ("equivalent", _fn("i8", """
        %s = stablehlo.multiply %a0, %a1 : tensor<i8>
        %t = stablehlo.add %s, %a0 : tensor<i8>
        return %t : tensor<i8>""", args=2), _fn("i8", """
        %c = stablehlo.constant dense<1> : tensor<i8>
        %s = stablehlo.add %a1, %c : tensor<i8>
        %t = stablehlo.multiply %a0, %s : tensor<i8>
        return %t : tensor<i8>""", args=2)),
    # The ring again, wraps at different places and widths: a product of an i8 wrap in i32
    # arithmetic is not reduced modulo 256 (the narrow wrap is kept inside the wide one).
    "narrow_wrap_in_wide_product": ("not-equivalent", _fn("i32", """
        %c = stablehlo.convert %a0 : (tensor<i32>) -> tensor<i8>
        %w = stablehlo.convert %c : (tensor<i8>) -> tensor<i32>
        %r = stablehlo.multiply %w, %a1 : tensor<i32>
        return %r : tensor<i32>""", args=2), _fn("i32", """
        %r = stablehlo.multiply %a0, %a1 : tensor<i32>
        return %r : tensor<i32>""", args=2)),
    # ... and a wide wrap inside a narrow one is: (a * b mod 2^32) mod 2^8 == a * b mod 2^8.
    "wide_wrap_in_narrow": ("equivalent", _fn("i32", """
        %p = stablehlo.multiply %a0, %a1 : tensor<i32>
        %q = stablehlo.add %p, %a0 : tensor<i32>
        %r = stablehlo.convert %q : (tensor<i32>) -> tensor<i8>
        return %r : tensor<i8>""", args=2, rty="i8"), _fn("i32", """
        %x = stablehlo.convert %a0 : (tensor<i32>) -> tensor<i8>
        %y = stablehlo.convert %a1 : (tensor<i32>) -> tensor<i8>
        %c = stablehlo.constant dense<1> : tensor<i8>
        %s = stablehlo.add %y, %c : tensor<i8>
        %r = stablehlo.multiply %x, %s : tensor<i8>
        return %r : tensor<i8>""", args=2, rty="i8")),
    # a * (b + 2) is not a * b + a.
    "ring_mul_off_by_one": ("not-equivalent", _fn("i8", """
        %s = stablehlo.multiply %a0, %a1 : tensor<i8>
        %t = stablehlo.add %s, %a0 : tensor<i8>
        return %t : tensor<i8>""", args=2), _fn("i8", """
        %c = stablehlo.constant dense<2> : tensor<i8>
        %s = stablehlo.add %a1, %c : tensor<i8>
        %t = stablehlo.multiply %a0, %s : tensor<i8>
        return %t : tensor<i8>""", args=2)),
    # INT_MIN / -1 == INT_MIN == -INT_MIN.
    "div_minus_one": ("equivalent", _fn("i32", """
        %c = stablehlo.constant dense<-1> : tensor<i32>
        %r = stablehlo.divide %a0, %c : tensor<i32>
        return %r : tensor<i32>"""), _fn("i32", """
        %r = stablehlo.negate %a0 : tensor<i32>
        return %r : tensor<i32>""")),
    # Unsigned values are below 2**32: x < 0xFFFFFFFF iff x != 0xFFFFFFFF.
    "unsigned_compare": ("equivalent", _fn("ui32", """
        %c = stablehlo.constant dense<4294967295> : tensor<ui32>
        %r = stablehlo.compare LT, %a0, %c, UNSIGNED : (tensor<ui32>, tensor<ui32>) -> tensor<i1>
        return %r : tensor<i1>""", rty="i1"), _fn("ui32", """
        %c = stablehlo.constant dense<4294967295> : tensor<ui32>
        %r = stablehlo.compare NE, %a0, %c, UNSIGNED : (tensor<ui32>, tensor<ui32>) -> tensor<i1>
        return %r : tensor<i1>""", rty="i1")),
    "and_all_ones": ("equivalent", _fn("i8", """
        %c = stablehlo.constant dense<-1> : tensor<i8>
        %r = stablehlo.and %a0, %c : tensor<i8>
        return %r : tensor<i8>"""), _fn("i8", "return %a0 : tensor<i8>")),
    # The spec: unsigned x / 0 has all bits set.
    "unsigned_div_zero": ("equivalent", _fn("ui32", """
        %c = stablehlo.constant dense<0> : tensor<ui32>
        %r = stablehlo.divide %a0, %c : tensor<ui32>
        return %r : tensor<ui32>"""), _fn("ui32", """
        %r = stablehlo.constant dense<4294967295> : tensor<ui32>
        return %r : tensor<ui32>""")),
    # An index minus a shard offset, masked: equal to a plain range check only because
    # the subtraction cannot wrap into the window (the select form of a wrap).
    "offset_window": ("equivalent", _fn("i32", """
        %off = stablehlo.constant dense<48> : tensor<i32>
        %n = stablehlo.constant dense<16> : tensor<i32>
        %z = stablehlo.constant dense<0> : tensor<i32>
        %l = stablehlo.subtract %a0, %off : tensor<i32>
        %p = stablehlo.compare GE, %l, %z, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
        %q = stablehlo.compare LT, %l, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
        %r = stablehlo.and %p, %q : tensor<i1>
        return %r : tensor<i1>""", rty="i1"), _fn("i32", """
        %lo = stablehlo.constant dense<48> : tensor<i32>
        %hi = stablehlo.constant dense<64> : tensor<i32>
        %p = stablehlo.compare GE, %a0, %lo, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
        %q = stablehlo.compare LT, %a0, %hi, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
        %r = stablehlo.and %p, %q : tensor<i1>
        return %r : tensor<i1>""", rty="i1")),
}


# The z3 core gives the products of ring_mul to z3 as nonlinear integer arithmetic with a
# remainder, which it proves in 0.05 s or times out at 60 s from one run to the next (2 of
# 3 runs in one process); the own core closes it by normal form (below).
NONLINEAR_FOR_Z3 = {"ring_mul", "wide_wrap_in_narrow"}
CASES = [(name, core) for name in sorted(PAIRS) for core in ("own", "z3")
         if not (core == "z3" and name in NONLINEAR_FOR_Z3)]


@pytest.mark.parametrize("name", sorted(NONLINEAR_FOR_Z3))
def test_wraps_at_different_places_close_without_the_solver(name: str) -> None:
    """A wrap inside a sum or product that is wrapped again, with a period its own is a
    multiple of, is taken as what it wraps (intervals._unwrapped): both programs then have
    one term, and no nonlinear remainder reaches the solver (whose answer on such queries
    depended on what the process had solved before: a 60 s timeout in the suite)."""
    want, a, b = PAIRS[name]
    v = tv_mlir.verify(a, b)
    assert v.verdict == want == "equivalent", v.reason
    assert v.stats["solver_queries"] == 0


@pytest.mark.parametrize(("name", "core"), CASES)
def test_wraparound_pair_verdict(name: str, core: str) -> None:
    want, a, b = PAIRS[name]
    v = tv_mlir.verify(a, b, core=core)
    assert v.verdict == want, (name, v.reason)
    if want == "not-equivalent":
        assert v.counterexample is not None
        confirmed = {r.backend for r in v.counterexample.replay if r.confirmed}
        assert "numeric" in confirmed
        assert name == "abs_non_negative" or "xla" in confirmed, "the witness is confirmed on XLA"


# ---------------------------------------------------------------------------
# Shifts: by amounts given as an input (symbolic in the symbolic algebras) and as constants,
# including 0, the width minus one, the width, past it and negative ones.

SHIFTS = ("shift_left", "shift_right_logical", "shift_right_arithmetic")


def _shift_module(t: str, consts: list[int] | None) -> str:
    v = f"tensor<{N}x{t}>"
    amount = (f"%n = stablehlo.constant dense<{consts}> : {v}" if consts is not None else "")
    params = f"%a: {v}" + (", %n: " + v if consts is None else "")
    body = "\n".join(f"    %{i} = stablehlo.{s} %a, %n : {v}" for i, s in enumerate(SHIFTS))
    return f"""module @m {{
  func.func public @main({params}) -> ({v}, {v}, {v}) {{
    {amount}
{body}
    return %0, %1, %2 : {v}, {v}, {v}
  }}
}}
"""


def _amounts(t: str) -> list[int]:
    w = int(t.lstrip("ui"))
    lo, hi = _range(t)
    picks = [0, 1, w - 1, w, w + 3, -1, w // 2, 2, 1, 0, w - 2, -w, 3, w - 1]
    return [p if lo <= p <= hi else (w if lo <= w <= hi else hi) for p in picks][:N]


@pytest.mark.parametrize("t", ["i4", "i8", "i32", "i64", "ui8", "ui32"])
def test_shifts_against_xla(xla, t: str) -> None:
    a, _ = _edges(t, np.random.default_rng(5))
    n = _amounts(t)
    if t != "i64":  # a symbolic amount is a choice among w + 1 outcomes: 65 arrays on i64 (7 s)
        _check(xla, _shift_module(t, None), [a, np.array(n, dtype=np.int64)])
    _check(xla, _shift_module(t, n), [a])


def test_mutation_arithmetic_shift_truncating_is_caught(xla, monkeypatch) -> None:
    # An arithmetic right shift rounds toward -inf (-1 >> 1 == -1), not toward zero.
    from tv_mlir.semantics import shifts

    monkeypatch.setattr(shifts, "_floor_div_power",
                        lambda alg, x, k: alg.div(x, alg.full(x.shape, 1 << k, shifts.I), shifts.I))
    a = np.array([-127, -3, -1, -5, 5, 7, -128, 0, -9, -77, 100, -100, 1, -2][:N], dtype=np.int64)
    with pytest.raises(AssertionError, match="output [12]"):  # the logical shift of a signed type uses it too
        _check(xla, _shift_module("i8", _amounts("i8")), [a])
