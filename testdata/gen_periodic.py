"""Pairs for the proof by cases over periodic atoms (docs/cases.md, "Periodic atoms"): a
ring buffer of W = 8 slots written at `pos % 8`, with `pos` assumed in [0, 200), then a
softmax-weighted read of the buffer. The reference writes the whole buffer; the split
programs write it as two 4-slot blocks do (the owner of the slot at its clipped local slot)
and merge the blocks' softmax by max rescaling, as a sequence-parallel decode does
(clients7's ring_kv_decode, on one device). Which slot is written is decided by pos mod 8
alone, which the merge needs as a literal: over the symbolic pos the solver times out.

- `ring_periodic`: the correct split (the residue of pos mod 8: 8 cases);
- `ring_periodic_mod24`: correct, the slot computed as `(pos % 24) % 8` (period 24: 24 cases);
- `ring_periodic_bug_mod12`: the slot computed as `(pos % 12) % 8`, which differs from pos % 8
  at pos = 8..11 (mod 24): the period is 24, and the cases must reach those residues;
- `ring_periodic_bug_late`: the second block drops the write once pos >= 100: pos is read
  outside a residue, so no case split over residues may cover it.

`python testdata/gen_periodic.py` writes testdata/periodic/<name>.mlir (and ring_ref.mlir);
`--list` runs each on XLA for every pos in the range and prints where it differs from the
reference."""
from __future__ import annotations

import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

OUT = Path(__file__).resolve().parent / "periodic"
W, BLOCK, POS_RANGE = 8, 4, (0, 200)
ARGS = (jax.ShapeDtypeStruct((W,), jnp.float32), jax.ShapeDtypeStruct((), jnp.float32),
        jax.ShapeDtypeStruct((), jnp.float32), jax.ShapeDtypeStruct((), jnp.int32))


def ring_ref(cache, new, q, pos):
    c = lax.dynamic_update_slice(cache, new[None], (pos % W,))
    return jnp.sum(jax.nn.softmax(c * q) * c)


def _split(slot_of, late: bool = False):
    def f(cache, new, q, pos):
        slot = slot_of(pos)
        blocks = []
        for j in range(W // BLOCK):
            cj = cache[j * BLOCK:(j + 1) * BLOCK]
            local = slot - j * BLOCK
            mine = (local >= 0) & (local < BLOCK)
            if late and j == 1:
                mine = mine & (pos < 100)
            upd = lax.dynamic_update_slice(cj, new[None], (jnp.clip(local, 0, BLOCK - 1),))
            blocks.append(jnp.where(mine, upd, cj))
        scores = [b * q for b in blocks]
        m = jnp.maximum(*(jnp.max(s) for s in scores))
        es = [jnp.exp(s - m) for s in scores]
        den = sum(jnp.sum(e) for e in es)
        return sum(jnp.sum(e * b) for e, b in zip(es, blocks)) / den
    return f


TWINS = {
    "ring_periodic": _split(lambda pos: pos % W),
    "ring_periodic_mod24": _split(lambda pos: (pos % 24) % W),
    "ring_periodic_bug_mod12": _split(lambda pos: (pos % 12) % W),
    "ring_periodic_bug_late": _split(lambda pos: pos % W, late=True),
}


def write() -> None:
    OUT.mkdir(exist_ok=True)
    (OUT / "ring_ref.mlir").write_text(jax.jit(ring_ref).lower(*ARGS).as_text())
    for name, f in TWINS.items():
        (OUT / f"{name}.mlir").write_text(jax.jit(f).lower(*ARGS).as_text())
        print("wrote", name)


def differing(name: str) -> list[int]:
    """The positions in the range where the twin and the reference differ on XLA."""
    rng = np.random.default_rng(0)
    cache = rng.standard_normal(W).astype(np.float32)
    new, q = np.float32(2.5), np.float32(0.7)
    ref, twin = jax.jit(ring_ref), jax.jit(TWINS[name])
    return [p for p in range(*POS_RANGE)
            if abs(float(ref(cache, new, q, np.int32(p))) - float(twin(cache, new, q, np.int32(p)))) > 1e-4]


if __name__ == "__main__":
    if "--list" in sys.argv:
        for name in TWINS:
            d = differing(name)
            print(name, f"differs at {len(d)} positions" + (f", first {d[:6]}" if d else ""))
    else:
        write()
