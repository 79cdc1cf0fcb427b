"""Real-client programs, second batch (issue 14, "new users"): kinds gen_clients.py does not
cover, written the way users write them (flax linen, optax, jax.shard_map plans with
explicit collectives), each exported through `tv_mlir.jax` on 8 CPU devices.

    .venv/bin/python testdata/gen_clients2.py --list
    .venv/bin/python testdata/gen_clients2.py --measure [NAME ...] [--forms partitioned,shardy]
    .venv/bin/python testdata/gen_clients2.py --mutants NAME ...
    .venv/bin/python testdata/gen_clients2.py --export NAME ...   # testdata/clients/NAME.*.mlir

The driver, the Program record and the seeded all-reduce bugs are gen_clients.py's; this
file adds the programs and the seeded bugs of the collectives shard_map plans use
(collective_permute, all_gather, reduce_scatter). A shard_map plan is checked against the
plain function it parallelizes (`reference=`).
"""
from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, str(Path(__file__).resolve().parent))
import flax.linen as nn  # noqa: E402
import gen_clients as g  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import optax  # noqa: E402
from gen_clients import Program, _abstract, _path, _shard, mesh  # noqa: E402
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

lax = jax.lax


def _ce(logits: jax.Array, labels: jax.Array) -> jax.Array:
    return optax.softmax_cross_entropy_with_integer_labels(logits, labels)


def _params(model: nn.Module, *example: Any) -> Any:
    return _abstract(jax.eval_shape(lambda: model.init(jax.random.PRNGKey(0), *example)))


def _megatron(m: jax.sharding.Mesh, column: tuple[str, ...], row: tuple[str, ...], axis: str = "tp") -> Any:
    """Megatron's rule: kernels whose path names a column layer are split on their output,
    a row layer's on their input; the rest replicated."""
    def rule(path: tuple[Any, ...], leaf: Any) -> NamedSharding:
        p = _path(path)
        if p.endswith("kernel") and any(c in p for c in column):
            return NamedSharding(m, P(*([None] * (len(leaf.shape) - 1)), axis))
        if p.endswith("kernel") and any(r in p for r in row):
            return NamedSharding(m, P(axis, *([None] * (len(leaf.shape) - 1))))
        return NamedSharding(m, P())
    return rule


# ---------------------------------------------------------------------------
# 1. T5-style encoder-decoder: RMSNorm, relative position buckets (log-spaced, a learned
#    bias per bucket and head), decoder self- and cross-attention, heads over tp; 2x4.

def t5_buckets(q_len: int, k_len: int, buckets: int = 8, max_distance: int = 16, bidirectional: bool = True
               ) -> jax.Array:
    rel = jnp.arange(k_len)[None, :] - jnp.arange(q_len)[:, None]
    n = -rel
    out = jnp.zeros_like(n)
    if bidirectional:
        buckets //= 2
        out = out + (n < 0).astype(jnp.int32) * buckets
        n = jnp.abs(n)
    else:
        n = jnp.maximum(n, 0)
    exact = buckets // 2
    large = exact + (jnp.log(n.astype(jnp.float32) / exact + 1e-6) / np.log(max_distance / exact)
                     * (buckets - exact)).astype(jnp.int32)
    large = jnp.minimum(large, buckets - 1)
    return out + jnp.where(n < exact, n, large)


class RMSNorm(nn.Module):
    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        scale = self.param("scale", nn.initializers.ones, (x.shape[-1],))
        return x * lax.rsqrt(jnp.mean(x * x, -1, keepdims=True) + 1e-6) * scale


class T5Attention(nn.Module):
    heads: int = 4
    head_dim: int = 2
    relative: bool = False
    causal: bool = False

    @nn.compact
    def __call__(self, x: jax.Array, kv: jax.Array) -> jax.Array:
        dense = lambda name: nn.DenseGeneral((self.heads, self.head_dim), use_bias=False, name=name)  # noqa: E731
        q, k, v = dense("q")(x), dense("k")(kv), dense("v")(kv)
        s = jnp.einsum("bqhd,bkhd->bhqk", q, k)  # T5 does not scale by sqrt(d)
        if self.relative:
            table = self.param("rel_bias", nn.initializers.normal(0.1), (8, self.heads))
            b = t5_buckets(x.shape[1], kv.shape[1], bidirectional=not self.causal)
            s = s + jnp.transpose(table[b], (2, 0, 1))[None]
        if self.causal:
            s = jnp.where(jnp.tril(jnp.ones((x.shape[1], kv.shape[1]), bool)), s, -1e9)
        o = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(s, -1), v)
        return nn.DenseGeneral(x.shape[-1], axis=(-2, -1), use_bias=False, name="o")(o)


class T5(nn.Module):
    vocab: int = 16
    d: int = 8

    @nn.compact
    def __call__(self, src: jax.Array, tgt: jax.Array) -> jax.Array:
        embed = nn.Embed(self.vocab, self.d, name="embed")
        x = embed(src)
        h = RMSNorm(name="enc_ln1")(x)
        x = x + T5Attention(relative=True, name="enc_self")(h, h)
        x = x + nn.Dense(self.d, use_bias=False, name="enc_wo")(
            jax.nn.relu(nn.Dense(16, use_bias=False, name="enc_wi")(RMSNorm(name="enc_ln2")(x))))
        enc = RMSNorm(name="enc_final")(x)
        y = embed(tgt)
        h = RMSNorm(name="dec_ln1")(y)
        y = y + T5Attention(relative=True, causal=True, name="dec_self")(h, h)
        y = y + T5Attention(name="dec_cross")(RMSNorm(name="dec_ln2")(y), enc)
        y = y + nn.Dense(self.d, use_bias=False, name="dec_wo")(
            jax.nn.relu(nn.Dense(16, use_bias=False, name="dec_wi")(RMSNorm(name="dec_ln3")(y))))
        return embed.attend(RMSNorm(name="dec_final")(y) * self.d ** -0.5)


def t5() -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    model = T5()
    tok = jax.ShapeDtypeStruct((2, 4), jnp.int32)
    params = _params(model, jnp.zeros(tok.shape, jnp.int32), jnp.zeros(tok.shape, jnp.int32))

    def rule(path: tuple[Any, ...], leaf: Any) -> NamedSharding:
        p = _path(path)
        if p.endswith(("/q/kernel", "/k/kernel", "/v/kernel")):
            return NamedSharding(m, P(None, "tp", None))
        if p.endswith("/o/kernel"):
            return NamedSharding(m, P("tp", None, None))
        if p.endswith("rel_bias"):
            return NamedSharding(m, P(None, "tp"))
        return _megatron(m, ("wi",), ("wo",))(path, leaf)

    def loss(params: Any, src: jax.Array, tgt: jax.Array, labels: jax.Array) -> jax.Array:
        return _ce(model.apply(params, src, tgt), labels).mean()

    b = NamedSharding(m, P("dp"))
    return Program("t5_encdec", "T5 enc-dec: RMSNorm, relative buckets, cross-attention, heads over tp, 2x4",
                   loss, (params, tok, tok, tok), (_shard(params, rule), b, b, b), NamedSharding(m, P()),
                   {"assume": {"src": (0, 16), "tgt": (0, 16), "labels": (0, 16)}})


# ---------------------------------------------------------------------------
# 2. BERT masked-LM loss: token + position + segment embeddings, a post-LN encoder layer
#    with a padding mask, the MLM head (dense, gelu, LayerNorm, tied decoder + bias), the
#    cross-entropy weighted by the masked positions; 2x4.

class Bert(nn.Module):
    vocab: int = 16
    d: int = 8

    @nn.compact
    def __call__(self, tokens: jax.Array, segments: jax.Array, pad: jax.Array) -> jax.Array:
        embed = nn.Embed(self.vocab, self.d, name="word")
        x = embed(tokens) + nn.Embed(2, self.d, name="type")(segments)
        x = x + self.param("pos", nn.initializers.normal(0.02), (tokens.shape[1], self.d))[None]
        x = nn.LayerNorm(name="emb_ln")(x)
        mask = nn.make_attention_mask(pad, pad)
        a = nn.MultiHeadDotProductAttention(4, deterministic=True, name="attn")(x, x, mask=mask)
        x = nn.LayerNorm(name="ln1")(x + a)
        f = nn.Dense(self.d, name="ffn_out")(nn.gelu(nn.Dense(16, name="ffn_in")(x)))
        x = nn.LayerNorm(name="ln2")(x + f)
        h = nn.LayerNorm(name="mlm_ln")(nn.gelu(nn.Dense(self.d, name="mlm_dense")(x)))
        return embed.attend(h) + self.param("mlm_bias", nn.initializers.zeros, (self.vocab,))


def bert() -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    model = Bert()
    tok = jax.ShapeDtypeStruct((2, 4), jnp.int32)
    z = jnp.zeros(tok.shape, jnp.int32)
    params = _params(model, z, z, z)
    weights = jax.ShapeDtypeStruct((2, 4), jnp.float32)

    def rule(path: tuple[Any, ...], leaf: Any) -> NamedSharding:
        p = _path(path)
        if any(f"{n}/kernel" in p for n in ("query", "key", "value")):
            return NamedSharding(m, P(None, "tp", None))
        if "attn/out/kernel" in p:
            return NamedSharding(m, P("tp", None, None))
        return _megatron(m, ("ffn_in",), ("ffn_out",))(path, leaf)

    def loss(params: Any, tokens: jax.Array, segments: jax.Array, pad: jax.Array, labels: jax.Array,
             weights: jax.Array) -> jax.Array:
        per = _ce(model.apply(params, tokens, segments, pad), labels)
        return jnp.sum(per * weights) / (jnp.sum(weights) + 1e-5)

    b = NamedSharding(m, P("dp"))
    return Program("bert_mlm", "BERT MLM: padding mask, post-LN, tied MLM head, weighted CE, 2x4", loss,
                   (params, tok, tok, tok, tok, weights), (_shard(params, rule), b, b, b, b, b),
                   NamedSharding(m, P()),
                   {"assume": {"tokens": (0, 16), "segments": (0, 2), "pad": (0, 2), "labels": (0, 16),
                               "weights": (0, float("inf"))}})


# ---------------------------------------------------------------------------
# 3. Mixtral-style MoE: top-2 of 4 experts, GShard capacity (a token's slot in its expert
#    is a cumsum over the tokens before it; over capacity it is dropped), SwiGLU experts
#    sharded over an expert axis, tokens over data; 2x4.

def mixtral_moe(x: jax.Array, router: jax.Array, w1: jax.Array, w3: jax.Array, w2: jax.Array,
                capacity: int = 3) -> jax.Array:
    t, e = x.shape[0], router.shape[1]
    probs = jax.nn.softmax(x @ router, -1)
    gates, idx = lax.top_k(probs, 2)
    gates = gates / gates.sum(-1, keepdims=True)
    dispatch = jnp.zeros((t, e, capacity), x.dtype)
    combine = jnp.zeros((t, e, capacity), x.dtype)
    filled = jnp.zeros((e,), jnp.int32)
    for k in range(2):
        onehot = jax.nn.one_hot(idx[:, k], e, dtype=jnp.int32)  # [t, e]
        slot = jnp.cumsum(onehot, 0) - 1 + filled[None]
        keep = onehot * (slot < capacity)
        filled = filled + onehot.sum(0)
        d = keep[..., None] * jax.nn.one_hot(slot, capacity, dtype=jnp.int32)
        dispatch = dispatch + d.astype(x.dtype)
        combine = combine + d.astype(x.dtype) * gates[:, k, None, None]
    xe = jnp.einsum("tec,th->ech", dispatch, x)
    h = jax.nn.silu(jnp.einsum("ech,ehf->ecf", xe, w1)) * jnp.einsum("ech,ehf->ecf", xe, w3)
    ye = jnp.einsum("ecf,efh->ech", h, w2)
    return jnp.einsum("tec,ech->th", combine, ye)


def mixtral() -> Program:
    m = mesh((2, 4), ("data", "expert"))
    x = jax.ShapeDtypeStruct((8, 4), jnp.float32)
    r = jax.ShapeDtypeStruct((4, 4), jnp.float32)
    w = jax.ShapeDtypeStruct((4, 4, 8), jnp.float32)
    w2 = jax.ShapeDtypeStruct((4, 8, 4), jnp.float32)
    es = NamedSharding(m, P("expert"))
    return Program("mixtral_capacity", "Mixtral top-2 MoE, GShard capacity (cumsum slots), experts over 4, 2x4",
                   mixtral_moe, (x, r, w, w, w2), (NamedSharding(m, P("data")), NamedSharding(m, P()), es, es, es),
                   NamedSharding(m, P("data")))


# ---------------------------------------------------------------------------
# 4. A GPipe-style pipeline in shard_map: 4 stages hold one layer each, 4 microbatches
#    enter stage 0 one per tick, activations move stage to stage by ppermute inside a
#    fori_loop; the last stage's outputs are summed out (psum) over stages; batch over dp.

def pipeline() -> Program:
    m = mesh((2, 4), ("dp", "stage"))
    n, micro = 4, 4
    w = jax.ShapeDtypeStruct((n, 4, 4), jnp.float32)
    x = jax.ShapeDtypeStruct((micro, 4, 4), jnp.float32)  # [microbatch, rows, features]

    def body(w: jax.Array, x: jax.Array) -> jax.Array:
        stage = lax.axis_index("stage")

        def tick(i: jax.Array, carry: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
            state, outs = carry
            feed = lax.dynamic_index_in_dim(x, jnp.minimum(i, micro - 1), keepdims=False)
            inp = jnp.where(stage == 0, feed, state)
            out = jnp.tanh(inp @ w[0])
            j = i - (n - 1)
            done = lax.dynamic_update_index_in_dim(outs, out, jnp.clip(j, 0, micro - 1), 0)
            outs = jnp.where((stage == n - 1) & (j >= 0), done, outs)
            state = lax.ppermute(out, "stage", [(s, (s + 1) % n) for s in range(n)])
            return state, outs

        _, outs = lax.fori_loop(0, micro + n - 1, tick, (jnp.zeros_like(x[0]), jnp.zeros_like(x)))
        return lax.psum(outs, "stage")

    def ref(w: jax.Array, x: jax.Array) -> jax.Array:
        for s in range(n):
            x = jnp.tanh(x @ w[s])
        return x

    fn = jax.shard_map(body, mesh=m, in_specs=(P("stage"), P(None, "dp")), out_specs=P(None, "dp"),
                       check_vma=False)
    return Program("pipeline_ppermute", "GPipe in shard_map: 4 stages, 4 microbatches, ppermute in fori_loop, 2x4",
                   fn, (w, x), (NamedSharding(m, P("stage")), NamedSharding(m, P(None, "dp"))),
                   NamedSharding(m, P(None, "dp")), reference=ref)


# ---------------------------------------------------------------------------
# 5./6. Ring attention in shard_map: the sequence is split over 4 devices, the key/value
#    blocks travel round the ring (ppermute). `ring_attention`: two passes (the row max,
#    then the exponentials against it): exact. `ring_flash`: one pass with an online
#    softmax (a running max; earlier sums rescaled by exp(m_old - m_new)), as flash/ring
#    attention code is written.

def _attn_ref(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
    s = jnp.einsum("bqd,bkd->bqk", q, k) / np.sqrt(q.shape[-1]).astype(np.float32)
    return jnp.einsum("bqk,bkd->bqd", jax.nn.softmax(s, -1), v)


def _ring(axis: str, n: int) -> list[tuple[int, int]]:
    return [(s, (s + 1) % n) for s in range(n)]


def ring_attention(online: bool) -> Program:
    m = mesh((2, 4), ("dp", "sp"))
    n = 4
    q = jax.ShapeDtypeStruct((2, 8, 4), jnp.float32)
    scale = np.float32(1 / np.sqrt(4))

    def two_pass(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
        mx = jnp.full(q.shape[:2] + (1,), -jnp.inf, q.dtype)
        kk = k
        for _ in range(n):
            mx = jnp.maximum(mx, jnp.max(jnp.einsum("bqd,bkd->bqk", q, kk) * scale, -1, keepdims=True))
            kk = lax.ppermute(kk, "sp", _ring("sp", n))
        num, den = jnp.zeros_like(q), jnp.zeros(q.shape[:2] + (1,), q.dtype)
        for _ in range(n):
            p = jnp.exp(jnp.einsum("bqd,bkd->bqk", q, k) * scale - mx)
            num, den = num + jnp.einsum("bqk,bkd->bqd", p, v), den + p.sum(-1, keepdims=True)
            k, v = lax.ppermute(k, "sp", _ring("sp", n)), lax.ppermute(v, "sp", _ring("sp", n))
        return num / den

    def flash(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
        mx = jnp.full(q.shape[:2] + (1,), -jnp.inf, q.dtype)
        num, den = jnp.zeros_like(q), jnp.zeros(q.shape[:2] + (1,), q.dtype)
        for _ in range(n):
            s = jnp.einsum("bqd,bkd->bqk", q, k) * scale
            new = jnp.maximum(mx, s.max(-1, keepdims=True))
            c = jnp.exp(mx - new)
            p = jnp.exp(s - new)
            num, den, mx = num * c + jnp.einsum("bqk,bkd->bqd", p, v), den * c + p.sum(-1, keepdims=True), new
            k, v = lax.ppermute(k, "sp", _ring("sp", n)), lax.ppermute(v, "sp", _ring("sp", n))
        return num / den

    spec = P("dp", "sp")
    fn = jax.shard_map(flash if online else two_pass, mesh=m, in_specs=(spec, spec, spec), out_specs=spec,
                       check_vma=False)
    s = NamedSharding(m, spec)
    name = "ring_flash" if online else "ring_attention"
    what = "online softmax (flash)" if online else "two passes (max, then exp)"
    return Program(name, f"ring attention in shard_map, k/v by ppermute, {what}, 2x4", fn, (q, q, q),
                   (s, s, s), s, reference=_attn_ref)


# ---------------------------------------------------------------------------
# 7. ZeRO-3 / FSDP by hand in shard_map: parameters sharded over 8, all_gather before use,
#    gradients reduce-scattered (psum_scatter) back to the shards, SGD on the shard.

def zero_fsdp() -> Program:
    m = mesh((8,), ("fsdp",))
    w1 = jax.ShapeDtypeStruct((8, 16), jnp.float32)
    w2 = jax.ShapeDtypeStruct((16, 4), jnp.float32)
    x = jax.ShapeDtypeStruct((16, 8), jnp.float32)
    y = jax.ShapeDtypeStruct((16, 4), jnp.float32)
    batch = 16

    def loss(w1: jax.Array, w2: jax.Array, x: jax.Array, y: jax.Array) -> jax.Array:
        return jnp.sum((jnp.tanh(x @ w1) @ w2 - y) ** 2) / batch

    def body(w1s: jax.Array, w2s: jax.Array, x: jax.Array, y: jax.Array) -> Any:
        w1 = lax.all_gather(w1s, "fsdp", axis=1, tiled=True)
        w2 = lax.all_gather(w2s, "fsdp", axis=0, tiled=True)
        lv, (g1, g2) = jax.value_and_grad(loss, (0, 1))(w1, w2, x, y)
        g1 = lax.psum_scatter(g1, "fsdp", scatter_dimension=1, tiled=True)
        g2 = lax.psum_scatter(g2, "fsdp", scatter_dimension=0, tiled=True)
        return w1s - 0.1 * g1, w2s - 0.1 * g2, lax.psum(lv, "fsdp")

    def ref(w1: jax.Array, w2: jax.Array, x: jax.Array, y: jax.Array) -> Any:
        lv, (g1, g2) = jax.value_and_grad(loss, (0, 1))(w1, w2, x, y)
        return w1 - 0.1 * g1, w2 - 0.1 * g2, lv

    specs = (P(None, "fsdp"), P("fsdp", None), P("fsdp"), P("fsdp"))
    fn = jax.shard_map(body, mesh=m, in_specs=specs, out_specs=(specs[0], specs[1], P()), check_vma=False)
    return Program("zero_fsdp", "ZeRO-3 in shard_map: all_gather params, psum_scatter grads, SGD, mesh 8",
                   fn, (w1, w2, x, y), tuple(NamedSharding(m, s) for s in specs),
                   (NamedSharding(m, specs[0]), NamedSharding(m, specs[1]), NamedSharding(m, P())), reference=ref)


# ---------------------------------------------------------------------------
# 8. Megatron sequence parallelism in shard_map: LayerNorm on the sequence shard, all_gather
#    along the sequence into a column-parallel dense, a row-parallel dense, reduce_scatter
#    back along the sequence, the residual; 2x4 (dp, tp).

def _ln(x: jax.Array, g: jax.Array) -> jax.Array:
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) * lax.rsqrt(var + 1e-5) * g


def megatron_sp() -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    x = jax.ShapeDtypeStruct((2, 8, 4), jnp.float32)
    gam = jax.ShapeDtypeStruct((4,), jnp.float32)
    w1 = jax.ShapeDtypeStruct((4, 16), jnp.float32)
    w2 = jax.ShapeDtypeStruct((16, 4), jnp.float32)

    def body(x: jax.Array, gam: jax.Array, w1: jax.Array, w2: jax.Array) -> jax.Array:
        h = lax.all_gather(_ln(x, gam), "tp", axis=1, tiled=True)
        h = jax.nn.gelu(h @ w1) @ w2  # a partial sum over tp
        return x + lax.psum_scatter(h, "tp", scatter_dimension=1, tiled=True)

    def ref(x: jax.Array, gam: jax.Array, w1: jax.Array, w2: jax.Array) -> jax.Array:
        return x + jax.nn.gelu(_ln(x, gam) @ w1) @ w2

    specs = (P("dp", "tp"), P(), P(None, "tp"), P("tp", None))
    fn = jax.shard_map(body, mesh=m, in_specs=specs, out_specs=specs[0], check_vma=False)
    return Program("megatron_sp", "Megatron sequence parallel: LN, all_gather seq, col/row dense, "
                   "reduce_scatter seq, 2x4", fn, (x, gam, w1, w2), tuple(NamedSharding(m, s) for s in specs),
                   NamedSharding(m, specs[0]), reference=ref)


# ---------------------------------------------------------------------------
# 9. Gradient accumulation with lax.fori_loop over microbatches (dynamic_slice of the
#    batch), then adam; jit with NamedShardings, 2x4.

def grad_accum() -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    params = {"w1": jax.ShapeDtypeStruct((4, 8), jnp.float32), "w2": jax.ShapeDtypeStruct((8, 2), jnp.float32)}
    tx = optax.adam(1e-2)
    opt = _abstract(jax.eval_shape(tx.init, params))
    x = jax.ShapeDtypeStruct((4, 8, 4), jnp.float32)  # [microbatch, rows, features]
    y = jax.ShapeDtypeStruct((4, 8, 2), jnp.float32)

    def loss(p: Any, x: jax.Array, y: jax.Array) -> jax.Array:
        return jnp.mean((jnp.tanh(x @ p["w1"]) @ p["w2"] - y) ** 2)

    def step(params: Any, opt: Any, x: jax.Array, y: jax.Array) -> Any:
        def micro(i: jax.Array, acc: Any) -> Any:
            xi = lax.dynamic_index_in_dim(x, i, keepdims=False)
            yi = lax.dynamic_index_in_dim(y, i, keepdims=False)
            lv, gr = jax.value_and_grad(loss)(params, xi, yi)
            return jax.tree.map(jnp.add, acc, (lv, gr))
        zero = (jnp.zeros(()), jax.tree.map(jnp.zeros_like, params))
        lv, gr = lax.fori_loop(0, x.shape[0], micro, zero)
        gr = jax.tree.map(lambda a: a / x.shape[0], gr)
        upd, opt = tx.update(gr, opt, params)
        return optax.apply_updates(params, upd), opt, lv / x.shape[0]

    psh = {"w1": NamedSharding(m, P(None, "tp")), "w2": NamedSharding(m, P("tp", None))}
    osh = _shard(opt, lambda path, leaf: psh[_path(path).split("/")[-1]]
                 if _path(path).split("/")[-1] in psh else NamedSharding(m, P()))
    b = NamedSharding(m, P(None, "dp"))
    return Program("grad_accum_fori", "gradient accumulation in lax.fori_loop over 4 microbatches, adam, 2x4",
                   step, (params, opt, x, y), (psh, osh, b, b), (psh, osh, NamedSharding(m, P())),
                   {"assume": {"*count*": (0, 2**31 - 1), "*nu*": (0, float("inf"))}})


# ---------------------------------------------------------------------------
# 10. fp16 mixed precision with dynamic loss scaling (jmp's DynamicLossScale, by hand):
#     the loss scaled, f16 gradients unscaled in f32, the step skipped and the scale halved
#     when a gradient is not finite, the scale doubled after 2 good steps; 2x4.

def loss_scale() -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    params = {"w": jax.ShapeDtypeStruct((8, 8), jnp.float32)}
    x = jax.ShapeDtypeStruct((8, 8), jnp.float32)
    scale = jax.ShapeDtypeStruct((), jnp.float32)
    good = jax.ShapeDtypeStruct((), jnp.int32)

    def step(params: Any, x: jax.Array, scale: jax.Array, good: jax.Array) -> Any:
        def scaled(p: Any) -> jax.Array:
            h = jnp.tanh(x.astype(jnp.float16) @ p["w"].astype(jnp.float16))
            return jnp.mean(h.astype(jnp.float32) ** 2) * scale
        g = jax.grad(scaled)(params)
        g = jax.tree.map(lambda a: a.astype(jnp.float32) / scale, g)
        finite = jnp.all(jnp.array([jnp.all(jnp.isfinite(a)) for a in jax.tree.leaves(g)]))
        new = jax.tree.map(lambda p, a: jnp.where(finite, p - 0.1 * a, p), params, g)
        grow = finite & (good + 1 >= 2)
        scale = jnp.where(finite, jnp.where(grow, scale * 2, scale), jnp.maximum(scale / 2, 1.0))
        good = jnp.where(finite & ~grow, good + 1, 0)
        return new, scale, good

    psh = {"w": NamedSharding(m, P(None, "tp"))}
    r = NamedSharding(m, P())
    return Program("fp16_loss_scale", "fp16 grads, dynamic loss scaling (skip non-finite, grow/shrink), 2x4",
                   step, (params, x, scale, good), (psh, NamedSharding(m, P("dp")), r, r), (psh, r, r),
                   {"assume": {"scale": (0, float("inf")), "good": (0, 2**31 - 1)}})


# ---------------------------------------------------------------------------
# 11.-13. optax chains: clip_by_global_norm + adafactor (factored second moments); lion
#    (sign of an interpolation); lamb (a trust ratio of norms per leaf). 2x4.

def _opt_step(name: str, what: str, tx: optax.GradientTransformation, assume: dict[str, Any]) -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    params = {"w1": jax.ShapeDtypeStruct((8, 16), jnp.float32), "b1": jax.ShapeDtypeStruct((16,), jnp.float32),
              "w2": jax.ShapeDtypeStruct((16, 4), jnp.float32)}
    opt = _abstract(jax.eval_shape(tx.init, params))
    x = jax.ShapeDtypeStruct((8, 8), jnp.float32)

    def step(params: Any, opt: Any, x: jax.Array) -> Any:
        def loss(p: Any) -> jax.Array:
            return jnp.mean((jax.nn.relu(x @ p["w1"] + p["b1"]) @ p["w2"]) ** 2)
        lv, gr = jax.value_and_grad(loss)(params)
        upd, opt = tx.update(gr, opt, params)
        return optax.apply_updates(params, upd), opt, lv

    spec = {"w1": P(None, "tp"), "b1": P("tp"), "w2": P("tp", None)}

    def rule(path: tuple[Any, ...], leaf: Any) -> NamedSharding:
        key = next((k for k in spec if f"/{k}" in "/" + _path(path) + "/"), None)
        if key is not None and leaf.shape == params[key].shape:
            return NamedSharding(m, spec[key])
        return NamedSharding(m, P())  # adafactor's factored rows/columns, counts

    psh = {k: NamedSharding(m, s) for k, s in spec.items()}
    osh = _shard(opt, rule)
    return Program(name, what, step, (params, opt, x), (psh, osh, NamedSharding(m, P("dp"))),
                   (psh, osh, NamedSharding(m, P())), {"assume": assume} if assume else {})


def adafactor() -> Program:
    tx = optax.chain(optax.clip_by_global_norm(1.0), optax.adafactor(1e-2, min_dim_size_to_factor=4))
    return _opt_step("optax_adafactor", "clip_by_global_norm + adafactor (factored v), 2x4", tx,
                     {"*count*": (0, 2**31 - 1), "*v_row*": (0, float("inf")), "*v_col*": (0, float("inf")),
                      "*.v[*": (0, float("inf"))})


def lion() -> Program:
    return _opt_step("optax_lion", "clip_by_global_norm + lion (sign updates), 2x4",
                     optax.chain(optax.clip_by_global_norm(1.0), optax.lion(1e-3)), {"*count*": (0, 2**31 - 1)})


def lamb() -> Program:
    return _opt_step("optax_lamb", "lamb (trust ratio of norms per leaf), 2x4", optax.lamb(1e-3),
                     {"*count*": (0, 2**31 - 1), "*nu*": (0, float("inf"))})


# ---------------------------------------------------------------------------
# 14. A UNet-ish block: conv, GroupNorm, SiLU, downsample (strided conv), upsample
#     (jax.image.resize nearest), skip concat, conv; batch over dp, channels over tp; 2x4.

class UNet(nn.Module):
    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        h = nn.silu(nn.GroupNorm(num_groups=2, name="gn1")(nn.Conv(8, (3, 3), name="c1")(x)))
        d = nn.silu(nn.GroupNorm(num_groups=2, name="gn2")(nn.Conv(8, (3, 3), strides=(2, 2), name="down")(h)))
        b, hh, ww, c = d.shape
        u = jax.image.resize(d, (b, hh * 2, ww * 2, c), "nearest")
        return nn.Conv(4, (3, 3), name="out")(jnp.concatenate([h, u], -1))


def unet() -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    model = UNet()
    img = jax.ShapeDtypeStruct((2, 8, 8, 2), jnp.float32)
    params = _params(model, jnp.zeros(img.shape))

    def rule(path: tuple[Any, ...], leaf: Any) -> NamedSharding:
        p = _path(path)
        if p.endswith("kernel") and "out" not in p:
            return NamedSharding(m, P(None, None, None, "tp"))
        return NamedSharding(m, P())

    def fwd(params: Any, img: jax.Array) -> jax.Array:
        return model.apply(params, img)

    return Program("unet_groupnorm", "UNet block: conv, GroupNorm, SiLU, strided down, resize up, skip, 2x4",
                   fwd, (params, img), (_shard(params, rule), NamedSharding(m, P("dp"))), NamedSharding(m, P("dp")))


# ---------------------------------------------------------------------------
# 15. jnp.einsum with five operands (opt_einsum picks the contraction order), on a
#     three-axis mesh with a two-axis dimension; 2x2x2.

def einsum5() -> Program:
    m = mesh((2, 2, 2), ("x", "y", "z"))
    a = jax.ShapeDtypeStruct((4, 8, 4), jnp.float32)  # b i j
    b = jax.ShapeDtypeStruct((4, 4, 8), jnp.float32)  # b j k
    c = jax.ShapeDtypeStruct((8, 4), jnp.float32)  # k l
    d = jax.ShapeDtypeStruct((4, 8), jnp.float32)  # l m
    e = jax.ShapeDtypeStruct((4, 8), jnp.float32)  # b m

    def fwd(a: jax.Array, b: jax.Array, c: jax.Array, d: jax.Array, e: jax.Array) -> jax.Array:
        return jnp.einsum("bij,bjk,kl,lm,bm->bi", a, b, c, d, e)

    S = lambda *s: NamedSharding(m, P(*s))  # noqa: E731
    return Program("einsum5", "jnp.einsum of 5 operands, 3-d mesh, a dim over (x, y), 2x2x2", fwd, (a, b, c, d, e),
                   (S("x", "y"), S("x", None, ("y", "z")), S(("y", "z")), S(None, "z"), S("x", "z")), S("x"))


# ---------------------------------------------------------------------------
# 16. lax.associative_scan: a linear recurrence h_t = a_t h_{t-1} + b_t (an S4/Mamba-style
#     scan) along a sequence sharded over 4; 2x4.

def assoc_scan() -> Program:
    m = mesh((2, 4), ("dp", "sp"))
    a = jax.ShapeDtypeStruct((2, 8, 4), jnp.float32)

    def fwd(a: jax.Array, b: jax.Array) -> jax.Array:
        def combine(l: tuple[jax.Array, jax.Array], r: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
            return l[0] * r[0], r[0] * l[1] + r[1]
        return lax.associative_scan(combine, (jax.nn.sigmoid(a), b), axis=1)[1]

    s = NamedSharding(m, P("dp", "sp"))
    return Program("assoc_scan", "lax.associative_scan linear recurrence, sequence over 4, 2x4", fwd, (a, a),
                   (s, s), s)


# ---------------------------------------------------------------------------
# 17. Top-p (nucleus) sampling: sort descending, softmax, cumsum, mask past p, Gumbel
#     sample (jax.random.categorical), the sorted index mapped back; vocab over tp, 2x4.

def top_p() -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    logits = jax.ShapeDtypeStruct((4, 16), jnp.float32)
    key = jax.ShapeDtypeStruct((2,), jnp.uint32)

    def fwd(logits: jax.Array, key: jax.Array) -> jax.Array:
        order = jnp.argsort(-logits, axis=-1)
        srt = jnp.take_along_axis(logits, order, -1)
        probs = jax.nn.softmax(srt, -1)
        cut = jnp.cumsum(probs, -1) - probs > 0.9
        pick = jax.random.categorical(key, jnp.where(cut, -jnp.inf, srt), axis=-1)
        return jnp.take_along_axis(order, pick[:, None], -1)[:, 0]

    return Program("top_p_sampling", "sort-based top-p sampling, vocab over tp, 2x4", fwd, (logits, key),
                   (NamedSharding(m, P("dp", "tp")), NamedSharding(m, P())), NamedSharding(m, P("dp")))


# ---------------------------------------------------------------------------
# 18. Graph message passing: gather by source node, a dense, jax.ops.segment_sum by
#     destination (a scatter-add), edges sharded over 8.

def segment_sum() -> Program:
    m = mesh((8,), ("e",))
    x = jax.ShapeDtypeStruct((6, 4), jnp.float32)
    w = jax.ShapeDtypeStruct((4, 4), jnp.float32)
    src = jax.ShapeDtypeStruct((16,), jnp.int32)

    def fwd(x: jax.Array, w: jax.Array, src: jax.Array, dst: jax.Array) -> jax.Array:
        msg = jnp.tanh(x[src] @ w)
        agg = jax.ops.segment_sum(msg, dst, num_segments=x.shape[0])
        deg = jax.ops.segment_sum(jnp.ones_like(dst, jnp.float32), dst, num_segments=x.shape[0])
        return x + agg / jnp.maximum(deg, 1.0)[:, None]

    r, es = NamedSharding(m, P()), NamedSharding(m, P("e"))
    return Program("segment_sum", "GNN message passing: gather, segment_sum (scatter-add), edges over 8, mesh 8",
                   fwd, (x, w, src, src), (r, r, es, es), r, {"assume": {"src": (0, 6), "dst": (0, 6)}})


# ---------------------------------------------------------------------------
# 19. jax.custom_vjp: a gradient-clipping identity and a softplus with a hand-written
#     backward, inside value_and_grad; 2x4.

@jax.custom_vjp
def clip_grad(x: jax.Array) -> jax.Array:
    return x


clip_grad.defvjp(lambda x: (x, None), lambda _, g: (jnp.clip(g, -0.5, 0.5),))


@jax.custom_vjp
def softplus(x: jax.Array) -> jax.Array:
    return jnp.logaddexp(x, 0.0)


softplus.defvjp(lambda x: (softplus(x), x), lambda x, g: (g * jax.nn.sigmoid(x),))


def custom_vjp() -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    w1 = jax.ShapeDtypeStruct((8, 16), jnp.float32)
    w2 = jax.ShapeDtypeStruct((16, 4), jnp.float32)
    x = jax.ShapeDtypeStruct((8, 8), jnp.float32)

    def fn(w1: jax.Array, w2: jax.Array, x: jax.Array) -> Any:
        def loss(w1: jax.Array, w2: jax.Array) -> jax.Array:
            return jnp.mean(clip_grad(softplus(x @ w1) @ w2) ** 2)
        return jax.value_and_grad(loss, (0, 1))(w1, w2)

    S = lambda *s: NamedSharding(m, P(*s))  # noqa: E731
    return Program("custom_vjp", "custom_vjp (clipped-gradient identity, softplus), value_and_grad, 2x4", fn,
                   (w1, w2, x), (S(None, "tp"), S("tp", None), S("dp")), (S(), (S(None, "tp"), S("tp", None))))


# ---------------------------------------------------------------------------
# 20. jax.checkpoint with policies: save_only_these_names (checkpoint_name) and
#     dots_with_no_batch_dims_saveable, in a 2-layer residual MLP's gradient; 2x4.

def remat_policy() -> Program:
    from jax.ad_checkpoint import checkpoint_name

    m = mesh((2, 4), ("dp", "tp"))
    w = jax.ShapeDtypeStruct((2, 8, 8), jnp.float32)
    x = jax.ShapeDtypeStruct((8, 8), jnp.float32)

    def block(h: jax.Array, wi: jax.Array) -> jax.Array:
        a = checkpoint_name(h @ wi, "proj")
        return h + jax.nn.gelu(a) * jnp.tanh(a)

    named = jax.checkpoint(block, policy=jax.checkpoint_policies.save_only_these_names("proj"))
    dots = jax.checkpoint(block, policy=jax.checkpoint_policies.dots_with_no_batch_dims_saveable)

    def fn(w: jax.Array, x: jax.Array) -> Any:
        return jax.value_and_grad(lambda w: jnp.sum(dots(named(x, w[0]), w[1]) ** 2))(w)

    ws = NamedSharding(m, P(None, None, "tp"))
    return Program("remat_policy", "jax.checkpoint policies (save_only_these_names, dots saveable), grad, 2x4",
                   fn, (w, x), (ws, NamedSharding(m, P("dp"))), (NamedSharding(m, P()), ws))


# ---------------------------------------------------------------------------
# 21. A 3-d mesh (2x2x2) with dims over two axes, constraints that split an (x, y)-sharded
#     dim by a reshape into sub-axes, and a transpose onto another axis pair.

def mesh3d() -> Program:
    m = mesh((2, 2, 2), ("x", "y", "z"))
    a = jax.ShapeDtypeStruct((16, 8), jnp.float32)
    w = jax.ShapeDtypeStruct((8, 8), jnp.float32)

    def fwd(a: jax.Array, w: jax.Array) -> jax.Array:
        h = jnp.tanh(a @ w)  # [16, 8], rows over (x, y)
        r = h.reshape(2, 8, 8)
        r = lax.with_sharding_constraint(r, NamedSharding(m, P("x", ("y", "z"), None)))
        t = jnp.swapaxes(r, 1, 2) * 2.0
        t = lax.with_sharding_constraint(t, NamedSharding(m, P(None, ("z", "x"), "y")))
        return t.sum(0)

    return Program("mesh3d_subaxes", "3-d mesh, dims over axis pairs, reshape into sub-axes, 2x2x2", fwd, (a, w),
                   (NamedSharding(m, P(("x", "y"))), NamedSharding(m, P(None, "z"))),
                   NamedSharding(m, P(("z", "x"))))


# ---------------------------------------------------------------------------
# 22. Explicit sharding (AxisType.Explicit): a contraction over a sharded dim whose result
#     is declared unreduced (`P(..., unreduced={"tp"})`), then resharded (the all-reduce)
#     after a further linear op; 2x4.

def unreduced() -> Program:
    m = jax.make_mesh((2, 4), ("dp", "tp"), axis_types=(jax.sharding.AxisType.Explicit,) * 2)
    x = jax.ShapeDtypeStruct((8, 16), jnp.float32)
    w = jax.ShapeDtypeStruct((16, 4), jnp.float32)

    def fwd(x: jax.Array, w: jax.Array) -> jax.Array:
        y = jnp.dot(x, w, out_sharding=NamedSharding(m, P("dp", None, unreduced={"tp"})))
        y = y + y  # unreduced plus unreduced stays unreduced
        return jnp.tanh(jax.sharding.reshard(y, NamedSharding(m, P("dp", None))))

    def ref(x: jax.Array, w: jax.Array) -> jax.Array:
        return jnp.tanh(2.0 * (x @ w))

    return Program("unreduced", "explicit axes: an unreduced dot result, then reshard, 2x4", fwd, (x, w),
                   (NamedSharding(m, P("dp", "tp")), NamedSharding(m, P("tp", None))), NamedSharding(m, P("dp")),
                   reference=ref)


# ---------------------------------------------------------------------------
# 20.-21. Adam as users call it, with nothing assumed of its state: the step count may be
#    -1 (the bias correction 1 - b1^(count + 1) is then 0, so every update's IEEE class
#    depends on the inputs) and nu may be negative. XLA folds optax's `nu_hat + eps_root`
#    (eps_root = 0) away in the partitioned module; the reference keeps the + 0.0. A ViT
#    block (conv patch embedding, LayerNorm, attention, GELU MLP) over dp x tp, and the
#    small MLP of the optax chains. Both were `unknown` (no proof under the term budget)
#    until the class of a sum with a finite operand is the other operand's class.

class ViT(nn.Module):
    dim: int = 16
    heads: int = 4
    classes: int = 8

    @nn.compact
    def __call__(self, img: jax.Array) -> jax.Array:
        x = nn.Conv(self.dim, (4, 4), strides=(4, 4), name="patch")(img)
        x = x.reshape(x.shape[0], -1, self.dim)
        h = nn.LayerNorm(name="ln1")(x)
        x = x + nn.MultiHeadDotProductAttention(num_heads=self.heads, name="attn")(h, h)
        h = nn.gelu(nn.Dense(4 * self.dim, name="mlp_in")(nn.LayerNorm(name="ln2")(x)))
        x = x + nn.Dense(self.dim, name="mlp_out")(h)
        return nn.Dense(self.classes, name="head")(nn.LayerNorm(name="ln_f")(x).mean(axis=1))


def vit_adamw() -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    model = ViT()
    img = jax.ShapeDtypeStruct((8, 8, 8, 3), jnp.float32)
    labels = jax.ShapeDtypeStruct((8,), jnp.int32)
    params = _params(model, jnp.zeros(img.shape))
    tx = optax.adamw(1e-3)
    opt = _abstract(jax.eval_shape(tx.init, params))

    def step(params: Any, opt: Any, img: jax.Array, labels: jax.Array) -> Any:
        def loss(p: Any) -> jax.Array:
            return _ce(model.apply(p, img), labels).mean()
        lv, gr = jax.value_and_grad(loss)(params)
        upd, opt = tx.update(gr, opt, params)
        return optax.apply_updates(params, upd), opt, lv

    def rule(path: tuple[Any, ...], leaf: Any) -> NamedSharding:
        p = _path(path)
        if "mlp_in" in p and p.endswith("kernel"):
            return NamedSharding(m, P(None, "tp"))
        if "mlp_out" in p and p.endswith("kernel"):
            return NamedSharding(m, P("tp", None))
        if "attn" in p and any(k in p for k in ("query", "key", "value")) and p.endswith("kernel"):
            return NamedSharding(m, P(None, "tp", None))
        if "attn/out" in p and p.endswith("kernel"):
            return NamedSharding(m, P("tp", None, None))
        return NamedSharding(m, P())

    psh, osh = _shard(params, rule), _shard(opt, rule)
    batch = NamedSharding(m, P("dp"))
    return Program("vit_adamw", "ViT block + adamw, nothing assumed of the optimizer state, 2x4", step,
                   (params, opt, img, labels), (psh, osh, batch, batch), (psh, osh, NamedSharding(m, P())),
                   {"assume": {"labels": (0, 8)}})


def adamw_unassumed() -> Program:
    return _opt_step("adamw_unassumed", "adamw, nothing assumed of count or nu, 2x4", optax.adamw(1e-3), {})


def clip_adamw() -> Program:
    return _opt_step("clip_adamw", "clip_by_global_norm + adamw, count and nu assumed, 2x4",
                     optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(1e-3)),
                     {"*count*": (0, 2**31 - 1), "*nu*": (0, float("inf"))})


# ---------------------------------------------------------------------------
# 23. A Gemma-like train step: tied embeddings sharded over the vocabulary and used as the
#     LM head (`Embed.attend`), tanh softcaps on the attention scores and the logits, a
#     sliding-window causal mask, GeGLU, (1 + scale) RMSNorm, a z-loss, and
#     clip_by_global_norm + sgd with momentum; the MLP FSDP x tp. Checked by hand in stop 39:
#     equivalent, and six dropped all-reduces and a wrong mesh axis all confirmed.

class _GemmaNorm(nn.Module):
    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        s = self.param("scale", nn.initializers.zeros, (x.shape[-1],))
        return x * lax.rsqrt(jnp.mean(x * x, -1, keepdims=True) + 1e-6) * (1 + s)


class Gemma(nn.Module):
    vocab: int = 32
    dim: int = 16
    heads: int = 4
    ffn: int = 32
    window: int = 4

    @nn.compact
    def __call__(self, tok: jax.Array) -> jax.Array:
        emb = nn.Embed(self.vocab, self.dim, name="embed")
        x = emb(tok) * np.sqrt(self.dim)
        hd, s = self.dim // self.heads, tok.shape[1]
        h = _GemmaNorm(name="ln1")(x)
        q, k, v = (nn.DenseGeneral((self.heads, hd), use_bias=False, name=n)(h) for n in ("q", "k", "v"))
        i = jnp.arange(s)
        near = (i[:, None] >= i[None, :]) & (i[:, None] - i[None, :] < self.window)
        a = 50.0 * jnp.tanh(jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(hd) / 50.0)
        o = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(jnp.where(near, a, -1e30), -1), v)
        x = x + nn.DenseGeneral(self.dim, axis=(-2, -1), use_bias=False, name="o")(o)
        h = _GemmaNorm(name="ln2")(x)
        g, u = (nn.Dense(self.ffn, use_bias=False, name=n)(h) for n in ("gate", "up"))
        x = x + nn.Dense(self.dim, use_bias=False, name="down")(jax.nn.gelu(g) * u)
        return 30.0 * jnp.tanh(emb.attend(_GemmaNorm(name="final")(x)) / 30.0)


def gemma() -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    model = Gemma()
    tok = jax.ShapeDtypeStruct((4, 8), jnp.int32)
    params = _params(model, jnp.zeros(tok.shape, jnp.int32))
    tx = optax.chain(optax.clip_by_global_norm(1.0), optax.sgd(1e-2, momentum=0.9))
    opt = _abstract(jax.eval_shape(tx.init, params))

    def step(params: Any, opt: Any, tok: jax.Array, labels: jax.Array) -> Any:
        def loss(p: Any) -> jax.Array:
            lg = model.apply(p, tok)
            lse = jax.nn.logsumexp(lg, -1)
            nll = lse - jnp.take_along_axis(lg, labels[..., None], -1)[..., 0]
            return nll.mean() + 1e-4 * (lse ** 2).mean()
        lv, gr = jax.value_and_grad(loss)(params)
        upd, opt = tx.update(gr, opt, params)
        return optax.apply_updates(params, upd), opt, lv

    def rule(path: tuple[Any, ...], leaf: Any) -> NamedSharding:
        p = _path(path)
        if "embed" in p:
            return NamedSharding(m, P("tp", None))
        if any(f"/{n}/" in f"/{p}" for n in ("q", "k", "v")) and leaf.ndim == 3:
            return NamedSharding(m, P(None, "tp", None))
        if "/o/" in f"/{p}" and leaf.ndim == 3:
            return NamedSharding(m, P("tp", None, None))
        if ("gate" in p or "up" in p) and leaf.ndim == 2:
            return NamedSharding(m, P("dp", "tp"))
        if "down" in p and leaf.ndim == 2:
            return NamedSharding(m, P("tp", "dp"))
        return NamedSharding(m, P())

    psh, osh = _shard(params, rule), _shard(opt, rule)
    batch = NamedSharding(m, P("dp"))
    return Program("gemma_softcap", "Gemma-like step: tied vocab-parallel embeddings, softcaps, sliding window, "
                   "GeGLU, z-loss, clip + sgd momentum, FSDP x tp 2x4", step, (params, opt, tok, tok),
                   (psh, osh, batch, batch), (psh, osh, NamedSharding(m, P())),
                   {"assume": {"tok": (0, 32), "labels": (0, 32)}})


PROGRAMS: g.Programs = {
    "t5_encdec": t5, "bert_mlm": bert, "mixtral_capacity": mixtral, "pipeline_ppermute": pipeline,
    "ring_attention": lambda: ring_attention(False), "ring_flash": lambda: ring_attention(True),
    "zero_fsdp": zero_fsdp, "megatron_sp": megatron_sp, "grad_accum_fori": grad_accum,
    "fp16_loss_scale": loss_scale, "optax_adafactor": adafactor, "optax_lion": lion, "optax_lamb": lamb,
    "unet_groupnorm": unet, "einsum5": einsum5, "assoc_scan": assoc_scan, "top_p_sampling": top_p,
    "segment_sum": segment_sum, "custom_vjp": custom_vjp, "remat_policy": remat_policy,
    "mesh3d_subaxes": mesh3d, "unreduced": unreduced, "vit_adamw": vit_adamw, "adamw_unassumed": adamw_unassumed,
    "clip_adamw": clip_adamw, "gemma_softcap": gemma,
}


# ---------------------------------------------------------------------------
# Seeded bugs of the collectives shard_map plans and their partitioned modules use

def _nth(text: str, kind: str, k: int) -> g.Collective:
    return [c for c in g.collectives(text) if c.kind == kind][k]


def drop_collective(kind: str, k: int = 0) -> Any:
    """The k-th collective of this kind still runs, but its uses read its operand (a
    collective_permute that never happened: each device keeps its own block)."""
    def mutate(text: str) -> str:
        c = _nth(text, kind, k)
        return text[:c.end] + g.reuse(text[c.end:], c.result, c.operand)
    return mutate


_PERMUTE = re.compile(r'^ +%[\w.#:]+ = "stablehlo\.collective_permute"'
                      r".*source_target_pairs = dense<(\[\[[\d, \[\]]*\]\])>.*$", re.M)


def _permute(text: str, k: int, retarget: Any) -> str:
    """The k-th collective_permute (at any depth: a pipeline's sits in its loop's body)
    with its (source, target) pairs rewritten."""
    m = list(_PERMUTE.finditer(text))[k]
    pairs = retarget(json.loads(m.group(1)))
    line = m.group(0).replace(m.group(1), json.dumps(pairs).replace(" ", ""), 1)
    return text[:m.start()] + line + text[m.end():]


def dropped_permute(text: str, k: int = -1) -> str:
    """The k-th collective_permute (the last by default) never sends: each device keeps its own block (every
    device its own source and target)."""
    return _permute(text, k, lambda pairs: [[s, s] for s, _ in pairs])


_ALL_REDUCE = re.compile(r'^( +)(%[\w.#]+) = "stablehlo\.all_reduce"\((%[\w.#]+)\) <\{[^\n]*$', re.M)


def dropped_all_reduce_nested(text: str, k: int = -1) -> str:
    """gen_clients.drop_all_reduce for an all-reduce at any depth (the last by default): a
    loop's gradient all-reduce sits in the loop body, which the function-level reading
    does not reach (XLA's module also keeps unused function-level copies of loop bodies)."""
    m = list(_ALL_REDUCE.finditer(text))[k]
    end = text.index("\n", m.start())
    if text[m.start():end].rstrip().endswith("({"):
        end = text.index("\n" + m.group(1) + "})", m.start()) + len(m.group(1)) + 3
    return text[:end] + g.reuse(text[end:], m.group(2), m.group(3))


def reversed_permute(text: str, k: int = -1) -> str:
    """The k-th collective_permute sends the other way round its ring."""
    return _permute(text, k, lambda pairs: [[t, s] for s, t in pairs])


def shifted_permute(text: str, k: int = -1) -> str:
    """The k-th collective_permute's targets rotated by one more."""
    return _permute(text, k, lambda pairs: [[s, pairs[(i + 1) % len(pairs)][1]] for i, (s, _) in enumerate(pairs)])


def wrong_groups_any(kind: str) -> Any:
    """gen_clients.wrong_groups for any collective with integer groups (an all-gather or a
    reduce-scatter keeps its shape with groups of the same size)."""
    def mutate(text: str, k: int = 0) -> str:
        c = [c for c in g.collectives(text) if c.kind == kind and "replica_groups = dense<" in c.head][k]
        m = re.search(r"replica_groups = dense<(\[\[[\d, \[\]]*\]\])> : tensor<(\d+)x(\d+)xi64>", c.head)
        groups = np.array(json.loads(m.group(1)))
        flipped = groups.reshape(-1).reshape(groups.shape[1], groups.shape[0]).T
        assert not np.array_equal(np.sort(flipped, 1), np.sort(groups, 1)), "one group: nothing to transpose"
        head = c.head.replace(m.group(1), json.dumps(flipped.tolist()).replace(" ", ""), 1)
        return text[:c.start] + text[c.start:c.end].replace(c.head, head, 1) + text[c.end:]
    return mutate


def wrong_axes_any(kind: str) -> Any:
    """gen_clients.wrong_axes for any collective over mesh axes (an all-gather or a
    reduce-scatter over an axis of the same size keeps its shape)."""
    def mutate(text: str, k: int = 0) -> str:
        c = [c for c in g.collectives(text) if c.kind == kind and "replica_group_mesh_axes" in c.head][k]
        mesh_name = re.search(r"replica_group_mesh_axes<mesh = @([\w.$-]+)", c.head).group(1)
        decl = re.search(rf"sdy\.mesh @{re.escape(mesh_name)} = <\[([^\]]*)\]", text).group(1)
        sizes = dict((a, int(n)) for a, n in re.findall(r'"(\w+)"=(\d+)', decl))
        used = re.findall(r'axis_ref<name = "(\w+)"', c.head)
        other = next(a for a in sizes if a not in used and sizes[a] == sizes[used[0]])
        head = re.sub(r'axis_ref<name = "\w+"', f'axis_ref<name = "{other}"', c.head, count=1)
        return text[:c.start] + text[c.start:c.end].replace(c.head, head, 1) + text[c.end:]
    return mutate


MUTATIONS: g.Mutations = {
    **g.MUTATIONS,
    "dropped_all_reduce_nested": dropped_all_reduce_nested,
    "dropped_permute": dropped_permute,
    "reversed_permute": reversed_permute,
    "shifted_permute": shifted_permute,
    "dropped_all_to_all": drop_collective("all_to_all"),
    "wrong_axes_all_gather": wrong_axes_any("all_gather"),
    "wrong_axes_reduce_scatter": wrong_axes_any("reduce_scatter"),
    "wrong_groups_all_gather": wrong_groups_any("all_gather"),
    "wrong_groups_reduce_scatter": wrong_groups_any("reduce_scatter"),
}


if __name__ == "__main__":
    sys.exit(g.main(sys.argv[1:], PROGRAMS, MUTATIONS, __file__, __doc__))
