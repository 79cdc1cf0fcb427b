"""Generate testdata/bug_patterns/: public sharding bug patterns, written fresh in jax.

Run from the repository root:

    .venv/bin/python testdata/gen_bug_patterns.py

Each pattern is a jax function jitted with in/out shardings on 8 CPU devices. The script
writes, through ``tv_mlir.jax.export_pair`` (form="partitioned": XLA's per-device module
right after SPMD partitioning), ``<name>.ref.mlir`` (the single-device reference) and
``<name>.partitioned.mlir``; then a hand-made mutation ``<name>.bug.partitioned.mlir`` of the
partitioned text that reproduces the public bug's mechanism:

- shift: ``a.at[:-1].set(a[1:])`` on an array sharded along the shifted dim (the pattern of
  jax issue 18434). XLA exchanges the one-row halo with a collective_permute from the right
  neighbour; the bug reverses its source_target_pairs (the halo comes from the wrong side).
- conv: a strided ``conv_general_dilated`` with the image height sharded (jax 16894). The
  bug shifts the per-shard window start: the local conv's padding is moved by one row,
  i.e. the window is offset by the shard's start.
- matmul_out: ``x @ w`` with the contracting dim sharded and the result's out_shardings
  replicated vs row-sharded (tt-xla 902: results depended on out_shardings). The bug
  reduces the partial sums over the wrong shards (wrong replica groups in the all_reduce).
- fft: a real FFT round trip along the sharded dim (the shape of jax 16909's sharded FFT).
  XLA's CPU partitioner all-gathers the FFT dim, runs the FFT replicated, then each device
  slices its rows of the inverse's result by an offset table; the bug (`wrong_slice`) swaps
  two entries of that table, so two devices keep each other's part of the transform (the
  wrong values of a sharded FFT, from the wrong shard of its result). fft_big is the same
  at (64, 256): the FFT dim stays pinned (shrink: "reads positions"), the batch shrinks.
  Verified through tv_mlir/passes/complex.py (complex values as real pairs, the FFT as DFT
  matrices with `cosine` twiddles).

Each mutated module must be `not-equivalent` to the reference with a counterexample that
the verifier replays on XLA (tests/test_bug_patterns.py); the mutation helpers raise when
their pattern does not occur exactly once, so a changed XLA partitioner output shows here.
Sizes are small: the larger shift and conv pin every dimension today (scatter and
convolution read positions; the one-row halo slice/concatenate pins its width).
"""
from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
os.environ["JAX_PLATFORMS"] = "cpu"

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
jax.config.update("jax_hlo_source_file_canonicalization_regex", r"^.*/(?=testdata/)")

from tv_mlir import jax as tj  # noqa: E402

OUT = HERE / "bug_patterns"
F32 = jnp.float32
MESH = jax.make_mesh((2, 4), ("dp", "sp"), axis_types=(jax.sharding.AxisType.Auto,) * 2)


def S(*spec: Any) -> NamedSharding:
    return NamedSharding(MESH, P(*spec))


def shift(a):
    return a.at[:-1].set(a[1:])


def conv(x, w):
    return lax.conv_general_dilated(x, w, (2, 1), ((0, 1), (1, 1)), dimension_numbers=("NHWC", "HWIO", "NHWC"))


def matmul(x, w):
    return x @ w


def fft(x):
    # A real FFT along axis 0 (the sharded one), a filter, and back: real in, real out.
    spectrum = jnp.fft.rfft(x, axis=0)
    return jnp.fft.irfft(spectrum * jnp.arange(spectrum.shape[0], dtype=F32)[:, None], n=x.shape[0], axis=0)


def _sub(pattern: str, repl: Callable[[re.Match[str]], str]) -> Callable[[str], str]:
    """A mutation: replace the one match of `pattern` (it must occur exactly once)."""
    def mutate(text: str) -> str:
        new, n = re.subn(pattern, repl, text)
        if n != 1:
            raise SystemExit(f"mutation pattern {pattern!r} matched {n} times")
        return new
    return mutate


def _reverse_pairs(m: re.Match[str]) -> str:
    """source_target_pairs with every pair reversed: the halo comes from the other neighbour."""
    pairs = re.findall(r"\[(\d+), (\d+)\]", m.group(1))
    return "source_target_pairs = dense<[" + ", ".join(f"[{t}, {s}]" for s, t in pairs) + "]>"


# Each bug: (pattern's name, mutated file's suffix, mutation of the partitioned text).
REVERSE_HALO = _sub(r"source_target_pairs = dense<(\[\[[^>]*\]\])>", _reverse_pairs)
# The local strided conv's window grid one row early on every shard: padding (0, 0) of the
# 5-row haloed shard becomes (1, 0), the same output height, windows offset from the shard's
# start.
CONV_WINDOW_OFFSET = _sub(r"stride = \[2, 1\], pad = \[\[0, 0\], ", lambda m: "stride = [2, 1], pad = [[1, 0], ")
# The partial sums of the sharded contraction added over the 2-way dp axis instead of the
# 4-way sp axis that splits the contraction.
WRONG_GROUPS = _sub(r'axes = \[#stablehlo.axis_ref<name = "axis_1">\]',
                    lambda m: 'axes = [#stablehlo.axis_ref<name = "axis_2">]')
# The row-sharded result: each device keeps the rows of its mirror shard (offset table reversed).
WRONG_ROWS = _sub(r"dense<\[0, 2, 4, 6\]> : tensor<4xi32>", lambda m: "dense<[6, 4, 2, 0]> : tensor<4xi32>")
# The FFT's inverse sliced by the wrong rows on two devices (offset table entries swapped).
FFT_WRONG_SLICE = _sub(r"dense<\[0, 2, 4, 6\]> : tensor<4xi32>", lambda m: "dense<[0, 2, 6, 4]> : tensor<4xi32>")
FFT_WRONG_SLICE_BIG = _sub(r"dense<\[0, 16, 32, 48\]> : tensor<4xi32>",
                           lambda m: "dense<[0, 16, 48, 32]> : tensor<4xi32>")
WRONG_ROWS_BIG = _sub(r"dense<\[0, 64, 128, 192\]> : tensor<4xi32>",
                      lambda m: "dense<[192, 128, 64, 0]> : tensor<4xi32>")


# The realistic sizes (issue 15): one-line edits of XLA's own partitioned modules.
SHIFT_BIG_WRONG_END = _sub(r"slice %arg0 \[0:1, 0:1024\]", lambda m: "slice %arg0 [1023:1024, 0:1024]")
CONV_BIG_WRONG_END = _sub(r"slice %arg0 \[0:8, 0:1, 0:64, 0:64\]", lambda m: "slice %arg0 [0:8, 127:128, 0:64, 0:64]")


@dataclass
class Pattern:
    name: str
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    in_shardings: Any
    out_shardings: Any
    bugs: dict[str, Callable[[str], str]]


PATTERNS = [
    Pattern("shift", shift, (jax.ShapeDtypeStruct((16, 4), F32),), (S("sp", None),), S("sp", None),
            {"reversed_halo": REVERSE_HALO}),
    Pattern("conv", conv, (jax.ShapeDtypeStruct((2, 16, 4, 2), F32), jax.ShapeDtypeStruct((3, 3, 2, 2), F32)),
            (S(None, "sp"), S()), S(None, "sp"),
            {"reversed_halo": REVERSE_HALO, "window_offset": CONV_WINDOW_OFFSET}),
    Pattern("matmul_replicated", matmul, (jax.ShapeDtypeStruct((8, 16), F32), jax.ShapeDtypeStruct((16, 8), F32)),
            (S(None, "sp"), S("sp", None)), S(),
            {"wrong_groups": WRONG_GROUPS}),
    Pattern("matmul_rows", matmul, (jax.ShapeDtypeStruct((8, 16), F32), jax.ShapeDtypeStruct((16, 8), F32)),
            (S(None, "sp"), S("sp", None)), S("sp", None),
            {"wrong_rows": WRONG_ROWS}),
    # The same at a size the verifier shrinks (the contraction and free dims are shrinkable).
    Pattern("matmul_rows_big", matmul, (jax.ShapeDtypeStruct((256, 512), F32), jax.ShapeDtypeStruct((512, 128), F32)),
            (S(None, "sp"), S("sp", None)), S("sp", None), {"wrong_rows": WRONG_ROWS_BIG}),
    # Issue 15's realistic sizes: shrunk (scatter and convolution rules, offset tables) and
    # verified in seconds; the halo from the wrong neighbour or the wrong end of it, and the
    # strided window a row off, confirmed on XLA at these sizes.
    Pattern("shift_big", shift, (jax.ShapeDtypeStruct((4096, 1024), F32),), (S("sp", None),), S("sp", None),
            {"reversed_halo": REVERSE_HALO, "wrong_end": SHIFT_BIG_WRONG_END}),
    Pattern("conv_big", conv, (jax.ShapeDtypeStruct((8, 512, 64, 64), F32), jax.ShapeDtypeStruct((3, 3, 64, 64), F32)),
            (S(None, "sp"), S()), S(None, "sp"),
            {"reversed_halo": REVERSE_HALO, "window_offset": CONV_WINDOW_OFFSET, "wrong_end": CONV_BIG_WRONG_END}),
    Pattern("fft", fft, (jax.ShapeDtypeStruct((8, 4), F32),), (S("sp", None),), S("sp", None),
            {"wrong_slice": FFT_WRONG_SLICE}),
    Pattern("fft_big", fft, (jax.ShapeDtypeStruct((64, 256), F32),), (S("sp", None),), S("sp", None),
            {"wrong_slice": FFT_WRONG_SLICE_BIG}),
]


# --- Adversarial pairs of the shrink rules these patterns need (docs/shrinking.md,
# "Scatter and convolution"): single-device programs `<name>.{ref,ok,bug}.mlir`, each bug
# hidden at the shrunk sizes when its rule's bound is switched off.

def _conv1d(x, w, pad):
    return lax.conv_general_dilated(x, w, (1,), (pad,), dimension_numbers=("NWC", "WIO", "NWC"))


def _neighbours(x):
    """x[t - 1] * x[t + 1] of the channel sums (zero padded): 0 at both ends, so a term that
    exists only where a position has a neighbour on each side."""
    xs = jnp.sum(x, axis=-1, keepdims=True)
    left = jnp.array([1.0, 0.0, 0.0], F32).reshape(3, 1, 1)
    right = jnp.array([0.0, 0.0, 1.0], F32).reshape(3, 1, 1)
    return _conv1d(xs, left, (1, 1)) * _conv1d(xs, right, (1, 1))


def conv_interior_ref(x, w):
    return _conv1d(x, w, (1, 1))


def conv_interior_ok(x, w):
    # the same padding written as a pad, then a conv without padding
    return _conv1d(jnp.pad(x, ((0, 0), (1, 1), (0, 0))), w, (0, 0))


def conv_interior_bug(x, w):
    # a term at interior positions only: no position of a class shrunk to 2 or less has
    # both neighbours, so the convolution's zones (CONV_ZONES) are what keep it visible
    return _conv1d(x, w, (1, 1)) + 0.1 * _neighbours(x)


ROW = 5


def scatter_row_ref(a, v):
    return a.at[ROW].set(v)


def scatter_row_ok(a, v):
    rows = lax.broadcasted_iota(jnp.int32, a.shape, 0)
    return jnp.where(rows == ROW, v[None, :], a)


def scatter_row_bug(a, v):
    # the row written one position further: below 7 rows both writes fall off the end,
    # where a scatter skips them, so the scatter's zone (SCATTER_ZONES) keeps the rows
    return a.at[ROW + 1].set(v)


@dataclass
class RulePair:
    name: str
    ref: Callable[..., Any]
    ok: Callable[..., Any]
    bug: Callable[..., Any]
    args: tuple[Any, ...]


RULE_PAIRS = [
    RulePair("conv_interior", conv_interior_ref, conv_interior_ok, conv_interior_bug,
             (jax.ShapeDtypeStruct((2, 64, 8), F32), jax.ShapeDtypeStruct((3, 8, 8), F32))),
    RulePair("scatter_row", scatter_row_ref, scatter_row_ok, scatter_row_bug,
             (jax.ShapeDtypeStruct((64, 8), F32), jax.ShapeDtypeStruct((8,), F32))),
]


def _check_on_xla(p: RulePair) -> None:
    """The ground truth at the original sizes: ok equals ref, bug differs."""
    import numpy as np
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(a.shape).astype(np.float32) for a in p.args]
    ref, ok, bug = (np.asarray(jax.jit(f)(*args)) for f in (p.ref, p.ok, p.bug))
    if not np.allclose(ref, ok, atol=1e-4) or np.allclose(ref, bug, atol=1e-4):
        raise SystemExit(f"{p.name}: the twins do not behave as described on XLA")


def main() -> None:
    OUT.mkdir(exist_ok=True)
    for rp in RULE_PAIRS:
        _check_on_xla(rp)
        for kind, fn in (("ref", rp.ref), ("ok", rp.ok), ("bug", rp.bug)):
            text = jax.jit(fn, keep_unused=True).lower(*rp.args).as_text(debug_info=True)
            (OUT / f"{rp.name}.{kind}.mlir").write_text(text)
        print(rp.name, "ref, ok, bug")
    for p in PATTERNS:
        ref, part = tj.export_pair(p.fn, *p.args, in_shardings=p.in_shardings, out_shardings=p.out_shardings,
                                   directory=OUT, name=p.name)
        text = part.read_text()
        for bug, mutate in p.bugs.items():
            (OUT / f"{p.name}.{bug}.partitioned.mlir").write_text(mutate(text))
        print(p.name, ", ".join(p.bugs) or "(no mutation)")


if __name__ == "__main__":
    main()
