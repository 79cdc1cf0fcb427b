"""Lowers small JAX functions to StableHLO for tests/test_ops_xla.py: the gather, scatter,
sort, reduce and control-flow forms jax really emits. Run from the repository root:

    JAX_PLATFORMS=cpu .venv/bin/python testdata/ops/gen_ops.py

Writes testdata/ops/<name>.mlir (no debug locations), byte-identical on rerun."""
from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax
import jax.numpy as jnp
from jax import lax

OUT = Path(__file__).resolve().parent

f32, i32, bf16 = jnp.float32, jnp.int32, jnp.bfloat16


def S(shape, dtype=f32):
    return jax.ShapeDtypeStruct(shape, dtype)


def _fori(a, x):
    return lax.fori_loop(0, 5, lambda i, c: c * a + i.astype(f32), x)


def _cond(p, x):
    return lax.cond(p, lambda: x + 1.0, lambda: x * 2.0)


def _cond_data(x):
    # Data-dependent predicate: branch on the sign of the sum.
    return lax.cond(jnp.sum(x) > 0, lambda: jnp.sqrt(jnp.abs(x)), lambda: -x)


def _switch(i, x):
    return lax.switch(i, [lambda: x - 1.0, lambda: x * x, lambda: jnp.maximum(x, 0.0)])


def _softmax(x):
    return jax.nn.softmax(x, axis=-1)


CASES = {
    # name: (function, argument specs)
    "take_fill": (lambda x, i: jnp.take(x, i, axis=0), [S((5, 3)), S((6,), i32)]),
    "take_clip_axis1": (lambda x, i: jnp.take(x, i, axis=1, mode="clip"), [S((3, 4)), S((5,), i32)]),
    "getitem_array": (lambda x, i: x[i], [S((5, 3)), S((6,), i32)]),
    "take_along_axis": (lambda x, i: jnp.take_along_axis(x, i, axis=1), [S((4, 3)), S((4, 2), i32)]),
    "at_set": (lambda x, i, u: x.at[i].set(u), [S((5, 3)), S((4,), i32), S((4, 3))]),
    "at_add": (lambda x, i, u: x.at[i].add(u), [S((5, 3)), S((6,), i32), S((6, 3))]),
    "at_add_2d": (lambda x, i, j, u: x.at[i, j].add(u), [S((4, 3)), S((5,), i32), S((5,), i32), S((5,))]),
    "at_max_int": (lambda x, i, u: x.at[i].max(u), [S((6,), i32), S((5,), i32), S((5,), i32)]),
    "argmax": (lambda x: jnp.argmax(x, axis=1), [S((4, 5))]),
    "argmin_axis0": (lambda x: jnp.argmin(x, axis=0), [S((5, 3))]),
    "argsort": (lambda x: jnp.argsort(x, axis=-1), [S((3, 6))]),
    "sort_desc": (lambda x: jnp.sort(x, axis=0, descending=True), [S((5, 2))]),
    "top_k": (lambda x: lax.top_k(x, 3), [S((3, 6))]),
    "fori_loop": (_fori, [S(()), S((3,))]),
    "cond_pred": (_cond, [S((), jnp.bool_), S((2, 3))]),
    "cond_data": (_cond_data, [S((2, 3))]),
    "switch": (_switch, [S((), i32), S((4,))]),
    "dynamic_slice": (lambda x, i, j: lax.dynamic_slice(x, (i, j), (2, 3)), [S((4, 5)), S((), i32), S((), i32)]),
    "dynamic_update_slice": (lambda x, u, i, j: lax.dynamic_update_slice(x, u, (i, j)),
                             [S((4, 5)), S((2, 3)), S((), i32), S((), i32)]),
    "erf_tan": (lambda x: jax.scipy.special.erf(x) + jnp.tan(x), [S((2, 4))]),
    "softmax": (_softmax, [S((3, 4))]),
    "int_floor_divide": (lambda a, b: (a // b, a % b), [S((8,), i32), S((8,), i32)]),
    "bf16_matmul": (lambda a, b: jnp.matmul(a, b, preferred_element_type=f32), [S((2, 3), bf16), S((3, 4), bf16)]),
    "round_clip": (lambda x: (jnp.round(x), jnp.clip(x, -1.5, 2.0)), [S((8,))]),
    # 0/0 is a negative NaN on x86: jax's sort comparator and argmax must handle it.
    "argsort_nan": (lambda x, y: jnp.argsort(x / y, axis=-1), [S((2, 6)), S((2, 6))]),
    "argmax_nan": (lambda x, y: jnp.argmax(x / y, axis=1), [S((3, 4)), S((3, 4))]),
    # vmap gives gathers/scatters with operand batching dims.
    "vmap_take": (jax.vmap(lambda x, i: x[i]), [S((3, 5)), S((3, 4), i32)]),
    "vmap_at_add": (jax.vmap(lambda x, i, u: x.at[i].add(u)), [S((3, 5)), S((3, 4), i32), S((3, 4))]),
}


def write(cases: dict, out: Path) -> None:
    """Each case's jitted lowering as `<name>.mlir` in `out` (also used by ops_more)."""
    for name, (fn, specs) in cases.items():
        text = jax.jit(fn).lower(*specs).as_text()
        (out / f"{name}.mlir").write_text(text)
    print(f"wrote {len(cases)} modules to {out}")


def main() -> int:
    write(CASES, OUT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
