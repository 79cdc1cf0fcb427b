# ruff: noqa: E501  (StableHLO lines are as long as their types)
"""Pairs whose IEEE classes depend on the inputs (docs/classes.md): CLIP's loss without an
epsilon in small, and twins whose classes look alike but differ at one point. Written as
StableHLO text (no JAX needed); tests/test_class_facts.py verifies them.

    .venv/bin/python testdata/gen_classes.py     # writes testdata/classes/*.mlir

Every pair is a reference `NAME.ref.mlir` and `NAME.other.mlir` of one signature:
x, y: tensor<2x3xf32> (rows to normalise), s: tensor<f32> (a logit scale)."""
from __future__ import annotations

import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent / "classes"

SIG = "%x: tensor<2x3xf32>, %y: tensor<2x3xf32>, %s: tensor<f32>"


def _units(root: str, combine: str, r: str) -> str:
    """%u and %t: the rows of x and y as `combine(v, root(sum v^2))` (root's value %<r>x,
    %<r>y), and %p = exp(s) broadcast (positive, finite)."""
    rows = "".join(f"""
    %{v}{v} = stablehlo.multiply %{v}, %{v} : tensor<2x3xf32>
    %s{v} = stablehlo.reduce(%{v}{v} init: %z) applies stablehlo.add across dimensions = [1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
    %{r}{v} = stablehlo.{root} %s{v} : tensor<2xf32>
    %{r}{v}b = stablehlo.broadcast_in_dim %{r}{v}, dims = [0] : (tensor<2xf32>) -> tensor<2x3xf32>
    %{out} = stablehlo.{combine} %{v}, %{r}{v}b : tensor<2x3xf32>""" for v, out in (("x", "u"), ("y", "t")))
    return f"""
    %z = stablehlo.constant dense<0.0> : tensor<f32>{rows}
    %p = stablehlo.exponential %s : tensor<f32>
    %pb = stablehlo.broadcast_in_dim %p, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
"""


# Unit rows without an epsilon: %u = x * rsqrt(sum x^2), %t = y * rsqrt(sum y^2) (NaN at a
# zero row: 0 * rsqrt(0) = 0 * inf).
UNITS = _units("rsqrt", "multiply", "r")

# The same rows as x / sqrt(sum x^2): NaN at a zero row by 0 / 0, which a float64 replay
# shows as XLA does (rsqrt(0) = inf is a pole, where the replay stops: witness/overflow.py),
# so a difference there can be confirmed.
UNITS_DIV = _units("sqrt", "divide", "n")

# The other side of the pairs whose reference adds x * (a value 0 over the reals but NaN
# at some input): x * 0 + p, which is never NaN.
X_TIMES_ZERO = """
    %zz = stablehlo.broadcast_in_dim %z, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %xz = stablehlo.multiply %x, %zz : tensor<2x3xf32>
    %o2 = stablehlo.add %xz, %pb : tensor<2x3xf32>
    return %o2 : tensor<2x3xf32>
"""

GUARD = """
    %zb = stablehlo.broadcast_in_dim %z, dims = [] : (tensor<f32>) -> tensor<2xf32>
    %c = stablehlo.compare EQ, %sx, %zb, FLOAT : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>
    %cb = stablehlo.broadcast_in_dim %c, dims = [0] : (tensor<2xi1>) -> tensor<2x3xi1>
    %zz = stablehlo.broadcast_in_dim %z, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %g = stablehlo.select %cb, %zz, %u : tensor<2x3xi1>, tensor<2x3xf32>
    %out = stablehlo.add %g, %pb : tensor<2x3xf32>
    return %out : tensor<2x3xf32>
"""

U_PLUS_P = """
    %out = stablehlo.add %u, %pb : tensor<2x3xf32>
    return %out : tensor<2x3xf32>
"""

# The row log-softmax of the 2x2 logits %l, as jax.nn.log_softmax writes it (max, shift,
# log of the sum of exponentials), returned.
LOG_SOFTMAX = """
    %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %m = stablehlo.reduce(%l init: %ninf) applies stablehlo.maximum across dimensions = [1] : (tensor<2x2xf32>, tensor<f32>) -> tensor<2xf32>
    %mb = stablehlo.broadcast_in_dim %m, dims = [0] : (tensor<2xf32>) -> tensor<2x2xf32>
    %d = stablehlo.subtract %l, %mb : tensor<2x2xf32>
    %e = stablehlo.exponential %d : tensor<2x2xf32>
    %se = stablehlo.reduce(%e init: %z) applies stablehlo.add across dimensions = [1] : (tensor<2x2xf32>, tensor<f32>) -> tensor<2xf32>
    %lse = stablehlo.log %se : tensor<2xf32>
    %lseb = stablehlo.broadcast_in_dim %lse, dims = [0] : (tensor<2xf32>) -> tensor<2x2xf32>
    %out = stablehlo.subtract %d, %lseb : tensor<2x2xf32>
    return %out : tensor<2x2xf32>
"""

REF_LOGITS = """
    %pu = stablehlo.multiply %pb, %u : tensor<2x3xf32>
    %l = stablehlo.dot_general %pu, %t, contracting_dims = [1] x [1] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x2xf32>
"""

# name -> (reference body, other body, what the pair is)
PAIRS: dict[str, tuple[str, str, str]] = {
    # CLIP's shape: the reference scales the images, the other program the texts (as the
    # partitioned CLIP loss scales the all-gathered texts): equal, and the classes agree
    # only because exp(s) > 0 and a class is one of 0..3.
    "clip_small": (UNITS + REF_LOGITS + LOG_SOFTMAX, UNITS + """
    %pt = stablehlo.multiply %pb, %t : tensor<2x3xf32>
    %l = stablehlo.dot_general %u, %pt, contracting_dims = [1] x [1] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x2xf32>
""" + LOG_SOFTMAX, "equal"),
    # The other program guards the zero row: 0 where sum x^2 == 0, the reference's NaN
    # there. Equal wherever sum x^2 > 0: a proof that read the square's cut point as
    # positive (it is only >= 0) would merge them.
    "zero_row_guard": (UNITS + U_PLUS_P, UNITS + GUARD, "differ"),
    # The same with x / sqrt(sum x^2): the reference's 0 / 0 at a zero row.
    "zero_row_guard_div": (UNITS_DIV + U_PLUS_P, UNITS_DIV + GUARD, "differ"),
    # rsqrt(s) against rsqrt(s') where s' = s but at one element: row 0 of the other
    # program sums x^2 over its first two columns only. Equal where x[0, 2] == 0.
    "rsqrt_other_sum": (UNITS + """
    %out = stablehlo.add %u, %pb : tensor<2x3xf32>
    return %out : tensor<2x3xf32>
""", UNITS.replace("%u = stablehlo.multiply %x, %rxb", "%u0 = stablehlo.multiply %x, %rxb") + """
    %xs = stablehlo.slice %xx [0:2, 0:2] : (tensor<2x3xf32>) -> tensor<2x2xf32>
    %s2 = stablehlo.reduce(%xs init: %z) applies stablehlo.add across dimensions = [1] : (tensor<2x2xf32>, tensor<f32>) -> tensor<2xf32>
    %r2 = stablehlo.rsqrt %s2 : tensor<2xf32>
    %r2b = stablehlo.broadcast_in_dim %r2, dims = [0] : (tensor<2xf32>) -> tensor<2x3xf32>
    %u2 = stablehlo.multiply %x, %r2b : tensor<2x3xf32>
    %row = stablehlo.iota dim = 0 : tensor<2x3xi32>
    %zero = stablehlo.constant dense<0> : tensor<2x3xi32>
    %first = stablehlo.compare EQ, %row, %zero, SIGNED : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi1>
    %u = stablehlo.select %first, %u2, %u0 : tensor<2x3xi1>, tensor<2x3xf32>
    %out = stablehlo.add %u, %pb : tensor<2x3xf32>
    return %out : tensor<2x3xf32>
""", "differ"),
    # A NaN from inf - inf in one program only: rsqrt(sum y^2) - rsqrt(sum y^2) is 0 over
    # the reals, NaN where the sum is 0; the other program adds nothing.
    "inf_minus_inf": (UNITS + """
    %d = stablehlo.subtract %ryb, %ryb : tensor<2x3xf32>
    %xd = stablehlo.multiply %x, %d : tensor<2x3xf32>
    %out = stablehlo.add %xd, %pb : tensor<2x3xf32>
    return %out : tensor<2x3xf32>
""", UNITS + X_TIMES_ZERO, "differ"),
    # The other program replaces a NaN unit element by 0 (u != u tests its class): equal
    # wherever the class is not NaN; a proof that took a class for one of 0..2 would merge.
    "nan_guard_div": (UNITS_DIV + U_PLUS_P, UNITS_DIV + """
    %c = stablehlo.compare NE, %u, %u, FLOAT : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
    %zz = stablehlo.broadcast_in_dim %z, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %g = stablehlo.select %c, %zz, %u : tensor<2x3xi1>, tensor<2x3xf32>
    %out = stablehlo.add %g, %pb : tensor<2x3xf32>
    return %out : tensor<2x3xf32>
""", "differ"),
    # The same with 0 / 0: y / sqrt(sum y^2) - itself is NaN at a zero row of y.
    "nan_minus_nan_div": (UNITS_DIV + """
    %d = stablehlo.subtract %t, %t : tensor<2x3xf32>
    %xd = stablehlo.multiply %x, %d : tensor<2x3xf32>
    %out = stablehlo.add %xd, %pb : tensor<2x3xf32>
    return %out : tensor<2x3xf32>
""", UNITS_DIV + X_TIMES_ZERO, "differ"),
    # A NaN from 0 * inf in one program only: (x - x) * (1 / y^2) is 0 over the reals and
    # NaN where y = 0 (an element, not a row); the other program drops the factor.
    "zero_times_inf": (UNITS_DIV + """
    %one = stablehlo.constant dense<1.0> : tensor<2x3xf32>
    %w = stablehlo.divide %one, %yy : tensor<2x3xf32>
    %d = stablehlo.subtract %x, %x : tensor<2x3xf32>
    %dw = stablehlo.multiply %d, %w : tensor<2x3xf32>
    %out = stablehlo.add %dw, %pb : tensor<2x3xf32>
    return %out : tensor<2x3xf32>
""", UNITS_DIV + """
    %d = stablehlo.subtract %x, %x : tensor<2x3xf32>
    %out = stablehlo.add %d, %pb : tensor<2x3xf32>
    return %out : tensor<2x3xf32>
""", "differ"),
}


def module(name: str, body: str, ret: str) -> str:
    return (f"// Written by testdata/gen_classes.py.\nmodule @{name} {{\n"
            f"  func.func public @main({SIG}) -> {ret} {{{body}  }}\n}}\n")


def result_type(body: str) -> str:
    return body.strip().splitlines()[-1].split(":")[-1].strip()


def main() -> int:
    OUT.mkdir(exist_ok=True)
    for name, (ref, other, _) in PAIRS.items():
        for side, body in (("ref", ref), ("other", other)):
            (OUT / f"{name}.{side}.mlir").write_text(module(f"{name}_{side}", body, result_type(body)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
