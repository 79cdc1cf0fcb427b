"""Real-client programs, fourth batch (issue 14, stop 43): plans from current LLM training
and serving code the earlier batches do not hold, at tiny dims, on 8 CPU devices.

    .venv/bin/python testdata/gen_clients4.py --list
    .venv/bin/python testdata/gen_clients4.py --measure [NAME ...] [--forms partitioned,shardy]
    .venv/bin/python testdata/gen_clients4.py --mutants NAME ...
    .venv/bin/python testdata/gen_clients4.py --export NAME ...   # testdata/clients/NAME.*.mlir

The driver and the Program record are gen_clients.py's, the seeded bugs gen_clients3.py's.
shard_map plans are checked against the plain function they parallelize (`reference=`);
`*_bug` programs are shard_map plans with a bug a user writes (not a partitioner's): `--list`
prints each one's sharded-vs-reference difference on XLA, which must not be 0.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen_clients as g  # noqa: E402
import gen_clients3 as g3  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from gen_clients import Program, mesh  # noqa: E402
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

lax = jax.lax


def _attention(q: jax.Array, k: jax.Array, v: jax.Array, causal: bool = True) -> jax.Array:
    """[b, s, h, d] attention, causal by position."""
    s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.float32(np.sqrt(q.shape[-1]))
    if causal:
        s = jnp.where(jnp.tril(jnp.ones((q.shape[1], k.shape[1]), bool)), s, -jnp.inf)
    return jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(s, -1), v)


# ---------------------------------------------------------------------------
# 1. DeepSpeed-Ulysses sequence parallelism in shard_map: q, k, v arrive sharded over the
#    sequence; an all_to_all trades the sequence shard for a head shard, every device runs
#    full-sequence causal attention on its heads, and a second all_to_all trades back.

def ulysses() -> Program:
    m = mesh((2, 4), ("dp", "sp"))
    q = jax.ShapeDtypeStruct((2, 8, 4, 2), jnp.float32)  # [batch, seq, heads, head_dim]

    def body(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
        q, k, v = (lax.all_to_all(t, "sp", 2, 1, tiled=True) for t in (q, k, v))  # seq gathered, heads split
        return lax.all_to_all(_attention(q, k, v), "sp", 1, 2, tiled=True)  # seq split, heads gathered

    spec = P("dp", "sp")
    s = NamedSharding(m, spec)
    fn = jax.shard_map(body, mesh=m, in_specs=(spec,) * 3, out_specs=spec, check_vma=False)
    return Program("ulysses_a2a", "DeepSpeed-Ulysses: all_to_all seq<->heads around causal attention, 2x4",
                   fn, (q, q, q), (s, s, s), s, reference=_attention)


# ---------------------------------------------------------------------------
# 2. DeepSeek multi-head latent attention under jit: keys and values come from a low-rank
#    latent (x @ w_dkv, RMS-normed, then up-projected per head), a decoupled RoPE key shared
#    by every head, heads over tp, batch over dp; the partitioner places the collectives.

def _rope(x: jax.Array, pos: jax.Array) -> jax.Array:
    half = x.shape[-1] // 2
    freq = 1.0 / (10000.0 ** (jnp.arange(half, dtype=jnp.float32) / half))
    ang = (pos[:, None].astype(jnp.float32) * freq[None, :])[:, None, :]  # [s, 1 (heads), half]
    x1, x2 = x[..., :half], x[..., half:]
    return jnp.concatenate([x1 * jnp.cos(ang) - x2 * jnp.sin(ang), x1 * jnp.sin(ang) + x2 * jnp.cos(ang)], -1)


def mla() -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    b, s, d, heads, hd, latent, rd = 4, 4, 8, 4, 2, 4, 2
    f32 = jnp.float32
    args = (jax.ShapeDtypeStruct((b, s, d), f32),        # x
            jax.ShapeDtypeStruct((d, heads, hd + rd), f32),  # w_q (nope + rope parts)
            jax.ShapeDtypeStruct((d, latent), f32),      # w_dkv
            jax.ShapeDtypeStruct((latent,), f32),        # latent norm scale
            jax.ShapeDtypeStruct((latent, heads, hd), f32),  # w_uk
            jax.ShapeDtypeStruct((latent, heads, hd), f32),  # w_uv
            jax.ShapeDtypeStruct((d, rd), f32),          # w_kr (shared rope key)
            jax.ShapeDtypeStruct((heads, hd, d), f32))   # w_o

    def fwd(x: jax.Array, wq: jax.Array, wdkv: jax.Array, g_: jax.Array, wuk: jax.Array, wuv: jax.Array,
            wkr: jax.Array, wo: jax.Array) -> jax.Array:
        pos = jnp.arange(s)
        q = jnp.einsum("bsd,dhk->bshk", x, wq)
        q_nope, q_rope = q[..., :hd], _rope(q[..., hd:], pos)
        c = x @ wdkv
        c = c * lax.rsqrt(jnp.mean(c * c, -1, keepdims=True) + 1e-6) * g_
        k_nope = jnp.einsum("bsl,lhk->bshk", c, wuk)
        v = jnp.einsum("bsl,lhk->bshk", c, wuv)
        k_rope = _rope((x @ wkr)[:, :, None, :], pos)  # [b, s, 1, rd], one rope key for every head
        scores = (jnp.einsum("bqhk,bshk->bhqs", q_nope, k_nope)
                  + jnp.einsum("bqhk,bsk->bhqs", q_rope, k_rope[:, :, 0])) / np.float32(np.sqrt(hd + rd))
        scores = jnp.where(jnp.tril(jnp.ones((s, s), bool)), scores, -jnp.inf)
        o = jnp.einsum("bhqs,bshk->bqhk", jax.nn.softmax(scores, -1), v)
        return x + jnp.einsum("bqhk,hkd->bqd", o, wo)

    S = lambda *spec: NamedSharding(m, P(*spec))  # noqa: E731
    return Program("mla_attention", "DeepSeek MLA: low-rank latent KV, RMS-normed latent, decoupled shared "
                   "RoPE key, heads on tp, 2x4", fwd, args,
                   (S("dp"), S(None, "tp"), S(), S(), S(None, "tp"), S(None, "tp"), S(), S("tp")), S("dp"))


# ---------------------------------------------------------------------------
# 3. A Gemma-style loss under jit: RMSNorm with (1 + scale), GeGLU with the tanh GELU,
#    attention logits soft-capped (c * tanh(x / c)), tied embeddings with a soft-capped
#    final logit, cross-entropy plus a z-loss (log Z squared); vocabulary and ffn over tp.

def gemma_loss() -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    b, s, d, heads, hd, ffn, vocab = 2, 4, 8, 4, 2, 16, 16
    f32, i32 = jnp.float32, jnp.int32
    args = (jax.ShapeDtypeStruct((b, s), i32), jax.ShapeDtypeStruct((b, s), i32),
            jax.ShapeDtypeStruct((vocab, d), f32), jax.ShapeDtypeStruct((2, d), f32),
            jax.ShapeDtypeStruct((3, d, heads, hd), f32), jax.ShapeDtypeStruct((heads, hd, d), f32),
            jax.ShapeDtypeStruct((2, d, ffn), f32), jax.ShapeDtypeStruct((ffn, d), f32))

    def norm(x: jax.Array, scale: jax.Array) -> jax.Array:
        return x * lax.rsqrt(jnp.mean(x * x, -1, keepdims=True) + 1e-6) * (1.0 + scale)

    def loss(tokens: jax.Array, targets: jax.Array, emb: jax.Array, scales: jax.Array, wqkv: jax.Array,
             wo: jax.Array, wgu: jax.Array, wd: jax.Array) -> jax.Array:
        x = emb[tokens] * np.float32(np.sqrt(d))
        h = norm(x, scales[0])
        q, k, v = (jnp.einsum("bsd,dhk->bshk", h, wqkv[i]) for i in range(3))
        a = jnp.einsum("bqhk,bshk->bhqs", q, k) / np.float32(np.sqrt(hd))
        a = 50.0 * jnp.tanh(a / 50.0)
        a = jnp.where(jnp.tril(jnp.ones((s, s), bool)), a, -1e30)
        x = x + jnp.einsum("bhqs,bshk,hkd->bqd", jax.nn.softmax(a, -1), v, wo)
        h = norm(x, scales[1])
        x = x + (jax.nn.gelu(h @ wgu[0], approximate=True) * (h @ wgu[1])) @ wd
        logits = x @ emb.T
        logits = 30.0 * jnp.tanh(logits / 30.0)
        logz = jax.nn.logsumexp(logits, -1)
        nll = logz - jnp.take_along_axis(logits, targets[..., None], -1)[..., 0]
        return jnp.mean(nll + 1e-4 * logz ** 2)

    S = lambda *spec: NamedSharding(m, P(*spec))  # noqa: E731
    return Program("gemma_softcap_zloss", "Gemma-style loss: (1+scale) RMSNorm, GeGLU tanh, soft-capped "
                   "attention and logits, tied vocab on tp, z-loss, 2x4", loss, args,
                   (S("dp"), S("dp"), S("tp"), S(), S(None, None, "tp"), S("tp"), S(None, None, "tp"), S("tp")),
                   S(), {"assume": {"tokens": (0, vocab), "targets": (0, vocab)}})


# ---------------------------------------------------------------------------
# 4. The Muon optimizer's update as a jit step over FSDP-sharded weights: the momentum
#    buffer's matrix orthogonalized by five Newton-Schulz iterations (X <- aX + (bA + cA^2)X,
#    A = X X^T) after a Frobenius normalization, then scaled and applied; rows over fsdp.

def muon() -> Program:
    m = mesh((8,), ("fsdp",))
    w = jax.ShapeDtypeStruct((8, 4), jnp.float32)
    a, b_, c = 3.4445, -4.7750, 2.0315

    def step(w: jax.Array, mom: jax.Array, grad: jax.Array) -> tuple[jax.Array, jax.Array]:
        mom = 0.95 * mom + grad
        x = mom.T / (jnp.sqrt(jnp.sum(mom * mom)) + 1e-7)  # [4, 8]: the wide orientation
        for _ in range(5):
            aa = x @ x.T
            x = a * x + (b_ * aa + c * aa @ aa) @ x
        return w - 0.02 * np.float32(np.sqrt(2.0)) * x.T, mom

    s = NamedSharding(m, P("fsdp"))
    return Program("muon_ns5", "Muon optimizer step: momentum, Frobenius norm, 5 Newton-Schulz iterations, "
                   "FSDP rows over 8", step, (w, w, w), (s, s, s), (s, s))


# ---------------------------------------------------------------------------
# 5. Packed sequences: several documents per row, attention masked to the same segment and
#    causal, RoPE positions restarting per document (given as an input, as data loaders
#    emit them), batch over dp and heads over tp under jit; a masked-mean loss.

def packed() -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    b, s, d, heads, hd = 2, 8, 8, 4, 2
    f32, i32 = jnp.float32, jnp.int32
    args = (jax.ShapeDtypeStruct((b, s, d), f32), jax.ShapeDtypeStruct((b, s), i32),
            jax.ShapeDtypeStruct((b, s), i32), jax.ShapeDtypeStruct((3, d, heads, hd), f32),
            jax.ShapeDtypeStruct((heads, hd, d), f32), jax.ShapeDtypeStruct((b, s, d), f32))

    def loss(x: jax.Array, seg: jax.Array, pos: jax.Array, wqkv: jax.Array, wo: jax.Array,
             y: jax.Array) -> jax.Array:
        q, k, v = (jnp.einsum("bsd,dhk->bshk", x, wqkv[i]) for i in range(3))
        q, k = jax.vmap(_rope)(q, pos), jax.vmap(_rope)(k, pos)
        a = jnp.einsum("bqhk,bshk->bhqs", q, k) / np.float32(np.sqrt(hd))
        mask = (seg[:, :, None] == seg[:, None, :]) & jnp.tril(jnp.ones((s, s), bool))[None]
        a = jnp.where(mask[:, None], a, -1e30)
        o = x + jnp.einsum("bhqs,bshk,hkd->bqd", jax.nn.softmax(a, -1), v, wo)
        valid = (seg > 0).astype(f32)[..., None]  # segment 0 is padding
        return jnp.sum(valid * (o - y) ** 2) / jnp.maximum(jnp.sum(valid), 1.0)

    S = lambda *spec: NamedSharding(m, P(*spec))  # noqa: E731
    return Program("packed_segments", "packed documents: segment-id + causal mask, per-document RoPE "
                   "positions, masked-mean loss, heads on tp, 2x4", loss, args,
                   (S("dp"), S("dp"), S("dp"), S(None, None, "tp"), S("tp"), S("dp")), S(),
                   {"assume": {"seg": (0, 4), "pos": (0, s)}})


# ---------------------------------------------------------------------------
# 6. A collective matmul (all-gather fused into the matmul, as the overlap trick writes it
#    in shard_map): x's row blocks travel round the ring by ppermute while each device
#    multiplies the block it holds by its column shard of w, writing the rows of the
#    block's owner; the reference is x @ w. The bug twin offsets the row block by the
#    step in the wrong direction (the owner of the block held at step i is me + i).

def _collective_matmul(bug: bool) -> Program:
    m = mesh((8,), ("tp",))
    n, rows, d, f = 8, 1, 4, 8
    x = jax.ShapeDtypeStruct((n * rows, d), jnp.float32)
    w = jax.ShapeDtypeStruct((d, n * f), jnp.float32)

    def body(x: jax.Array, w: jax.Array) -> jax.Array:
        me = lax.axis_index("tp")
        out = jnp.zeros((n * rows, w.shape[1]), x.dtype)
        blk = x
        for i in range(n):
            owner = (me + i) % n if bug else (me - i) % n
            out = lax.dynamic_update_slice(out, blk @ w, (owner * rows, 0))
            blk = lax.ppermute(blk, "tp", [(j, (j + 1) % n) for j in range(n)])
        return out

    fn = jax.shard_map(body, mesh=m, in_specs=(P("tp"), P(None, "tp")), out_specs=P(None, "tp"),
                       check_vma=False)
    return Program("collective_matmul_bug" if bug else "collective_matmul",
                   "all-gather collective matmul: ppermute ring, dynamic_update_slice by owner, tp 8"
                   + (" (bug: owner offset reversed)" if bug else ""), fn, (x, w),
                   (NamedSharding(m, P("tp")), NamedSharding(m, P(None, "tp"))), NamedSharding(m, P(None, "tp")),
                   reference=lambda x, w: x @ w)


def collective_matmul() -> Program:
    return _collective_matmul(False)


def collective_matmul_bug() -> Program:
    return _collective_matmul(True)


# ---------------------------------------------------------------------------
# 7. A hand-written data + FSDP step in shard_map (as users write ZeRO by hand): weights
#    all-gathered over fsdp inside the step, the loss averaged over both axes by pmean,
#    gradients reduce-scattered over fsdp (psum_scatter) and averaged over dp; the bug
#    twin averages the loss over fsdp only (the loss of half the batch, scaled wrong).

def _zero_by_hand(bug: bool) -> Program:
    m = mesh((2, 4), ("dp", "fsdp"))
    w = jax.ShapeDtypeStruct((8, 4), jnp.float32)
    x = jax.ShapeDtypeStruct((16, 8), jnp.float32)
    y = jax.ShapeDtypeStruct((16, 4), jnp.float32)

    def local_loss(w: jax.Array, x: jax.Array, y: jax.Array) -> jax.Array:
        return jnp.mean((jnp.tanh(x @ w) - y) ** 2)

    def ref(w: jax.Array, x: jax.Array, y: jax.Array) -> tuple[jax.Array, jax.Array]:
        lv, gr = jax.value_and_grad(local_loss)(w, x, y)
        return w - 0.1 * gr, lv

    def body(w: jax.Array, x: jax.Array, y: jax.Array) -> tuple[jax.Array, jax.Array]:
        full = lax.all_gather(w, "fsdp", tiled=True)
        lv, gr = jax.value_and_grad(local_loss)(full, x, y)
        gr = lax.psum_scatter(gr, "fsdp", tiled=True) / 4.0
        gr = lax.pmean(gr, "dp")
        lv = lax.pmean(lv, "fsdp") if bug else lax.pmean(lv, ("dp", "fsdp"))
        return w - 0.1 * gr, lv

    fn = jax.shard_map(body, mesh=m, in_specs=(P("fsdp"), P(("dp", "fsdp")), P(("dp", "fsdp"))),
                       out_specs=(P("fsdp"), P()), check_vma=False)
    S = lambda *spec: NamedSharding(m, P(*spec))  # noqa: E731
    return Program("zero_by_hand_bug" if bug else "zero_by_hand",
                   "ZeRO by hand in shard_map: all_gather weights, pmean loss over (dp, fsdp), psum_scatter + "
                   "pmean grads, 2x4" + (" (bug: loss pmean over fsdp only)" if bug else ""), fn, (w, x, y),
                   (S("fsdp"), S(("dp", "fsdp")), S(("dp", "fsdp"))), (S("fsdp"), S()), reference=ref)


def zero_by_hand() -> Program:
    return _zero_by_hand(False)


def zero_by_hand_bug() -> Program:
    return _zero_by_hand(True)


PROGRAMS: g.Programs = {
    "ulysses_a2a": ulysses, "mla_attention": mla,
    "gemma_softcap_zloss": gemma_loss, "muon_ns5": muon, "packed_segments": packed,
    "collective_matmul": collective_matmul, "collective_matmul_bug": collective_matmul_bug,
    "zero_by_hand": zero_by_hand, "zero_by_hand_bug": zero_by_hand_bug,
}

MUTATIONS: g.Mutations = g3.MUTATIONS


if __name__ == "__main__":
    sys.exit(g.main(sys.argv[1:], PROGRAMS, MUTATIONS, __file__, __doc__))
