"""Generate the bundled single-device StableHLO test pairs in testdata/pairs/.

Run from the repository root:

    JAX_PLATFORMS=cpu .venv/bin/python testdata/gen_pairs.py

For every pair (a, b) this script

1. checks the expected verdict numerically in JAX (fixed seeds):
   - "equivalent": a and b agree to tolerance on several random inputs and on
     the pair's stated special inputs;
   - "not-equivalent": a and b differ on at least one random or stated input;
   - "unknown": no numeric requirement unless ``agree`` is set (softmax_shift is
     equal as a real function, so it must agree numerically);
   and raises (non-zero exit) when an expectation does not hold;
2. lowers both sides with ``jax.jit(f, keep_unused=True).lower(*specs)`` and
   writes ``as_text(debug_info=True)`` to ``pairs/<name>.a.mlir`` and
   ``pairs/<name>.b.mlir``;
3. writes ``pairs/manifest.json``: ``{name: {"expect": ..., "why": ...}}``.

``keep_unused=True`` matters: plain ``jax.jit`` drops unused arguments, which
would give the two sides different input signatures (e.g. reverse_twice's b).
Source locations are canonicalized to ``testdata/gen_pairs.py`` so the output
does not depend on where the checkout lives. Output is deterministic.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

# Make loc(...) file names independent of the checkout location.
jax.config.update("jax_hlo_source_file_canonicalization_regex", r"^.*/(?=testdata/)")

HERE = Path(__file__).resolve().parent
OUT = HERE / "pairs"

F32 = jnp.float32
I32 = jnp.int32
BOOL = jnp.bool_

N_RANDOM = 6
SEED = 20240601


# --------------------------------------------------------------------------
# Input specs and random generators
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Arg:
    """One input: shape, dtype, and how to draw random values for it."""

    shape: tuple[int, ...]
    dtype: Any
    lo: int = -10  # integer range [lo, hi) for i32 inputs
    hi: int = 10
    scale: float = 1.0  # std-dev for f32 inputs

    def spec(self) -> jax.ShapeDtypeStruct:
        return jax.ShapeDtypeStruct(self.shape, self.dtype)

    def draw(self, rng: np.random.Generator) -> np.ndarray:
        if self.dtype == F32:
            return (rng.standard_normal(self.shape) * self.scale).astype(np.float32)
        if self.dtype == I32:
            return rng.integers(self.lo, self.hi, size=self.shape).astype(np.int32)
        if self.dtype == BOOL:
            return np.asarray(rng.random(self.shape) < 0.5)
        raise TypeError(self.dtype)


def f32(*shape: int, scale: float = 1.0) -> Arg:
    return Arg(tuple(shape), F32, scale=scale)


def i32(*shape: int, lo: int = -10, hi: int = 10) -> Arg:
    return Arg(tuple(shape), I32, lo=lo, hi=hi)


def boolean(*shape: int) -> Arg:
    return Arg(tuple(shape), BOOL)


@dataclass
class Pair:
    name: str
    a: Callable[..., Any]
    b: Callable[..., Any]
    args: list[Arg]
    expect: str  # "equivalent" | "not-equivalent" | "unknown"
    why: str
    # extra concrete inputs checked in addition to the random ones
    special: list[tuple[Any, ...]] = field(default_factory=list)
    rtol: float = 1e-4
    atol: float = 1e-4
    # for "unknown": require numeric agreement (the real functions are equal)
    agree: bool = False
    # for "not-equivalent": the stated input(s) must show the difference
    must_differ_on_special: bool = False


# --------------------------------------------------------------------------
# Pair definitions
# --------------------------------------------------------------------------


def _relu_where(x):
    return jnp.where(x > 0, x, 0.0)


def _branch_t(x):
    return x * x + 1.0


def _branch_f(x):
    return x - 2.0 * x.T


def _argmax_first(x):
    m = jnp.max(x, axis=-1, keepdims=True)
    iota = lax.broadcasted_iota(I32, x.shape, x.ndim - 1)
    return jnp.min(jnp.where(x == m, iota, x.shape[-1]), axis=-1).astype(I32)


def _softmax_shift(x):
    e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
    return e / jnp.sum(e, axis=-1, keepdims=True)


def _softmax_noshift(x):
    e = jnp.exp(x)
    return e / jnp.sum(e, axis=-1, keepdims=True)


def _ln_var_moments(x):
    eps = 1e-5
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(x * x, axis=-1, keepdims=True) - mean * mean
    return (x - mean) * lax.rsqrt(var + eps)


def _ln_var_centered(x):
    eps = 1e-5
    mean = jnp.mean(x, axis=-1, keepdims=True)
    c = x - mean
    var = jnp.mean(c * c, axis=-1, keepdims=True)
    return c * lax.rsqrt(var + eps)


def _ties(rng_seed: int, shape: tuple[int, ...]) -> np.ndarray:
    """Float input with many ties (small integers)."""
    return np.random.default_rng(rng_seed).integers(0, 3, size=shape).astype(np.float32)


def pairs() -> list[Pair]:
    P: list[Pair] = []

    # ---------------- equivalent ----------------
    P.append(Pair(
        "matmul_assoc",
        lambda A, B, C: (A @ B) @ C,
        lambda A, B, C: A @ (B @ C),
        [f32(4, 4), f32(4, 4), f32(4, 4)],
        "equivalent", "matrix product is associative over the reals",
    ))
    P.append(Pair(
        "dot_transpose",
        lambda A, B: (A @ B).T,
        lambda A, B: B.T @ A.T,
        [f32(4, 4), f32(4, 4)],
        "equivalent", "(AB)^T = B^T A^T",
    ))
    P.append(Pair(
        "variance_rsqrt",
        _ln_var_moments,
        _ln_var_centered,
        [f32(4, 8)],
        "equivalent",
        "E[x^2]-E[x]^2 = E[(x-E[x])^2] as polynomials, so rsqrt (uninterpreted) gets equal arguments",
        rtol=1e-3, atol=1e-3,
    ))
    P.append(Pair(
        "relu_forms",
        jax.nn.relu,
        _relu_where,
        [f32(4, 4)],
        "equivalent", "relu(x) = max(x,0) = where(x>0, x, 0)",
        special=[(np.array([[0.0, -0.0, 1.0, -1.0]] * 4, np.float32),)],
    ))
    P.append(Pair(
        "sort_neg",
        lambda x: jnp.sort(x, axis=-1),
        lambda x: -jnp.sort(-x, axis=-1)[..., ::-1],
        [f32(4, 8)],
        "equivalent", "ascending sort = negated descending sort of the negation (values, ties included)",
        special=[(_ties(1, (4, 8)),)],
    ))
    P.append(Pair(
        "fori_pow",
        lambda x: lax.fori_loop(0, 4, lambda i, acc: acc * 2.0, x),
        lambda x: x * 16.0,
        [f32(4, 4)],
        "equivalent", "four loop iterations of acc*2 = x*16 (static trip count while loop)",
    ))
    P.append(Pair(
        "cond_select",
        lambda p, x: lax.cond(p, _branch_t, _branch_f, x),
        lambda p, x: jnp.where(p, _branch_t(x), _branch_f(x)),
        [boolean(), f32(4, 4)],
        "equivalent", "cond on a scalar predicate = select between both computed branches",
        special=[(np.bool_(True), np.ones((4, 4), np.float32)),
                 (np.bool_(False), np.ones((4, 4), np.float32))],
    ))
    P.append(Pair(
        "topk_sort",
        lambda x: lax.top_k(x, 2)[0],
        lambda x: jnp.sort(x, axis=-1)[..., ::-1][..., :2],
        [f32(4, 8)],
        "equivalent", "top-2 values = first two of the descending sort (values only, ties included)",
        special=[(_ties(2, (4, 8)),)],
    ))
    P.append(Pair(
        "int_floordiv",
        lambda i: (i * 4) // 3,
        lambda i: i + i // 3,
        [i32(8, lo=-1000, hi=1000)],
        "not-equivalent", "floor(4i/3) = i + floor(i/3) for mathematical integers, but i32 is two's "
        "complement: 4i wraps for |i| >= 2**29",
        special=[(np.array([2**29, -2**29 - 1, 2**30, -2**31, 0, 1, -1, 7], dtype=np.int32),)],
        must_differ_on_special=True, rtol=0, atol=0,
    ))
    P.append(Pair(
        "scatter_add_twice",
        lambda x, idx: x.at[idx].add(1.0).at[idx].add(1.0),
        lambda x, idx: x.at[idx].add(2.0),
        [f32(8, 4), i32(3, lo=-10, hi=10)],
        "equivalent",
        "two scatter-adds of 1 = one scatter-add of 2 "
        "(same index normalization, duplicates accumulate, OOB dropped on both)",
        special=[(np.zeros((8, 4), np.float32), np.array([1, 1, 3], np.int32)),
                 (np.zeros((8, 4), np.float32), np.array([-1, 9, -9], np.int32))],
    ))
    P.append(Pair(
        "gather_take",
        lambda x, i: jnp.take(x, i, axis=0, mode="clip"),
        lambda x, i: x[jnp.clip(i, 0, x.shape[0] - 1)],
        [f32(8, 4), i32(5, lo=-12, hi=12)],
        "equivalent",
        "take(mode=clip) clamps to [0,n-1]; x[clip(i,0,n-1)] indexes the same rows (its negative-index wrap is dead)",
        special=[(np.arange(32, dtype=np.float32).reshape(8, 4), np.array([-1, -9, 0, 7, 8], np.int32))],
    ))
    P.append(Pair(
        "argmax_forms",
        lambda x: jnp.argmax(x, axis=-1).astype(I32),
        _argmax_first,
        [f32(4, 8)],
        "equivalent",
        "argmax = smallest index attaining the max (first occurrence on ties; NaN does not exist over the reals)",
        special=[(_ties(3, (4, 8)),), (np.zeros((4, 8), np.float32),)],
        rtol=0, atol=0,
    ))
    P.append(Pair(
        "dynamic_slice_forms",
        lambda x, s: lax.dynamic_slice(x, (s, 0), (3, 4)),
        lambda x, s: lax.dynamic_slice(x.T, (0, s), (4, 3)).T,
        [f32(8, 4), i32(lo=-12, hi=12)],
        "equivalent",
        "dynamic_slice along rows = transposed dynamic_slice along columns, transposed back (same clamping)",
        special=[(np.arange(32, dtype=np.float32).reshape(8, 4), np.int32(s))
                 for s in (-12, -1, 0, 5, 6, 100)],
    ))
    P.append(Pair(
        "pad_concat",
        lambda x: jnp.pad(x, ((1, 0), (0, 0))),
        lambda x: jnp.concatenate([jnp.zeros((1, x.shape[1]), x.dtype), x], axis=0),
        [f32(4, 4)],
        "equivalent", "zero padding one row at the top = concatenating a zero row",
    ))
    P.append(Pair(
        "reverse_twice",
        lambda x: jnp.flip(jnp.flip(x, 0), 0),
        lambda x: x,
        [f32(4, 4)],
        "equivalent", "reversing an axis twice is the identity (b returns its argument unchanged)",
    ))

    # ---------------- not-equivalent ----------------
    P.append(Pair(
        "matmul_wrong_transpose",
        lambda A, B: A @ B,
        lambda A, B: A @ B.T,
        [f32(4, 4), f32(4, 4)],
        "not-equivalent", "B vs B^T: differs for non-symmetric B",
    ))
    P.append(Pair(
        "center_wrong",
        lambda x: x - jnp.mean(x, axis=-1, keepdims=True),
        lambda x: x - 0.5 * jnp.mean(x, axis=-1, keepdims=True),
        [f32(4, 8)],
        "not-equivalent", "subtracts half the mean: differs whenever a row mean is nonzero",
    ))
    y0 = np.ones((4, 4), np.float32)
    y0[0, 0] = 0.0
    P.append(Pair(
        "div_mul",
        lambda x, y: x / y * y,
        lambda x, y: x,
        [f32(4, 4), f32(4, 4)],
        "not-equivalent",
        "x/y*y = x only where y != 0; at y == 0 (e.g. x=1, y=0) a is NaN / undefined*0, b is x",
        special=[(np.ones((4, 4), np.float32), y0)],
        must_differ_on_special=True,
    ))
    P.append(Pair(
        "sum_wrong_axis",
        lambda x: x.sum(0),
        lambda x: x.sum(1),
        [f32(4, 4)],
        "not-equivalent", "column sums vs row sums of a square matrix: differ for non-symmetric x",
    ))
    P.append(Pair(
        "relu_vs_abs",
        jax.nn.relu,
        jnp.abs,
        [f32(4, 4)],
        "not-equivalent", "relu(x) = 0 but abs(x) = -x for negative x",
    ))
    P.append(Pair(
        "slice_off_by_one",
        lambda x: x[1:5],
        lambda x: x[0:4],
        [f32(8, 4)],
        "not-equivalent", "rows 1..4 vs rows 0..3",
    ))
    P.append(Pair(
        "int_truncdiv",
        lambda i: i // 3,
        lambda i: lax.div(i, jnp.int32(3)),
        [i32(8, lo=-100, hi=100)],
        "not-equivalent",
        "floor division vs truncating division differ for negative non-multiples (e.g. -1//3 = -1, div(-1,3) = 0)",
        special=[(np.array([-1, -2, -3, -4, 1, 2, 3, 4], np.int32),)],
        must_differ_on_special=True,
        rtol=0, atol=0,
    ))
    P.append(Pair(
        "scatter_set_vs_add",
        lambda x, idx: x.at[idx].set(1.0),
        lambda x, idx: x.at[idx].add(1.0),
        [f32(8, 4), i32(3, lo=0, hi=8)],
        "not-equivalent", "set to 1 vs add 1: differ wherever x[idx] != 0 (or idx repeats)",
    ))
    P.append(Pair(
        "gather_clip_vs_wrap",
        lambda x, i: jnp.take(x, i, axis=0, mode="clip"),
        lambda x, i: x[i],
        [f32(8, 4), i32(5, lo=-12, hi=12)],
        "not-equivalent",
        "take(mode=clip) maps -1 to row 0, x[i] wraps -1 to row n-1",
        special=[(np.arange(32, dtype=np.float32).reshape(8, 4), np.array([-1, 0, 1, 2, 3], np.int32))],
        must_differ_on_special=True,
    ))

    # ---------------- unknown ----------------
    P.append(Pair(
        "softmax_shift",
        _softmax_shift,
        _softmax_noshift,
        [f32(4, 8)],
        "unknown",
        "equal as real functions (exp(x-m) = exp(x)/exp(m)) but not provable with exp uninterpreted; "
        "must never be not-equivalent",
        agree=True,
        rtol=1e-5, atol=1e-6,
    ))
    return P


# --------------------------------------------------------------------------
# Numeric checks
# --------------------------------------------------------------------------


def _leaves(out: Any) -> list[np.ndarray]:
    return [np.asarray(v) for v in jax.tree.leaves(out)]


def _agree(p: Pair, inputs: tuple[Any, ...]) -> bool:
    ra = _leaves(jax.jit(p.a)(*inputs))
    rb = _leaves(jax.jit(p.b)(*inputs))
    if len(ra) != len(rb):
        return False
    for u, v in zip(ra, rb):
        if u.shape != v.shape or u.dtype != v.dtype:
            raise AssertionError(f"{p.name}: output type mismatch {u.shape}{u.dtype} vs {v.shape}{v.dtype}")
        if u.dtype.kind in "iub":
            if not np.array_equal(u, v):
                return False
        elif not np.allclose(u, v, rtol=p.rtol, atol=p.atol, equal_nan=False):
            return False
    return True


def check(p: Pair, seed: int) -> str:
    rng = np.random.default_rng(seed)
    randoms = [tuple(a.draw(rng) for a in p.args) for _ in range(N_RANDOM)]
    rand_ok = [_agree(p, x) for x in randoms]
    spec_ok = [_agree(p, x) for x in p.special]
    if p.expect == "equivalent" or (p.expect == "unknown" and p.agree):
        if not all(rand_ok) or not all(spec_ok):
            raise AssertionError(
                f"{p.name}: expected numeric agreement; random {rand_ok}, special {spec_ok}")
        return f"agree on {len(randoms)} random + {len(p.special)} special inputs"
    if p.expect == "not-equivalent":
        if p.must_differ_on_special and (not p.special or all(spec_ok)):
            raise AssertionError(f"{p.name}: stated input does not show a difference ({spec_ok})")
        if all(rand_ok) and all(spec_ok):
            raise AssertionError(f"{p.name}: expected a difference, but all inputs agree")
        return (f"differ on {rand_ok.count(False)}/{len(randoms)} random, "
                f"{spec_ok.count(False)}/{len(p.special)} special inputs")
    if p.expect == "unknown":
        return "no numeric requirement"
    raise ValueError(p.expect)


# --------------------------------------------------------------------------
# Export
# --------------------------------------------------------------------------


def lower(f: Callable[..., Any], p: Pair, side: str) -> str:
    # A named wrapper gives readable module names: @jit_<pair>_<side>.
    @functools.wraps(f)  # keeps the argument names for loc("x") debug info
    def wrapped(*xs):
        return f(*xs)

    wrapped.__name__ = wrapped.__qualname__ = f"{p.name}_{side}"
    specs = [a.spec() for a in p.args]
    text = jax.jit(wrapped, keep_unused=True).lower(*specs).as_text(debug_info=True)
    return text if text.endswith("\n") else text + "\n"


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    all_pairs = pairs()
    names = [p.name for p in all_pairs]
    assert len(names) == len(set(names)), "duplicate pair names"
    manifest: dict[str, dict[str, str]] = {}
    for k, p in enumerate(all_pairs):
        msg = check(p, SEED + k)
        ta, tb = lower(p.a, p, "a"), lower(p.b, p, "b")
        sig_a = ta.split("@main(", 1)[1].split(")", 1)[0]
        sig_b = tb.split("@main(", 1)[1].split(")", 1)[0]
        if sig_a != sig_b:
            raise AssertionError(f"{p.name}: input signatures differ:\n  {sig_a}\n  {sig_b}")
        (OUT / f"{p.name}.a.mlir").write_text(ta)
        (OUT / f"{p.name}.b.mlir").write_text(tb)
        manifest[p.name] = {"expect": p.expect, "why": p.why}
        print(f"{p.name:24s} {p.expect:15s} {msg}")
    (OUT / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    print(f"wrote {len(all_pairs)} pairs to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
