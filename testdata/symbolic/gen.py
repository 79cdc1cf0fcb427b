"""Generate shape-polymorphic StableHLO fixtures in testdata/symbolic/.

Run from the repository root:

    JAX_PLATFORMS=cpu .venv/bin/python testdata/symbolic/gen.py

Each module is exported with ``jax.export`` and symbolic shapes
(``jax.export.symbolic_shape``), so its @main takes ``tensor<?x...>`` and its body
computes shapes at run time (get_dimension_size, dynamic_broadcast_in_dim,
dynamic_reshape, shape_assertion custom calls). ``tv_mlir.symshape.instantiate``
turns them into static modules. Files:

- ``mlp.mlir``       relu(x @ w1) @ w2, x: (b, 8)
- ``mlp_twin.mlir``  the same function written differently (maximum, transposed dot)
- ``mlp_bug.mlir``   the relu left out
- ``mean.mlir``      mean over the symbolic axis (divisor from get_dimension_size)
- ``pairs.mlir``     x: (2*k,) summed in pairs; a shape assertion requires an even size
- ``manifest.json``  the expected verdicts of the pairs and each module's shapes

Before writing, the script checks numerically (through ``Exported.call`` at a few
batch sizes, fixed seed) that the twin agrees, the bug differs, the mean is numpy's
and the pair sums are right; it fails loudly otherwise. Source locations are
canonicalized to ``testdata/...`` so the output does not depend on the checkout.
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import export  # noqa: E402

jax.config.update("jax_hlo_source_file_canonicalization_regex", r"^.*/(?=testdata/)")

HERE = Path(__file__).resolve().parent
F32 = jnp.float32
SEED = 20240611
BATCHES = (1, 3, 5)


def mlp(x, w1, w2):
    return jax.nn.relu(x @ w1) @ w2


def mlp_twin(x, w1, w2):
    h = (w1.T @ x.T).T
    return jnp.maximum(h, 0.0) @ w2


def mlp_bug(x, w1, w2):
    return (x @ w1) @ w2


def mean(x):
    return jnp.mean(x, axis=0)


def pairs(x):
    return x.reshape(-1, 2).sum(axis=1)


def mlp_specs() -> list[jax.ShapeDtypeStruct]:
    (b,) = export.symbolic_shape("b")
    return [jax.ShapeDtypeStruct((b, 8), F32), jax.ShapeDtypeStruct((8, 4), F32),
            jax.ShapeDtypeStruct((4, 2), F32)]


def export_fn(fn: Callable, specs: list[jax.ShapeDtypeStruct]) -> export.Exported:
    return export.export(jax.jit(fn))(*specs)


def mlp_inputs(rng: np.random.Generator, batch: int) -> list[np.ndarray]:
    return [rng.standard_normal(s).astype(np.float32) for s in ((batch, 8), (8, 4), (4, 2))]


def check(exported: dict[str, export.Exported]) -> None:
    rng = np.random.default_rng(SEED)
    bug_seen = False
    for batch in BATCHES:
        args = mlp_inputs(rng, batch)
        ref = np.asarray(exported["mlp"].call(*args))
        twin = np.asarray(exported["mlp_twin"].call(*args))
        bug = np.asarray(exported["mlp_bug"].call(*args))
        want = np.maximum(args[0] @ args[1], 0) @ args[2]
        np.testing.assert_allclose(ref, want, rtol=1e-5, atol=1e-5, err_msg=f"mlp at b={batch}")
        np.testing.assert_allclose(twin, ref, rtol=1e-5, atol=1e-5, err_msg=f"twin at b={batch}")
        bug_seen |= not np.allclose(bug, ref, rtol=1e-5, atol=1e-5)
        x = rng.standard_normal((batch, 3)).astype(np.float32)
        np.testing.assert_allclose(np.asarray(exported["mean"].call(x)), x.mean(axis=0), rtol=1e-5,
                                   err_msg=f"mean at b={batch}")
        x = rng.standard_normal(2 * batch).astype(np.float32)
        np.testing.assert_allclose(np.asarray(exported["pairs"].call(x)), x[0::2] + x[1::2], rtol=1e-5,
                                   err_msg=f"pairs at k={batch}")
    if not bug_seen:
        raise SystemExit("mlp_bug agrees with mlp on every input: the seeded bug is not visible")


def main() -> None:
    (b,) = export.symbolic_shape("b")
    exported = {
        "mlp": export_fn(mlp, mlp_specs()),
        "mlp_twin": export_fn(mlp_twin, mlp_specs()),
        "mlp_bug": export_fn(mlp_bug, mlp_specs()),
        "mean": export_fn(mean, [jax.ShapeDtypeStruct((b, 3), F32)]),
        "pairs": export_fn(pairs, [jax.ShapeDtypeStruct(export.symbolic_shape("2*k"), F32)]),
    }
    check(exported)
    for name, exp in exported.items():
        (HERE / f"{name}.mlir").write_text(exp.mlir_module())
    manifest = {
        "pairs": {
            "mlp_twin": {"a": "mlp.mlir", "b": "mlp_twin.mlir", "expect": "equivalent",
                         "why": "maximum(x, 0) is relu; (w1^T x^T)^T is x w1"},
            "mlp_bug": {"a": "mlp.mlir", "b": "mlp_bug.mlir", "expect": "not-equivalent",
                        "why": "relu left out"},
        },
        "modules": {name: {"in": [str(a) for a in exp.in_avals], "out": [str(a) for a in exp.out_avals]}
                    for name, exp in exported.items()},
    }
    (HERE / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    print(f"wrote {len(exported)} modules to {HERE}")


if __name__ == "__main__":
    main()
