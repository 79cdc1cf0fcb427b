"""Generate the sharded test plans in testdata/sharded/.

Run from the repository root:

    .venv/bin/python testdata/gen_sharded.py [--realistic]

Every plan is a single-device reference function plus a ``jax.shard_map``
version on a 2x4 ("dp", "tp") mesh of 8 CPU devices, and at least one
bug-seeded twin modelled on a real distributed-training bug class. Both sides
take the same GLOBAL argument shapes/dtypes and return the same global results.

For every plan and twin this script

1. checks the expectation numerically (fixed seed): the reference on one
   device vs ``jax.jit(shard_map(...))`` on 8 devices. Correct plans must agree
   (``allclose(rtol=1e-4, atol=1e-5)``) and every replicated block must be the
   same on all devices holding it; "value" twins must differ by > 1e-3 in some
   output; "replica" twins must agree globally while two devices that the
   out_specs say hold the same block hold different data;
2. writes ``<name>.ref.mlir`` (reference, ``jax.jit(ref).lower(...)``; twins
   point at their plan's file), ``<name>.shardy.mlir`` (Shardy, the default),
   ``<name>.gspmd.mlir`` (``jax_use_shardy_partitioner=False``) and
   ``<name>.partitioned.mlir`` (XLA's per-device program right after SPMD
   partitioning, converted HLO -> StableHLO text; ``mhlo.num_partitions``/
   ``mhlo.num_replicas`` and the result ``mhlo.sharding`` attributes are added
   since the HLO dump does not carry them), all ``as_text(debug_info=True)``
   style with source locations canonicalized to ``testdata/gen_sharded.py``;
3. compiles the partitioned module as an 8-partition program without SPMD
   partitioning, runs it on the per-device input shards and checks that every
   device's output equals the shard_map program's output on that device;
4. writes ``manifest.json`` (a list; see sharded/README.md).

The partitioned files contain ``mhlo.copy`` ops: parsing them needs the mhlo
dialect registered (``jaxlib.mlir.dialects.mhlo.register_mhlo_dialect(ctx)``).

The generator asserts (non-zero exit) when any expectation does not hold.
Sizes come from SIZES, tiny by default (the verifier encodes every element); see main_realistic.
"""

from __future__ import annotations

import glob
import json
import os
import re
import sys
import tempfile
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
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

# Make loc(...) file names independent of the checkout location.
jax.config.update("jax_hlo_source_file_canonicalization_regex", r"^.*/(?=testdata/)")

HERE = Path(__file__).resolve().parent
OUT = HERE / "sharded"

F32 = jnp.float32
I32 = jnp.int32
SEED = 20240917
N_TRIALS = 2

MESH = jax.make_mesh((2, 4), ("dp", "tp"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
DP = 2
TP = 4
N_DEV = DP * TP
RING_FWD = [(i, (i + 1) % TP) for i in range(TP)]
RING_BWD = [(i, (i - 1) % TP) for i in range(TP)]


# --------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Arg:
    name: str
    shape: tuple[int, ...]
    dtype: Any = F32
    hi: int = 0  # int32 inputs are drawn from [0, hi)

    def spec(self) -> jax.ShapeDtypeStruct:
        return jax.ShapeDtypeStruct(self.shape, self.dtype)

    def draw(self, rng: np.random.Generator) -> np.ndarray:
        if self.dtype == F32:
            return rng.standard_normal(self.shape).astype(np.float32)
        if self.dtype == I32:
            return rng.integers(0, self.hi, size=self.shape).astype(np.int32)
        raise TypeError(self.dtype)


def f32(name: str, *shape: int) -> Arg:
    return Arg(name, tuple(shape), F32)


def i32(name: str, *shape: int, hi: int) -> Arg:
    return Arg(name, tuple(shape), I32, hi=hi)


@dataclass
class Case:
    name: str
    plan: str
    args: list[Arg]
    ref: Callable[..., Any]
    body: Callable[..., Any]  # per-device function for shard_map
    in_specs: tuple
    out_specs: Any
    expect: str = "equivalent"  # | "not-equivalent"
    kind: str | None = None  # "value" | "replica" for bugs
    bug: str | None = None
    manual_axes: tuple[str, ...] | None = None  # shard_map axis_names: the rest stay automatic


# --------------------------------------------------------------------------
# 1. mlp_tp: Megatron tensor-parallel MLP
# --------------------------------------------------------------------------


def mlp_ref(x, w1, b1, w2, b2):
    return jax.nn.relu(x @ w1 + b1) @ w2 + b2


def mlp_tp(x, w1, b1, w2, b2):
    h = jax.nn.relu(x @ w1 + b1)  # column-parallel: local ffn slice
    y = lax.psum(h @ w2, "tp")  # row-parallel: partial sums
    return y + b2


def mlp_tp_bug_missing_psum(x, w1, b1, w2, b2):
    h = jax.nn.relu(x @ w1 + b1)
    y = h @ w2  # BUG: partial sum never reduced over tp
    return y + b2


def mlp_tp_bug_bias_before_psum(x, w1, b1, w2, b2):
    h = jax.nn.relu(x @ w1 + b1)
    return lax.psum(h @ w2 + b2, "tp")  # BUG: b2 added on every tp shard -> 4*b2


# The same MLP with only tp manual (shard_map axis_names={"tp"}): dp stays automatic, the
# manual computation's body is global over dp.
def mlp_partial_manual(x, w1, b1, w2, b2):
    return mlp_tp(x, w1, b1, w2, b2)


def mlp_partial_manual_bug_missing_psum(x, w1, b1, w2, b2):
    return mlp_tp_bug_missing_psum(x, w1, b1, w2, b2)


# --------------------------------------------------------------------------
# 2. attn_tp: heads split over tp
# --------------------------------------------------------------------------

ATTN_HD = 0  # head_dim of attn_tp: use_sizes() sets it from SIZES before tracing


def _attention(x, wq, wk, wv, wo):
    b, s, _ = x.shape
    nh = wq.shape[1] // ATTN_HD
    q = (x @ wq).reshape(b, s, nh, ATTN_HD)
    k = (x @ wk).reshape(b, s, nh, ATTN_HD)
    v = (x @ wv).reshape(b, s, nh, ATTN_HD)
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) * (1.0 / np.sqrt(ATTN_HD))
    causal = jnp.tril(jnp.ones((s, s), dtype=bool))
    scores = jnp.where(causal, scores, -1e9)
    p = jax.nn.softmax(scores, axis=-1)
    o = jnp.einsum("bhqk,bkhd->bqhd", p, v).reshape(b, s, nh * ATTN_HD)
    return o @ wo


def attn_ref(x, wq, wk, wv, wo):
    return _attention(x, wq, wk, wv, wo)


def attn_tp(x, wq, wk, wv, wo):
    return lax.psum(_attention(x, wq, wk, wv, wo), "tp")


def attn_tp_bug_wrong_axis(x, wq, wk, wv, wo):
    return lax.psum(_attention(x, wq, wk, wv, wo), "dp")  # BUG: reduces over dp, not tp


# --------------------------------------------------------------------------
# 3. seq_parallel: sequence-parallel MLP block with residual
# --------------------------------------------------------------------------


def seq_ref(x, w1, w2):
    return x + jax.nn.relu(x @ w1) @ w2


def seq_parallel(x, w1, w2):
    xg = lax.all_gather(x, "tp", axis=1, tiled=True)  # [b, S, H]
    y = jax.nn.relu(xg @ w1) @ w2  # partial over the ffn split
    return x + lax.psum_scatter(y, "tp", scatter_dimension=1, tiled=True)


def seq_parallel_bug_scatter_dim(x, w1, w2):
    xg = lax.all_gather(x, "tp", axis=1, tiled=True)
    y = jax.nn.relu(xg @ w1) @ w2
    # BUG: reduce-scatter along hidden instead of sequence; reshaped to the shard shape
    rs = lax.psum_scatter(y, "tp", scatter_dimension=2, tiled=True)
    return x + rs.reshape(x.shape)


# --------------------------------------------------------------------------
# 4. dp_train_step: data-parallel SGD step
# --------------------------------------------------------------------------

LR = 0.1


def _mse(params, x, t):
    w1, w2 = params
    y = jax.nn.relu(x @ w1) @ w2
    return jnp.mean((y - t) ** 2)


def dp_ref(x, t, w1, w2):
    loss, (g1, g2) = jax.value_and_grad(_mse)((w1, w2), x, t)
    return loss, w1 - LR * g1, w2 - LR * g2


def dp_train_step(x, t, w1, w2):
    loss, grads = jax.value_and_grad(_mse)((w1, w2), x, t)
    loss = lax.pmean(loss, "dp")
    g1, g2 = lax.pmean(grads, "dp")
    return loss, w1 - LR * g1, w2 - LR * g2


def dp_train_step_bug_psum_grads(x, t, w1, w2):
    loss, grads = jax.value_and_grad(_mse)((w1, w2), x, t)
    loss = lax.pmean(loss, "dp")
    g1, g2 = lax.psum(grads, "dp")  # BUG: sum, not mean: gradient scaled by |dp|
    return loss, w1 - LR * g1, w2 - LR * g2


def dp_train_step_bug_loss_axis(x, t, w1, w2):
    loss, grads = jax.value_and_grad(_mse)((w1, w2), x, t)
    loss = lax.pmean(loss, "tp")  # BUG: averaged over tp (identical copies), not over dp
    g1, g2 = lax.pmean(grads, "dp")
    return loss, w1 - LR * g1, w2 - LR * g2


# --------------------------------------------------------------------------
# 5. fsdp: ZeRO-3 over all 8 devices
# --------------------------------------------------------------------------

FSDP_AXES = ("dp", "tp")


def fsdp_ref(x, t, w1, w2):
    return dp_ref(x, t, w1, w2)


def _fsdp_step(x, t, w1s, w2s, gather_axes, divide):
    # w1s, w2s: this device's row shard of each weight
    w1 = lax.all_gather(w1s, gather_axes, axis=0, tiled=True)
    w2 = lax.all_gather(w2s, gather_axes, axis=0, tiled=True)
    loss, (g1, g2) = jax.value_and_grad(_mse)((w1, w2), x, t)
    loss = lax.pmean(loss, FSDP_AXES)
    g1s = lax.psum_scatter(g1, FSDP_AXES, scatter_dimension=0, tiled=True)
    g2s = lax.psum_scatter(g2, FSDP_AXES, scatter_dimension=0, tiled=True)
    if divide:
        g1s, g2s = g1s / N_DEV, g2s / N_DEV
    return loss, w1s - LR * g1s, w2s - LR * g2s


def fsdp(x, t, w1, w2):
    return _fsdp_step(x, t, w1, w2, FSDP_AXES, True)


def fsdp_bug_missing_mean(x, t, w1, w2):
    return _fsdp_step(x, t, w1, w2, FSDP_AXES, False)  # BUG: reduce-scatter sum not divided


def fsdp_bug_gather_order(x, t, w1, w2):
    # BUG: gathers over ("tp", "dp") while the weights are laid out over ("dp", "tp")
    return _fsdp_step(x, t, w1, w2, ("tp", "dp"), True)


# --------------------------------------------------------------------------
# 6. vocab_ce: vocab-parallel cross entropy
# --------------------------------------------------------------------------


# Both programs clamp the labels first. Without it they really differ on labels outside
# [0, vocab) (the reference's take_along_axis clamps, the sharded lookup finds the label
# on no shard and adds 0), and the verifier rightly says so: equivalence is over all inputs.
def ce_ref(logits, targets):
    targets = jnp.clip(targets, 0, logits.shape[-1] - 1)
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.take_along_axis(logp, targets[:, None], axis=-1)[:, 0]


def _vocab_ce(logits, targets, use_offset):
    vl = logits.shape[-1]
    targets = jnp.clip(targets, 0, vl * lax.psum(1, "tp") - 1)
    gmax = lax.pmax(jnp.max(logits, axis=-1), "tp")
    z = logits - gmax[:, None]
    sumexp = lax.psum(jnp.sum(jnp.exp(z), axis=-1), "tp")
    offset = lax.axis_index("tp") * vl if use_offset else 0
    local_t = targets - offset
    in_shard = (local_t >= 0) & (local_t < vl)
    idx = jnp.clip(local_t, 0, vl - 1)
    picked = jnp.take_along_axis(z, idx[:, None], axis=-1)[:, 0]
    target_z = lax.psum(jnp.where(in_shard, picked, 0.0), "tp")
    return jnp.log(sumexp) - target_z


def vocab_ce(logits, targets):
    return _vocab_ce(logits, targets, True)


def vocab_ce_bug_no_offset(logits, targets):
    return _vocab_ce(logits, targets, False)  # BUG: global target id used as a local index


# --------------------------------------------------------------------------
# 7. expert_parallel: all_to_all dispatch / combine
# --------------------------------------------------------------------------


def moe_ref(x, w):
    return jax.nn.relu(jnp.einsum("ech,ehk->eck", x, w))


def expert_parallel(x, w):
    # x: [E, c, H] local tokens bucketed per expert; w: [E/tp, H, H] this device's experts
    xe = lax.all_to_all(x, "tp", split_axis=0, concat_axis=1, tiled=True)  # [E/tp, tp*c, H]
    ye = jax.nn.relu(jnp.einsum("ech,ehk->eck", xe, w))
    return lax.all_to_all(ye, "tp", split_axis=1, concat_axis=0, tiled=True)  # [E, c, H]


def expert_parallel_bug_no_combine(x, w):
    xe = lax.all_to_all(x, "tp", split_axis=0, concat_axis=1, tiled=True)
    ye = jax.nn.relu(jnp.einsum("ech,ehk->eck", xe, w))
    return ye.reshape(x.shape)  # BUG: return all_to_all missing (reshaped to fit)


# --------------------------------------------------------------------------
# 8. ring_matmul: all-gather collective matmul with ppermute
# --------------------------------------------------------------------------


def ring_ref(x, w):
    return x @ w


def _ring_matmul(x, w, perm):
    i = lax.axis_index("tp")
    bn = w.shape[1]
    y = jnp.zeros((x.shape[0], bn * TP), x.dtype)
    blk = w
    for s in range(TP):
        j = lax.rem(i + (TP - s), TP)  # index of the W column block held at step s
        y = lax.dynamic_update_slice(y, x @ blk, (0, j * bn))
        if s < TP - 1:
            blk = lax.ppermute(blk, "tp", perm)
    return y


def ring_matmul(x, w):
    return _ring_matmul(x, w, RING_FWD)


def ring_matmul_bug_direction(x, w):
    return _ring_matmul(x, w, RING_BWD)  # BUG: blocks travel the other way round the ring


# --------------------------------------------------------------------------
# 9. pipeline_ppermute: stages over tp, fori_loop with ppermute
# --------------------------------------------------------------------------


def pipe_ref(x, ws):
    for s in range(ws.shape[0]):
        x = jax.nn.relu(x @ ws[s])
    return x


def _pipeline(x, ws, perm):
    w = ws[0]
    stage = lax.axis_index("tp")

    def step(_, h):
        return lax.ppermute(jax.nn.relu(h @ w), "tp", perm)

    h = lax.fori_loop(0, TP - 1, step, x)
    y = jax.nn.relu(h @ w)
    return lax.psum(jnp.where(stage == TP - 1, y, 0.0), "tp")


def pipeline_ppermute(x, ws):
    return _pipeline(x, ws, RING_FWD)


def pipeline_ppermute_bug_direction(x, ws):
    return _pipeline(x, ws, RING_BWD)  # BUG: activations sent to the previous stage


# --------------------------------------------------------------------------
# 10. replica_divergence
# --------------------------------------------------------------------------


def rep_ref(x, w):
    return x @ w


def replica_divergence(x, w):
    return x @ w


def replica_divergence_bug(x, w):
    y = x @ w
    return jnp.where(lax.axis_index("tp") == TP - 1, y + 1.0, y)  # BUG: one tp replica differs


# --------------------------------------------------------------------------
# 11. rope_seq_parallel: rotary position embeddings on a sequence-sharded activation
# --------------------------------------------------------------------------

ROPE_THETA = 500000.0  # Llama 3


def _qk(x, wq, wk):
    # x [b, s, H], wq/wk [H, nh, hd] -> q, k [b, s, nh, hd]
    return jnp.einsum("bsh,hnd->bsnd", x, wq), jnp.einsum("bsh,hnd->bsnd", x, wk)


def _rope(t, pos):
    # t [b, s, nh, hd] (hd even), pos [s] int32 absolute positions; rotate-half form
    hd = t.shape[-1]
    inv_freq = (ROPE_THETA ** (-np.arange(0, hd, 2) / hd)).astype(np.float32)  # [hd/2]
    ang = pos.astype(F32)[:, None] * inv_freq[None, :]  # [s, hd/2]
    cos = jnp.cos(ang)[None, :, None, :]
    sin = jnp.sin(ang)[None, :, None, :]
    t1, t2 = t[..., : hd // 2], t[..., hd // 2 :]
    return jnp.concatenate([t1 * cos - t2 * sin, t2 * cos + t1 * sin], axis=-1)


def rope_ref(x, wq, wk):
    q, k = _qk(x, wq, wk)
    pos = lax.iota(I32, x.shape[1])
    return _rope(q, pos), _rope(k, pos)


def _rope_seq_parallel(x, wq, wk, offset):
    # x: this tp shard's contiguous slice of the sequence; wq, wk replicated
    q, k = _qk(x, wq, wk)
    local_seq = x.shape[1]
    pos = lax.iota(I32, local_seq)
    if offset:
        pos = lax.axis_index("tp") * local_seq + pos
    return _rope(q, pos), _rope(k, pos)


def rope_seq_parallel(x, wq, wk):
    return _rope_seq_parallel(x, wq, wk, True)


def rope_seq_parallel_bug_no_offset(x, wq, wk):
    return _rope_seq_parallel(x, wq, wk, False)  # BUG: every tp shard restarts at position 0


# --------------------------------------------------------------------------
# Size table
# --------------------------------------------------------------------------

# Every plan's argument shapes are built from one row of this table: "small" is what
# testdata/sharded/ holds (run and checked numerically), "realistic" is Llama-3-8B-like
# (--realistic, testdata/sharded_big/, lowered only). Plans whose activations are 2-D
# take "tokens" = batch * seq rows. The mesh stays dp=2 x tp=4 for both.
LLAMA = {"batch": 8, "seq": 2048, "hidden": 4096, "heads": 32, "head_dim": 128,
         "ffn": 14336, "vocab": 32000, "experts": 8}
TOKENS = LLAMA["batch"] * LLAMA["seq"]
MOE_TOP_K = 2

_MLP = {"small": {"tokens": 4, "hidden": 8, "ffn": 16},
        "realistic": {"tokens": TOKENS, "hidden": LLAMA["hidden"], "ffn": LLAMA["ffn"]}}
_LLAMA_ATTN = {k: LLAMA[k] for k in ("batch", "seq", "hidden", "heads", "head_dim")}

SIZES: dict[str, dict[str, dict[str, int]]] = {
    "mlp_tp": _MLP,
    "mlp_partial_manual": _MLP,
    "attn_tp": {"small": {"batch": 2, "seq": 4, "hidden": 8, "heads": 4, "head_dim": 2},
                "realistic": _LLAMA_ATTN},
    "seq_parallel": {"small": {"batch": 2, "seq": 8, "hidden": 8, "ffn": 16},
                     "realistic": {k: LLAMA[k] for k in ("batch", "seq", "hidden", "ffn")}},
    # 2-layer MLP regression step: x [tokens, hidden] -> ffn -> out
    "dp_train_step": {"small": {"tokens": 4, "hidden": 8, "ffn": 4, "out": 2},
                      "realistic": {"tokens": TOKENS, "hidden": LLAMA["hidden"],
                                    "ffn": LLAMA["ffn"], "out": LLAMA["hidden"]}},
    "fsdp": {"small": {"tokens": 8, "hidden": 8, "ffn": 8, "out": 2},
             "realistic": {"tokens": TOKENS, "hidden": LLAMA["hidden"],
                           "ffn": LLAMA["ffn"], "out": LLAMA["hidden"]}},
    "vocab_ce": {"small": {"tokens": 4, "vocab": 16},
                 "realistic": {"tokens": TOKENS, "vocab": LLAMA["vocab"]}},
    # experts are square hidden x hidden maps (the combine returns x's shape); capacity is
    # tokens * top-k / experts (capacity factor 1)
    "expert_parallel": {"small": {"experts": 4, "capacity": 8, "hidden": 4},
                        "realistic": {"experts": LLAMA["experts"],
                                      "capacity": TOKENS * MOE_TOP_K // LLAMA["experts"],
                                      "hidden": LLAMA["hidden"]}},
    # y = x @ w with x [tokens, hidden] and w [hidden, ffn] (an up-projection)
    "ring_matmul": {"small": {"tokens": 8, "hidden": 4, "ffn": 8},
                    "realistic": {"tokens": TOKENS, "hidden": LLAMA["hidden"],
                                  "ffn": LLAMA["ffn"]}},
    # one square hidden x hidden layer per stage, one stage per tp shard
    "pipeline_ppermute": {"small": {"tokens": 4, "hidden": 4, "stages": TP},
                          "realistic": {"tokens": TOKENS, "hidden": LLAMA["hidden"], "stages": TP}},
    "replica_divergence": {"small": {"tokens": 4, "hidden": 4},
                           "realistic": {"tokens": TOKENS, "hidden": LLAMA["hidden"]}},
    "rope_seq_parallel": {"small": {"batch": 2, "seq": 8, "hidden": 8, "heads": 2, "head_dim": 4},
                          "realistic": _LLAMA_ATTN},
}
SIZE_MODES = ("small", "realistic")


def use_sizes(mode: str) -> None:
    """Rebind the module globals plan code reads while tracing (only ATTN_HD) for `mode`."""
    global ATTN_HD
    ATTN_HD = SIZES["attn_tp"][mode]["head_dim"]


# --------------------------------------------------------------------------
# Case table
# --------------------------------------------------------------------------


def cases(mode: str = "small") -> list[Case]:
    """Every plan and twin with argument shapes from SIZES[plan][mode]."""
    C: list[Case] = []

    def plan(name, args, ref, body, in_specs, out_specs, twins, manual_axes=None):
        C.append(Case(name, name, args, ref, body, in_specs, out_specs, manual_axes=manual_axes))
        for tbody, kind, bug in twins:
            C.append(Case(tbody.__name__, name, args, ref, tbody, in_specs, out_specs,
                          "not-equivalent", kind, bug, manual_axes))

    def dims(name, *keys):
        d = SIZES[name][mode]
        assert set(keys) == set(d), f"{name}: SIZES has {sorted(d)}, plan uses {sorted(keys)}"
        return [d[k] for k in keys]

    # x [T, H] tokens over dp, ffn over tp (small: T=4, H=8, ffn 16, 4 per tp shard)
    T, H, F = dims("mlp_tp", "tokens", "hidden", "ffn")
    plan("mlp_tp",
         [f32("x", T, H), f32("w1", H, F), f32("b1", F), f32("w2", F, H), f32("b2", H)],
         mlp_ref, mlp_tp,
         (P("dp", None), P(None, "tp"), P("tp"), P("tp", None), P()),
         P("dp", None),
         [(mlp_tp_bug_missing_psum, "value",
           "row-parallel partial sums never all-reduced over tp (missing psum)"),
          (mlp_tp_bug_bias_before_psum, "value",
           "replicated bias added before the psum, so it is counted tp times")])

    T, H, F = dims("mlp_partial_manual", "tokens", "hidden", "ffn")
    plan("mlp_partial_manual",
         [f32("x", T, H), f32("w1", H, F), f32("b1", F), f32("w2", F, H), f32("b2", H)],
         mlp_ref, mlp_partial_manual,
         (P(), P(None, "tp"), P("tp"), P("tp", None), P()),
         P(),
         [(mlp_partial_manual_bug_missing_psum, "value",
           "row-parallel partial sums never all-reduced over tp (missing psum), tp-only manual region")],
         manual_axes=("tp",))

    # x [B, S, H], heads over tp (small: B=2, S=4, H=8, 4 heads x head_dim 2, one per tp shard)
    B, S, H, NH, HD = dims("attn_tp", "batch", "seq", "hidden", "heads", "head_dim")
    plan("attn_tp",
         [f32("x", B, S, H), f32("wq", H, NH * HD), f32("wk", H, NH * HD), f32("wv", H, NH * HD),
          f32("wo", NH * HD, H)],
         attn_ref, attn_tp,
         (P("dp", None, None), P(None, "tp"), P(None, "tp"), P(None, "tp"), P("tp", None)),
         P("dp", None, None),
         [(attn_tp_bug_wrong_axis, "value",
           "head-parallel output projection all-reduced over the wrong mesh axis (dp instead of tp)")])

    # x [B, S, H], seq over tp, ffn over tp (small: B=2, S=8, H=8, ffn 16)
    B, S, H, F = dims("seq_parallel", "batch", "seq", "hidden", "ffn")
    plan("seq_parallel",
         [f32("x", B, S, H), f32("w1", H, F), f32("w2", F, H)],
         seq_ref, seq_parallel,
         (P("dp", "tp", None), P(None, "tp"), P("tp", None)),
         P("dp", "tp", None),
         [(seq_parallel_bug_scatter_dim, "value",
           "reduce-scatter along the hidden dimension instead of the sequence dimension")])

    # x [T, H], t [T, O], w1 [H, F], w2 [F, O]; batch over dp (small: 4, 8, 4, 2)
    T, H, F, O = dims("dp_train_step", "tokens", "hidden", "ffn", "out")
    plan("dp_train_step",
         [f32("x", T, H), f32("t", T, O), f32("w1", H, F), f32("w2", F, O)],
         dp_ref, dp_train_step,
         (P("dp", None), P("dp", None), P(), P()),
         (P(), P(), P()),
         [(dp_train_step_bug_psum_grads, "value",
           "gradients psum'ed instead of pmean'ed over dp (scaled by the dp group size)"),
          (dp_train_step_bug_loss_axis, "value",
           "loss averaged over the wrong mesh axis (tp instead of dp)")])

    # batch and both weights sharded over all 8 devices (dp, tp) on dim 0 (small: 8, 8, 8, 2)
    T, H, F, O = dims("fsdp", "tokens", "hidden", "ffn", "out")
    fs = P(FSDP_AXES, None)
    plan("fsdp",
         [f32("x", T, H), f32("t", T, O), f32("w1", H, F), f32("w2", F, O)],
         fsdp_ref, fsdp,
         (fs, fs, fs, fs),
         (P(), fs, fs),
         [(fsdp_bug_missing_mean, "value",
           "gradient reduce-scatter not divided by the data-parallel size (sum instead of mean)"),
          (fsdp_bug_gather_order, "value",
           "weight shards all-gathered in the wrong mesh-axis order (tp, dp) vs layout (dp, tp)")])

    # logits [T, V] vocab over tp, targets [T] in [0, V) (small: T=4, V=16, 4 per tp shard)
    T, V = dims("vocab_ce", "tokens", "vocab")
    plan("vocab_ce",
         [f32("logits", T, V), i32("targets", T, hi=V)],
         ce_ref, vocab_ce,
         (P("dp", "tp"), P("dp")),
         P("dp"),
         [(vocab_ce_bug_no_offset, "value",
           "vocab-shard offset (axis_index * local_vocab) missing from the target index")])

    # x [E, C, H] tokens per expert, capacity over (dp, tp); w [E, H, H] experts over tp
    # (small: E=4, C=8, H=4: one expert per tp shard)
    E, Cap, H = dims("expert_parallel", "experts", "capacity", "hidden")
    plan("expert_parallel",
         [f32("x", E, Cap, H), f32("w", E, H, H)],
         moe_ref, expert_parallel,
         (P(None, FSDP_AXES, None), P("tp", None, None)),
         P(None, FSDP_AXES, None),
         [(expert_parallel_bug_no_combine, "value",
           "combine all_to_all missing after the expert computation")])

    # x [T, H] rows over tp, w [H, F] columns over tp (small: x [8, 4], w [4, 8])
    T, H, F = dims("ring_matmul", "tokens", "hidden", "ffn")
    plan("ring_matmul",
         [f32("x", T, H), f32("w", H, F)],
         ring_ref, ring_matmul,
         (P("tp", None), P(None, "tp")),
         P("tp", None),
         [(ring_matmul_bug_direction, "value",
           "ring collective matmul permutes in the wrong direction for its block indexing")])

    # x [T, H] batch over dp, ws [stages=tp, H, H] stages over tp (small: T=4, H=4)
    T, H, NS = dims("pipeline_ppermute", "tokens", "hidden", "stages")
    plan("pipeline_ppermute",
         [f32("x", T, H), f32("ws", NS, H, H)],
         pipe_ref, pipeline_ppermute,
         (P("dp", None), P("tp", None, None)),
         P("dp", None),
         [(pipeline_ppermute_bug_direction, "value",
           "pipeline activations ppermuted to the previous stage instead of the next")])

    T, H = dims("replica_divergence", "tokens", "hidden")
    plan("replica_divergence",
         [f32("x", T, H), f32("w", H, H)],
         rep_ref, replica_divergence,
         (P("dp", None), P()),
         P("dp", None),
         [(replica_divergence_bug, "replica",
           "one tp replica of an output declared replicated over tp holds a different value")])

    # x [B, S, H] seq over tp (contiguous slices), batch over dp; wq, wk [H, heads, head_dim]
    # replicated; outputs rotated q, k [B, S, heads, head_dim] (small: B=2, S=8 (2 per tp
    # shard), H=8, 2 heads x head_dim 4)
    B, S, H, NH, HD = dims("rope_seq_parallel", "batch", "seq", "hidden", "heads", "head_dim")
    bsnd = P("dp", "tp", None, None)
    plan("rope_seq_parallel",
         [f32("x", B, S, H), f32("wq", H, NH, HD), f32("wk", H, NH, HD)],
         rope_ref, rope_seq_parallel,
         (P("dp", "tp", None), P(), P()),
         (bsnd, bsnd),
         [(rope_seq_parallel_bug_no_offset, "value",
           "RoPE positions not offset by the sequence shard index (each tp shard starts at 0)")])

    assert [c.plan for c in C if c.name == c.plan] == list(SIZES), "SIZES and plans out of step"
    return C


# --------------------------------------------------------------------------
# Building, checking, exporting
# --------------------------------------------------------------------------


def sharded_fn(case: Case):
    """A fresh jitted shard_map object (a jit object that already compiled may not dump again)."""
    extra = {"axis_names": frozenset(case.manual_axes)} if case.manual_axes else {}
    sm = jax.shard_map(case.body, mesh=MESH, in_specs=case.in_specs, out_specs=case.out_specs,
                       check_vma=False, **extra)
    return jax.jit(sm, keep_unused=True)


def ref_fn(case: Case):
    return jax.jit(case.ref, keep_unused=True)


def specs(case: Case):
    return [a.spec() for a in case.args]


def _block_key(index) -> tuple:
    return tuple((s.start, s.stop) for s in index)


def replica_spread(out: jax.Array) -> float:
    """Largest difference between two devices' copies of the same block."""
    groups: dict[tuple, list[np.ndarray]] = {}
    for sh in out.addressable_shards:
        groups.setdefault(_block_key(sh.index), []).append(np.asarray(sh.data))
    spread = 0.0
    for copies in groups.values():
        for c in copies[1:]:
            spread = max(spread, float(np.max(np.abs(c - copies[0]), initial=0.0)))
    return spread


def check(case: Case, seed: int) -> str:
    rng = np.random.default_rng(seed)
    f_ref, f_sh = ref_fn(case), sharded_fn(case)
    worst_diff, worst_spread = 0.0, 0.0
    all_close = True
    for _ in range(N_TRIALS):
        inputs = [a.draw(rng) for a in case.args]
        r = jax.tree.leaves(f_ref(*inputs))
        s = jax.tree.leaves(f_sh(*inputs))
        assert len(r) == len(s), f"{case.name}: {len(r)} vs {len(s)} outputs"
        for k, (a, b) in enumerate(zip(r, s)):
            assert a.shape == b.shape and a.dtype == b.dtype, (
                f"{case.name}: output {k} is {b.shape} {b.dtype}, reference {a.shape} {a.dtype}")
            a_np, b_np = np.asarray(a), np.asarray(b)
            assert np.all(np.isfinite(a_np)), f"{case.name}: non-finite reference output"
            worst_diff = max(worst_diff, float(np.max(np.abs(a_np - b_np), initial=0.0)))
            all_close &= bool(np.allclose(b_np, a_np, rtol=1e-4, atol=1e-5))
            worst_spread = max(worst_spread, replica_spread(b))
    msg = f"max|ref-sharded|={worst_diff:.3g} replica spread={worst_spread:.3g}"
    if case.expect == "equivalent":
        assert all_close, f"{case.name}: correct plan disagrees with reference ({msg})"
        assert worst_spread <= 1e-5, f"{case.name}: correct plan has divergent replicas ({msg})"
    elif case.kind == "value":
        assert worst_diff > 1e-3, f"{case.name}: value bug not visible ({msg})"
    elif case.kind == "replica":
        assert all_close, f"{case.name}: replica bug changes the global value ({msg})"
        assert worst_spread > 1e-3, f"{case.name}: replicas do not diverge ({msg})"
    else:
        raise AssertionError(f"{case.name}: bad kind {case.kind}")
    return msg


def lower_text(fn, case: Case) -> str:
    return fn.lower(*specs(case)).as_text(debug_info=True)


def lower_gspmd(case: Case) -> str:
    jax.config.update("jax_use_shardy_partitioner", False)
    try:
        text = lower_text(sharded_fn(case), case)
    finally:
        jax.config.update("jax_use_shardy_partitioner", True)
    assert "@SPMDFullToShardShape" in text and "sdy." not in text, f"{case.name}: not a GSPMD export"
    return text


def hlo_sharding_str(sharding, ndim: int) -> str:
    return str(sharding._to_xla_hlo_sharding(ndim))


def partitioned(case: Case) -> str:
    """XLA's per-device module after SPMD partitioning, as StableHLO text."""
    from jax._src.interpreters import mlir
    from jax._src.lib import _jax
    from jaxlib import _hlo

    lowered = sharded_fn(case).lower(*specs(case))
    with tempfile.TemporaryDirectory() as d:
        compiled = lowered.compile(compiler_options={
            "xla_dump_to": d,
            "xla_dump_hlo_pass_re": "spmd-partitioning",
            "xla_dump_hlo_as_text": True,
            # Without this the dump elides constants of more than a few elements ({...}),
            # and they come back from the HLO parser as garbage (RoPE frequency tables).
            "xla_dump_large_constants": True,
        })
        dumps = sorted(glob.glob(os.path.join(d, "*after_spmd-partitioning*.txt")))
        assert len(dumps) == 1, f"{case.name}: expected one spmd-partitioning dump, got {dumps}"
        hlo_text = Path(dumps[0]).read_text()
    hlo = _hlo.hlo_module_from_text(hlo_text)
    bytecode = _jax.mlir.hlo_to_stablehlo(hlo.as_serialized_hlo_module_proto())
    out_shardings = jax.tree.leaves(compiled.output_shardings)
    out_ndims = [len(s.shape) for s in jax.tree.leaves(lowered.out_info)]
    with mlir.make_ir_context():
        module = mlir.ir.Module.parse(bytecode)
        attrs = module.operation.attributes
        i32 = mlir.ir.IntegerType.get_signless(32)
        if "mhlo.num_partitions" not in attrs:
            attrs["mhlo.num_partitions"] = mlir.ir.IntegerAttr.get(i32, N_DEV)
        if "mhlo.num_replicas" not in attrs:
            attrs["mhlo.num_replicas"] = mlir.ir.IntegerAttr.get(i32, 1)
        main = [op for op in module.body.operations
                if op.operation.name == "func.func"
                and mlir.ir.StringAttr(op.attributes["sym_name"]).value == "main"]
        assert len(main) == 1, f"{case.name}: no unique @main in partitioned module"
        main = main[0]
        ftype = mlir.ir.FunctionType(mlir.ir.TypeAttr(main.attributes["function_type"]).value)
        assert len(ftype.results) == len(out_shardings) == len(out_ndims)
        if "res_attrs" not in main.attributes:
            res = []
            for s, nd in zip(out_shardings, out_ndims):
                res.append(mlir.ir.DictAttr.get(
                    {"mhlo.sharding": mlir.ir.StringAttr.get(hlo_sharding_str(s, nd))}))
            main.attributes["res_attrs"] = mlir.ir.ArrayAttr.get(res)
        assert module.operation.verify(), f"{case.name}: partitioned module does not verify"
        text = module.operation.get_asm(enable_debug_info=True)
    # must parse back
    with mlir.make_ir_context():
        again = mlir.ir.Module.parse(text)
        assert again.operation.verify()
    return text


def check_partitioned(case: Case, text: str, seed: int) -> None:
    """Run the per-device module on 8 devices and compare with the shard_map program."""
    from jax._src import compiler
    from jax._src import xla_bridge as xb
    from jax._src.interpreters import mlir
    from jax._src.lib import xla_client as xc

    devices = list(MESH.devices.flat)
    assert [d.id for d in devices] == list(range(N_DEV)), "mesh devices not in id order"
    backend = xb.get_backend("cpu")
    # The module is already per-device: mark every entry argument/result "{manual}" so
    # the SPMD partitioner (which XLA requires for num_partitions > 1) leaves it alone.
    manual = re.sub(r'mhlo\.sharding = "[^"]*"', 'mhlo.sharding = "{manual}"', text)
    jax.config.update("jax_use_shardy_partitioner", False)  # GSPMD attrs: skip the Shardy import
    try:
        with mlir.make_ir_context():
            module = mlir.ir.Module.parse(manual)
            opts = compiler.get_compile_options(
                num_replicas=1, num_partitions=N_DEV,
                device_assignment=np.arange(N_DEV).reshape(1, N_DEV))
            exe = backend.compile_and_load(module, executable_devices=xc.DeviceList(tuple(devices)),
                                           compile_options=opts)
    finally:
        jax.config.update("jax_use_shardy_partitioner", True)
    rng = np.random.default_rng(seed)
    inputs = [a.draw(rng) for a in case.args]
    flat = jax.sharding.Mesh(np.array(devices), ("p",))
    args = []
    for x, spec in zip(inputs, case.in_specs):
        placed = jax.device_put(x, NamedSharding(MESH, spec))
        by_dev = {sh.device: sh.data for sh in placed.addressable_shards}
        local = [by_dev[d] for d in devices]
        assert local[0].ndim >= 1, "scalar inputs not supported here"
        gshape = (local[0].shape[0] * N_DEV,) + tuple(local[0].shape[1:])
        args.append(jax.make_array_from_single_device_arrays(
            gshape, NamedSharding(flat, P("p")), local))
    got = exe.execute_sharded(args).disassemble_into_single_device_arrays()
    want = jax.tree.leaves(sharded_fn(case)(*inputs))
    assert len(got) == len(want), f"{case.name}: partitioned module has {len(got)} outputs"
    for k, (per_dev, w) in enumerate(zip(got, want)):
        w_by_dev = {sh.device: np.asarray(sh.data) for sh in w.addressable_shards}
        for d, g in zip(devices, per_dev):
            g = np.asarray(g)
            assert np.allclose(g, w_by_dev[d], rtol=1e-4, atol=1e-5), (
                f"{case.name}: partitioned output {k} differs on device {d.id}")


def parse_args():
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--realistic", action="store_true",
                    help=f"run the small-size checks, then export every plan and twin at "
                         f"Llama-3-8B-like sizes (SIZES[...]['realistic']) into {BIG} "
                         f"(lowering only, nothing runs at those sizes)")
    return ap.parse_args()


def validate(all_cases: list[Case]) -> None:
    names = [c.name for c in all_cases]
    assert len(names) == len(set(names)), "duplicate case names"
    plan_names = {c.plan for c in all_cases}
    for c in all_cases:
        assert c.plan in names, f"{c.name}: unknown plan {c.plan}"
        assert (c.expect == "equivalent") == (c.name in plan_names)
        assert_divisible(c)


def _axes_size(entry) -> int:
    axes = entry if isinstance(entry, tuple) else (entry,)
    return int(np.prod([MESH.shape[a] for a in axes if a is not None]))


def assert_divisible(case: Case) -> None:
    """Every sharded input dim divides evenly (outputs: checked against the reference types)."""
    assert len(case.args) == len(case.in_specs), f"{case.name}: {len(case.args)} args vs in_specs"
    for a, spec in zip(case.args, case.in_specs):
        assert len(spec) <= len(a.shape), f"{case.name}: spec {spec} longer than {a.name}{a.shape}"
        for d, entry in zip(a.shape, spec):
            n = _axes_size(entry)
            assert d % n == 0, (
                f"{case.name}: {a.name}{a.shape} dim {d} not divisible by {entry}={n}")


def _main_signature(module, mlir) -> tuple[Any, list[str], list[str], list[str], list[str]]:
    """(func op, input types, result types, arg shardings, result shardings) of @main."""
    main = [op for op in module.body.operations
            if op.operation.name == "func.func"
            and mlir.ir.StringAttr(op.attributes["sym_name"]).value == "main"]
    assert len(main) == 1, "no unique @main"
    main = main[0]
    ftype = mlir.ir.FunctionType(mlir.ir.TypeAttr(main.attributes["function_type"]).value)

    def shardings(key, n):
        if key not in main.attributes:
            return [None] * n
        out = []
        for d in mlir.ir.ArrayAttr(main.attributes[key]):
            d = mlir.ir.DictAttr(d)
            s = d["mhlo.sharding"] if "mhlo.sharding" in d else None
            out.append(None if s is None else mlir.ir.StringAttr(s).value)
        return out

    ins = [str(t) for t in ftype.inputs]
    outs = [str(t) for t in ftype.results]
    return main, ins, outs, shardings("arg_attrs", len(ins)), shardings("res_attrs", len(outs))


def _tile_counts(sharding: str | None, ndim: int) -> list[int]:
    if sharding is None or sharding == "{replicated}":
        return [1] * ndim
    m = re.match(r"\{devices=\[([0-9,]+)\]", sharding)
    assert m, f"unexpected sharding {sharding!r}"
    return [int(v) for v in m.group(1).split(",")][:ndim]


def _local_type(global_type: str, sharding: str | None) -> str:
    m = re.fullmatch(r"tensor<((?:[0-9]+x)*)([a-z0-9]+)>", global_type)
    assert m, global_type
    shape = [int(v) for v in m.group(1).split("x") if v]
    tiles = _tile_counts(sharding, len(shape))
    assert all(d % t == 0 for d, t in zip(shape, tiles)), (
        f"{global_type} not divisible by {sharding}")
    return "tensor<" + "".join(f"{d // t}x" for d, t in zip(shape, tiles)) + m.group(2) + ">"


# A dense literal longer than this would be a materialized mask/table (see --realistic).
MAX_LITERAL_CHARS = 4096


def verify_exports(case: Case, out: Path, files: dict[str, str | None]) -> None:
    """Every file parses back and verifies with jaxlib's MLIR bindings; all take the reference's
    global argument/result types (the partitioned one: their blocks under its mhlo.sharding);
    no big dense literal."""
    from jax._src.interpreters import mlir

    sigs = {}
    for kind, fname in files.items():
        if fname is None:
            continue
        text = (out / fname).read_text()
        longest = max((len(m) for m in re.findall(r"dense<[^>]*>", text)), default=0)
        assert longest <= MAX_LITERAL_CHARS, f"{fname}: {longest}-char dense literal"
        with mlir.make_ir_context():
            module = mlir.ir.Module.parse(text)
            assert module.operation.verify(), f"{fname}: does not verify"
            sigs[kind] = _main_signature(module, mlir)[1:]
    ref_ins, ref_outs = sigs["ref"][:2]
    for kind in ("shardy", "gspmd"):
        assert sigs[kind][:2] == (ref_ins, ref_outs), (
            f"{case.name}: {kind} signature {sigs[kind][:2]} vs reference {(ref_ins, ref_outs)}")
    if "partitioned" in sigs:
        ins, outs, arg_sh, res_sh = sigs["partitioned"]
        want_ins = [_local_type(t, s) for t, s in zip(ref_ins, arg_sh)]
        want_outs = [_local_type(t, s) for t, s in zip(ref_outs, res_sh)]
        assert (ins, outs) == (want_ins, want_outs), (
            f"{case.name}: partitioned types {(ins, outs)} vs blocks {(want_ins, want_outs)}")


def main() -> int:
    if parse_args().realistic:
        return main_realistic()
    use_sizes("small")
    OUT.mkdir(parents=True, exist_ok=True)
    all_cases = cases("small")
    validate(all_cases)
    manifest = []
    for k, case in enumerate(all_cases):
        seed = SEED + k
        msg = check(case, seed)
        files = export_case(case, OUT, seed)
        manifest.append(manifest_entry(case, files))
        print(f"{case.name:34s} {case.expect:15s} {msg}", flush=True)
    (OUT / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"wrote {len(manifest)} cases to {OUT}")
    return 0


def export_case(case: Case, out: Path, seed: int | None | bool) -> dict[str, str | None]:
    """Write the reference (once per plan), Shardy, GSPMD and partitioned exports of a case
    into `out` and check them. `seed`: run the partitioned module per device against the
    shard_map program with inputs from this seed; None: export it without running it
    (realistic sizes); False: no partitioned export."""
    files: dict[str, str | None] = {}
    if case.name == case.plan:
        ref_text = lower_text(ref_fn(case), case)
        assert "sdy." not in ref_text and "manual_computation" not in ref_text
        (out / f"{case.name}.ref.mlir").write_text(ref_text)
    files["ref"] = f"{case.plan}.ref.mlir"
    shardy = lower_text(sharded_fn(case), case)
    assert "sdy.manual_computation" in shardy, f"{case.name}: no manual_computation"
    sig_ref = (out / files["ref"]).read_text().split("@main(", 1)[1].split(") ->", 1)[0]
    sig_sh = shardy.split("@main(", 1)[1].split(") ->", 1)[0]
    assert sig_ref == sig_sh, f"{case.name}: signatures differ\n  {sig_ref}\n  {sig_sh}"
    files["shardy"] = f"{case.name}.shardy.mlir"
    (out / files["shardy"]).write_text(shardy)
    files["gspmd"] = f"{case.name}.gspmd.mlir"
    (out / files["gspmd"]).write_text(lower_gspmd(case))
    files["partitioned"] = None
    if seed is not False:
        part = partitioned(case)
        if seed is not None:
            check_partitioned(case, part, seed)
        files["partitioned"] = f"{case.name}.partitioned.mlir"
        (out / files["partitioned"]).write_text(part)
    verify_exports(case, out, files)
    return files


def manifest_entry(case: Case, files: dict[str, str | None]) -> dict[str, Any]:
    return {"name": case.name, **files, "expect": case.expect, "kind": case.kind, "bug": case.bug,
            "plan": case.plan}


# Produce <name>.partitioned.mlir at realistic sizes too: compiling (not running) the
# sharded program is shape-independent in cost, about 0.3 s a case here.
REALISTIC_PARTITIONED = True
BIG = HERE / "sharded_big"
MAX_BIG_BYTES = 20 * 2**20


def main_realistic() -> int:
    """--realistic: every plan and twin at SIZES[plan]["realistic"] into sharded_big/.

    Nothing runs at those sizes. The expectations are inherited from the small-size
    numeric checks of the same plan code, run first in this invocation (same seeds as the
    small run); a plan any of whose cases fails them gets no realistic export (stale files
    of it are removed, no manifest is written, exit 1). The exports are jax lowerings of
    ShapeDtypeStructs (plus, for the partitioned form, an XLA compile); each is parsed back,
    its global types compared with the reference's, and checked for big dense literals.
    """
    import time

    t_start = time.perf_counter()
    small = cases("small")
    validate(small)
    use_sizes("small")
    failed: dict[str, str] = {}
    for k, case in enumerate(small):
        try:
            msg = check(case, SEED + k)
        except AssertionError as e:
            failed.setdefault(case.plan, f"{case.name}: {e}")
            print(f"{case.name:34s} SMALL CHECK FAILED: {e}", flush=True)
            continue
        print(f"{case.name:34s} {case.expect:15s} small: {msg}", flush=True)
    t_checked = time.perf_counter()

    use_sizes("realistic")
    big = cases("realistic")
    validate(big)
    assert [(c.name, c.plan, c.expect, c.kind, c.body, c.ref) for c in big] == [
        (c.name, c.plan, c.expect, c.kind, c.body, c.ref) for c in small], "small/realistic differ"
    BIG.mkdir(parents=True, exist_ok=True)
    manifest = []
    for case in big:
        if case.plan in failed:
            print(f"{case.name:34s} REFUSED: small check of plan {case.plan} failed", flush=True)
            continue
        t0 = time.perf_counter()
        files = export_case(case, BIG, None if REALISTIC_PARTITIONED else False)
        manifest.append({**manifest_entry(case, files), "sizes": SIZES[case.plan]["realistic"]})
        print(f"{case.name:34s} {case.expect:15s} exported in {time.perf_counter() - t0:.2f}s",
              flush=True)

    written = {m[k] for m in manifest for k in ("ref", "shardy", "gspmd", "partitioned") if m[k]}
    for p in sorted(BIG.glob("*.mlir")):
        if p.name not in written:  # stale: a removed case, or a plan whose small check failed
            p.unlink()
    if failed:
        (BIG / "manifest.json").unlink(missing_ok=True)
        for plan_name, why in failed.items():
            print(f"plan {plan_name}: no realistic export ({why})", file=sys.stderr)
        return 1
    (BIG / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    total = sum(p.stat().st_size for p in BIG.iterdir() if p.is_file())
    assert total < MAX_BIG_BYTES, f"{BIG} is {total / 2**20:.1f} MB"
    t_end = time.perf_counter()
    print(f"small checks {t_checked - t_start:.1f}s, realistic exports {t_end - t_checked:.1f}s")
    print(f"wrote {len(manifest)} cases to {BIG} ({total / 2**20:.2f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
