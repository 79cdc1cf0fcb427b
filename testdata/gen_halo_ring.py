"""Generate the halo-exchange and ring-tile pairs in testdata/halo_ring/ (issue 15 item 2).

Run from the repository root (sets its own 8-device XLA flags):

    .venv/bin/python testdata/gen_halo_ring.py

Two sharded plans whose shrinking needs slices at constant offsets from a shard's ends
(halo exchange) and block writes at loop-computed tile offsets (ring all-gather matmul),
each at a small size and at Llama-3-8B-like widths (seq 2048, hidden 4096):

- `halo`: a causal depthwise convolution (K taps) along the sequence, the sequence split
  over 4 devices; each device receives the last K - 1 rows of its left neighbour by
  `ppermute` (device 0 gets zeros, the causal padding), concatenates them in front of
  its rows and sums K shifted slices. Bug twins: `bug` takes the halo from the right
  neighbour; `bug_end` sends the neighbour's first K - 1 rows instead of its last (equal
  to the correct program when a shard holds only K - 1 rows: the bound's witness).
- `ring`: an all-gather matmul `x @ w`, x's rows and w's columns split over 4 devices;
  a `fori_loop` passes x's row blocks round the ring with `ppermute` and writes each
  block's product into a tile accumulator with `dynamic_update_slice` at row offset
  `source device * rows per device`. Bug twin: the source device is computed with the
  ring step's sign flipped.

Ground truth on XLA at the original sizes (random inputs): every correct twin agrees with
its reference, every bug twin differs; the script asserts it (non-zero exit otherwise).

Files: `<plan>.<variant>.{ref,ok,bug[,bug_end]}.mlir`; `manifest.json` lists them.
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
os.environ["JAX_PLATFORMS"] = "cpu"

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import Mesh  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

jax.config.update("jax_hlo_source_file_canonicalization_regex", r"^.*/(?=testdata/)")

OUT = Path(__file__).resolve().parent / "halo_ring"
TP = 4
MESH = Mesh(np.array(jax.devices()[:TP]), ("tp",))
RIGHT = [(i, i + 1) for i in range(TP - 1)]  # device i sends to i + 1 (device 0 receives nothing)
LEFT = [(i + 1, i) for i in range(TP - 1)]  # device i + 1 sends to i (the wrong neighbour)
RING = [(i, (i + 1) % TP) for i in range(TP)]


@dataclass
class Pair:
    name: str
    variant: str
    sizes: dict[str, int]
    shapes: list[tuple[int, ...]]
    ref: Callable[..., Any]
    twins: dict[str, Callable[..., Any]]  # ok, bug, ...
    what: dict[str, str]


def _smap(body: Callable[..., Any], in_specs: tuple, out_specs: Any) -> Callable[..., Any]:
    return jax.shard_map(body, mesh=MESH, in_specs=in_specs, out_specs=out_specs, check_vma=False)


def halo(s: int, h: int, taps: int, variant: str) -> Pair:
    k = taps - 1  # the halo width

    def ref(x, w):
        xp = jnp.pad(x, ((k, 0), (0, 0)))
        return sum(w[j] * xp[k - j:k - j + s] for j in range(taps))

    def body(perm, last):
        def f(x, w):
            n = x.shape[0]
            edge = x[n - k:] if last else x[:k]
            got = lax.ppermute(edge, "tp", perm)  # zeros where no device sends
            xx = jnp.concatenate([got, x], axis=0)
            return sum(w[j] * xx[k - j:k - j + n] for j in range(taps))
        return _smap(f, (P("tp", None), P(None, None)), P("tp", None))

    return Pair("halo", variant, {"seq": s, "hidden": h, "taps": taps}, [(s, h), (taps, h)], ref,
                {"ok": body(RIGHT, True), "bug": body(LEFT, True), "bug_end": body(RIGHT, False)},
                {"bug": "the halo comes from the right neighbour instead of the left",
                 "bug_end": "the neighbour sends its first K - 1 rows instead of its last"})


def ring(t: int, h: int, f: int, variant: str) -> Pair:
    def ref(x, w):
        return x @ w

    def body(sign):
        def g(x, w):
            i = lax.axis_index("tp")
            rows = x.shape[0]
            acc = jnp.zeros((rows * TP, w.shape[1]), x.dtype)

            def step(s, carry):
                acc, blk = carry
                src = lax.rem(i + sign * s + TP, TP)  # whose rows this device holds at step s
                acc = lax.dynamic_update_slice(acc, blk @ w, (src * rows, 0))
                return acc, lax.ppermute(blk, "tp", RING)

            acc, _ = lax.fori_loop(0, TP, step, (acc, x))
            return acc
        return _smap(g, (P("tp", None), P(None, "tp")), P(None, "tp"))

    return Pair("ring", variant, {"tokens": t, "hidden": h, "ffn": f}, [(t, h), (h, f)], ref,
                {"ok": body(-1), "bug": body(1)},
                {"bug": "the ring step's offset has the wrong sign (rows written to the wrong tile)"})


def pairs() -> list[Pair]:
    return [halo(64, 4, 3, "small"), halo(2048, 4096, 4, "big"),
            ring(64, 8, 32, "small"), ring(2048, 4096, 4096, "big")] + swa_pairs()


def _max_diff(p: Pair, g: Callable[..., Any]) -> float:
    rng = np.random.default_rng(20261201)
    xs = [rng.standard_normal(s).astype(np.float32) for s in p.shapes]
    a = np.asarray(jax.jit(p.ref)(*xs), np.float64)
    b = np.asarray(jax.jit(g)(*xs), np.float64)
    return float(np.max(np.abs(a - b))) / max(1.0, float(np.max(np.abs(a))))


def main() -> int:
    OUT.mkdir(exist_ok=True)
    manifest = []
    for p in pairs():
        stem = f"{p.name}.{p.variant}"
        specs = [jax.ShapeDtypeStruct(s, jnp.float32) for s in p.shapes]
        diffs = {}
        for kind, g in p.twins.items():
            d = _max_diff(p, g)
            diffs[kind] = d
            if kind == "ok":
                assert d < 1e-5, f"{stem}: the correct twin differs from the reference by {d}"
            else:
                assert d > 1e-3, f"{stem}: {kind} does not differ from the reference ({d})"
        print(f"{stem}: " + ", ".join(f"{k} {d:.2e}" for k, d in diffs.items()))
        for kind, fn in (("ref", p.ref), *p.twins.items()):
            text = jax.jit(fn, keep_unused=True).lower(*specs).as_text(debug_info=True)
            (OUT / f"{stem}.{kind}.mlir").write_text(text)
        manifest.append({"plan": p.name, "variant": p.variant, "sizes": p.sizes, "bugs": p.what,
                         "xla_max_rel_diff": diffs,
                         "files": {k: f"{stem}.{k}.mlir" for k in ("ref", *p.twins)}})
    (OUT / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return 0


# Below main, so that the source locations of the other plans' files stay as they were.
def swa(s: int, heads: int, head_dim: int, window: int, variant: str) -> Pair:
    k = window - 1  # the halo width: a query sees itself and the window - 1 keys before it
    scale = np.float32(1 / np.sqrt(head_dim))

    def attend(q, kk, vv, mask):
        scores = jnp.einsum("qhd,khd->hqk", q, kk) * scale
        # -inf, not finfo.min: the reference masks s - window keys per query, a shard
        # fewer, and exp(finfo.min - max) is a (tiny) real number, not 0
        scores = jnp.where(mask[None], scores, -jnp.inf)
        return jnp.einsum("hqk,khd->qhd", jax.nn.softmax(scores, axis=-1), vv)

    def ref(q, kx, v):
        d = jnp.arange(s)[:, None] - jnp.arange(s)[None, :]
        return attend(q, kx, v, (d >= 0) & (d < window))

    def body(perm, mask_padding):
        def f(q, kx, v):
            n = q.shape[0]
            kk = jnp.concatenate([lax.ppermute(kx[n - k:], "tp", perm), kx], axis=0)
            vv = jnp.concatenate([lax.ppermute(v[n - k:], "tp", perm), v], axis=0)
            j = jnp.arange(n + k)[None, :]  # key j of the halo + rows is query position j - k
            d = jnp.arange(n)[:, None] + k - j
            mask = (d >= 0) & (d < window)
            if mask_padding:  # device 0 received zeros: no keys before the sequence's start
                mask = mask & ((j >= k) | (lax.axis_index("tp") > 0))
            return attend(q, kk, vv, mask)
        spec = P("tp", None, None)
        return _smap(f, (spec, spec, spec), spec)

    shape = (s, heads, head_dim)
    return Pair("swa", variant, {"seq": s, "heads": heads, "head_dim": head_dim, "window": window},
                [shape, shape, shape], ref,
                {"ok": body(RIGHT, True), "bug": body(LEFT, True), "bug_padding": body(RIGHT, False)},
                {"bug": "the keys and values of the halo come from the right neighbour instead of the left",
                 "bug_padding": "device 0 attends to the zero keys it received as its halo (the sequence's "
                                "start is not masked)"})


def swa_pairs() -> list[Pair]:
    """The sliding-window attention plan (issue 15: a sliding-window pair at Llama-3-8B
    widths whose sequence a halo exchange used to pin): the sequence split over 4 devices
    (context parallelism), each query attends to itself and the window - 1 keys before it,
    and each device receives the last window - 1 keys and values of its left neighbour by
    `ppermute`; 32 heads of 128 at seq 2048 (hidden 4096), window 8."""
    return [swa(64, 2, 4, 4, "small"), swa(2048, 32, 128, 8, "big")]


if __name__ == "__main__":
    raise SystemExit(main())
