"""Real-client programs, seventh batch (helper-73): plans ML-infra users write by hand in
shard_map, and three jit steps partitioned by XLA, of kinds the first six batches do not
hold, at tiny dims on 8 CPU devices.

    .venv/bin/python testdata/gen_clients7.py --list
    .venv/bin/python testdata/gen_clients7.py --one NAME FORM TIMEOUT   # one row, JSON, CPU s
    .venv/bin/python testdata/gen_clients7.py --mutants NAME ...        # seeded partitioner bugs
    .venv/bin/python testdata/gen_clients7.py --export NAME ...         # testdata/clients7/NAME.*.mlir
    .venv/bin/python testdata/gen_clients7.py --repro                   # ring_kv_decode's unknown, 1 device

The driver and the Program record are gen_clients.py's, the seeded bugs gen_clients3.py's.
shard_map plans are checked against the plain function they parallelize (`reference=`);
each `*_bug` twin is the same plan with a silent mistake a user makes there (`--list`
prints its difference from the reference on XLA, which must not be 0):

- alibi_tp: causal attention with ALiBi, heads sharded over tp; each device takes its heads'
  slopes from the model's slope table at its head offset. Bug: the first heads' slopes on
  every device (the table sliced at 0, not at the shard's head offset).
- ulysses_alibi: DeepSpeed-Ulysses with ALiBi: an all_to_all trades the sequence shards for
  head shards, so each device's slopes are the table's at its post-all-to-all head offset.
  Bug: sliced at 0.
- rope_cp: context parallelism (Llama-3 style): the sequence sharded over sp, RoPE at global
  positions, k/v all-gathered, a causal mask from the global query positions. Bugs: RoPE at
  local positions (_bug); the causal mask from local query positions (_mask).
- relpos_bias_sp: learned relative-position bias (Shaw/T5 style, distances clipped to
  +-4, a [buckets, heads] table), the queries sharded over sp, keys whole. Bug: the query
  positions not offset by the shard's start.
- zero2_momentum: ZeRO-2 by hand: per-device gradients reduce-scattered (psum_scatter /
  n), momentum SGD with weight decay on the parameter shard, parameters all-gathered.
  Bugs: the reduce-scatter's sum not divided by the devices (_bug); the parameter shard
  sliced at row 0 on every device (_offset).
- lamb_tp: LAMB by hand on tensor-parallel weights: Adam moments, a per-layer trust ratio
  ||w|| / ||u|| whose norms need a psum over tp. Bug: the trust ratio from the shard's norms.
- tp2d_mlp: 2D tensor parallelism: both weights sharded over both mesh axes, partial sums
  reduced over x after the first matmul and over y after the second. Bug: the first
  reduction over y.
- int8_wo_tp: int8 weight-only quantized MLP, per-output-channel scales, column- then
  row-parallel over tp; the replicated scale vector sliced at the shard's columns. Bug:
  sliced at 0.
- ring_kv_decode: MQA decoding with a ring-buffer KV cache (sliding window) sharded over
  sp: the owner of slot pos % W writes the new k/v, softmax merged by pmax / psum. Bug:
  every shard writes at pos % W_local.
- masked_pool_sp: masked mean pooling over a sequence sharded on sp (sum(x * mask) /
  max(count, 1)), then a linear head. Bug: the mean of the shards' masked means.
- vocab_zloss: vocabulary-parallel cross entropy with PaLM's z-loss (1e-4 * lse^2). Bug:
  the z-loss from each shard's own log-sum-exp, averaged.
- circular_pipeline: a circular (interleaved) pipeline, MaxText/praxis style: 8 layers over
  4 stages, layer r * 4 + s on stage s, microbatches wrapping from the last stage back to
  the first by a circular ppermute. Bug: the repeat index from the step alone, not offset
  by the stage.
- loss_scale_fsdp: dynamic loss scaling on FSDP-sharded fp16-style gradients: unscale, an
  all-finite check that must agree across shards (pmin), skip or apply, grow or halve the
  scale. Checked under inputs="ieee" (over the reals every gradient is finite). Bug: the
  finite check per shard (shards skip independently, the replicated scale diverges).
- tp2d_jit (jit): a residual MLP block with RMSNorm, weights NamedSharding-ed over both
  axes of a 2x4 mesh; XLA partitions it.
- int8_wo_jit (jit): int8 weight-only MLP, per-channel scales sharded with their columns.
- lion_zero1_jit (jit): a flax Dense model stepped by optax.lion, parameters replicated,
  Lion's momentum sharded over dp (ZeRO-1 through out_shardings), batch over dp.
"""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

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
from gen_clients6 import _rope, _sds, _smap  # noqa: E402  (the sixth batch's helpers, the same)
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

lax = jax.lax
f32 = jnp.float32
i32 = jnp.int32
INF = float("inf")


def _shardings(m):
    return lambda *s: NamedSharding(m, P(*s))


def _softmax_attend(s, v):
    return jnp.einsum("...qk,...kd->...qd", jax.nn.softmax(s, -1), v)


# ---------------------------------------------------------------------------
# 1. ALiBi, heads over tp.

def _alibi_slopes(heads: int) -> np.ndarray:
    return (2.0 ** (-8.0 * (np.arange(heads) + 1) / heads)).astype(np.float32)


def _alibi_attn(q, k, v, slopes):
    sq = q.shape[-2]
    pos = jnp.arange(sq)
    rel = (pos[None, :] - pos[:, None]).astype(f32)  # k - q: <= 0 where seen
    s = jnp.einsum("bhqd,bhkd->bhqk", q, k) / np.float32(np.sqrt(q.shape[-1]))
    s = s + slopes[None, :, None, None] * rel[None, None]
    s = jnp.where((rel <= 0)[None, None], s, -jnp.inf)
    return _softmax_attend(s, v)


def _alibi(bug: bool) -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    b, h, s, d = 2, 8, 8, 4
    table = _alibi_slopes(h)

    def ref(q, k, v):
        return _alibi_attn(q, k, v, jnp.asarray(table))

    def body(q, k, v):
        hl = q.shape[1]
        start = 0 if bug else lax.axis_index("tp") * hl
        return _alibi_attn(q, k, v, lax.dynamic_slice(jnp.asarray(table), (start,), (hl,)))

    spec = P("dp", "tp")
    S = _shardings(m)
    return Program("alibi_tp_bug" if bug else "alibi_tp",
                   "causal ALiBi attention, heads over tp, slopes at the shard's head offset, 2x4"
                   + (" (bug: slopes sliced at 0)" if bug else ""),
                   _smap(body, m, (spec,) * 3, spec, check_vma=False), (_sds((b, h, s, d)),) * 3,
                   (S("dp", "tp"),) * 3, S("dp", "tp"), reference=ref)


def _ulysses_alibi(bug: bool) -> Program:
    """DeepSpeed-Ulysses with ALiBi: q, k, v arrive sharded over the sequence with every
    head; an all_to_all trades sequence for heads, so after it device i holds heads
    i * h/n .. and their slopes are the table's at that offset."""
    m = mesh((2, 4), ("dp", "sp"))
    b, h, s, d = 2, 8, 16, 4
    table = _alibi_slopes(h)

    def ref(q, k, v):
        return _alibi_attn(q, k, v, jnp.asarray(table))

    def body(q, k, v):  # [b, h, s/n, d] -> [b, h/n, s, d]
        a2a = lambda x: lax.all_to_all(x, "sp", 1, 2, tiled=True)  # noqa: E731
        q, k, v = a2a(q), a2a(k), a2a(v)
        hl = q.shape[1]
        start = 0 if bug else lax.axis_index("sp") * hl
        o = _alibi_attn(q, k, v, lax.dynamic_slice(jnp.asarray(table), (start,), (hl,)))
        return lax.all_to_all(o, "sp", 2, 1, tiled=True)  # back to [b, h, s/n, d]

    spec = P("dp", None, "sp")
    S = _shardings(m)
    return Program("ulysses_alibi_bug" if bug else "ulysses_alibi",
                   "Ulysses (all_to_all seq <-> heads) + causal ALiBi, slopes at the post-a2a head offset, 2x4"
                   + (" (bug: slopes sliced at 0)" if bug else ""),
                   _smap(body, m, (spec,) * 3, spec, check_vma=False), (_sds((b, h, s, d)),) * 3,
                   (S("dp", None, "sp"),) * 3, S("dp", None, "sp"), reference=ref)


# ---------------------------------------------------------------------------
# 2. Context parallelism with RoPE: k/v all-gathered, positions global.


def _causal(q, k, v, qpos, kpos):
    s = jnp.einsum("bqd,bkd->bqk", q, k) / np.float32(np.sqrt(q.shape[-1]))
    s = jnp.where((kpos[None, :] <= qpos[:, None])[None], s, -jnp.inf)
    return _softmax_attend(s, v)


def _rope_cp_ref(q, k, v):
    pos = jnp.arange(q.shape[1])
    return _causal(_rope(q, pos), _rope(k, pos), v, pos, pos)


def _rope_cp(bug: str) -> Program:
    m = mesh((2, 4), ("dp", "sp"))
    b, s, d = 2, 16, 4

    def body(q, k, v):
        sl = q.shape[1]
        start = lax.axis_index("sp") * sl
        pos = jnp.arange(sl) + (0 if bug == "rope" else start)
        q, k = _rope(q, pos), _rope(k, pos)
        kk = lax.all_gather(k, "sp", axis=1, tiled=True)
        vv = lax.all_gather(v, "sp", axis=1, tiled=True)
        qpos = jnp.arange(sl) + (0 if bug == "mask" else start)
        return _causal(q, kk, vv, qpos, jnp.arange(kk.shape[1]))

    spec = P("dp", "sp")
    S = _shardings(m)
    name = {"": "rope_cp", "rope": "rope_cp_bug", "mask": "rope_cp_mask"}[bug]
    why = {"": "", "rope": " (bug: RoPE at local positions)", "mask": " (bug: causal mask at local positions)"}[bug]
    return Program(name, "context parallel causal attention + RoPE, k/v all-gathered over sp 4" + why,
                   _smap(body, m, (spec,) * 3, spec, check_vma=False), (_sds((b, s, d)),) * 3,
                   (S("dp", "sp"),) * 3, S("dp", "sp"), reference=_rope_cp_ref)


# ---------------------------------------------------------------------------
# 3. Learned relative-position bias, queries over sp.

MAX_REL = 4


def _relpos_attn(q, k, v, table, qpos):
    kpos = jnp.arange(k.shape[2])
    bucket = jnp.clip(kpos[None, :] - qpos[:, None], -MAX_REL, MAX_REL) + MAX_REL  # [q, k]
    bias = jnp.transpose(table[bucket], (2, 0, 1))  # [h, q, k]
    s = jnp.einsum("bhqd,bhkd->bhqk", q, k) + bias[None]
    return _softmax_attend(s, v)


def _relpos(bug: bool) -> Program:
    m = mesh((2, 4), ("dp", "sp"))
    b, h, s, d = 2, 2, 16, 4

    def ref(q, k, v, table):
        return _relpos_attn(q, k, v, table, jnp.arange(s))

    def body(q, k, v, table):
        sl = q.shape[2]
        qpos = jnp.arange(sl) + (0 if bug else lax.axis_index("sp") * sl)
        return _relpos_attn(q, k, v, table, qpos)

    S = _shardings(m)
    qs, kv = P("dp", None, "sp"), P("dp")
    return Program("relpos_bias_sp_bug" if bug else "relpos_bias_sp",
                   "learned relative-position bias (clipped +-4), queries over sp 4, 2x4"
                   + (" (bug: query positions not offset)" if bug else ""),
                   _smap(body, m, (qs, kv, kv, P()), qs),
                   (_sds((b, h, s, d)),) * 3 + (_sds((2 * MAX_REL + 1, h)),),
                   (S("dp", None, "sp"), S("dp"), S("dp"), S()), S("dp", None, "sp"), reference=ref)


# ---------------------------------------------------------------------------
# 4. ZeRO-2 by hand: reduce-scattered gradients, sharded momentum, all-gathered params.

LR, MOM, WD = 0.1, 0.9, 0.01


def _mse(w, x, y):
    return jnp.mean((jnp.tanh(x @ w) - y) ** 2)


def _zero2_ref(w, mom, x, y):
    gr = jax.grad(_mse)(w, x, y)
    mom = MOM * mom + gr
    return w - LR * (mom + WD * w), mom


def _zero2(bug: str) -> Program:
    n = 8
    m = mesh((n,), ("dp",))
    b, din, dout = 16, 16, 4

    def body(w, mom, x, y):
        gr = jax.grad(_mse)(w, x, y)  # this device's batch: the mean of its rows
        g_sh = lax.psum_scatter(gr, "dp", scatter_dimension=0, tiled=True)
        if bug != "scale":
            g_sh = g_sh / n
        rows = mom.shape[0]
        start = 0 if bug == "offset" else lax.axis_index("dp") * rows
        w_sh = lax.dynamic_slice_in_dim(w, start, rows, 0)
        mom = MOM * mom + g_sh
        w_sh = w_sh - LR * (mom + WD * w_sh)
        return lax.all_gather(w_sh, "dp", axis=0, tiled=True), mom

    S = _shardings(m)
    name = {"": "zero2_momentum", "scale": "zero2_momentum_bug", "offset": "zero2_momentum_offset"}[bug]
    why = {"": "", "scale": " (bug: reduce-scatter not divided by n)",
           "offset": " (bug: parameter shard sliced at row 0)"}[bug]
    return Program(name, "ZeRO-2 by hand: psum_scatter grads, momentum SGD + wd on the shard, all_gather, dp 8"
                   + why,
                   _smap(body, m, (P(), P("dp"), P("dp"), P("dp")), (P(), P("dp")), check_vma=False),
                   (_sds((din, dout)), _sds((din, dout)), _sds((b, din)), _sds((b, dout))),
                   (S(), S("dp"), S("dp"), S("dp")), (S(), S("dp")), reference=_zero2_ref)


# ---------------------------------------------------------------------------
# 5. LAMB by hand on tensor-parallel weights.

B1, B2, EPS, STEP, LAMB_LR, LAMB_WD = 0.9, 0.999, 1e-6, 10, 1e-3, 0.01


def _lamb_leaf(w, gr, mu, nu):
    """One leaf's moments and its Adam direction with weight decay (before the trust ratio)."""
    mu = B1 * mu + (1 - B1) * gr
    nu = B2 * nu + (1 - B2) * gr * gr
    u = (mu / (1 - B1 ** STEP)) / (jnp.sqrt(nu / (1 - B2 ** STEP)) + EPS) + LAMB_WD * w
    return w, u, mu, nu


def _lamb_apply(w, u, wsq, usq):
    wn, un = jnp.sqrt(wsq), jnp.sqrt(usq)
    ratio = jnp.where((wn > 0) & (un > 0), wn / un, 1.0)
    return w - LAMB_LR * ratio * u


def _lamb_ref(params, grads, state):
    out_w, out_mu, out_nu = [], [], []
    for w, gr, mu, nu in zip(params, grads, state["mu"], state["nu"], strict=True):
        w, u, mu, nu = _lamb_leaf(w, gr, mu, nu)
        out_w.append(_lamb_apply(w, u, jnp.sum(w * w), jnp.sum(u * u)))
        out_mu.append(mu)
        out_nu.append(nu)
    return tuple(out_w), {"mu": tuple(out_mu), "nu": tuple(out_nu)}


def _lamb(bug: bool) -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    d, f = 8, 16

    def body(params, grads, state):
        out_w, out_mu, out_nu = [], [], []
        for w, gr, mu, nu in zip(params, grads, state["mu"], state["nu"], strict=True):
            w, u, mu, nu = _lamb_leaf(w, gr, mu, nu)
            wsq, usq = jnp.sum(w * w), jnp.sum(u * u)
            if not bug:
                wsq, usq = lax.psum(wsq, "tp"), lax.psum(usq, "tp")
            out_w.append(_lamb_apply(w, u, wsq, usq))
            out_mu.append(mu)
            out_nu.append(nu)
        return tuple(out_w), {"mu": tuple(out_mu), "nu": tuple(out_nu)}

    specs = (P(None, "tp"), P("tp", None))  # column-parallel w1 [d, f], row-parallel w2 [f, d]
    st = {"mu": specs, "nu": specs}
    S = _shardings(m)
    sh = (S(None, "tp"), S("tp", None))
    shapes = (_sds((d, f)), _sds((f, d)))
    return Program("lamb_tp_bug" if bug else "lamb_tp",
                   "LAMB by hand on column/row-parallel weights, trust ratio norms psum'd over tp, 2x4"
                   + (" (bug: trust ratio from the shard's norms)" if bug else ""),
                   _smap(body, m, (specs, specs, st), (specs, st), check_vma=not bug),
                   (shapes, shapes, {"mu": shapes, "nu": shapes}), (sh, sh, {"mu": sh, "nu": sh}),
                   (sh, {"mu": sh, "nu": sh}), options={"assume": {"*nu*": (0.0, INF)}}, reference=_lamb_ref)


# ---------------------------------------------------------------------------
# 6. 2D tensor parallelism: weights over both mesh axes.

def _mlp2_ref(x, w1, w2):
    return jax.nn.relu(x @ w1) @ w2


def _tp2d(bug: bool) -> Program:
    m = mesh((2, 4), ("x", "y"))
    b, d, f = 4, 8, 16

    def body(x, w1, w2):
        # x [b, d/x]; w1 [d/x, f/y]: partial over x; w2 [f/y, d/x]: partial over y
        h = lax.psum(x @ w1, "y" if bug else "x")
        return lax.psum(jax.nn.relu(h) @ w2, "y")

    S = _shardings(m)
    return Program("tp2d_mlp_bug" if bug else "tp2d_mlp",
                   "2D tensor parallel MLP: w1 (x, y), w2 (y, x), psum over x then y, 2x4"
                   + (" (bug: the first psum over y)" if bug else ""),
                   _smap(body, m, (P(None, "x"), P("x", "y"), P("y", "x")), P(None, "x"), check_vma=False),
                   (_sds((b, d)), _sds((d, f)), _sds((f, d))), (S(None, "x"), S("x", "y"), S("y", "x")),
                   S(None, "x"), reference=_mlp2_ref)


# ---------------------------------------------------------------------------
# 7. int8 weight-only quantized MLP, per-channel scales, tp.

def _wo_ref(x, w1, s1, w2, s2):
    h = jax.nn.gelu((x @ w1.astype(f32)) * s1)
    return (h @ w2.astype(f32)) * s2


def _int8_wo(bug: bool) -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    t, d, f = 8, 8, 16

    def body(x, w1, s1, w2, s2):
        fl = w1.shape[1]
        s1l = lax.dynamic_slice_in_dim(s1, 0 if bug else lax.axis_index("tp") * fl, fl)
        h = jax.nn.gelu((x @ w1.astype(f32)) * s1l)
        return lax.psum(h @ w2.astype(f32), "tp") * s2

    S = _shardings(m)
    i8 = jnp.int8
    return Program("int8_wo_tp_bug" if bug else "int8_wo_tp",
                   "int8 weight-only MLP, per-channel scales (replicated, sliced per shard), tp 4, 2x4"
                   + (" (bug: scales sliced at 0)" if bug else ""),
                   _smap(body, m, (P("dp"), P(None, "tp"), P(), P("tp", None), P()), P("dp")),
                   (_sds((t, d)), _sds((d, f), i8), _sds((f,)), _sds((f, d), i8), _sds((d,))),
                   (S("dp"), S(None, "tp"), S(), S("tp", None), S()), S("dp"), reference=_wo_ref)


# ---------------------------------------------------------------------------
# 8. MQA decode with a ring-buffer KV cache sharded over sp.

def _decode_ref(q, kc, vc, kn, vn, pos):
    slot = pos % kc.shape[1]
    kc = lax.dynamic_update_slice(kc, kn[:, None], (0, slot, 0))
    vc = lax.dynamic_update_slice(vc, vn[:, None], (0, slot, 0))
    s = jnp.einsum("bhd,bwd->bhw", q, kc) / np.float32(np.sqrt(q.shape[-1]))
    return jnp.einsum("bhw,bwd->bhd", jax.nn.softmax(s, -1), vc), kc, vc


def _ring_decode(bug: bool) -> Program:
    m = mesh((2, 4), ("dp", "sp"))
    b, h, w, d = 2, 4, 16, 4

    def body(q, kc, vc, kn, vn, pos):
        wl = kc.shape[1]
        slot = pos % w
        if bug:  # every shard writes the new entry at its own local slot
            local, mine = slot % wl, True
        else:
            local = slot - lax.axis_index("sp") * wl
            mine = (local >= 0) & (local < wl)
            local = jnp.clip(local, 0, wl - 1)
        kc = jnp.where(mine, lax.dynamic_update_slice(kc, kn[:, None], (0, local, 0)), kc)
        vc = jnp.where(mine, lax.dynamic_update_slice(vc, vn[:, None], (0, local, 0)), vc)
        s = jnp.einsum("bhd,bwd->bhw", q, kc) / np.float32(np.sqrt(d))
        mx = lax.pmax(jnp.max(s, -1, keepdims=True), "sp")
        e = jnp.exp(s - mx)
        den = lax.psum(jnp.sum(e, -1, keepdims=True), "sp")
        return lax.psum(jnp.einsum("bhw,bwd->bhd", e, vc), "sp") / den, kc, vc

    S = _shardings(m)
    cs = P("dp", "sp")
    return Program("ring_kv_decode_bug" if bug else "ring_kv_decode",
                   "MQA decode, ring-buffer KV cache over sp: owner writes slot pos % W, pmax/psum softmax, 2x4"
                   + (" (bug: every shard writes its local slot)" if bug else ""),
                   _smap(body, m, (P("dp"), cs, cs, P("dp"), P("dp"), P()), (P("dp"), cs, cs), check_vma=False),
                   (_sds((b, h, d)), _sds((b, w, d)), _sds((b, w, d)), _sds((b, d)), _sds((b, d)), _sds((), i32)),
                   (S("dp"), S("dp", "sp"), S("dp", "sp"), S("dp"), S("dp"), S()),
                   (S("dp"), S("dp", "sp"), S("dp", "sp")), options={"assume": {"pos": (0, 1000)}},
                   reference=_decode_ref)


# ---------------------------------------------------------------------------
# 9. Masked mean pooling over a sequence sharded on sp.

def _pool_ref(x, mask, w):
    mk = mask.astype(f32)
    pooled = jnp.sum(x * mk[..., None], 1) / jnp.maximum(jnp.sum(mk, 1), 1.0)[:, None]
    return pooled @ w


def _pool(bug: bool) -> Program:
    m = mesh((2, 4), ("dp", "sp"))
    b, s, d, c = 2, 16, 4, 3

    def body(x, mask, w):
        mk = mask.astype(f32)
        tot, cnt = jnp.sum(x * mk[..., None], 1), jnp.sum(mk, 1)
        if bug:
            pooled = lax.pmean(tot / jnp.maximum(cnt, 1.0)[:, None], "sp")
        else:
            pooled = lax.psum(tot, "sp") / jnp.maximum(lax.psum(cnt, "sp"), 1.0)[:, None]
        return pooled @ w

    S = _shardings(m)
    return Program("masked_pool_sp_bug" if bug else "masked_pool_sp",
                   "masked mean pooling over sp (psum of sums and counts), linear head, 2x4"
                   + (" (bug: mean of the shards' masked means)" if bug else ""),
                   _smap(body, m, (P("dp", "sp"), P("dp", "sp"), P()), P("dp")),
                   (_sds((b, s, d)), _sds((b, s), i32), _sds((d, c))), (S("dp", "sp"), S("dp", "sp"), S()),
                   S("dp"), options={"assume": {"mask": (0, 2)}}, reference=_pool_ref)


# ---------------------------------------------------------------------------
# 10. Vocabulary-parallel cross entropy with z-loss.

ZCOEF = 1e-4


def _zloss_ref(logits, labels):
    lse = jax.nn.logsumexp(logits, -1)
    tgt = jnp.take_along_axis(logits, labels[:, None], -1)[:, 0]
    return jnp.mean(lse - tgt + ZCOEF * lse ** 2)


def _zloss(bug: bool) -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    b, vocab = 4, 16

    def body(logits, labels):
        vl = logits.shape[-1]
        mx = lax.pmax(jnp.max(logits, -1), "tp")
        se_local = jnp.sum(jnp.exp(logits - mx[:, None]), -1)
        lse = mx + jnp.log(lax.psum(se_local, "tp"))
        local = labels - lax.axis_index("tp") * vl
        ok = (local >= 0) & (local < vl)
        tgt = jnp.take_along_axis(logits, jnp.clip(local, 0, vl - 1)[:, None], -1)[:, 0]
        tgt = lax.psum(jnp.where(ok, tgt, 0.0), "tp")
        z = lax.pmean((mx + jnp.log(se_local)) ** 2, "tp") if bug else lse ** 2
        return lax.pmean(jnp.mean(lse - tgt + ZCOEF * z), "dp")

    S = _shardings(m)
    return Program("vocab_zloss_bug" if bug else "vocab_zloss",
                   "vocab-parallel cross entropy + z-loss (pmax, psum of exp, owner's target), 2x4"
                   + (" (bug: z-loss from each shard's own lse)" if bug else ""),
                   _smap(body, m, (P("dp", "tp"), P("dp")), P(), check_vma=False),
                   (_sds((b, vocab)), _sds((b,), i32)), (S("dp", "tp"), S("dp")), S(),
                   options={"assume": {"labels": (0, vocab)}}, reference=_zloss_ref)


# ---------------------------------------------------------------------------
# 11. Circular (interleaved) pipeline: 8 layers on 4 stages, microbatches wrap around.

def _circ_ref(w, x):
    reps, n = w.shape[:2]
    h = x
    for layer in range(reps * n):
        h = jnp.tanh(h @ w[layer // n, layer % n])
    return h


def _circular(bug: bool) -> Program:
    n, reps = 4, 2
    m = mesh((2, n), ("dp", "pp"))
    micro, b, d = n, 2, 4

    def body(w, x):
        stage = lax.axis_index("pp")
        wl = w[:, 0]  # [reps, d, d]: layers stage, stage + n
        state = jnp.zeros_like(x[0])
        outs = jnp.zeros_like(x)
        for t in range(micro + n * reps - 1):
            inp = jnp.where(stage == 0, x[t], state) if t < micro else state
            rep = (t if bug else t - stage) // n
            h = jnp.tanh(inp @ lax.dynamic_index_in_dim(wl, jnp.clip(rep, 0, reps - 1), 0, keepdims=False))
            j = t - (n - 1) - (reps - 1) * n  # the microbatch the last stage finishes now
            if 0 <= j < micro:
                outs = outs.at[j].set(jnp.where(stage == n - 1, h, outs[j]))
            state = lax.ppermute(h, "pp", [(i, (i + 1) % n) for i in range(n)])
        return lax.psum(outs, "pp")

    S = _shardings(m)
    return Program("circular_pipeline_bug" if bug else "circular_pipeline",
                   "circular pipeline: 8 layers on 4 stages, ppermute ring with wrap-around, 2x4"
                   + (" (bug: repeat index not offset by the stage)" if bug else ""),
                   _smap(body, m, (P(None, "pp"), P(None, "dp")), P(None, "dp"), check_vma=False),
                   (_sds((reps, n, d, d)), _sds((micro, b, d))), (S(None, "pp"), S(None, "dp")), S(None, "dp"),
                   reference=lambda w, x: jax.vmap(lambda xi: _circ_ref(w, xi))(x))


# ---------------------------------------------------------------------------
# 12. Dynamic loss scaling on FSDP-sharded gradients.

LS_LR = 0.01


def _ls_ref(w, gr, scale):
    u = gr / scale
    ok = jnp.all(jnp.isfinite(u))
    return jnp.where(ok, w - LS_LR * u, w), jnp.where(ok, scale * 2.0, scale * 0.5)


def _loss_scale(bug: bool) -> Program:
    m = mesh((8,), ("fsdp",))
    r, c = 16, 4

    def body(w, gr, scale):
        u = gr / scale
        ok = jnp.all(jnp.isfinite(u))
        if not bug:
            ok = lax.pmin(ok.astype(i32), "fsdp") > 0
        return jnp.where(ok, w - LS_LR * u, w), jnp.where(ok, scale * 2.0, scale * 0.5)

    S = _shardings(m)
    return Program("loss_scale_fsdp_bug" if bug else "loss_scale_fsdp",
                   "dynamic loss scaling, FSDP grads: all-finite check pmin'd over shards, fsdp 8"
                   + (" (bug: finite check per shard)" if bug else ""),
                   _smap(body, m, (P("fsdp"), P("fsdp"), P()), (P("fsdp"), P()), check_vma=not bug),
                   (_sds((r, c)), _sds((r, c)), _sds(())), (S("fsdp"), S("fsdp"), S()), (S("fsdp"), S()),
                   options={"inputs": "ieee", "assume": {"scale": (1.0, 65536.0), "w": (-1e4, 1e4)}},
                   reference=_ls_ref)


# ---------------------------------------------------------------------------
# 13-15. jit programs partitioned by XLA.

def tp2d_jit() -> Program:
    m = mesh((2, 4), ("x", "y"))
    b, d, f = 8, 8, 16

    def block(x, p):
        h = x * lax.rsqrt(jnp.mean(x * x, -1, keepdims=True) + 1e-6) * p["g"]
        h = jax.nn.silu(h @ p["w1"])
        h = lax.with_sharding_constraint(h, NamedSharding(m, P(None, "y")))
        return x + h @ p["w2"]

    S = _shardings(m)
    params = {"g": _sds((d,)), "w1": _sds((d, f)), "w2": _sds((f, d))}
    psh = {"g": S(), "w1": S("x", "y"), "w2": S("y", "x")}
    return Program("tp2d_jit", "jit: RMSNorm + SiLU MLP residual block, weights over both axes (x, y), 2x4",
                   block, (_sds((b, d)), params), (S("x"), psh), S("x"))


def int8_wo_jit() -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    t, d, f = 8, 8, 16

    def mlp(x, p):
        h = jax.nn.relu((x @ p["w1"].astype(f32)) * p["s1"])
        return (h @ p["w2"].astype(f32)) * p["s2"]

    S = _shardings(m)
    i8 = jnp.int8
    params = {"w1": _sds((d, f), i8), "s1": _sds((f,)), "w2": _sds((f, d), i8), "s2": _sds((d,))}
    psh = {"w1": S(None, "tp"), "s1": S("tp"), "w2": S("tp", None), "s2": S()}
    return Program("int8_wo_jit", "jit: int8 weight-only MLP, per-channel scales sharded with their columns, 2x4",
                   mlp, (_sds((t, d)), params), (S("dp"), psh), S("dp"))


def lion_zero1_jit() -> Program:
    import flax.linen as nn

    m = mesh((8,), ("dp",))
    b, d, c = 16, 8, 4

    class Net(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.Dense(c)(jnp.tanh(nn.Dense(d)(x)))

    net = Net()
    params = jax.eval_shape(net.init, jax.random.key(0), _sds((b, d)))
    tx = optax.lion(1e-3, weight_decay=0.1)
    state = jax.eval_shape(tx.init, params)

    def step(params, state, x, y):
        loss, grads = jax.value_and_grad(lambda p: jnp.mean((net.apply(p, x) - y) ** 2))(params)
        upd, state = tx.update(grads, state, params)
        return optax.apply_updates(params, upd), state, loss

    S = _shardings(m)

    def zero1(x):  # Lion's momentum sharded on its first dim when it divides, else replicated
        return S("dp") if x.ndim and x.shape[0] % 8 == 0 else S()

    psh = jax.tree.map(lambda _: S(), params)
    ssh = jax.tree.map(zero1, state)
    return Program("lion_zero1_jit", "jit: flax Dense x2 + optax.lion, params replicated, momentum over dp (ZeRO-1)",
                   step, (params, state, _sds((b, d)), _sds((b, c))), (psh, ssh, S("dp"), S("dp")),
                   (psh, ssh, S()))


PROGRAMS: g.Programs = {
    "alibi_tp": lambda: _alibi(False), "alibi_tp_bug": lambda: _alibi(True),
    "ulysses_alibi": lambda: _ulysses_alibi(False), "ulysses_alibi_bug": lambda: _ulysses_alibi(True),
    "rope_cp": lambda: _rope_cp(""), "rope_cp_bug": lambda: _rope_cp("rope"),
    "rope_cp_mask": lambda: _rope_cp("mask"),
    "relpos_bias_sp": lambda: _relpos(False), "relpos_bias_sp_bug": lambda: _relpos(True),
    "zero2_momentum": lambda: _zero2(""), "zero2_momentum_bug": lambda: _zero2("scale"),
    "zero2_momentum_offset": lambda: _zero2("offset"),
    "lamb_tp": lambda: _lamb(False), "lamb_tp_bug": lambda: _lamb(True),
    "tp2d_mlp": lambda: _tp2d(False), "tp2d_mlp_bug": lambda: _tp2d(True),
    "int8_wo_tp": lambda: _int8_wo(False), "int8_wo_tp_bug": lambda: _int8_wo(True),
    "ring_kv_decode": lambda: _ring_decode(False), "ring_kv_decode_bug": lambda: _ring_decode(True),
    "masked_pool_sp": lambda: _pool(False), "masked_pool_sp_bug": lambda: _pool(True),
    "vocab_zloss": lambda: _zloss(False), "vocab_zloss_bug": lambda: _zloss(True),
    "circular_pipeline": lambda: _circular(False), "circular_pipeline_bug": lambda: _circular(True),
    "loss_scale_fsdp": lambda: _loss_scale(False), "loss_scale_fsdp_bug": lambda: _loss_scale(True),
    "tp2d_jit": tp2d_jit, "int8_wo_jit": int8_wo_jit, "lion_zero1_jit": lion_zero1_jit,
}

_DEVICE_TABLE = re.compile(r"stablehlo\.constant dense<\[([\d, ]+)\]> : tensor<8x(ui32|i32)>")


def _device_table(text: str, retable: Any) -> str:
    """The first per-device table of @main (a constant of 8 entries, one per partition,
    read at partition_id: a shard's offset or coordinate) rewritten by `retable`."""
    main = text.index("func.func @main")
    mm = _DEVICE_TABLE.search(text, main)
    assert mm is not None, "no per-device table in @main"
    table = [int(v) for v in mm.group(1).split(",")]
    new = retable(table)
    assert new != table, "the table is its own rewrite"
    return text[:mm.start(1)] + ", ".join(map(str, new)) + text[mm.end(1):]


def offset_wrong_axis(text: str) -> str:
    """A shard's coordinate read along the other axis of a 2-axis mesh: a table of the major
    axis (devices 0-3 -> 0, 4-7 -> 1) becomes the minor axis's, folded onto the same values
    (device i -> i mod 2), and a minor axis's table the major one's."""
    def retable(t: list[int]) -> list[int]:
        vals = sorted(set(t))
        k = len(vals)
        assert 1 < k < 8, "not one axis of a 2-axis mesh"
        major = [vals[i // (8 // k)] for i in range(8)]
        return [vals[i % k] for i in range(8)] if t == major else major
    return _device_table(text, retable)


def offset_reversed(text: str) -> str:
    """The per-device table listed in reverse: each shard takes the mirror shard's offset."""
    return _device_table(text, lambda t: t[::-1])


_POW2 = re.compile(r"stablehlo\.constant dense<([0-9.e+-]+)> : tensor<f32>")


def doubled_divisor(text: str) -> str:
    """@main's first f32 scalar constant that is a power of two at least 8 (a mean's count)
    or at most 1/8 (its reciprocal) is made twice as far from 1: a mean over the wrong
    number of elements."""
    main = text.index("func.func @main")
    for mm in _POW2.finditer(text, main):
        v = float(mm.group(1))
        if v > 0 and float(np.log2(v)).is_integer() and abs(np.log2(v)) >= 3:
            new = v * 2 if v > 1 else v / 2
            return text[:mm.start(1)] + f"{new:.6e}" + text[mm.end(1):]
    raise AssertionError("no power-of-two scalar in @main")


MUTATIONS: g.Mutations = {**g3.MUTATIONS, "offset_wrong_axis": offset_wrong_axis,
                          "offset_reversed": offset_reversed, "doubled_divisor": doubled_divisor}

g.OUT = g.ROOT / "testdata" / "clients7"  # --export writes this batch's pairs here


# ---------------------------------------------------------------------------
# A single-device reproducer of ring_kv_decode's unknown (--repro writes testdata/clients7/):
# a 4-slot ring buffer rewritten at pos % 4, then a softmax; the other side writes it as two
# 2-slot shards do (the owner at its clipped local slot, the other left as it was).

RING_W, RING_BLOCK = 4, 2


def _ring_update_ref(cache, new, q, pos):
    return jax.nn.softmax(lax.dynamic_update_slice(cache, new[None], (pos % RING_W,)) * q)


def _ring_update_split(cache, new, q, pos):
    slot, blocks = pos % RING_W, []
    for j in range(RING_W // RING_BLOCK):
        cj = cache[j * RING_BLOCK:(j + 1) * RING_BLOCK]
        local = slot - j * RING_BLOCK
        mine = (local >= 0) & (local < RING_BLOCK)
        upd = lax.dynamic_update_slice(cj, new[None], (jnp.clip(local, 0, RING_BLOCK - 1),))
        blocks.append(jnp.where(mine, upd, cj))
    return jax.nn.softmax(jnp.concatenate(blocks) * q)


def write_repros() -> None:
    """testdata/clients7/ring_update_softmax.{ref,split}.mlir (inputs arg0..arg3, pos arg3)."""
    args = (_sds((RING_W,)), _sds(()), _sds(()), _sds((), i32))
    g.OUT.mkdir(exist_ok=True)
    for side, f in (("ref", _ring_update_ref), ("split", _ring_update_split)):
        (g.OUT / f"ring_update_softmax.{side}.mlir").write_text(jax.jit(f).lower(*args).as_text())
    print("wrote ring_update_softmax")


def check_row(name: str, form: str, timeout_s: float) -> dict:
    """One row: the verdict, the check's CPU seconds (the machine is shared) and, for a
    not-equivalent verdict, whether XLA reproduced the counterexample at the original sizes."""
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
    return {"name": name, "form": form, "verdict": v.verdict, "exit": v.exit_code,
            "cpu_s": round(time.process_time() - t, 2),
            "confirmed_at": None if c is None else c.confirmed_at, "reason": (v.reason or "")[:300]}


if __name__ == "__main__":
    if sys.argv[1:2] == ["--one"]:  # a traceback here is a finding: let it show
        import json
        print(json.dumps(check_row(sys.argv[2], sys.argv[3], float(sys.argv[4]))))
        sys.exit(0)
    if sys.argv[1:2] == ["--repro"]:
        write_repros()
        sys.exit(0)
    sys.exit(g.main(sys.argv[1:], PROGRAMS, MUTATIONS, __file__, __doc__))
