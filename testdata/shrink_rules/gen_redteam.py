"""A red-team batch of shrinking pairs (issue 12, helper-13): realistic LLM-training code
written fresh (not variants of the other generators' pairs), each a reference, a correct
sharded twin and a bug twin whose bug shows at the original sizes on XLA (8 CPU devices).
Same form as testdata/gen_shrink_rules.py, whose helpers this imports: written to
`<pair>.<variant>.{ref,ok,bug}.mlir` and listed in `manifest_redteam.json`.

    .venv/bin/python testdata/shrink_rules/gen_redteam.py

The pairs are small (every one runs on XLA), but with classes large enough that shrinking
has something to shrink; `rule` names the mechanism each probes.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from gen_shrink_rules import I32, MESH_D, MESH_TP, TP, Arg, Pair, _smap, write_manifest  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import Mesh  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

F32 = jnp.float32
MESH_DP2 = Mesh(np.array(jax.devices()[:2]), ("dp",))


def _seq_pos(local: int, shape: tuple[int, ...], dim: int = 0) -> jax.Array:
    """Global positions of this sequence shard (the shard index times the local length)."""
    return lax.axis_index("tp") * local + lax.broadcasted_iota(I32, shape, dim)


# Sliding-window causal attention weights, sequence-parallel queries (window 24 > local 16):
# the bug's window is one wider.
def swa_window(s: int, h: int, w: int, variant: str = "small") -> Pair:
    local = s // TP

    def mask(i, j, width):
        return ((j <= i) & (i - j < width)).astype(F32)

    def ref(v):
        i, j = lax.broadcasted_iota(I32, (s, s), 0), lax.broadcasted_iota(I32, (s, s), 1)
        return mask(i, j, w) @ v

    def body(width):
        def f(v):
            i, j = _seq_pos(local, (local, s)), lax.broadcasted_iota(I32, (local, s), 1)
            return mask(i, j, width) @ v
        return f

    def sharded(width):
        return _smap(MESH_TP, body(width), (P(None, None),), P("tp", None))

    return Pair("swa_window", "b", variant, {"seq": s, "hidden": h, "window": w}, [Arg((s, h))],
                ref, sharded(w), sharded(w + 1), f"the sliding window is {w + 1} wide instead of {w}")


# ALiBi slopes 2^(-8 (h + 1) / H) over H heads split over tp: the bug divides by the local
# head count.
def alibi_heads(heads: int, s: int) -> Pair:
    hl = heads // TP

    def bias(hidx, n, dist):
        slope = jnp.exp2(-8.0 * (hidx + 1).astype(F32) / n)
        return slope[:, None, None] * dist[None]

    def dist():
        return (lax.broadcasted_iota(I32, (s, s), 0) - lax.broadcasted_iota(I32, (s, s), 1)).astype(F32)

    def ref(x):
        return x + bias(jnp.arange(heads), float(heads), dist())

    def body(n):
        def f(x):
            hidx = lax.axis_index("tp") * hl + jnp.arange(hl)
            return x + bias(hidx, n, dist())
        return f

    def sharded(n):
        return _smap(MESH_TP, body(n), (P("tp", None, None),), P("tp", None, None))

    return Pair("alibi_heads", "a", "small", {"heads": heads, "seq": s}, [Arg((heads, s, s))],
                ref, sharded(float(heads)), sharded(float(hl)), "ALiBi slopes divide by the local head count")


# Label smoothing over a vocabulary split over tp: eps / (V - 1) on the other words; the
# bug divides by V.
def label_smooth(b: int, v: int, eps: float = 0.5, variant: str = "small") -> Pair:
    vl = v // TP

    def ref(x, lab):
        t = jnp.take_along_axis(x, lab[:, None], axis=1)[:, 0]
        return -(1 - eps) * t - eps / (v - 1) * (jnp.sum(x, axis=1) - t)

    def body(div):
        def f(x, lab):
            hot = (lax.axis_index("tp") * vl + lax.broadcasted_iota(I32, (b, vl), 1)) == lab[:, None]
            t = lax.psum(jnp.sum(jnp.where(hot, x, 0.0), axis=1), "tp")
            tot = lax.psum(jnp.sum(x, axis=1), "tp")
            return -(1 - eps) * t - eps / div * (tot - t)
        return f

    def sharded(div):
        return _smap(MESH_TP, body(div), (P(None, "tp"), P(None)), P(None))

    return Pair("label_smooth", "a", variant, {"batch": b, "vocab": v}, [Arg((b, v)), Arg((b,), I32, v)],
                ref, sharded(float(v - 1)), sharded(float(v)), "label smoothing divides eps by V instead of V - 1")


# Loss normalised by the count of real tokens (label != 0) over data-parallel shards: the
# bug averages the shards' own means (wrong when the shards hold different counts).
def token_norm(b: int, s: int) -> Pair:
    def ref(x, lab):
        m = (lab != 0).astype(F32)
        return jnp.sum(x * m) / jnp.maximum(jnp.sum(m), 1.0)

    def ok(x, lab):
        m = (lab != 0).astype(F32)
        return lax.psum(jnp.sum(x * m), "d") / jnp.maximum(lax.psum(jnp.sum(m), "d"), 1.0)

    def bug(x, lab):
        m = (lab != 0).astype(F32)
        return lax.pmean(jnp.sum(x * m) / jnp.maximum(jnp.sum(m), 1.0), "d")

    def sharded(f):
        return _smap(MESH_D, f, (P("d", None), P("d", None)), P())

    return Pair("token_norm", "k", "small", {"batch": b, "seq": s}, [Arg((b, s)), Arg((b, s), I32, 3)],
                ref, sharded(ok), sharded(bug), "the loss is the mean of per-shard means, not sum / token count")


# Softmax scale 1 / sqrt(head_dim) written as the float 0.125 (head_dim 64); the bug scales
# by 1 / head_dim, which names head_dim and meets 0.125 at head_dim' = 8.
def softmax_scale(s: int, d: int, variant: str = "small") -> Pair:
    local = s // TP

    def attn(scale):
        def f(q, k, v):
            return jax.nn.softmax((q @ k.T) * scale, axis=-1) @ v
        return f

    def sharded(scale):
        return _smap(MESH_TP, attn(scale), (P("tp", None), P(None, None), P(None, None)), P("tp", None))

    del local
    return Pair("softmax_scale", "a", variant, {"seq": s, "head_dim": d}, [Arg((s, d))] * 3,
                attn(1.0 / np.sqrt(d)), sharded(float(1.0 / np.sqrt(d))), sharded(1.0 / d),
                "the scores are scaled by 1 / head_dim instead of 1 / sqrt(head_dim)")


# Cross-entropy plus z-loss (1e-3 mean(lse^2)) with the vocabulary over tp: the bug's z-loss
# divides by the vocabulary (64) instead of the batch (16), whose local size is also 16.
def z_loss(b: int, v: int, variant: str = "small") -> Pair:
    vl = v // TP

    def ref(x, lab):
        lse = jax.nn.logsumexp(x, axis=1)
        t = jnp.take_along_axis(x, lab[:, None], axis=1)[:, 0]
        return jnp.mean(lse - t) + 1e-3 * jnp.sum(lse ** 2) / b

    def body(zdiv):
        def f(x, lab):
            m = lax.pmax(jnp.max(x, axis=1), "tp")
            lse = jnp.log(lax.psum(jnp.sum(jnp.exp(x - m[:, None]), axis=1), "tp")) + m
            hot = (lax.axis_index("tp") * vl + lax.broadcasted_iota(I32, (b, vl), 1)) == lab[:, None]
            t = lax.psum(jnp.sum(jnp.where(hot, x, 0.0), axis=1), "tp")
            return jnp.sum(lse - t) / b + 1e-3 * jnp.sum(lse ** 2) / zdiv
        return f

    def sharded(zdiv):
        return _smap(MESH_TP, body(zdiv), (P(None, "tp"), P(None)), P())

    return Pair("z_loss", "a", variant, {"batch": b, "vocab": v}, [Arg((b, v)), Arg((b,), I32, v)],
                ref, sharded(float(b)), sharded(float(v)),
                "the z-loss is divided by the vocabulary instead of the batch")


# Position ids modulo a period (24) with the sequence over tp (local 16): the bug forgets
# the shard offset.
def pos_mod(s: int, h: int, period: int, variant: str = "small") -> Pair:
    local = s // TP

    def ref(x):
        return x * (lax.broadcasted_iota(I32, (s, h), 0) % period).astype(F32)

    def body(offset):
        def f(x):
            pos = lax.broadcasted_iota(I32, (local, h), 0) + (lax.axis_index("tp") * local if offset else 0)
            return x * (pos % period).astype(F32)
        return f

    def sharded(offset):
        return _smap(MESH_TP, body(offset), (P("tp", None),), P("tp", None))

    return Pair("pos_mod", "b", variant, {"seq": s, "hidden": h, "period": period}, [Arg((s, h))],
                ref, sharded(True), sharded(False), f"positions modulo {period} without the shard offset")


# Position ids modulo a period equal to the local sequence length (16): the correct plan
# drops the offset (a multiple of the period); the bug takes the period as 15.
def pos_mod_local(s: int, h: int) -> Pair:
    local = s // TP

    def ref(x):
        return x * (lax.broadcasted_iota(I32, (s, h), 0) % local).astype(F32)

    def body(period):
        def f(x):
            return x * (lax.broadcasted_iota(I32, (local, h), 0) % period).astype(F32)
        return f

    def sharded(period):
        return _smap(MESH_TP, body(period), (P("tp", None),), P("tp", None))

    return Pair("pos_mod_local", "b", "small", {"seq": s, "hidden": h}, [Arg((s, h))],
                ref, sharded(local), sharded(local - 1), f"positions modulo {local - 1} instead of {local}")


# Top-2 routing over 8 experts with a capacity of 5 tokens per expert (the first tokens
# routed to it, a cumsum over tokens): the bug keeps 4 (`<` instead of `<=`).
def topk_capacity(t: int, e: int, cap: int) -> Pair:
    def route(x, keep):
        # The same top-2 selection; the rank of each token at its expert by a
        # lower-triangular product instead of a cumsum.
        vals, _ = lax.top_k(x, 2)
        sel = (x >= vals[:, 1:2]).astype(F32)
        rank = jnp.tril(jnp.ones((t, t), F32)) @ sel
        return x * sel * keep(rank).astype(F32)

    def ref(x):
        vals, _ = lax.top_k(x, 2)
        sel = (x >= vals[:, 1:2]).astype(F32)
        rank = jnp.cumsum(sel, axis=0)
        return x * sel * (rank <= cap).astype(F32)

    def ok(x):
        return route(x, lambda r: r <= cap)

    def bug(x):
        return route(x, lambda r: r < cap)

    return Pair("topk_capacity", "c", "small", {"tokens": t, "experts": e, "capacity": cap}, [Arg((t, e))],
                ref, ok, bug, f"the expert capacity keeps {cap - 1} tokens instead of {cap}")


# Cross-entropy's target logit read from a chunked vocabulary (chunks of 16): the bug lays
# the chunks out minor-first.
def chunked_target(b: int, v: int, chunk: int) -> Pair:
    n = v // chunk

    def ref(x, lab):
        return jnp.take_along_axis(x, lab[:, None], axis=1)[:, 0]

    def pick(xs, lab):
        c, o = lab // chunk, lab % chunk
        return xs[jnp.arange(b), c, o]

    def ok(x, lab):
        return pick(x.reshape(b, n, chunk), lab)

    def bug(x, lab):
        return pick(x.reshape(b, chunk, n).transpose(0, 2, 1), lab)

    return Pair("chunked_target", "d", "small", {"batch": b, "vocab": v, "chunk": chunk},
                [Arg((b, v)), Arg((b,), I32, v)], ref, ok, bug, "the vocabulary chunks are laid out minor-first")


# Rows of a position table read at positions clamped at S - 3 (a gather), the sequence over
# tp: the bug clamps the local position at L - 3 before adding the shard offset.
def clamp_pos(s: int, h: int, variant: str = "small") -> Pair:
    local = s // TP

    def ref(t):
        return jnp.take(t, jnp.clip(jnp.arange(s), 0, s - 3), axis=0)

    def ok(t):
        return jnp.take(t, jnp.clip(_seq_pos(local, (local,)), 0, s - 3), axis=0)

    def bug(t):
        pos = jnp.clip(jnp.arange(local), 0, local - 3) + lax.axis_index("tp") * local
        return jnp.take(t, pos, axis=0)

    def sharded(f):
        return _smap(MESH_TP, f, (P(None, None),), P("tp", None))

    return Pair("clamp_pos", "a", variant, {"seq": s, "hidden": h}, [Arg((s, h))], ref, sharded(ok), sharded(bug),
                "each shard clamps its local positions at L - 3 before the offset")


# A mask of the second half `pos > S / 2` on sequence shards; the bug takes `>=`.
def half_mask(s: int, h: int, variant: str = "small") -> Pair:
    local = s // TP

    def ref(x):
        return jnp.where(lax.broadcasted_iota(I32, (s, h), 0) > s // 2, x, 0.0)

    def body(strict):
        def f(x):
            pos = _seq_pos(local, (local, h))
            return jnp.where(pos > s // 2 if strict else pos >= s // 2, x, 0.0)
        return f

    def sharded(strict):
        return _smap(MESH_TP, body(strict), (P("tp", None),), P("tp", None))

    return Pair("half_mask", "b", variant, {"seq": s, "hidden": h}, [Arg((s, h))], ref, sharded(True), sharded(False),
                "the mask keeps position S / 2")


# Target logits of labels above V / 2 only (a data compare with a fraction of the
# vocabulary); the bug also keeps label V / 2.
def label_half(b: int, v: int) -> Pair:
    def ref(x, lab):
        t = jnp.take_along_axis(x, lab[:, None], axis=1)[:, 0]
        return jnp.where(lab > v // 2, t, 0.0)

    def ok(x, lab):
        hot = lax.broadcasted_iota(I32, (b, v), 1) == lab[:, None]
        return jnp.where(lab >= v // 2 + 1, jnp.sum(jnp.where(hot, x, 0.0), axis=1), 0.0)

    def bug(x, lab):
        t = jnp.take_along_axis(x, lab[:, None], axis=1)[:, 0]
        return jnp.where(lab >= v // 2, t, 0.0)

    return Pair("label_half", "a", "small", {"batch": b, "vocab": v}, [Arg((b, v)), Arg((b,), I32, v)],
                ref, ok, bug, "the label mask keeps V / 2 too")


# A mean over a 2-device mesh axis with a local batch of 2: the bug divides the summed
# shard sums by the device count only.
def pmean_local(b: int, h: int) -> Pair:
    def ref(x):
        return jnp.mean(x, axis=0)

    def ok(x):
        return lax.pmean(jnp.mean(x, axis=0), "dp")

    def bug(x):
        return lax.psum(jnp.sum(x, axis=0), "dp") / 2.0

    def sharded(f):
        return _smap(MESH_DP2, f, (P("dp", None),), P(None))

    return Pair("pmean_local", "f", "small", {"batch": b, "hidden": h}, [Arg((b, h))], ref, sharded(ok), sharded(bug),
                "the sum over devices is divided by the device count, not the batch")


# Sequence-parallel to head-parallel by an untiled all_to_all: the bug reshapes the received
# blocks without moving the source axis in front (rows interleaved by source device).
def a2a_interleave(s: int, h: int, variant: str = "small") -> Pair:
    local, hl = s // TP, h // TP

    def ref(x):
        return x * 3.0

    def body(reorder):
        def f(x):
            y = lax.all_to_all(x.reshape(local, TP, hl), "tp", 1, 1, tiled=False)  # [local, src, hl]
            y = jnp.transpose(y, (1, 0, 2)) if reorder else y
            return y.reshape(s, hl) * 3.0
        return f

    def sharded(reorder):
        return _smap(MESH_TP, body(reorder), (P("tp", None),), P(None, "tp"))

    return Pair("a2a_interleave", "d", variant, {"seq": s, "hidden": h}, [Arg((s, h))], ref,
                sharded(True), sharded(False), "the all_to_all's blocks are interleaved by source device")


# A windowed sum whose window is a constant near the size (S - 2 of S): the bug's window is
# one shorter.
def window_near(s: int, h: int) -> Pair:
    w = s - 2

    def ref(x):
        return lax.reduce_window(x, 0.0, lax.add, (w, 1), (1, 1), "VALID")

    def stacked(width):
        def f(x):
            return jnp.stack([jnp.sum(x[i:i + width], axis=0) for i in range(s - w + 1)])
        return f

    return Pair("window_near", "h", "small", {"seq": s, "hidden": h}, [Arg((s, h))], ref, stacked(w), stacked(w - 1),
                f"the window sums {w - 1} positions instead of {w}")


# cumsum over a sequence split over tp: local cumsum plus the shards before; the bug carries
# only the previous shard's total.
def cumsum_carry(s: int, h: int) -> Pair:
    def ref(x):
        return jnp.cumsum(x, axis=0)

    def body(all_before):
        def f(x):
            tot = lax.all_gather(jnp.sum(x, axis=0), "tp")  # [tp, h]
            me = lax.axis_index("tp")
            src = jnp.arange(TP)[:, None]
            before = (src < me) if all_before else (src == me - 1)
            return jnp.cumsum(x, axis=0) + jnp.sum(jnp.where(before, tot, 0.0), axis=0)
        return f

    def sharded(all_before):
        return _smap(MESH_TP, body(all_before), (P("tp", None),), P("tp", None))

    return Pair("cumsum_carry", "b", "small", {"seq": s, "hidden": h}, [Arg((s, h))], ref,
                sharded(True), sharded(False), "the carry is the previous shard's total, not every shard's before")


# A vocabulary-parallel one-hot target: the bug offsets the shard by tp * hidden (32)
# instead of tp * local vocabulary (16).
def onehot_offset(b: int, hdim: int, v: int, variant: str = "small", squared: bool = False) -> Pair:
    vl = v // TP

    def act(x):
        # squared ReLU activations (degree 3 in the hidden sum: hidden' = 4 = the local
        # vocabulary's 3 per shard rounded to a divisor)
        return jnp.maximum(x, 0.0) ** 2 if squared else x

    def ref(x, w, lab):
        return jnp.take_along_axis(act(x) @ w, lab[:, None], axis=1)[:, 0]

    def body(stride):
        def f(x, w, lab):
            hot = (lax.axis_index("tp") * stride + lax.broadcasted_iota(I32, (b, vl), 1)) == lab[:, None]
            return lax.psum(jnp.sum(jnp.where(hot, act(x) @ w, 0.0), axis=1), "tp")
        return f

    def sharded(stride):
        return _smap(MESH_TP, body(stride), (P(None, None), P(None, "tp"), P(None)), P(None))

    return Pair("onehot_sqrelu" if squared else "onehot_offset", "a", variant, {"batch": b, "hidden": hdim, "vocab": v},
                [Arg((b, hdim)), Arg((hdim, v)), Arg((b,), I32, v)], ref, sharded(vl), sharded(hdim),
                "the one-hot's shard offset is tp * hidden instead of tp * local vocabulary")


# A median by sorting (the element at n / 2): the bug takes n / 2 - 1.
def sort_median(b: int, n: int) -> Pair:
    def ref(x):
        return jnp.sort(x, axis=1)[:, n // 2]

    def ok(x):
        return -jnp.sort(-x, axis=1)[:, n - 1 - n // 2]

    def bug(x):
        return jnp.sort(x, axis=1)[:, n // 2 - 1]

    return Pair("sort_median", "c", "small", {"batch": b, "n": n}, [Arg((b, n))], ref, ok, bug,
                "the median is the element at n / 2 - 1")


# Accuracy with a vocabulary-parallel argmax (local argmax plus the shard offset, the
# global max by pmax); the bug forgets the offset.
def argmax_acc(b: int, v: int) -> Pair:
    vl = v // TP

    def ref(x, lab):
        return jnp.mean((jnp.argmax(x, axis=1) == lab).astype(F32))

    def body(offset):
        def f(x, lab):
            lm, li = jnp.max(x, axis=1), jnp.argmax(x, axis=1).astype(I32)
            gi = li + (lax.axis_index("tp") * vl if offset else 0)
            gm = lax.pmax(lm, "tp")
            idx = lax.pmin(jnp.where(lm == gm, gi, v), "tp")
            return jnp.mean((idx == lab).astype(F32))
        return f

    def sharded(offset):
        return _smap(MESH_TP, body(offset), (P(None, "tp"), P(None)), P())

    return Pair("argmax_acc", "c", "small", {"batch": b, "vocab": v}, [Arg((b, v)), Arg((b,), I32, v)], ref,
                sharded(True), sharded(False), "the argmax's shard offset is missing")


# A row gather of a square matrix against the same indices taken as columns (gather
# exchanging two dims of one size, no transpose op in the gather).
def gather_square(n: int, b: int) -> Pair:
    def ref(x, idx):
        return jnp.take(x, idx, axis=0, mode="clip")

    def ok(x, idx):
        return jnp.take(x.T, idx, axis=1, mode="clip").T

    def bug(x, idx):
        return jnp.take(x, idx, axis=1, mode="clip").T

    return Pair("gather_square", "d", "small", {"n": n, "batch": b}, [Arg((n, n)), Arg((b,), I32, n)], ref, ok, bug,
                "rows gathered as columns of a square matrix")


# A batched product whose two batch dims (heads 8, seq 8) are read swapped from one
# operand: einsum('hsd,shd->hs') against the bug's 'hsd,hsd->hs'.
def einsum_swap(h: int, s: int, d: int) -> Pair:
    def ref(x, y):
        return jnp.einsum("hsd,shd->hs", x, y)

    def ok(x, y):
        return jnp.sum(x * jnp.transpose(y, (1, 0, 2)), axis=2)

    def bug(x, y):
        return jnp.einsum("hsd,hsd->hs", x, y)

    return Pair("einsum_swap", "d", "small", {"heads": h, "seq": s, "d": d}, [Arg((h, s, d)), Arg((s, h, d))],
                ref, ok, bug, "the second operand's heads and seq read swapped")


# Block-causal attention weights (blocks of 16 positions, the local sequence length): the
# correct plan reads the query block as its shard index; the bug's blocks are 32 long.
def block_causal(s: int, h: int, block: int) -> Pair:
    local = s // TP

    def ref(v):
        i, j = lax.broadcasted_iota(I32, (s, s), 0), lax.broadcasted_iota(I32, (s, s), 1)
        return ((j // block) <= (i // block)).astype(F32) @ v

    def ok(v):
        j = lax.broadcasted_iota(I32, (local, s), 1)
        return ((j // block) <= lax.axis_index("tp")).astype(F32) @ v

    def bug(v):
        i, j = _seq_pos(local, (local, s)), lax.broadcasted_iota(I32, (local, s), 1)
        return ((j // (2 * block)) <= (i // (2 * block))).astype(F32) @ v

    def sharded(f):
        return _smap(MESH_TP, f, (P(None, None),), P("tp", None))

    return Pair("block_causal", "a", "small", {"seq": s, "hidden": h, "block": block}, [Arg((s, h))],
                ref, sharded(ok), sharded(bug), f"the causal blocks are {2 * block} long instead of {block}")


# Sequence-parallel activations gathered as flattened tokens: the correct plan gathers
# along the sequence; the bug flattens (batch, local seq) first, so the gathered rows are
# (shard, batch, local) where (batch, shard, local) is right.
def seq_gather_flat(b: int, s: int, h: int) -> Pair:
    local = s // TP

    def ref(x):
        return x * 2.0

    def ok(x):
        return lax.all_gather(x, "tp", axis=1, tiled=True) * 2.0

    def bug(x):
        g = lax.all_gather(x.reshape(b * local, h), "tp", axis=0, tiled=True)
        return g.reshape(b, s, h) * 2.0

    def sharded(f):
        return _smap(MESH_TP, f, (P(None, "tp", None),), P(None, None, None))

    return Pair("seq_gather_flat", "d", "small", {"batch": b, "seq": s, "hidden": h}, [Arg((b, s, h))],
                ref, sharded(ok), sharded(bug), "the sequence shards are gathered as flattened tokens")


# Special-token positions picked by a constant index list (a gather with constant indices
# into the sequence): the bug picks position 16 where 17 is right.
def const_pick(b: int, s: int, h: int) -> Pair:
    def pick(idx):
        def f(x):
            return x[:, jnp.array(idx, I32), :] * 2.0
        return f

    def ok(x):
        return jnp.stack([x[:, 0], x[:, 5], x[:, 17]], axis=1) * 2.0

    return Pair("const_pick", "h", "small", {"batch": b, "seq": s, "hidden": h}, [Arg((b, s, h))],
                pick([0, 5, 17]), ok, pick([0, 5, 16]), "the third special position is 16 instead of 17")


# One position in the middle of the sequence read by a static slice (a summary token at
# 17); the bug reads 16.
def pos_slice(b: int, s: int, h: int) -> Pair:
    def ref(x):
        return x[:, 17, :] * 2.0

    def ok(x):
        return lax.dynamic_index_in_dim(x, 17, axis=1, keepdims=False) * 2.0

    def bug(x):
        return x[:, 16, :] * 2.0

    return Pair("pos_slice", "h", "small", {"batch": b, "seq": s, "hidden": h}, [Arg((b, s, h))], ref, ok, bug,
                "the summary token is read at 16 instead of 17")


# A window of 8 positions from a literal start (40) read by dynamic_slice; the bug starts
# at 41.
def dyn_start(b: int, s: int, start: int) -> Pair:
    def ref(x):
        return x[:, start:start + 8] * 2.0

    def sliced(at):
        def f(x):
            return lax.dynamic_slice_in_dim(x, at, 8, axis=1) * 2.0
        return f

    return Pair("dyn_start", "h", "small", {"batch": b, "seq": s, "start": start}, [Arg((b, s))], ref,
                sliced(start), sliced(start + 1), f"the window starts at {start + 1} instead of {start}")


# A padding mask from per-row lengths (an int input) and a mean over the valid positions,
# sequence over tp; the bug's mask keeps position `length` too.
def len_mask(b: int, s: int) -> Pair:
    local = s // TP

    def ref(x, n):
        m = (lax.broadcasted_iota(I32, (b, s), 1) < n[:, None]).astype(F32)
        return jnp.sum(x * m, axis=1) / jnp.maximum(jnp.sum(m, axis=1), 1.0)

    def body(strict):
        def f(x, n):
            pos = _seq_pos(local, (b, local), 1)
            m = ((pos < n[:, None]) if strict else (pos <= n[:, None])).astype(F32)
            return lax.psum(jnp.sum(x * m, axis=1), "tp") / jnp.maximum(lax.psum(jnp.sum(m, axis=1), "tp"), 1.0)
        return f

    def sharded(strict):
        return _smap(MESH_TP, body(strict), (P(None, "tp"), P(None)), P(None))

    return Pair("len_mask", "b", "small", {"batch": b, "seq": s}, [Arg((b, s)), Arg((b,), I32, s + 1)], ref,
                sharded(True), sharded(False), "the padding mask keeps position `length`")


# An unbiased variance over hidden split over 8 devices (local 8): the bug applies the
# local count's Bessel factor 8 / 7 to the global biased variance, where 64 / 63 is right
# (at hidden' = 8, 1/8 * 8/7 is the reference's 1/7).
def bessel_var(b: int, h: int) -> Pair:
    n = MESH_D.devices.size

    def ref(x):
        return jnp.var(x, axis=1, ddof=1)

    def ok(x):
        m = lax.psum(jnp.sum(x, axis=1), "d") / h
        return lax.psum(jnp.sum((x - m[:, None]) ** 2, axis=1), "d") / (h - 1)

    def bug(x):
        m = lax.psum(jnp.sum(x, axis=1), "d") / h
        local = h // n
        return (lax.psum(jnp.sum(x * x, axis=1), "d") / h - m * m) * (local / (local - 1))

    def sharded(f):
        return _smap(MESH_D, f, (P(None, "d"),), P(None))

    return Pair("bessel_var", "a", "small", {"batch": b, "hidden": h}, [Arg((b, h))], ref, sharded(ok), sharded(bug),
                "the Bessel factor is the local count's 8 / 7 instead of 64 / 63")


# The same variance written with the correction as one literal ratio 64 / 63 (the correct
# twin) against the bug's 8 / 7.
def bessel_ratio(b: int, h: int) -> Pair:
    n = MESH_D.devices.size

    def ref(x):
        return jnp.var(x, axis=1, ddof=1)

    def body(ratio):
        def f(x):
            m = lax.psum(jnp.sum(x, axis=1), "d") / h
            return (lax.psum(jnp.sum(x * x, axis=1), "d") / h - m * m) * ratio
        return f

    def sharded(ratio):
        return _smap(MESH_D, body(ratio), (P(None, "d"),), P(None))

    local = h // n
    return Pair("bessel_ratio", "a", "small", {"batch": b, "hidden": h}, [Arg((b, h))], ref,
                sharded(h / (h - 1)), sharded(local / (local - 1)), "the Bessel ratio is 8 / 7 instead of 64 / 63")


# A roll along the sequence by 17 (jnp.roll: two slices and a concatenation); the bug rolls
# by 16.
def roll_shift(b: int, s: int) -> Pair:
    def ref(x):
        return jnp.roll(x, 17, axis=1) * 2.0

    def ok(x):
        return jnp.concatenate([x[:, s - 17:], x[:, :s - 17]], axis=1) * 2.0

    def bug(x):
        return jnp.roll(x, 16, axis=1) * 2.0

    return Pair("roll_shift", "h", "small", {"batch": b, "seq": s}, [Arg((b, s))], ref, ok, bug,
                "the sequence is rolled by 16 instead of 17")


# Next-token targets: logits at positions 0..S-2 scored against tokens 1..S-1 (a sum over
# the sequence); the bug scores position t against token t.
def next_token(b: int, s: int) -> Pair:
    def ref(x, t):
        return jnp.sum(x[:, :-1] * t[:, 1:], axis=1)

    def ok(x, t):
        return jnp.sum(x * jnp.concatenate([t[:, 1:], jnp.zeros((b, 1), F32)], axis=1), axis=1)

    def bug(x, t):
        return jnp.sum(x[:, 1:] * t[:, 1:], axis=1)

    return Pair("next_token", "h", "small", {"batch": b, "seq": s}, [Arg((b, s)), Arg((b, s))], ref, ok, bug,
                "position t is scored against token t instead of t + 1")


# A window read by a jitted helper that takes its start as an argument (a func.call with a
# literal operand 40); the bug passes 41.
def call_start(b: int, s: int, start: int) -> Pair:
    @jax.jit
    def window(x, at):
        return lax.dynamic_slice_in_dim(x, at, 8, axis=1)

    def ref(x):
        return x[:, start:start + 8] * 2.0

    def called(at):
        def f(x):
            return window(x, at) * 2.0
        return f

    return Pair("call_start", "h", "small", {"batch": b, "seq": s, "start": start}, [Arg((b, s))], ref,
                called(start), called(start + 1), f"the helper's window starts at {start + 1} instead of {start}")


# cumsum written as a loop over positions (fori_loop(1, S), each step one dynamic update);
# the bug's loop stops one position early.
def loop_scan(s: int, h: int) -> Pair:
    def ref(x):
        return jnp.cumsum(x, axis=0)

    def looped(stop):
        def f(x):
            def step(i, y):
                return lax.dynamic_update_slice_in_dim(y, y[i - 1][None] + x[i][None], i, axis=0)
            return lax.fori_loop(1, stop, step, x)
        return f

    return Pair("loop_scan", "b", "small", {"seq": s, "hidden": h}, [Arg((s, h))], ref, looped(s), looped(s - 1),
                "the scan loop stops at S - 1")


# Grouped-query attention scores: kv heads repeated to the query heads (jnp.repeat: each kv
# head serves a block of query heads); the bug tiles them (jnp.tile: heads interleaved).
def gqa_tile(kvh: int, rep: int, s: int, d: int, variant: str = "small") -> Pair:
    hq = kvh * rep

    def scores(expand):
        def f(q, k):
            return jnp.einsum("hsd,htd->hst", q, expand(k))
        return f

    def ok(q, k):
        kk = jnp.broadcast_to(k[:, None], (kvh, rep, s, d)).reshape(hq, s, d)
        return jnp.einsum("hsd,htd->hst", q, kk)

    name = "gqa_tile" if kvh != rep else "gqa_square"
    return Pair(name, "d", variant, {"kv_heads": kvh, "rep": rep, "seq": s, "d": d},
                [Arg((hq, s, d)), Arg((kvh, s, d))], scores(lambda k: jnp.repeat(k, rep, axis=0)), ok,
                scores(lambda k: jnp.tile(k, (rep, 1, 1))), "the kv heads are tiled instead of repeated")


# Each shard takes its rows of a replicated sequence: a block (rows tp * L .. tp * L + L - 1)
# in the correct twin, a cyclic pick (every tp-th row, `x.reshape(L, tp)[:, shard]`) in the
# bug.
def cyclic_rows(s: int, h: int) -> Pair:
    local = s // TP

    def ref(x):
        return x * 2.0

    def ok(x):
        return lax.dynamic_slice_in_dim(x, lax.axis_index("tp") * local, local, axis=0) * 2.0

    def bug(x):
        return jnp.take(x.reshape(local, TP, h), lax.axis_index("tp"), axis=1) * 2.0

    def sharded(f):
        return _smap(MESH_TP, f, (P(None, None),), P("tp", None))

    return Pair("cyclic_rows", "d", "small", {"seq": s, "hidden": h}, [Arg((s, h))], ref, sharded(ok), sharded(bug),
                "each shard takes every tp-th row instead of its block")


# A prefix-LM mask (the first 17 positions see each other, the rest causally); the bug's
# prefix is 16 long.
def prefix_lm(s: int, h: int, prefix: int) -> Pair:
    def mask(p):
        def f(v):
            i, j = lax.broadcasted_iota(I32, (s, s), 0), lax.broadcasted_iota(I32, (s, s), 1)
            return ((j <= i) | (j < p)).astype(F32) @ v
        return f

    def ok(v):
        m = jnp.tril(jnp.ones((s, s), F32)).at[:, :prefix].set(1.0)
        return m @ v

    return Pair("prefix_lm", "b", "small", {"seq": s, "hidden": h, "prefix": prefix}, [Arg((s, h))],
                mask(prefix), ok, mask(prefix - 1), f"the prefix is {prefix - 1} long instead of {prefix}")


# A vocabulary-parallel target logit found by integer arithmetic on the label (the owning
# shard `label // L`, the local row `label % L`) after squared-ReLU activations; the bug
# divides by hidden (32) where the local vocabulary (16) is right.
def label_divmod(b: int, hdim: int, v: int, variant: str = "small") -> Pair:
    vl = v // TP

    def act(x):
        return jnp.maximum(x, 0.0) ** 2

    def ref(x, w, lab):
        return jnp.take_along_axis(act(x) @ w, lab[:, None], axis=1)[:, 0]

    def body(block):
        def f(x, w, lab):
            mine = (lab // block) == lax.axis_index("tp")
            local = jnp.take_along_axis(act(x) @ w, (lab % block)[:, None], axis=1, mode="clip")[:, 0]
            return lax.psum(jnp.where(mine, local, 0.0), "tp")
        return f

    def sharded(block):
        return _smap(MESH_TP, body(block), (P(None, None), P(None, "tp"), P(None)), P(None))

    return Pair("label_divmod", "a", variant, {"batch": b, "hidden": hdim, "vocab": v},
                [Arg((b, hdim)), Arg((hdim, v)), Arg((b,), I32, v)], ref, sharded(vl), sharded(hdim),
                "the label's shard and row use hidden as the block size instead of the local vocabulary")


def pairs() -> list[Pair]:
    return [
        swa_window(64, 4, 24), alibi_heads(8, 8), label_smooth(8, 16), token_norm(16, 8),
        softmax_scale(16, 64), z_loss(16, 64), pos_mod(64, 4, 24), pos_mod_local(64, 4),
        topk_capacity(16, 8, 5), chunked_target(8, 64, 16), clamp_pos(64, 4), half_mask(64, 4),
        label_half(256, 64), pmean_local(4, 8), a2a_interleave(16, 16), window_near(16, 4),
        cumsum_carry(32, 4), onehot_offset(8, 32, 64), sort_median(4, 16), argmax_acc(8, 64),
        gather_square(16, 4), einsum_swap(8, 8, 4), block_causal(64, 4, 16), seq_gather_flat(2, 16, 4),
        const_pick(2, 64, 4), pos_slice(2, 64, 4), dyn_start(2, 64, 40), len_mask(4, 64),
        bessel_var(4, 64), bessel_ratio(4, 64), roll_shift(2, 64), next_token(2, 64),
        call_start(2, 64, 40), loop_scan(16, 4), gqa_tile(2, 4, 4, 4), gqa_tile(4, 4, 4, 4),
        cyclic_rows(32, 4), prefix_lm(64, 4, 17), onehot_offset(8, 32, 64, squared=True),
        label_divmod(8, 32, 64),
        # realistic sizes
        swa_window(2048, 64, 512, "big"), softmax_scale(1024, 128, "big"),
        pos_mod(4096, 16, 1000, "big"), clamp_pos(4096, 64, "big"), half_mask(4096, 64, "big"),
        a2a_interleave(2048, 2048, "big"),
        gqa_tile(8, 4, 128, 128, "big"), onehot_offset(8, 1024, 32000, "big"),
        onehot_offset(8, 1024, 32000, "big", squared=True), label_divmod(8, 1024, 32000, "big"),
        z_loss(16, 32000, "big"),
    ]


def main() -> int:
    return write_manifest(pairs(), "manifest_redteam.json", ok_tol=1e-4)

if __name__ == "__main__":
    raise SystemExit(main())
