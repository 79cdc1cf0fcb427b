"""A second red-team batch of shrinking pairs (issue 12, helper-16): sharded training code
written fresh, as a new user would (shard_map over a 4-way `tp` mesh, or jit with
NamedSharding), with mechanisms the first batch (gen_redteam.py) did not use: per-row RNG
streams keyed by global positions, block-diagonal and previous-block attention masks by
integer division, GQA head maps by integer division, padding to a multiple of the shard
count, a mean over the real rows of a padded sequence, dilated convolutions, positions
inside packed segments by a cumulative max, round-robin expert assignment `pos % E`,
1 / sqrt(head_dim) next to other sizes, embedding lookups and gradient scatters by vocab
offsets, log(n) attention scaling from a count, ring-attention steps by ppermute, and
labels shifted across sequence shards. Each is a reference, a correct twin and a bug twin
whose bug shows at the original sizes on XLA (8 CPU devices); same form as
testdata/gen_shrink_rules.py, whose helpers this imports: `<pair>.<variant>.{ref,ok,bug}.mlir`,
listed in `manifest_redteam2.json`.

    .venv/bin/python testdata/shrink_rules/gen_redteam2.py

`rule` names the mechanism each probes (the letters of docs/shrinking.md).
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from gen_shrink_rules import I32, MESH_TP, TP, Arg, Pair, _smap, write_manifest  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

F32 = jnp.float32


def _rows(local: int, shape: tuple[int, ...], dim: int = 0) -> jax.Array:
    """Global row positions of this tp shard: the shard index times the local length."""
    return lax.axis_index("tp") * local + lax.broadcasted_iota(I32, shape, dim)


# Dropout noise per global row: row r's stream is fold_in(key, r). The bug offsets the
# shard's rows by tp * hidden (32) where tp * local rows (16) is right.
def rng_rows(s: int, h: int, variant: str = "small") -> Pair:
    local = s // TP
    key = jax.random.PRNGKey(7)

    def noise(rows):
        return jax.vmap(lambda r: jax.random.uniform(jax.random.fold_in(key, r), (h,)))(rows)

    def ref(x):
        return x * noise(jnp.arange(s))

    def body(stride):
        def f(x):
            return x * noise(lax.axis_index("tp") * stride + jnp.arange(local))
        return f

    def sharded(stride):
        return _smap(MESH_TP, body(stride), (P("tp", None),), P("tp", None))

    return Pair("rng_rows", "a", variant, {"seq": s, "hidden": h}, [Arg((s, h))], ref, sharded(local), sharded(h),
                "the RNG stream of a row is keyed by tp * hidden + i instead of tp * local + i")


# Block-diagonal (chunked) attention weights, blocks of 8 positions, queries sharded by tp
# (local 16): the bug divides positions by the local length instead of the block size.
def chunk_diag(s: int, h: int, block: int, variant: str = "small") -> Pair:
    local = s // TP

    def mask(i, j, b):
        return ((i // b) == (j // b)).astype(F32)

    def ref(v):
        return mask(lax.broadcasted_iota(I32, (s, s), 0), lax.broadcasted_iota(I32, (s, s), 1), block) @ v

    def body(b):
        def f(v):
            return mask(_rows(local, (local, s)), lax.broadcasted_iota(I32, (local, s), 1), b) @ v
        return f

    def sharded(b):
        return _smap(MESH_TP, body(b), (P(None, None),), P("tp", None))

    return Pair("chunk_diag", "a", variant, {"seq": s, "hidden": h, "block": block}, [Arg((s, h))], ref,
                sharded(block), sharded(local), f"the attention blocks are {local} long instead of {block}")


# Local attention over the query's block and the previous one (blocks of 16): the bug
# forgets the previous block.
def chunk_prev(s: int, h: int, block: int) -> Pair:
    local = s // TP

    def mask(i, j, prev):
        d = i // block - j // block
        return ((d == 0) | (prev & (d == 1))).astype(F32)

    def ref(v):
        return mask(lax.broadcasted_iota(I32, (s, s), 0), lax.broadcasted_iota(I32, (s, s), 1), True) @ v

    def body(prev):
        def f(v):
            return mask(_rows(local, (local, s)), lax.broadcasted_iota(I32, (local, s), 1), prev) @ v
        return f

    def sharded(prev):
        return _smap(MESH_TP, body(prev), (P(None, None),), P("tp", None))

    return Pair("chunk_prev", "b", "small", {"seq": s, "hidden": h, "block": block}, [Arg((s, h))], ref,
                sharded(True), sharded(False), "the local attention leaves out the previous block")


# Grouped-query attention with the kv heads picked by `q_head // rep` (a gather at computed
# constant indices): 16 query heads over 4 kv heads (rep 4); the correct twin repeats k with
# jnp.repeat; the bug divides by 2.
def gqa_index(hq: int, hkv: int, s: int, d: int) -> Pair:
    rep = hq // hkv

    def attn(q, k, r):
        kk = jnp.take(k, jnp.arange(q.shape[0]) // r, axis=0, mode="clip")
        return jnp.einsum("hsd,htd->hst", q, kk)

    def ref(q, k):
        return attn(q, k, rep)

    def ok(q, k):
        return jnp.einsum("hsd,htd->hst", q, jnp.repeat(k, rep, axis=0))

    def bug(q, k):
        return attn(q, k, rep // 2)

    return Pair("gqa_index", "a", "small", {"q_heads": hq, "kv_heads": hkv, "seq": s, "d": d},
                [Arg((hq, s, d)), Arg((hkv, s, d))], ref, ok, bug,
                f"the kv head of a query head is h // {rep // 2} instead of h // {rep}")


# Log-sum-exp of log-probabilities (x - 20) over a sequence of 62 rows padded with zeros to
# 64 for 4 shards: the pad rows are masked with -inf by `pos < 62`; the bug's mask is
# `pos < 63` (one pad row counts exp(0), far above the real rows).
def pad_lse(s: int, h: int, variant: str = "small") -> Pair:
    padded = -(-s // TP) * TP
    local = padded // TP

    def ref(x):
        return jax.nn.logsumexp(x - 20.0, axis=0)

    def body(limit):
        def f(x):
            keep = _rows(local, (local, h)) < limit
            z = jnp.where(keep, x, -jnp.inf)
            m = lax.pmax(jnp.max(z, axis=0), "tp")
            return jnp.log(lax.psum(jnp.sum(jnp.exp(z - m), axis=0), "tp")) + m
        return f

    def sharded(limit):
        inner = _smap(MESH_TP, body(limit), (P("tp", None),), P(None))
        return lambda x: inner(jnp.pad(x - 20.0, ((0, padded - s), (0, 0))))

    return Pair("pad_lse", "a", variant, {"seq": s, "padded": padded, "hidden": h}, [Arg((s, h))], ref,
                sharded(s), sharded(s + 1), f"the pad mask keeps position {s} (one pad row)")


# A mean over the 60 real rows of a sequence padded to 64 (the last shard is uneven): the
# bug divides by the padded length.
def pad_mean(s: int, h: int, variant: str = "small") -> Pair:
    padded = 64 if s == 60 else -(-s // 64) * 64
    local = padded // TP

    def ref(x, w):
        return jnp.mean(x @ w, axis=0)

    def body(div):
        def f(x, w):
            return lax.psum(jnp.sum(x @ w, axis=0), "tp") / div
        return f

    def sharded(div):
        inner = _smap(MESH_TP, body(div), (P("tp", None), P(None, None)), P(None))
        return lambda x, w: inner(jnp.pad(x, ((0, padded - s), (0, 0))), w)

    del local
    return Pair("pad_mean", "a", variant, {"seq": s, "padded": padded, "hidden": h}, [Arg((s, h)), Arg((h, h))],
                ref, sharded(float(s)), sharded(float(padded)),
                "the mean over the real rows divides by the padded length")


# A dilated causal convolution (kernel 3, dilation 4) over the sequence, batch sharded by
# jit: the bug dilates by 8. At a sequence of 8 or less both taps beyond the first read
# only padding.
def conv_dilate(b: int, s: int, c: int, dil: int) -> Pair:
    mesh = jax.sharding.Mesh(np.array(jax.devices()[:TP]), ("dp",))
    sh = jax.sharding.NamedSharding(mesh, P("dp", None, None))

    def conv(x, w, dd):
        return lax.conv_general_dilated(x, w, (1,), [(2 * dd, 0)], rhs_dilation=(dd,),
                                        dimension_numbers=("NWC", "WIO", "NWC"))

    def ref(x, w):
        return conv(x, w, dil)

    def twin(dd):
        def f(x, w):
            x = jax.lax.with_sharding_constraint(x, sh)
            return jax.lax.with_sharding_constraint(conv(x, w, dd), sh)
        return f

    return Pair("conv_dilate", "h", "small", {"batch": b, "seq": s, "channels": c, "dilation": dil},
                [Arg((b, s, c)), Arg((3, c, c))], ref, twin(dil), twin(2 * dil),
                f"the convolution is dilated by {2 * dil} instead of {dil}")


# Positions inside packed segments (a cumulative max of the segment starts), tokens past
# position 24 of their segment masked; the bug masks past 23.
def seg_pos(b: int, s: int, h: int, window: int) -> Pair:
    def within(x, starts, w):
        idx = lax.broadcasted_iota(I32, (b, s), 1)
        begin = lax.cummax(jnp.where(starts == 1, idx, 0), axis=1)
        return jnp.where(((idx - begin) < w)[:, :, None], x, 0.0)

    mesh = jax.sharding.Mesh(np.array(jax.devices()[:TP]), ("dp",))
    sh = jax.sharding.NamedSharding(mesh, P("dp", None, None))

    def twin(w):
        def f(x, starts):
            return jax.lax.with_sharding_constraint(within(jax.lax.with_sharding_constraint(x, sh), starts, w), sh)
        return f

    return Pair("seg_pos", "b", "small", {"batch": b, "seq": s, "hidden": h, "window": window},
                [Arg((b, s, h)), Arg((b, s), I32, 16)], lambda x, st: within(x, st, window), twin(window),
                twin(window - 1), f"positions past {window - 1} of a segment are masked instead of past {window}")


# Round-robin expert assignment by position, `pos % 8` over 8 experts, sequence sharded by
# tp: the bug takes the position modulo the shard count.
def expert_mod(s: int, e: int) -> Pair:
    local = s // TP

    def ref(x):
        hot = (lax.broadcasted_iota(I32, (s, e), 0) % e) == lax.broadcasted_iota(I32, (s, e), 1)
        return jnp.where(hot, x, 0.0)

    def body(m):
        def f(x):
            hot = (_rows(local, (local, e)) % m) == lax.broadcasted_iota(I32, (local, e), 1)
            return jnp.where(hot, x, 0.0)
        return f

    def sharded(m):
        return _smap(MESH_TP, body(m), (P("tp", None),), P("tp", None))

    return Pair("expert_mod", "a", "small", {"seq": s, "experts": e}, [Arg((s, e))], ref, sharded(e), sharded(TP),
                f"the expert of a position is pos % {TP} (the shard count) instead of pos % {e}")


# Grouped-query attention logits scaled by 1 / sqrt(head_dim) = 1 / sqrt(64) = 0.125, the
# 8 query heads over 4 kv heads (jnp.repeat) sharded by tp: the bug scales by
# 1 / sqrt(16) = 0.25. 0.125 and 0.25 are also the reciprocals of the query and kv head counts.
def sqrt_heads(heads: int, kv: int, s: int, d: int) -> Pair:
    def attn(q, k, scale):
        kk = jnp.repeat(k, q.shape[0] // k.shape[0], axis=0)
        return jax.nn.softmax(jnp.einsum("hsd,htd->hst", q, kk) * scale, axis=-1)

    def twin(scale):
        return _smap(MESH_TP, lambda q, k: attn(q, k, scale), (P("tp", None, None), P("tp", None, None)),
                     P("tp", None, None))

    return Pair("sqrt_heads", "a", "small", {"heads": heads, "kv": kv, "seq": s, "head_dim": d},
                [Arg((heads, s, d)), Arg((kv, s, d))], lambda q, k: attn(q, k, 1 / np.sqrt(d)),
                twin(float(1 / np.sqrt(d))), twin(float(1 / np.sqrt(16))),
                "the logits are scaled by 1 / sqrt(16) instead of 1 / sqrt(head_dim = 64)")


# A vocabulary-parallel embedding lookup: each shard keeps the ids in [tp * L, tp * L + L)
# and reads its table with mode clip; the bug's test is `local <= L`, so the first id of
# the next shard also reads this shard's last row.
def embed_le(b: int, v: int, h: int, variant: str = "small") -> Pair:
    vl = v // TP

    def ref(table, ids):
        return jnp.take(table, ids, axis=0)

    def body(inclusive):
        def f(table, ids):
            local = ids - lax.axis_index("tp") * vl
            mine = (local >= 0) & ((local <= vl) if inclusive else (local < vl))
            rows = jnp.take(table, jnp.clip(local, 0, vl - 1), axis=0)
            return lax.psum(jnp.where(mine[:, None], rows, 0.0), "tp")
        return f

    def sharded(inclusive):
        return _smap(MESH_TP, body(inclusive), (P("tp", None), P(None)), P(None, None))

    return Pair("embed_le", "a", variant, {"batch": b, "vocab": v, "hidden": h}, [Arg((v, h)), Arg((b,), I32, v)],
                ref, sharded(False), sharded(True), "the shard's id test is local <= L instead of local < L")


# The embedding gradient, vocabulary-parallel: each shard scatter-adds the rows of g whose
# ids it owns at `id - tp * L`; the bug owns ids up to L + 1 past its start, scattered with
# mode clip onto its last row.
def embed_grad(b: int, v: int, h: int) -> Pair:
    vl = v // TP

    def ref(g, ids):
        return jnp.zeros((v, h), F32).at[ids].add(g)

    def body(extra):
        def f(g, ids):
            local = ids - lax.axis_index("tp") * vl
            mine = (local >= 0) & (local < vl + extra)
            return jnp.zeros((vl, h), F32).at[jnp.clip(local, 0, vl - 1)].add(jnp.where(mine[:, None], g, 0.0))
        return f

    def sharded(extra):
        return _smap(MESH_TP, body(extra), (P(None, None), P(None)), P("tp", None))

    return Pair("embed_grad", "a", "small", {"batch": b, "vocab": v, "hidden": h}, [Arg((b, h)), Arg((b,), I32, v)],
                ref, sharded(0), sharded(1), "the shard also owns the first id of the next shard (local < L + 1)")


# log(n) attention scaling (a length-dependent temperature): the reference folds log(64)
# at trace time; the correct twin counts the keys with a psum of the local lengths; the bug
# counts the local keys only.
def logn_count(s: int, d: int) -> Pair:
    local = s // TP

    def attn(q, k, n):
        return jax.nn.softmax((q @ k.T) * (jnp.log(n) / np.sqrt(d)), axis=-1)

    def ref(q, k):
        return attn(q, k, jnp.float32(s))

    def body(everyone):
        def f(q, k):
            n = jnp.float32(k.shape[0]) * jnp.ones((), F32)
            n = lax.psum(n, "tp") if everyone else n
            kk = lax.all_gather(k, "tp", tiled=True)
            return attn(q, kk, n)
        return f

    def sharded(everyone):
        return _smap(MESH_TP, body(everyone), (P("tp", None), P("tp", None)), P("tp", None))

    del local
    return Pair("logn_count", "a", "small", {"seq": s, "d": d}, [Arg((s, d)), Arg((s, d))], ref,
                sharded(True), sharded(False), "the log(n) temperature counts the local keys only")


# Ring attention (unnormalised causal weights times values): each of 4 steps passes the kv
# block to the next device by ppermute; the received block's positions are
# ((tp - step) % 4) * L. The bug computes them as ((tp + step) % 4) * L.
def ring_causal(s: int, d: int) -> Pair:
    local = s // TP
    perm = [(i, (i + 1) % TP) for i in range(TP)]

    def ref(q, k, v):
        i, j = lax.broadcasted_iota(I32, (s, s), 0), lax.broadcasted_iota(I32, (s, s), 1)
        return jnp.where(j <= i, q @ k.T, 0.0) @ v

    def body(sign):
        def f(q, k, v):
            me = lax.axis_index("tp")
            qpos = me * local + lax.broadcasted_iota(I32, (local, local), 0)
            out = jnp.zeros_like(q)
            for step in range(TP):
                src = (me - sign * step + TP) % TP
                kpos = src * local + lax.broadcasted_iota(I32, (local, local), 1)
                out = out + jnp.where(kpos <= qpos, q @ k.T, 0.0) @ v
                k, v = lax.ppermute(k, "tp", perm), lax.ppermute(v, "tp", perm)
            return out
        return f

    def sharded(sign):
        return _smap(MESH_TP, body(sign), (P("tp", None),) * 3, P("tp", None))

    return Pair("ring_causal", "b", "small", {"seq": s, "d": d}, [Arg((s, d))] * 3, ref, sharded(1), sharded(-1),
                "the ring step's source block is (tp + step) % 4 instead of (tp - step) % 4")


# Next-token labels with the sequence sharded: the last position of a shard takes the next
# shard's first label (a ppermute to the left); the bug takes it from the right neighbour.
def next_label(b: int, s: int, v: int) -> Pair:
    local = s // TP

    def ref(logits, labels):
        nxt = jnp.concatenate([labels[:, 1:], labels[:, :1]], axis=1)
        return jnp.take_along_axis(logits, nxt[:, :, None], axis=2)[:, :, 0]

    def body(left):
        def f(logits, labels):
            perm = [(i, (i - 1) % TP) for i in range(TP)] if left else [(i, (i + 1) % TP) for i in range(TP)]
            first = lax.ppermute(labels[:, :1], "tp", perm)
            nxt = jnp.concatenate([labels[:, 1:], first], axis=1)
            return jnp.take_along_axis(logits, nxt[:, :, None], axis=2)[:, :, 0]
        return f

    def sharded(left):
        return _smap(MESH_TP, body(left), (P(None, "tp", None), P(None, "tp")), P(None, "tp"))

    del local
    return Pair("next_label", "h", "small", {"batch": b, "seq": s, "vocab": v},
                [Arg((b, s, v)), Arg((b, s), I32, v)], ref, sharded(True), sharded(False),
                "the shard's last label comes from the previous shard instead of the next")


# A position bucket `pos // 16` (relative-position buckets of T5 style, one bias per
# bucket) with the sequence sharded: the bug buckets by the local length 32.
def pos_bucket(s: int, nb: int) -> Pair:
    local = s // TP

    def ref(bias):
        return jnp.take(bias, jnp.minimum(lax.iota(I32, s) // 16, nb - 1))

    def body(width):
        def f(bias):
            return jnp.take(bias, jnp.minimum(_rows(local, (local,)) // width, nb - 1))
        return f

    def sharded(width):
        return _smap(MESH_TP, body(width), (P(None),), P("tp"))

    return Pair("pos_bucket", "a", "small", {"seq": s, "buckets": nb}, [Arg((nb,))], ref, sharded(16),
                sharded(local), f"positions are bucketed by {local} (the local length) instead of 16")


# Label smoothing's uniform mass over a vocabulary sharded by tp, divided by the global
# vocabulary: the correct twin counts it with a psum of the local width, the bug uses the
# local width alone.
def smooth_count(b: int, v: int) -> Pair:
    def ref(x):
        return 0.1 * jnp.sum(x, axis=1) / v

    def body(everyone):
        def f(x):
            n = jnp.float32(x.shape[1]) * jnp.ones((), F32)
            n = lax.psum(n, "tp") if everyone else n
            return 0.1 * lax.psum(jnp.sum(x, axis=1), "tp") / n
        return f

    def sharded(everyone):
        return _smap(MESH_TP, body(everyone), (P(None, "tp"),), P(None))

    return Pair("smooth_count", "f", "small", {"batch": b, "vocab": v}, [Arg((b, v))], ref, sharded(True),
                sharded(False), "the smoothing mass is divided by the local vocabulary")


# Round-robin expert assignment by position over 8 experts written with a bit mask, as a
# user (or XLA's strength reduction) writes `pos % 8`: `pos & 7`; the bug masks with 3.
# At experts' = 4 (8 -> 4, the reference's `% 8` rewritten) `pos & 3` is `pos % 4`.
def expert_and(s: int, e: int) -> Pair:
    local = s // TP

    def ref(x):
        hot = (lax.broadcasted_iota(I32, (s, e), 0) % e) == lax.broadcasted_iota(I32, (s, e), 1)
        return jnp.where(hot, x, 0.0)

    def body(mask):
        def f(x):
            hot = (_rows(local, (local, e)) & mask) == lax.broadcasted_iota(I32, (local, e), 1)
            return jnp.where(hot, x, 0.0)
        return f

    def sharded(mask):
        return _smap(MESH_TP, body(mask), (P("tp", None),), P("tp", None))

    return Pair("expert_and", "a", "small", {"seq": s, "experts": e}, [Arg((s, e))], ref, sharded(e - 1),
                sharded(e // 2 - 1), f"the expert of a position is pos & {e // 2 - 1} instead of pos & {e - 1}")


# Block-diagonal attention with blocks of the local length (16), queries sharded by tp: the
# reference divides positions by 16, the correct twin shifts them right by 4 (what XLA makes
# of a division by a power of two), the bug by 3 (blocks of 8).
def shift_block(s: int, h: int) -> Pair:
    local = s // TP
    bits = local.bit_length() - 1

    def ref(v):
        i, j = lax.broadcasted_iota(I32, (s, s), 0), lax.broadcasted_iota(I32, (s, s), 1)
        return ((i // local) == (j // local)).astype(F32) @ v

    def body(shift):
        def f(v):
            i, j = _rows(local, (local, s)), lax.broadcasted_iota(I32, (local, s), 1)
            return ((i >> shift) == (j >> shift)).astype(F32) @ v
        return f

    def sharded(shift):
        return _smap(MESH_TP, body(shift), (P(None, None),), P("tp", None))

    return Pair("shift_block", "b", "small", {"seq": s, "hidden": h}, [Arg((s, h))], ref,
                sharded(bits), sharded(bits - 1),
                f"positions are shifted right by {bits - 1} (blocks of {local // 2}) instead of {bits}")


# Attention scaled flax's way, `q / sqrt(64.0)` (a sqrt of a constant in the module), against
# the literal 0.125 XLA folds it to, with queries sharded by tp; the bug scales by
# 1 / sqrt(32): the head_dim's half.
def sqrt_fold(s: int, d: int) -> Pair:
    def attn(q, k, scale):
        return jax.nn.softmax(q @ k.T * scale, axis=-1)

    def ref(q, k):
        return jax.nn.softmax((q / jnp.sqrt(jnp.float32(d))) @ k.T, axis=-1)

    def sharded(scale):
        return _smap(MESH_TP, lambda q, k: attn(q, k, scale), (P("tp", None), P(None, None)), P("tp", None))

    return Pair("sqrt_fold", "a", "small", {"seq": s, "head_dim": d}, [Arg((s, d)), Arg((s, d))], ref,
                sharded(float(np.float32(1 / np.sqrt(d)))), sharded(float(np.float32(1 / np.sqrt(d // 2)))),
                f"the scores are scaled by 1 / sqrt({d // 2}) instead of 1 / sqrt({d})")


# A vocabulary-parallel target logit found with bit operations on the label (the owning
# shard `label >> 4`, the local row `label & 15` for a local vocabulary of 16, as a user
# writes `// 16` and `% 16`); the bug shifts by 3 and masks with 7 (blocks of 8).
def label_bits(b: int, v: int) -> Pair:
    vl = v // TP
    bits = vl.bit_length() - 1

    def ref(x, lab):
        return jnp.take_along_axis(x, lab[:, None], axis=1)[:, 0]

    def body(k):
        def f(x, lab):
            mine = (lab >> k) == lax.axis_index("tp")
            local = jnp.take_along_axis(x, (lab & ((1 << k) - 1))[:, None], axis=1, mode="clip")[:, 0]
            return lax.psum(jnp.where(mine, local, 0.0), "tp")
        return f

    def sharded(k):
        return _smap(MESH_TP, body(k), (P(None, "tp"), P(None)), P(None))

    return Pair("label_bits", "a", "small", {"batch": b, "vocab": v}, [Arg((b, v)), Arg((b,), I32, v)], ref,
                sharded(bits), sharded(bits - 1),
                f"the label's shard and row are label >> {bits - 1} and label & {(1 << (bits - 1)) - 1} "
                f"instead of >> {bits} and & {vl - 1}")


# The same lookup with the owning shard by `label // 16` (the local vocabulary, rewritten
# with it) and the local row by a mask, `label & 15`; the bug masks with 7.
def label_mask(b: int, v: int) -> Pair:
    vl = v // TP

    def ref(x, lab):
        return jnp.take_along_axis(x, lab[:, None], axis=1)[:, 0]

    def body(mask):
        def f(x, lab):
            mine = (lab // vl) == lax.axis_index("tp")
            local = jnp.take_along_axis(x, (lab & mask)[:, None], axis=1, mode="clip")[:, 0]
            return lax.psum(jnp.where(mine, local, 0.0), "tp")
        return f

    def sharded(mask):
        return _smap(MESH_TP, body(mask), (P(None, "tp"), P(None)), P(None))

    return Pair("label_mask", "a", "small", {"batch": b, "vocab": v}, [Arg((b, v)), Arg((b,), I32, v)], ref,
                sharded(vl - 1), sharded(vl // 2 - 1),
                f"the label's row is label & {vl // 2 - 1} instead of & {vl - 1}")


# Positions stored in a narrow integer type, sequence sharded by tp: the correct twin keeps
# them in int16, the bug in int8, which wraps from position 128 on.
def pos_narrow(s: int, h: int) -> Pair:
    local = s // TP

    def ref(x):
        return x * lax.broadcasted_iota(I32, (s, h), 0).astype(F32)

    def body(dtype):
        def f(x):
            return x * _rows(local, (local, h)).astype(dtype).astype(F32)
        return f

    def sharded(dtype):
        return _smap(MESH_TP, body(dtype), (P("tp", None),), P("tp", None))

    return Pair("pos_narrow", "a", "small", {"seq": s, "hidden": h}, [Arg((s, h))], ref, sharded(jnp.int16),
                sharded(jnp.int8), "positions are stored in int8 (wrapping past 127) instead of int16")


# Token ids stored as int16 before an embedding lookup over a 40000-word vocabulary
# (batch sharded by jit): ids past 32767 wrap negative and are clamped to row 0; the correct
# twin keeps int32.
def ids_narrow(b: int, v: int, h: int) -> Pair:
    mesh = jax.sharding.Mesh(np.array(jax.devices()[:TP]), ("dp",))
    sh = jax.sharding.NamedSharding(mesh, P("dp"))

    def ref(table, ids):
        return jnp.take(table, ids, axis=0, mode="clip")

    def twin(dtype):
        def f(table, ids):
            ids = jax.lax.with_sharding_constraint(ids, sh).astype(dtype).astype(I32)
            return jnp.take(table, ids, axis=0, mode="clip")
        return f

    return Pair("ids_narrow", "a", "small", {"batch": b, "vocab": v, "hidden": h},
                [Arg((v, h)), Arg((b,), I32, v)], ref, twin(I32), twin(jnp.int16),
                "token ids are stored in int16 (wrapping past 32767) instead of int32")


# Sequence-parallel positions whose shard offset is written as a shift, `(tp << 4) + i`
# for a local length of 16; the bug shifts by 3 (an offset of tp * 8).
def shl_offset(s: int, h: int) -> Pair:
    local = s // TP
    bits = local.bit_length() - 1

    def ref(x):
        return x * lax.broadcasted_iota(I32, (s, h), 0).astype(F32)

    def body(k):
        def f(x):
            pos = (lax.axis_index("tp") << k) + lax.broadcasted_iota(I32, (local, h), 0)
            return x * pos.astype(F32)
        return f

    def sharded(k):
        return _smap(MESH_TP, body(k), (P("tp", None),), P("tp", None))

    return Pair("shl_offset", "b", "small", {"seq": s, "hidden": h}, [Arg((s, h))], ref, sharded(bits),
                sharded(bits - 1), f"the shard offset is tp << {bits - 1} instead of tp << {bits}")


# A sequence-parallel table lookup whose block starts at `tp << 4` (a dynamic slice of a
# replicated position table, local length 16); the bug starts at `tp << 3`.
def shl_slice(s: int, h: int) -> Pair:
    local = s // TP
    bits = local.bit_length() - 1

    def ref(x, table):
        return x + table

    def body(k):
        def f(x, table):
            return x + lax.dynamic_slice(table, ((lax.axis_index("tp") << k).astype(I32), 0), (local, h))
        return f

    def sharded(k):
        return _smap(MESH_TP, body(k), (P("tp", None), P(None, None)), P("tp", None))

    return Pair("shl_slice", "h", "small", {"seq": s, "hidden": h}, [Arg((s, h)), Arg((s, h))], ref, sharded(bits),
                sharded(bits - 1), f"the table block starts at tp << {bits - 1} instead of tp << {bits}")


def pairs() -> list[Pair]:
    return [
        rng_rows(64, 32), chunk_diag(64, 4, 8), chunk_prev(64, 4, 16), gqa_index(16, 4, 4, 4),
        pad_lse(62, 4), pad_mean(60, 8), conv_dilate(4, 32, 2, 4), seg_pos(4, 64, 2, 24),
        expert_mod(64, 8), sqrt_heads(8, 4, 4, 64), embed_le(128, 64, 4), embed_grad(128, 64, 4),
        logn_count(64, 4), ring_causal(64, 4), next_label(2, 32, 16), pos_bucket(256, 8),
        smooth_count(4, 64), expert_and(64, 8), shift_block(64, 4), sqrt_fold(16, 64),
        label_bits(32, 64), label_mask(32, 64), pos_narrow(256, 4), ids_narrow(64, 40000, 4),
        shl_offset(64, 4), shl_slice(64, 4), rsqrt_count(16, 64), xor_pair(32, 64),
        # realistic sizes
        chunk_diag(4096, 64, 128, "big"), pad_mean(4000, 256, "big"), embed_le(32000, 32000, 128, "big"),
        pad_lse(4094, 64, "big"), rng_rows(2048, 256, "big"),
    ]


# Attention scaled by 1 / sqrt(d) for d = 64 features sharded by tp: the reference multiplies
# by the literal 0.125, the correct twin by rsqrt of the feature count it psums from the
# local widths; the bug takes rsqrt of the local width only.
def rsqrt_count(s: int, d: int) -> Pair:
    def ref(q, k):
        return (q @ k.T) * 0.125

    def body(everyone):
        def f(q, k):
            n = jnp.float32(q.shape[1]) * jnp.ones((), F32)
            n = lax.psum(n, "tp") if everyone else n
            return lax.psum(q @ k.T, "tp") * lax.rsqrt(n)
        return f

    def sharded(everyone):
        return _smap(MESH_TP, body(everyone), (P(None, "tp"), P(None, "tp")), P(None, None))

    return Pair("rsqrt_count", "a", "small", {"seq": s, "d": d}, [Arg((s, d)), Arg((s, d))], ref, sharded(True),
                sharded(False), "the scale is rsqrt of the local feature count instead of the global one")


# Interleaved RoPE pairs (features 2i and 2i + 1 rotate together): the partner of feature
# j is j ^ 1, taken at constant indices; the bug pairs j with j ^ 2.
def xor_pair(s: int, d: int) -> Pair:
    def rot(x, m):
        partner = jnp.take(x, jnp.arange(d) ^ m, axis=1, mode="clip")
        sign = jnp.where(jnp.arange(d) % 2 == 0, -1.0, 1.0)
        return x + sign * partner

    mesh = jax.sharding.Mesh(np.array(jax.devices()[:TP]), ("dp",))
    sh = jax.sharding.NamedSharding(mesh, P("dp", None))

    def twin(m):
        def f(x):
            return jax.lax.with_sharding_constraint(rot(jax.lax.with_sharding_constraint(x, sh), m), sh)
        return f

    return Pair("xor_pair", "h", "small", {"seq": s, "d": d}, [Arg((s, d))], lambda x: rot(x, 1), twin(1), twin(2),
                "feature j is paired with j ^ 2 instead of j ^ 1")


def main() -> int:
    return write_manifest(pairs(), "manifest_redteam2.json", ok_tol=1e-4)


if __name__ == "__main__":
    raise SystemExit(main())
