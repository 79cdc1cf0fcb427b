"""Real-client programs, sixth batch (helper-66): parallel algorithms users write by hand in
shard_map (and two jit steps partitioned by XLA), of kinds the first five batches do not
hold, at tiny dims on 8 CPU devices.

    .venv/bin/python testdata/gen_clients6.py --list
    .venv/bin/python testdata/gen_clients6.py --measure [NAME ...] [--forms partitioned,shardy]
    .venv/bin/python testdata/gen_clients6.py --one NAME FORM TIMEOUT   # one row, JSON
    .venv/bin/python testdata/gen_clients6.py --export NAME ...   # testdata/clients6/NAME.*.mlir
    .venv/bin/python testdata/gen_clients6.py --repro   # the unknowns' single-device pairs

The driver and the Program record are gen_clients.py's, the seeded bugs gen_clients3.py's.
shard_map plans are checked against the plain function they parallelize (`reference=`);
each `*_bug` twin is the same plan with the silent mistake a user makes there (`--list`
prints its difference from the reference on XLA, which must not be 0):

- sync_batchnorm: BatchNorm in train mode over a data-parallel batch, the statistics merged
  across devices as Welford/Chan do (per-device count, mean, M2, all-gathered and combined),
  running statistics updated with the unbiased variance. Bug: the variance is the mean of the
  devices' local variances (the spread between the devices' means is lost).
- swa_halo_rope: sliding-window causal attention with RoPE over a sequence sharded on sp:
  the previous block's last keys/values arrive by ppermute (a halo). Bug: RoPE positions
  not shifted by the shard's offset (only the halo pairs see it: in-block pairs are relative).
- fp8_delayed_scaling: FP8 (e4m3) activation quantization with delayed scaling: the scale
  from an amax history, the new amax all-reduced with pmax and rolled into the history, a
  row-parallel matmul on the quantized values. Bug: the amax not reduced over the devices
  (every device records its own history: the "replicated" state diverges).
- topk_vocab: top-k over vocabulary-parallel logits (local top_k, global indices,
  all_gather of the candidates, a second top_k), probabilities of the k kept. Bugs: the
  local indices not offset by the shard's start (_bug); the candidates listed last shard
  first, so a tie goes to the higher index (_ties, values out; only ties show it).
  topk_vocab_values: the correct plan with the values out.
- prefix_sum_ppermute: an inclusive cumsum over a sharded axis: local cumsums, an
  exclusive scan of the block totals in log2(n) ppermute rounds (Hillis-Steele). Bug: the
  inclusive scan used as the offset (each block adds its own total).
- ring_allreduce: the ring all-reduce by hand (reduce-scatter then all-gather, n - 1
  ppermute rounds each, chunks picked by the device index). Bug: the all-gather phase
  writes each received chunk one slot off.
- tp_layernorm: LayerNorm over a hidden dimension sharded on tp (psum of sums), then a
  row-parallel projection. Bug: the variance taken around the shard's own mean.
- fsdp_clip_ema: an FSDP step by hand: the global gradient norm (psum of the shards'
  squares) for clipping, momentum SGD, an EMA of the weights with bias correction by the
  step count. Bugs: each shard clipped by its own norm (_bug); the EMA debiased by the
  count before the step (_stale).
- flash_decode_sp: split-KV decoding (flash-decoding): the KV cache sharded over the
  sequence, each shard's partial softmax (max, sum, weighted values) merged with a pmax and
  a rescaled psum, positions past each row's length masked. Bug: the length mask compares
  local positions.
- tp_mlp_grad: jax.grad inside shard_map of a Megatron MLP (column then row parallel), the
  loss pmean'd over dp. Bug: the same with check_vma=False, where the transpose of the
  forward psum is a psum again: gradients tp times too large.
- argmax_vocab: greedy decoding over vocabulary-parallel logits: pmax of the shards'
  maxima, pmin of the tied global indices. Bug: pmax of the tied indices (only ties show it).
- siglip_ppermute: SigLIP's sigmoid loss, the texts passed round a ppermute ring (7 hops).
  Bug: every block's diagonal taken as positives.
- pipeline_cond / pipeline_switch: GPipe by hand, lax.cond on the stage index feeding the
  first stage, ppermute between stages, the last stage draining into a buffer; the switch
  form runs a different layer per stage (lax.switch). Bugs: drained one step early; the
  next stage's layer.
- flax_syncbn: flax's nn.BatchNorm(axis_name="dp") in shard_map. Bug: axis_name left out.
- mamba_tp (jit): a Mamba block, d_inner over tp: in-projections, a causal depthwise conv
  (feature_group_count), softplus dt, selective scan (associative_scan), gated output,
  row-parallel out-projection; XLA partitions it.
- schedule_free_fsdp (jit): optax.contrib.schedule_free_adamw with warmup on parameters and
  optimizer state sharded over fsdp, plus the evaluation parameters.
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
import optax  # noqa: E402
from gen_clients import Program, mesh  # noqa: E402
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

lax = jax.lax
f32 = jnp.float32
i32 = jnp.int32
INF = float("inf")


def _sds(shape: tuple[int, ...], dtype=f32) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(shape, dtype)


def _smap(body, m, in_specs, out_specs, check_vma: bool = True):
    """shard_map as users call it: jax's default check_vma=True where the plan traces so;
    plans whose replicated outputs jax cannot infer (an all_gather, a ppermute ring) pass
    False, as their authors must."""
    return jax.shard_map(body, mesh=m, in_specs=in_specs, out_specs=out_specs, check_vma=check_vma)


# ---------------------------------------------------------------------------
# 1. Sync BatchNorm: cross-device statistics by a Welford/Chan merge.

BN_EPS, BN_MOM = 1e-5, 0.9


def _bn_ref(x, gamma, beta, rmean, rvar):
    n = x.shape[0]
    mean = jnp.mean(x, 0)
    var = jnp.mean((x - mean) ** 2, 0)
    y = (x - mean) * lax.rsqrt(var + BN_EPS) * gamma + beta
    return y, BN_MOM * rmean + (1 - BN_MOM) * mean, BN_MOM * rvar + (1 - BN_MOM) * var * n / (n - 1)


def _sync_bn(bug: bool) -> Program:
    ndev = 8
    m = mesh((ndev,), ("dp",))
    b, d = 16, 4

    def body(x, gamma, beta, rmean, rvar):
        nl = x.shape[0]
        mu_l = jnp.mean(x, 0)
        m2_l = jnp.sum((x - mu_l) ** 2, 0)
        n = nl * ndev
        if bug:
            mean = lax.pmean(mu_l, "dp")
            var = lax.pmean(m2_l / nl, "dp")
        else:
            mus, m2s = lax.all_gather(mu_l, "dp"), lax.all_gather(m2_l, "dp")  # [ndev, d]
            mean = jnp.sum(nl * mus, 0) / n
            var = (jnp.sum(m2s, 0) + nl * jnp.sum((mus - mean) ** 2, 0)) / n
        y = (x - mean) * lax.rsqrt(var + BN_EPS) * gamma + beta
        return y, BN_MOM * rmean + (1 - BN_MOM) * mean, BN_MOM * rvar + (1 - BN_MOM) * var * n / (n - 1)

    rep = P()
    fn = _smap(body, m, (P("dp"), rep, rep, rep, rep), (P("dp"), rep, rep), check_vma=False)
    S = lambda *s: NamedSharding(m, P(*s))  # noqa: E731
    return Program("sync_batchnorm_bug" if bug else "sync_batchnorm",
                   "sync BatchNorm, Welford/Chan merge of all-gathered (n, mean, M2), dp 8"
                   + (" (bug: mean of local variances)" if bug else ""),
                   fn, (_sds((b, d)),) + (_sds((d,)),) * 4, (S("dp"), S(), S(), S(), S()), (S("dp"), S(), S()),
                   reference=_bn_ref)


def sync_batchnorm() -> Program:
    return _sync_bn(False)


def sync_batchnorm_bug() -> Program:
    return _sync_bn(True)


# ---------------------------------------------------------------------------
# 2. Sliding-window causal attention with RoPE, the sequence sharded, a ppermute halo.

WINDOW = 3  # a query at position i sees keys i - 2 .. i


def _rope(x, pos):
    """[b, s, d] rotated by positions pos [s] (half-split form)."""
    half = x.shape[-1] // 2
    freq = 1.0 / (10000.0 ** (jnp.arange(half, dtype=f32) / half))
    ang = pos.astype(f32)[:, None] * freq[None, :]
    cos, sin = jnp.cos(ang), jnp.sin(ang)
    x1, x2 = x[..., :half], x[..., half:]
    return jnp.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1)


def _swa(q, k, v, qpos, kpos):
    s = jnp.einsum("bqd,bkd->bqk", q, k) / np.float32(np.sqrt(q.shape[-1]))
    rel = qpos[:, None] - kpos[None, :]
    ok = (rel >= 0) & (rel < WINDOW) & (kpos[None, :] >= 0)
    s = jnp.where(ok[None], s, -jnp.inf)
    return jnp.einsum("bqk,bkd->bqd", jax.nn.softmax(s, -1), v)


def _swa_ref(q, k, v):
    pos = jnp.arange(q.shape[1])
    return _swa(_rope(q, pos), _rope(k, pos), v, pos, pos)


def _swa_halo(bug: bool) -> Program:
    nsp = 4
    m = mesh((2, nsp), ("dp", "sp"))
    b, s, d = 2, 16, 4
    halo = WINDOW - 1

    def body(q, k, v):
        sl = q.shape[1]
        start = lax.axis_index("sp") * sl
        pos = jnp.arange(sl) + (0 if bug else start)
        q, k = _rope(q, pos), _rope(k, pos)
        ring = [(i, i + 1) for i in range(nsp - 1)]  # device 0 receives zeros
        hk = lax.ppermute(k[:, -halo:], "sp", ring)
        hv = lax.ppermute(v[:, -halo:], "sp", ring)
        kk, vv = jnp.concatenate([hk, k], 1), jnp.concatenate([hv, v], 1)
        qpos = jnp.arange(sl) + start  # the mask's positions are global in both
        kpos = jnp.arange(-halo, sl) + start
        return _swa(q, kk, vv, qpos, kpos)

    spec = P("dp", "sp")
    fn = _smap(body, m, (spec,) * 3, spec)
    s_ = NamedSharding(m, spec)
    return Program("swa_halo_rope_bug" if bug else "swa_halo_rope",
                   "sliding-window (3) causal attention + RoPE, seq over sp 4, k/v halo by ppermute"
                   + (" (bug: RoPE positions not offset)" if bug else ""),
                   fn, (_sds((b, s, d)),) * 3, (s_,) * 3, s_, reference=_swa_ref)


def swa_halo_rope() -> Program:
    return _swa_halo(False)


def swa_halo_rope_bug() -> Program:
    return _swa_halo(True)


# ---------------------------------------------------------------------------
# 3. FP8 delayed scaling: amax history, pmax of the new amax, row-parallel matmul.

E4M3_MAX = 448.0


def _fp8_quant(x, hist):
    scale = E4M3_MAX / jnp.max(hist)
    q = jnp.clip(x * scale, -E4M3_MAX, E4M3_MAX).astype(jnp.float8_e4m3fn)
    return q.astype(f32), scale


def _fp8_ref(x, w, hist):
    q, scale = _fp8_quant(x, hist)
    y = (q @ w) / scale
    return y, jnp.roll(hist, 1).at[0].set(jnp.max(jnp.abs(x)))


def _fp8(bug: bool) -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    t, dm, f, hl = 8, 16, 4, 4

    def body(x, w, hist):
        q, scale = _fp8_quant(x, hist)
        y = lax.psum(q @ w, "tp") / scale
        amax = jnp.max(jnp.abs(x))
        if not bug:
            amax = lax.pmax(amax, ("dp", "tp"))
        return y, jnp.roll(hist, 1).at[0].set(amax)

    fn = _smap(body, m, (P("dp", "tp"), P("tp", None), P()), (P("dp"), P()), check_vma=not bug)
    S = lambda *s: NamedSharding(m, P(*s))  # noqa: E731
    return Program("fp8_delayed_scaling_bug" if bug else "fp8_delayed_scaling",
                   "FP8 e4m3 delayed scaling: amax history, pmax, row-parallel matmul, 2x4"
                   + (" (bug: amax not reduced over devices)" if bug else ""),
                   fn, (_sds((t, dm)), _sds((dm, f)), _sds((hl,))), (S("dp", "tp"), S("tp", None), S()),
                   (S("dp"), S()), options={"assume": {"hist": (0.001, INF)}}, reference=_fp8_ref)


def fp8_delayed_scaling() -> Program:
    return _fp8(False)


def fp8_delayed_scaling_bug() -> Program:
    return _fp8(True)


# ---------------------------------------------------------------------------
# 4. Top-k over vocabulary-parallel logits.

TOPK = 2


def _topk_ref(logits):
    v, i = lax.top_k(logits, TOPK)
    return jax.nn.softmax(v, -1), i


def _topk(bug: bool, reversed_shards: bool = False, probs: bool = True) -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    b, vocab = 4, 16

    def body(logits):
        vl = logits.shape[-1]
        v, i = lax.top_k(logits, TOPK)
        if not bug:
            i = i + lax.axis_index("tp") * vl
        av = lax.all_gather(v, "tp", axis=1, tiled=True)  # [b, 4k], shards in order
        ai = lax.all_gather(i, "tp", axis=1, tiled=True)
        if reversed_shards:  # candidates listed last shard first: a tie goes to the higher index
            av = jnp.concatenate([av[:, j * TOPK:(j + 1) * TOPK] for j in reversed(range(4))], 1)
            ai = jnp.concatenate([ai[:, j * TOPK:(j + 1) * TOPK] for j in reversed(range(4))], 1)
        v2, pos = lax.top_k(av, TOPK)
        return jax.nn.softmax(v2, -1) if probs else v2, jnp.take_along_axis(ai, pos, -1)

    fn = _smap(body, m, (P("dp", "tp"),), (P("dp"), P("dp")), check_vma=False)
    S = lambda *s: NamedSharding(m, P(*s))  # noqa: E731
    name = "topk_vocab" + ("_bug" if bug else "") + ("_ties" if reversed_shards else "") + ("" if probs else "_values")
    return Program(name, "top-2 over vocab-parallel logits: local top_k, all_gather, top_k, 2x4"
                   + (" (bug: local indices not offset)" if bug else "")
                   + (" (bug: candidates last shard first, ties to the higher index)" if reversed_shards else "")
                   + ("" if probs else ", values out"),
                   fn, (_sds((b, vocab)),), (S("dp", "tp"),), (S("dp"), S("dp")),
                   reference=_topk_ref if probs else lambda x: tuple(lax.top_k(x, TOPK)))


def topk_vocab() -> Program:
    return _topk(False)


def topk_vocab_bug() -> Program:
    return _topk(True)


def topk_vocab_ties() -> Program:
    return _topk(False, reversed_shards=True, probs=False)


def topk_vocab_values() -> Program:
    return _topk(False, probs=False)


# ---------------------------------------------------------------------------
# 5. Prefix sum over a sharded axis: local cumsum + Hillis-Steele scan of block totals.

def _prefix(bug: bool) -> Program:
    n = 8
    m = mesh((n,), ("sp",))

    def body(x):
        c = jnp.cumsum(x, 0)
        tot = c[-1]
        s, d = tot, 1
        while d < n:
            s = s + lax.ppermute(s, "sp", [(i, i + d) for i in range(n - d)])  # no source: zeros
            d *= 2
        return c + (s if bug else s - tot)

    s_ = NamedSharding(m, P("sp"))
    fn = _smap(body, m, (P("sp"),), P("sp"))
    return Program("prefix_sum_ppermute_bug" if bug else "prefix_sum_ppermute",
                   "cumsum over sp 8: local cumsum + Hillis-Steele ppermute scan of totals"
                   + (" (bug: inclusive offset)" if bug else ""),
                   fn, (_sds((16, 2)),), (s_,), s_, reference=lambda x: jnp.cumsum(x, 0))


def prefix_sum_ppermute() -> Program:
    return _prefix(False)


def prefix_sum_ppermute_bug() -> Program:
    return _prefix(True)


# ---------------------------------------------------------------------------
# 6. The ring all-reduce by hand.

def _ring(bug: bool) -> Program:
    n = 8
    m = mesh((n,), ("dp",))
    c = 2

    def body(x):
        me = lax.axis_index("dp")
        acc = x[0].reshape(n, c)
        ring = [(i, (i + 1) % n) for i in range(n)]
        for k in range(n - 1):  # reduce-scatter: device me ends owning chunk (me + 1) % n
            piece = lax.dynamic_index_in_dim(acc, (me - k) % n, 0, keepdims=False)
            recv = lax.ppermute(piece, "dp", ring)
            j = (me - k - 1) % n
            acc = lax.dynamic_update_index_in_dim(acc, lax.dynamic_index_in_dim(acc, j, 0, False) + recv, j, 0)
        for k in range(n - 1):  # all-gather
            piece = lax.dynamic_index_in_dim(acc, (me + 1 - k) % n, 0, keepdims=False)
            recv = lax.ppermute(piece, "dp", ring)
            j = (me - k + (1 if bug else 0)) % n
            acc = lax.dynamic_update_index_in_dim(acc, recv, j, 0)
        return acc.reshape(-1)

    fn = _smap(body, m, (P("dp"),), P(), check_vma=False)
    return Program("ring_allreduce_bug" if bug else "ring_allreduce",
                   "ring all-reduce by hand: reduce-scatter + all-gather, 7 ppermute rounds each, dp 8"
                   + (" (bug: gathered chunk one slot off)" if bug else ""),
                   fn, (_sds((n, n * c)),), (NamedSharding(m, P("dp")),), NamedSharding(m, P()),
                   reference=lambda x: jnp.sum(x, 0))


def ring_allreduce() -> Program:
    return _ring(False)


def ring_allreduce_bug() -> Program:
    return _ring(True)


# ---------------------------------------------------------------------------
# 7. LayerNorm over a tp-sharded hidden dimension, then a row-parallel projection.

LN_EPS = 1e-6


def _ln_ref(x, gamma, beta, w):
    mu = jnp.mean(x, -1, keepdims=True)
    var = jnp.mean((x - mu) ** 2, -1, keepdims=True)
    return ((x - mu) * lax.rsqrt(var + LN_EPS) * gamma + beta) @ w


def _tp_ln(bug: bool) -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    t, dm, f = 8, 16, 8

    def body(x, gamma, beta, w):
        mu = lax.psum(jnp.sum(x, -1, keepdims=True), "tp") / dm
        around = jnp.mean(x, -1, keepdims=True) if bug else mu
        var = lax.psum(jnp.sum((x - around) ** 2, -1, keepdims=True), "tp") / dm
        y = (x - mu) * lax.rsqrt(var + LN_EPS) * gamma + beta
        return lax.psum(y @ w, "tp")

    fn = _smap(body, m, (P("dp", "tp"), P("tp"), P("tp"), P("tp", None)), P("dp"))
    S = lambda *s: NamedSharding(m, P(*s))  # noqa: E731
    return Program("tp_layernorm_bug" if bug else "tp_layernorm",
                   "LayerNorm over a tp-sharded hidden dim (psum), row-parallel dense, 2x4"
                   + (" (bug: variance around the local mean)" if bug else ""),
                   fn, (_sds((t, dm)), _sds((dm,)), _sds((dm,)), _sds((dm, f))),
                   (S("dp", "tp"), S("tp"), S("tp"), S("tp", None)), S("dp"), reference=_ln_ref)


def tp_layernorm() -> Program:
    return _tp_ln(False)


def tp_layernorm_bug() -> Program:
    return _tp_ln(True)


# ---------------------------------------------------------------------------
# 8. FSDP step by hand: global-norm clipping, momentum SGD, EMA with bias correction.

LR, MOM, EMA, MAX_NORM = 0.1, 0.9, 0.99, 1.0


def _clip_ema_update(w, g, mom, ema, count, norm, stale: bool = False):
    g = g * (MAX_NORM / jnp.maximum(norm, MAX_NORM))
    mom = MOM * mom + g
    w = w - LR * mom
    new_count = count + 1
    ema = EMA * ema + (1 - EMA) * w
    debiased = ema / (1 - EMA ** (count if stale else new_count).astype(f32))
    return w, mom, ema, debiased, new_count


def _clip_ema_ref(w, g, mom, ema, count):
    return _clip_ema_update(w, g, mom, ema, count, jnp.sqrt(jnp.sum(g * g)))


def _fsdp_clip_ema(bug: bool, stale: bool = False) -> Program:
    m = mesh((8,), ("fsdp",))
    r, c = 16, 4

    def body(w, g, mom, ema, count):
        sq = jnp.sum(g * g)
        norm = jnp.sqrt(sq if bug else lax.psum(sq, "fsdp"))
        return _clip_ema_update(w, g, mom, ema, count, norm, stale)

    sh = P("fsdp")
    fn = _smap(body, m, (sh,) * 4 + (P(),), (sh,) * 4 + (P(),))
    S = lambda *s: NamedSharding(m, P(*s))  # noqa: E731
    return Program("fsdp_clip_ema_stale" if stale else "fsdp_clip_ema_bug" if bug else "fsdp_clip_ema",
                   "FSDP step: global-norm clip (psum), momentum SGD, EMA debiased by count, fsdp 8"
                   + (" (bug: each shard clipped by its own norm)" if bug else "")
                   + (" (bug: EMA debiased by the count before the step)" if stale else ""),
                   fn, (_sds((r, c)),) * 4 + (_sds((), i32),), (S("fsdp"),) * 4 + (S(),),
                   (S("fsdp"),) * 4 + (S(),), options={"assume": {"count": (0, 1000)}},
                   reference=_clip_ema_ref)


def fsdp_clip_ema() -> Program:
    return _fsdp_clip_ema(False)


def fsdp_clip_ema_bug() -> Program:
    return _fsdp_clip_ema(True)


def fsdp_clip_ema_stale() -> Program:
    return _fsdp_clip_ema(False, stale=True)


# ---------------------------------------------------------------------------
# 9. Split-KV (flash) decoding over a sequence-sharded KV cache.

def _decode_ref(q, k, v, lens):
    s = jnp.einsum("bd,bsd->bs", q, k) / np.float32(np.sqrt(q.shape[-1]))
    ok = jnp.arange(k.shape[1])[None, :] < lens[:, None]
    p = jax.nn.softmax(jnp.where(ok, s, -jnp.inf), -1)
    return jnp.einsum("bs,bsd->bd", p, v)


def _flash_decode(bug: bool) -> Program:
    m = mesh((2, 4), ("dp", "sp"))
    b, s, d = 2, 16, 4

    def body(q, k, v, lens):
        sl = k.shape[1]
        sc = jnp.einsum("bd,bsd->bs", q, k) / np.float32(np.sqrt(d))
        pos = jnp.arange(sl) + (0 if bug else lax.axis_index("sp") * sl)
        ok = pos[None, :] < lens[:, None]
        m_l = jnp.max(jnp.where(ok, sc, -jnp.inf), -1)  # -inf on a shard past the row's length
        p = jnp.where(ok, jnp.exp(sc - m_l[:, None]), 0.0)
        mx = lax.pmax(m_l, "sp")
        alpha = jnp.exp(m_l - mx)  # 0 on a shard with nothing to attend
        num = lax.psum(jnp.einsum("bs,bsd->bd", p, v) * alpha[:, None], "sp")
        den = lax.psum(jnp.sum(p, -1) * alpha, "sp")
        return num / den[:, None]

    kv = P("dp", "sp")
    fn = _smap(body, m, (P("dp"), kv, kv, P("dp")), P("dp"))
    S = lambda *s_: NamedSharding(m, P(*s_))  # noqa: E731
    return Program("flash_decode_sp_bug" if bug else "flash_decode_sp",
                   "split-KV decode: cache over sp 4, partial softmax merged by pmax + rescaled psum"
                   + (" (bug: length mask on local positions)" if bug else ""),
                   fn, (_sds((b, d)), _sds((b, s, d)), _sds((b, s, d)), _sds((b,), i32)),
                   (S("dp"), S("dp", "sp"), S("dp", "sp"), S("dp")), S("dp"),
                   options={"assume": {"lens": (1, s + 1)}}, reference=_decode_ref)


def flash_decode_sp() -> Program:
    return _flash_decode(False)


def flash_decode_sp_bug() -> Program:
    return _flash_decode(True)


# ---------------------------------------------------------------------------
# 10. jax.grad inside shard_map of a Megatron MLP.

def _mlp_loss(w1, w2, x, y):
    return jnp.mean((jax.nn.gelu(x @ w1) @ w2 - y) ** 2)


def _tp_grad(bug: bool) -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    b, d, f = 8, 4, 16

    def body(w1, w2, x, y):
        def loss(w1, w2):
            out = lax.psum(jax.nn.gelu(x @ w1) @ w2, "tp")
            return lax.pmean(jnp.mean((out - y) ** 2), "dp")
        return jax.value_and_grad(loss, argnums=(0, 1))(w1, w2)

    specs = (P(None, "tp"), P("tp", None), P("dp"), P("dp"))
    fn = _smap(body, m, specs, (P(), (P(None, "tp"), P("tp", None))), check_vma=not bug)
    S = lambda s_: NamedSharding(m, s_)  # noqa: E731
    return Program("tp_mlp_grad_bug" if bug else "tp_mlp_grad",
                   "value_and_grad inside shard_map, column/row-parallel MLP, loss pmean over dp, 2x4"
                   + (" (bug: check_vma=False, psum's transpose a psum)" if bug else ""),
                   fn, (_sds((d, f)), _sds((f, d)), _sds((b, d)), _sds((b, d))), tuple(S(s_) for s_ in specs),
                   (S(P()), (S(P(None, "tp")), S(P("tp", None)))),
                   reference=lambda w1, w2, x, y: jax.value_and_grad(_mlp_loss, argnums=(0, 1))(w1, w2, x, y))


def tp_mlp_grad() -> Program:
    return _tp_grad(False)


def tp_mlp_grad_bug() -> Program:
    return _tp_grad(True)


# ---------------------------------------------------------------------------
# 11. A Mamba block under jit, d_inner over tp.

def _mamba(p, x):
    conv_k = p["conv_w"].shape[0]
    xi, z = x @ p["w_x"], x @ p["w_z"]  # [b, L, E]
    e = xi.shape[-1]
    # causal depthwise conv over L: kernel [K, 1, E] in WIO with one feature per group
    xc = lax.conv_general_dilated(xi, p["conv_w"][:, None, :], (1,), [(conv_k - 1, 0)],
                                  dimension_numbers=("NWC", "WIO", "NWC"), feature_group_count=e)
    xc = jax.nn.silu(xc + p["conv_b"])
    dt = jax.nn.softplus((xc @ p["w_dt"]) @ p["w_dtup"] + p["dt_bias"])  # [b, L, E]
    bm, cm = xc @ p["w_b"], xc @ p["w_c"]  # [b, L, N]
    a = -jnp.exp(p["a_log"])  # [E, N]
    da = jnp.exp(dt[..., None] * a)  # [b, L, E, N]
    dbx = dt[..., None] * bm[:, :, None, :] * xc[..., None]

    def combine(l, r):
        return l[0] * r[0], r[0] * l[1] + r[1]

    _, h = lax.associative_scan(combine, (da, dbx), axis=1)
    y = jnp.sum(h * cm[:, :, None, :], -1) + p["d"] * xc
    return (y * jax.nn.silu(z)) @ p["w_out"]


def mamba_tp() -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    b, seq, dm, e, n, r, k = 2, 8, 4, 8, 2, 2, 3
    shapes = {"w_x": ((dm, e), P(None, "tp")), "w_z": ((dm, e), P(None, "tp")),
              "conv_w": ((k, e), P(None, "tp")), "conv_b": ((e,), P("tp")),
              "w_dt": ((e, r), P("tp", None)), "w_dtup": ((r, e), P(None, "tp")), "dt_bias": ((e,), P("tp")),
              "w_b": ((e, n), P("tp", None)), "w_c": ((e, n), P("tp", None)),
              "a_log": ((e, n), P("tp", None)), "d": ((e,), P("tp")), "w_out": ((e, dm), P("tp", None))}
    params = {k_: _sds(s) for k_, (s, _) in shapes.items()}
    shard = {k_: NamedSharding(m, sp) for k_, (_, sp) in shapes.items()}
    xs = NamedSharding(m, P("dp"))
    return Program("mamba_tp", "Mamba block under jit: causal depthwise conv, selective scan, d_inner over tp, 2x4",
                   _mamba, (params, _sds((b, seq, dm))), (shard, xs), xs)


# ---------------------------------------------------------------------------
# 12. Schedule-free AdamW (optax.contrib) under jit, FSDP.

def _sf_opt():
    return optax.contrib.schedule_free_adamw(learning_rate=1e-2, warmup_steps=4, weight_decay=1e-4)


def _sf_loss(params, x, y):
    return jnp.mean((jnp.tanh(x @ params["w1"]) @ params["w2"] - y) ** 2)


def schedule_free_fsdp() -> Program:
    m = mesh((8,), ("fsdp",))
    dm, hid, b = 4, 16, 8
    params = {"w1": _sds((dm, hid)), "w2": _sds((hid, dm))}
    opt = jax.eval_shape(_sf_opt().init, params)

    def rule(_, leaf):
        if leaf.ndim == 2:
            return NamedSharding(m, P("fsdp") if leaf.shape[0] % 8 == 0 else P(None, "fsdp"))
        return NamedSharding(m, P())

    def step(params, opt_state, x, y):
        lv, gr = jax.value_and_grad(_sf_loss)(params, x, y)
        upd, opt_state = _sf_opt().update(gr, opt_state, params)
        params = optax.apply_updates(params, upd)
        return params, opt_state, lv, optax.contrib.schedule_free_eval_params(opt_state, params)

    ps, os_ = g._shard(params, rule), g._shard(opt, rule)
    rep = NamedSharding(m, P())
    return Program("schedule_free_fsdp", "optax.contrib.schedule_free_adamw (warmup) under jit, FSDP over 8",
                   step, (params, opt, _sds((b, dm)), _sds((b, dm))), (ps, os_, rep, rep),
                   (ps, os_, rep, ps), options={"assume": {"*count*": (0, 1000)}})


# ---------------------------------------------------------------------------
# 13. Greedy decoding over vocabulary-parallel logits: argmax with the first index on ties.

def _argmax(bug: bool) -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    b, vocab = 4, 16

    def body(logits):
        vl = logits.shape[-1]
        li = jnp.argmax(logits, -1).astype(i32) + lax.axis_index("tp") * vl
        lv = jnp.max(logits, -1)
        top = lv == lax.pmax(lv, "tp")
        if bug:  # ties go to the last shard that holds the max
            return lax.pmax(jnp.where(top, li, -1), "tp")
        return lax.pmin(jnp.where(top, li, vocab), "tp")

    fn = _smap(body, m, (P("dp", "tp"),), P("dp"))
    S = lambda *s: NamedSharding(m, P(*s))  # noqa: E731
    return Program("argmax_vocab_bug" if bug else "argmax_vocab",
                   "greedy argmax over vocab-parallel logits: pmax of values, pmin of tied indices, 2x4"
                   + (" (bug: pmax of tied indices)" if bug else ""),
                   fn, (_sds((b, vocab)),), (S("dp", "tp"),), S("dp"),
                   reference=lambda x: jnp.argmax(x, -1).astype(i32))


def argmax_vocab() -> Program:
    return _argmax(False)


def argmax_vocab_bug() -> Program:
    return _argmax(True)


# ---------------------------------------------------------------------------
# 14. SigLIP's sigmoid loss with the texts passed round a ppermute ring (big_vision's form).

def _siglip_ref(img, txt, t, bias):
    lg = jnp.exp(t) * img @ txt.T + bias
    z = 2 * jnp.eye(img.shape[0]) - 1
    return -jnp.sum(jax.nn.log_sigmoid(z * lg)) / img.shape[0]


def _siglip(bug: bool) -> Program:
    n = 8
    m = mesh((n,), ("dp",))
    b, d = 16, 4

    def body(img, txt, t, bias):
        bl = img.shape[0]

        def block(tx, own: bool):
            lg = jnp.exp(t) * img @ tx.T + bias
            z = 2 * jnp.eye(bl) - 1 if own else -jnp.ones((bl, bl))
            return jnp.sum(jax.nn.log_sigmoid(z * lg))

        tot = block(txt, True)
        tx = txt
        for _ in range(n - 1):
            tx = lax.ppermute(tx, "dp", [(i, (i + 1) % n) for i in range(n)])
            tot = tot + block(tx, bug)  # bug: every block's diagonal taken as positives
        return -lax.psum(tot, "dp") / b

    fn = _smap(body, m, (P("dp"), P("dp"), P(), P()), P())
    S = lambda *s: NamedSharding(m, P(*s))  # noqa: E731
    return Program("siglip_ppermute_bug" if bug else "siglip_ppermute",
                   "SigLIP sigmoid loss, texts round a ppermute ring (7 hops), dp 8"
                   + (" (bug: positives on every block's diagonal)" if bug else ""),
                   fn, (_sds((b, d)), _sds((b, d)), _sds(()), _sds(())), (S("dp"), S("dp"), S(), S()), S(),
                   reference=_siglip_ref)


def siglip_ppermute() -> Program:
    return _siglip(False)


def siglip_ppermute_bug() -> Program:
    return _siglip(True)


# ---------------------------------------------------------------------------
# 15. A GPipe schedule written with lax.cond on the stage index (first stage feeds, last
#     stage collects), microbatches drained into an output buffer.

def _pipe_ref(w, x):
    h = x
    for i in range(w.shape[0]):
        h = jnp.tanh(h @ w[i])
    return h


# the stages of a heterogeneous pipeline (pipeline_switch): each stage its own layer kind
STAGE_FNS = (lambda h, w: jnp.tanh(h @ w), lambda h, w: jax.nn.relu(h @ w) + h,
             lambda h, w: jax.nn.gelu(h @ w), lambda h, w: h @ w)


def _pipe_switch_ref(w, x):
    h = x
    for i, f in enumerate(STAGE_FNS):
        h = f(h, w[i])
    return h


def _pipe_cond(bug: bool, switch: bool = False) -> Program:
    n = 4
    m = mesh((2, n), ("dp", "pp"))
    micro, b, d = 4, 4, 4

    def body(w, x):
        stage = lax.axis_index("pp")
        state = jnp.zeros(x.shape[1:], f32)
        outs = jnp.zeros_like(x)
        for t in range(micro + n - 1):
            feed = x[t] if t < micro else jnp.zeros(x.shape[1:], f32)
            inp = lax.cond(stage == 0, lambda a, s: a, lambda a, s: s, feed, state)
            if switch:  # bug: the stage's layer picked one stage on (switch clamps the last)
                h = lax.switch(stage + (1 if bug else 0), [lambda a, f=f: f(a, w[0]) for f in STAGE_FNS], inp)
            else:
                h = jnp.tanh(inp @ w[0])
            j = t - (n - 1) + (1 if bug and not switch else 0)  # bug: drains one step early
            if 0 <= j < micro:
                outs = outs.at[j].set(jnp.where(stage == n - 1, h, outs[j]))
            state = lax.ppermute(h, "pp", [(i, i + 1) for i in range(n - 1)])
        return lax.psum(outs, "pp")  # only the last stage wrote

    fn = _smap(body, m, (P("pp"), P(None, "dp")), P(None, "dp"), check_vma=False)
    S = lambda *s: NamedSharding(m, P(*s))  # noqa: E731
    name = ("pipeline_switch" if switch else "pipeline_cond") + ("_bug" if bug else "")
    what = ("heterogeneous stages by lax.switch on the stage index" if switch else "lax.cond on the stage feeds")
    why = " (bug: the next stage's layer)" if switch else " (bug: drains one step early)"
    return Program(name, f"GPipe by hand: {what}, ppermute, last stage drains, 2x4" + (why if bug else ""),
                   fn, (_sds((n, d, d)), _sds((micro, b, d))), (S("pp"), S(None, "dp")), S(None, "dp"),
                   reference=_pipe_switch_ref if switch else _pipe_ref)


def pipeline_cond() -> Program:
    return _pipe_cond(False)


def pipeline_cond_bug() -> Program:
    return _pipe_cond(True)


def pipeline_switch() -> Program:
    return _pipe_cond(False, switch=True)


def pipeline_switch_bug() -> Program:
    return _pipe_cond(True, switch=True)


# ---------------------------------------------------------------------------
# 16. flax's own sync BatchNorm: nn.BatchNorm(axis_name="dp") inside shard_map (flax takes
#     the mean and the mean of squares with lax.pmean, variance E[x^2] - E[x]^2).

def _flax_bn(bug: bool) -> Program:
    import flax.linen as nn

    m = mesh((8,), ("dp",))
    b, d = 16, 4

    class Net(nn.Module):
        axis: str | None

        @nn.compact
        def __call__(self, x):
            x = nn.Dense(d)(x)
            return nn.BatchNorm(use_running_average=False, momentum=0.9, axis_name=self.axis)(x)

    params = jax.eval_shape(Net(None).init, jax.random.key(0), _sds((b, d)))
    state = {"params": params["params"], "batch_stats": params["batch_stats"]}

    def run(axis):
        def f(state, x):
            y, upd = Net(axis).apply(state, x, mutable=["batch_stats"])
            return y, upd["batch_stats"]
        return f

    rep, stats = jax.tree.map(lambda _: P(), state), jax.tree.map(lambda _: P(), state["batch_stats"])
    fn = _smap(run(None if bug else "dp"), m, (rep, P("dp")), (P("dp"), stats), check_vma=not bug)
    S = lambda *s_: NamedSharding(m, P(*s_))  # noqa: E731
    srep, sstats = jax.tree.map(lambda _: S(), state), jax.tree.map(lambda _: S(), state["batch_stats"])
    return Program("flax_syncbn_bug" if bug else "flax_syncbn",
                   "flax nn.Dense + nn.BatchNorm(axis_name='dp') in shard_map, train mode, dp 8"
                   + (" (bug: axis_name left out: per-device statistics)" if bug else ""),
                   fn, (state, _sds((b, d))), (srep, S("dp")), (S("dp"), sstats), reference=run(None))


def flax_syncbn() -> Program:
    return _flax_bn(False)


def flax_syncbn_bug() -> Program:
    return _flax_bn(True)


PROGRAMS: g.Programs = {
    "sync_batchnorm": sync_batchnorm, "sync_batchnorm_bug": sync_batchnorm_bug,
    "swa_halo_rope": swa_halo_rope, "swa_halo_rope_bug": swa_halo_rope_bug,
    "fp8_delayed_scaling": fp8_delayed_scaling, "fp8_delayed_scaling_bug": fp8_delayed_scaling_bug,
    "topk_vocab": topk_vocab, "topk_vocab_bug": topk_vocab_bug,
    "topk_vocab_values": topk_vocab_values, "topk_vocab_ties": topk_vocab_ties,
    "prefix_sum_ppermute": prefix_sum_ppermute, "prefix_sum_ppermute_bug": prefix_sum_ppermute_bug,
    "ring_allreduce": ring_allreduce, "ring_allreduce_bug": ring_allreduce_bug,
    "tp_layernorm": tp_layernorm, "tp_layernorm_bug": tp_layernorm_bug,
    "fsdp_clip_ema": fsdp_clip_ema, "fsdp_clip_ema_bug": fsdp_clip_ema_bug,
    "fsdp_clip_ema_stale": fsdp_clip_ema_stale,
    "flash_decode_sp": flash_decode_sp, "flash_decode_sp_bug": flash_decode_sp_bug,
    "tp_mlp_grad": tp_mlp_grad, "tp_mlp_grad_bug": tp_mlp_grad_bug,
    "mamba_tp": mamba_tp, "schedule_free_fsdp": schedule_free_fsdp,
    "argmax_vocab": argmax_vocab, "argmax_vocab_bug": argmax_vocab_bug,
    "siglip_ppermute": siglip_ppermute, "siglip_ppermute_bug": siglip_ppermute_bug,
    "pipeline_cond": pipeline_cond, "pipeline_cond_bug": pipeline_cond_bug,
    "pipeline_switch": pipeline_switch, "pipeline_switch_bug": pipeline_switch_bug,
    "flax_syncbn": flax_syncbn, "flax_syncbn_bug": flax_syncbn_bug,
}

MUTATIONS: g.Mutations = g3.MUTATIONS

g.OUT = g.ROOT / "testdata" / "clients6"  # --export writes this batch's pairs here


# ---------------------------------------------------------------------------
# Single-device reproducers of the batch's unknowns (--repro writes testdata/clients6/): the
# softmax of top-k values found from two halves' top-k, and a softmax under a data-dependent
# length mask split in two blocks and merged by max rescaling (flash-decoding's merge).

def _topk_softmax_pair(x):
    def ref(x):
        v, _ = lax.top_k(x, TOPK)
        return jax.nn.softmax(v, -1)

    def split(x):
        h = x.shape[-1] // 2
        va, _ = lax.top_k(x[:, :h], TOPK)
        vb, _ = lax.top_k(x[:, h:], TOPK)
        v, _ = lax.top_k(jnp.concatenate([va, vb], 1), TOPK)
        return jax.nn.softmax(v, -1)
    return ref, split


def _masked_split_softmax_pair(s, mask=lambda pos, n, j: pos < n):
    """A length-masked softmax-weighted sum and its two-block split merged by max rescaling;
    `mask(pos, n, j)`: block j's mask at positions pos (testdata/gen_cases.py's twins pass
    wrong ones)."""
    n_all, blocks = s.shape[0], 2

    def ref(s, v, n):
        ok = jnp.arange(n_all) < n
        return jnp.sum(jax.nn.softmax(jnp.where(ok, s, -jnp.inf)) * v)

    def split(s, v, n):
        bl = n_all // blocks
        parts = []
        for j in range(blocks):
            sj, vj = s[j * bl:(j + 1) * bl], v[j * bl:(j + 1) * bl]
            ok = mask(jnp.arange(bl) + j * bl, n, j)
            mj = jnp.max(jnp.where(ok, sj, -jnp.inf))
            parts.append((mj, jnp.where(ok, jnp.exp(sj - mj), 0.0), vj))
        mx = parts[0][0]
        for mj, _, _ in parts[1:]:
            mx = jnp.maximum(mx, mj)
        num = sum(jnp.sum(p * vj) * jnp.exp(mj - mx) for mj, p, vj in parts)
        den = sum(jnp.sum(p) * jnp.exp(mj - mx) for mj, p, _ in parts)
        return num / den
    return ref, split


def write_repros() -> None:
    """testdata/clients6/{topk_softmax,masked_split_softmax}.{ref,split}.mlir."""
    x = _sds((1, 4))
    ref, split = _topk_softmax_pair(x)
    pairs = {"topk_softmax": (ref, split, (x,))}
    args = (_sds((4,)), _sds((4,)), _sds((), i32))
    ref, split = _masked_split_softmax_pair(args[0])
    pairs["masked_split_softmax"] = (ref, split, args)
    g.OUT.mkdir(exist_ok=True)
    for name, (ref, split, a) in pairs.items():
        for side, f in (("ref", ref), ("split", split)):
            (g.OUT / f"{name}.{side}.mlir").write_text(jax.jit(f).lower(*a).as_text())
        print("wrote", name)


def check_row(name: str, form: str, timeout_s: float) -> dict:
    """gen_clients' --one row plus what this batch's table needs: the check's CPU seconds
    (the machine is shared, wall time is not the program's) and, for a not-equivalent
    verdict, whether XLA reproduced the counterexample."""
    import time

    from tv_mlir.errors import TvError

    p = PROGRAMS[name]()
    t = time.process_time()
    try:
        v = g.tj.check(p.fn, *p.args, in_shardings=p.in_shardings, out_shardings=p.out_shardings,
                       reference=p.reference, form=form, timeout_s=timeout_s, cache=False, **p.options)
    except TvError as e:
        return {"verdict": "error", "exit": 3, "cpu_s": time.process_time() - t, "reason": str(e)[:300]}
    c = v.counterexample
    return {"verdict": v.verdict, "exit": v.exit_code, "cpu_s": round(time.process_time() - t, 2),
            "xla_confirmed": None if c is None else any(r.confirmed for r in c.replay if "xla" in r.backend),
            "reason": (v.reason or "")[:300]}


if __name__ == "__main__":
    if sys.argv[1:2] == ["--one"]:  # a traceback here is a finding: let it show
        import json
        print(json.dumps(check_row(sys.argv[2], sys.argv[3], float(sys.argv[4]))))
        sys.exit(0)
    if sys.argv[1:2] == ["--repro"]:
        write_repros()
        sys.exit(0)
    sys.exit(g.main(sys.argv[1:], PROGRAMS, MUTATIONS, __file__, __doc__))
