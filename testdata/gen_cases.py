"""Bug twins for the proof by cases (docs/cases.md), of the masked split softmax in
testdata/clients6 (gen_clients6.py's reproducer: 4 scores, 2 blocks, a scalar length n
assumed in [1, 5)). Each twin's split program differs from the reference for some n in the
range, which `--list` shows on XLA:

- `masked_split_softmax_bug_le`: the second block's mask off by one (`pos <= n`): differs
  for n = 2, 3 (with the first block's mask off by one too it differs at n = 1 as well, where
  the random runs find it first, and the replay refuses that witness: the split's masked
  block computes exp(s - (-inf)), a float64 overflow, at n = 1);
- `masked_split_softmax_bug_last`: the second block's mask `pos < min(n, 3)`: differs only
  for n = 4, the range's last value.

`python testdata/gen_cases.py` writes testdata/cases/<name>.split.mlir; `--list` runs each
twin and the reference on XLA for every n and prints the largest difference."""
from __future__ import annotations

import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen_clients6 as g6  # noqa: E402  (the reproducer's programs)

OUT = Path(__file__).resolve().parent / "cases"
N_ALL = 4  # the reproducer: 4 scores in 2 blocks


ARGS = (jax.ShapeDtypeStruct((N_ALL,), jnp.float32), jax.ShapeDtypeStruct((N_ALL,), jnp.float32),
        jax.ShapeDtypeStruct((), jnp.int32))


def _split(mask):
    return g6._masked_split_softmax_pair(ARGS[0], mask)[1]


ref = g6._masked_split_softmax_pair(ARGS[0])[0]
TWINS = {
    "masked_split_softmax_bug_le": _split(lambda pos, n, j: pos < n if j == 0 else pos <= n),
    "masked_split_softmax_bug_last": _split(lambda pos, n, j: pos < (n if j == 0 else jnp.minimum(n, 3))),
}


def write() -> None:
    OUT.mkdir(exist_ok=True)
    for name, f in TWINS.items():
        (OUT / f"{name}.split.mlir").write_text(jax.jit(f).lower(*ARGS).as_text())
        print("wrote", name)


def listing() -> None:
    rng = np.random.default_rng(0)
    s, v = rng.standard_normal(N_ALL).astype(np.float32), rng.standard_normal(N_ALL).astype(np.float32)
    for name, f in TWINS.items():
        diffs = [abs(float(jax.jit(f)(s, v, np.int32(n)) - jax.jit(ref)(s, v, np.int32(n)))) for n in range(1, 5)]
        print(name, " ".join(f"n={n}: {d:.3g}" for n, d in zip(range(1, 5), diffs)))


if __name__ == "__main__":
    listing() if "--list" in sys.argv else write()
