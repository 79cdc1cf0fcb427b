"""Lowers small JAX functions to StableHLO for tests/test_ops_xla_more.py: the forms jax
really emits for the ops of issue 15 (exact gelu, jax.scipy.special, bit counts and
bitcasts, pooling and its gradient, convolutions and their gradients, and the CPU LAPACK
custom calls of jnp.linalg: cholesky and triangular solves, which have semantics, and LU,
QR, eigh and SVD, which end `unknown`). Run from the
repository root:

    JAX_PLATFORMS=cpu .venv/bin/python testdata/ops_more/gen_ops_more.py

Writes testdata/ops_more/<name>.mlir (no debug locations), byte-identical on rerun."""
from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax
import jax.numpy as jnp
import jax.scipy.linalg as sl
import jax.scipy.special as sp
from jax import lax

OUT = Path(__file__).resolve().parent

f32, i32 = jnp.float32, jnp.int32


def S(shape, dtype=f32):
    return jax.ShapeDtypeStruct(shape, dtype)


def _maxpool(x):
    # NHWC 2x2 max pool, stride 2, "SAME" padding (flax.linen.max_pool's lowering).
    return lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "SAME")


def _avgpool(x):
    return lax.reduce_window(x, 0.0, lax.add, (1, 3, 3, 1), (1, 1, 1, 1), "SAME") / 9.0


def _conv(x, w):
    return lax.conv_general_dilated(x, w, (2, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))


CASES = {
    "gelu_exact": (lambda x: jax.nn.gelu(x, approximate=False), [S((3, 4))]),
    "special": (lambda x, n: (sp.erfinv(x / 4.0), sp.gammaln(x), sp.digamma(x), sp.polygamma(n, x),
                              sp.zeta(x + 2.0, x + 3.0), jnp.nextafter(x, x + 1.0)), [S((8,)), S((8,), i32)]),
    "bits": (lambda i, x: (lax.population_count(i), lax.clz(i), lax.bitcast_convert_type(x, i32),
                           lax.bitcast_convert_type(x, jnp.uint8)), [S((8,), i32), S((4,))]),
    "maxpool": (_maxpool, [S((1, 5, 4, 2))]),
    "maxpool_grad": (jax.grad(lambda x: jnp.sum(_maxpool(x) * jnp.arange(12.0).reshape(1, 3, 2, 2))),
                     [S((1, 5, 4, 2))]),
    "avgpool": (_avgpool, [S((1, 4, 4, 2))]),
    "conv": (_conv, [S((2, 5, 4, 3)), S((3, 2, 3, 2))]),
    "conv_grad": (jax.grad(lambda x, w: jnp.sum(_conv(x, w) ** 2), argnums=(0, 1)), [S((1, 4, 3, 2)), S((2, 2, 2, 2))]),
    "depthwise_conv": (lambda x, w: lax.conv_general_dilated(x, w, (1, 1), ((1, 1), (1, 1)), rhs_dilation=(2, 1),
                                                              feature_group_count=2,
                                                              dimension_numbers=("NCHW", "OIHW", "NCHW")),
                       [S((1, 2, 5, 5)), S((4, 1, 2, 3))]),
    # LAPACK on CPU: potrf (jax masks a failed factor to NaN, keeps the lower triangle) and
    # trsm, alone and as cho_solve's two solves; the gradient of a cholesky-based loss.
    "linalg_cholesky": (lambda a, b: (jnp.linalg.cholesky(a), sl.cho_solve((jnp.linalg.cholesky(a), True), b),
                                      sl.solve_triangular(a, b, lower=False, trans="T", unit_diagonal=True)),
                        [S((2, 3, 3)), S((2, 3, 2))]),
    "linalg_lu": (lambda a, b: jnp.linalg.solve(a, b), [S((3, 3)), S((3, 2))]),
    "linalg_qr": (lambda a: jnp.linalg.qr(a, mode="r"), [S((3, 3))]),
    "linalg_orgqr": (lambda a, taus: lax.linalg.householder_product(a, taus), [S((3, 3)), S((3,))]),
    "linalg_eigh": (lambda a: jnp.linalg.eigh(a)[0], [S((3, 3))]),
    "linalg_svd": (lambda a: jnp.linalg.svd(a, compute_uv=False), [S((3, 3))]),
}


def main() -> int:
    sys.path.insert(0, str(OUT.parent / "ops"))
    from gen_ops import write  # the writer of the first op generator

    write(CASES, OUT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
