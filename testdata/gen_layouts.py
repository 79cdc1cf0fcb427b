"""Generate testdata/layouts/: a small XLA-partitioned pair whose program reads one weight
under two layouts in one stage (tests/test_stage_layouts.py).

Run from the repository root:

    .venv/bin/python testdata/gen_layouts.py      # sets its own 8-device XLA flags

`two_layouts`: one SGD-like step of a two-matmul model, `loss = sum(tanh(tanh(x @ w) @ w)^2)`,
`w_new = w - 0.1 * grad * w`, jitted with `w` FSDP+tp sharded (`P("dp", "tp")`) and the
batch over dp on a 2x4 ("dp", "tp") mesh. XLA's partitioned module all-gathers `w` over dp
for the second matmul and reads the sharded argument itself in the backward product and
the update: the staged proof's last stage takes `w` under both layouts, and proves only
when its two copies are one input (stages/extract.py, shared slots).

`two_layouts_bug_swapped_copy`: the same module with the all-gathered copy wrong: its
all-gather's groups list each pair's devices in reverse ([[4, 0], ...]), so every device
holds w's two dp halves swapped. The other copy (the sharded argument) is right; the
verdict must be not-equivalent with a counterexample XLA confirms. The generator checks on
XLA that the unmutated module gives the reference's outputs and the mutant other ones.

`partial_and_sum` (Shardy, a shard_map): `p = x @ w` with the contraction split over tp is
a partial sum; the program all-reduces it (`s`) and later reads both, `psum(s * p)`: one
stage takes the reference's `x @ w` as parts and whole, and proves only when the whole is
the parts' sum (stages/extract.py, `_shared_parts`). `partial_and_sum_bug_dp`: that last
all-reduce over dp instead of tp.

(A copy wrong only where an element of w is 0.3125, which no random run draws, was tried
too: its stage and the whole proof both end at the solver's timeout, 300 s and more.)
"""
from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
os.environ["JAX_PLATFORMS"] = "cpu"

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tv_mlir, run from anywhere
import tv_mlir.jax as tj  # noqa: E402

OUT = ROOT / "testdata" / "layouts"
MESH = jax.make_mesh((2, 4), ("dp", "tp"), axis_types=(jax.sharding.AxisType.Auto,) * 2)


def step(w: jax.Array, x: jax.Array) -> tuple[jax.Array, jax.Array]:
    def loss(w: jax.Array) -> jax.Array:
        h = jnp.tanh(x @ w)
        y = jnp.tanh(h @ w)
        return jnp.sum(y * y)
    value, grad = jax.value_and_grad(loss)(w)
    return w - 0.1 * grad * w, value


def sharding(*spec: str | None) -> NamedSharding:
    return NamedSharding(MESH, P(*spec))


IN_SHARDINGS = (sharding("dp", "tp"), sharding("dp", None))
OUT_SHARDINGS = (sharding("dp", "tp"), sharding())
ARGS = (jax.ShapeDtypeStruct((16, 16), jnp.float32), jax.ShapeDtypeStruct((4, 16), jnp.float32))


def swapped_copy(text: str) -> str:
    """The partitioned text with the all-gather of `w` that lists its groups as integers
    (the copy the second matmul reads) gathering each group in reverse order."""
    groups = "dense<[[0, 4], [1, 5], [2, 6], [3, 7]]>"
    lines = text.splitlines(keepends=True)
    hits = [k for k, line in enumerate(lines) if '"stablehlo.all_gather"(%arg0)' in line and groups in line]
    assert len(hits) == 1, f"expected one all-gather of w over explicit groups, found {len(hits)}"
    lines[hits[0]] = lines[hits[0]].replace(groups, "dense<[[4, 0], [5, 1], [6, 2], [7, 3]]>")
    return "".join(lines)


def check_on_xla(ref_path: Path, good_path: Path, bug_path: Path) -> None:
    """The partitioned module gives the reference's outputs on random inputs, the mutant
    other ones."""
    from tv_mlir.api import prepare
    from tv_mlir.execute.xla import XlaRunner
    from tv_mlir.frontend.classify import check_signatures
    from tv_mlir.options import Options
    from tv_mlir.witness.replay import run_on_xla

    options, runner = Options(), XlaRunner()
    ref = prepare(ref_path, options)
    rng = np.random.default_rng(0)

    def outputs(path: Path, inputs: list[np.ndarray]) -> list[np.ndarray]:
        m = prepare(path, options)
        if path != ref_path:
            check_signatures(ref, m)  # classifies a partitioned module as one device's program
        return [np.asarray(o) for o in run_on_xla(runner, m, inputs)[0]]

    inputs = [rng.normal(size=(16, 16)).astype(np.float32), rng.normal(size=(4, 16)).astype(np.float32)]
    want = outputs(ref_path, inputs)
    for path, differs in ((good_path, False), (bug_path, True)):
        got = outputs(path, inputs)
        gap = max(float(np.max(np.abs(g - r))) for g, r in zip(got, want))
        assert (gap > 1e-3) == differs, f"{path.name}: outputs differ from the reference's by {gap}"


def partial_ref(x: jax.Array, w: jax.Array) -> jax.Array:
    p = x @ w
    a = jnp.tanh(p)
    b = jnp.tanh(a * p)
    return jnp.tanh(b + p * p)


def partial_body(axis: str) -> Callable[[jax.Array, jax.Array], jax.Array]:
    def body(x: jax.Array, w: jax.Array) -> jax.Array:
        p = x @ w  # this device's part of the sum over the tp-split contraction
        s = jax.lax.psum(p, "tp")
        a = jnp.tanh(s)
        c = jnp.tanh(a * s)
        return jnp.tanh(c + jax.lax.psum(s * p, axis))
    return body


def write_partial_pair() -> None:
    """The partial_and_sum pair and its twin (Shardy text), checked numerically."""
    args = (jax.ShapeDtypeStruct((4, 16), jnp.float32), jax.ShapeDtypeStruct((16, 8), jnp.float32))
    x = np.random.default_rng(3).normal(size=(4, 16)).astype(np.float32)
    w = np.random.default_rng(4).normal(size=(16, 8)).astype(np.float32) * 0.3
    want = np.asarray(jax.jit(partial_ref)(x, w))
    (OUT / "partial_and_sum.ref.mlir").write_text(jax.jit(partial_ref).lower(*args).as_text())
    for name, axis, same in (("partial_and_sum", "tp", True), ("partial_and_sum_bug_dp", "dp", False)):
        fn = jax.jit(jax.shard_map(partial_body(axis), mesh=MESH, in_specs=(P("dp", "tp"), P("tp", None)),
                                   out_specs=P("dp", None), check_vma=False))
        got = np.asarray(fn(x, w))
        assert np.allclose(got, want, rtol=1e-5, atol=1e-5) == same, f"{name}: {np.max(np.abs(got - want))}"
        (OUT / f"{name}.shardy.mlir").write_text(fn.lower(*args).as_text())


def main() -> int:
    x = np.random.default_rng(1).normal(size=(4, 16)).astype(np.float32)
    w = np.random.default_rng(2).normal(size=(16, 16)).astype(np.float32)
    sharded = jax.jit(step, in_shardings=IN_SHARDINGS, out_shardings=OUT_SHARDINGS)(w, x)
    plain = jax.jit(step)(w, x)
    for a, b in zip(sharded, plain):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-5)
    ref_path, good_path = tj.export_pair(step, *ARGS, in_shardings=IN_SHARDINGS, out_shardings=OUT_SHARDINGS,
                                         directory=OUT, name="two_layouts")
    bug_path = OUT / "two_layouts_bug_swapped_copy.partitioned.mlir"
    bug_path.write_text(swapped_copy(good_path.read_text()))
    check_on_xla(ref_path, good_path, bug_path)
    write_partial_pair()
    write_scan_pair()
    print(f"wrote {ref_path.name}, {good_path.name}, {bug_path.name} in {OUT}")
    return 0


SCAN = dict(batch=4, hidden=16, ffn=32, layers=4)


def scan_ref(x: jax.Array, w1: jax.Array, w2: jax.Array) -> jax.Array:
    def layer(h: jax.Array, ws: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, None]:
        a, b = ws
        return h + jnp.tanh(h @ a) @ b, None
    h, _ = jax.lax.scan(layer, jnp.tanh(x), (w1, w2))
    return h


def scan_body(stale: bool) -> Callable[[jax.Array, jax.Array, jax.Array], jax.Array]:
    """The residual stream carried twice: whole (`full`, read by the column-parallel
    matmul) and as this device's tp block of the hidden dim (`part`, the residual add):
    one reference value under two layouts in every trip. `stale`: the whole copy is
    gathered from the block before the residual add, so it lags a layer behind."""
    tp = 4

    def body(x: jax.Array, w1: jax.Array, w2: jax.Array) -> jax.Array:
        width = x.shape[1] // tp
        k = jax.lax.axis_index("tp")
        part0 = jnp.tanh(jax.lax.dynamic_slice_in_dim(x, k * width, width, axis=1))

        def layer(carry: tuple[jax.Array, jax.Array], ws: tuple[jax.Array, jax.Array]
                  ) -> tuple[tuple[jax.Array, jax.Array], None]:
            full, part = carry
            a, b = ws  # a: a column block of the up projection, b: a row block of the down one
            z = jax.lax.psum_scatter(jnp.tanh(full @ a) @ b, "tp", scatter_dimension=1, tiled=True)
            new = part + z
            full = jax.lax.all_gather(part if stale else new, "tp", axis=1, tiled=True)
            return (full, new), None
        (_, part), _ = jax.lax.scan(layer, (jnp.tanh(x), part0), (w1, w2))
        return part
    return body


def write_scan_pair() -> None:
    """scan_two_layouts and its twin scan_two_layouts_bug_stale_copy (Shardy text),
    checked numerically (the twin must differ)."""
    n, d, f, layers = SCAN["batch"], SCAN["hidden"], SCAN["ffn"], SCAN["layers"]
    args = (jax.ShapeDtypeStruct((n, d), jnp.float32), jax.ShapeDtypeStruct((layers, d, f), jnp.float32),
            jax.ShapeDtypeStruct((layers, f, d), jnp.float32))
    rng = np.random.default_rng(5)
    x = rng.normal(size=(n, d)).astype(np.float32)
    w1 = (rng.normal(size=(layers, d, f)) * 0.3).astype(np.float32)
    w2 = (rng.normal(size=(layers, f, d)) * 0.3).astype(np.float32)
    want = np.asarray(jax.jit(scan_ref)(x, w1, w2))
    (OUT / "scan_two_layouts.ref.mlir").write_text(jax.jit(scan_ref).lower(*args).as_text())
    for name, stale in (("scan_two_layouts", False), ("scan_two_layouts_bug_stale_copy", True)):
        fn = jax.jit(jax.shard_map(scan_body(stale), mesh=MESH,
                                   in_specs=(P("dp", None), P(None, None, "tp"), P(None, "tp", None)),
                                   out_specs=P("dp", "tp"), check_vma=False))
        got = np.asarray(fn(x, w1, w2))
        assert np.allclose(got, want, rtol=1e-5, atol=1e-5) != stale, f"{name}: {np.max(np.abs(got - want))}"
        (OUT / f"{name}.shardy.mlir").write_text(fn.lower(*args).as_text())


if __name__ == "__main__":
    sys.exit(main())
