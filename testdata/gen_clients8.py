"""Real-client programs, eighth batch (helper-77): mostly `jax.jit` + `NamedSharding` steps
that XLA's SPMD partitioner rewrites (flax linen layers and optax optimizers the first seven
batches do not hold, uneven shardings, reduce-scatters, sorts along sharded axes, mixed
precision), plus shard_map plans on a 3-axis mesh with subtle bug twins; tiny dims on 8 CPU
devices.

    .venv/bin/python testdata/gen_clients8.py --list
    .venv/bin/python testdata/gen_clients8.py --one NAME FORM TIMEOUT   # one row, JSON, CPU s
    .venv/bin/python testdata/gen_clients8.py --mutants NAME ...        # seeded partitioner bugs
    .venv/bin/python testdata/gen_clients8.py --export NAME ...         # testdata/clients8/NAME.*.mlir

The driver and the Program record are gen_clients.py's, the seeded bugs gen_clients3.py's
and gen_clients7.py's. shard_map plans are checked against the plain function they
parallelize (`reference=`); each `*_bug` twin is the same plan with one silent mistake
(`--list` prints its difference from the reference on XLA, which must not be 0):

- mha_flax_jit (jit): flax `nn.MultiHeadDotProductAttention` (causal mask) after
  `nn.LayerNorm`, q/k/v/out kernels sharded by heads over tp, batch over dp.
- conv_ln_jit (jit): flax `nn.Conv` (1-D, SAME padding) + `nn.LayerNorm` + `nn.Dense`
  head, conv kernel's output features over tp, batch over dp.
- embed_take_jit (jit): flax `nn.Embed` with the vocabulary sharded over tp (XLA's masked
  gather + all-reduce), `embed.attend` logits, a `jnp.take` of positions.
- sgd_nesterov_jit (jit): an MLP stepped by `optax.sgd(momentum=0.9, nesterov=True)`,
  params and momentum sharded over tp.
- rmsprop_centered_jit (jit): `optax.rmsprop(centered=True, momentum=0.9)`, FSDP rows.
- clip_adam_sched_jit (jit): `optax.chain(clip_by_global_norm(1.0), adam(piecewise
  constant schedule on the step count))`, params over tp.
- adagrad_jit (jit): `optax.adagrad` on a tp-sharded linear model.
- scan_wsc_grad_jit (jit): `lax.scan` over 3 stacked layers with a `with_sharding_constraint`
  on the carry inside the body, `value_and_grad`.
- einsum_uneven_jit (jit): einsums whose intermediate is constrained onto dims of 6 and 10
  over mesh axes of 4 and 2 (padded shards).
- reduce_scatter_jit (jit): a contraction sharded over tp whose output is sharded over tp on
  another dim (XLA emits a reduce-scatter), and a sum over a dp-sharded axis kept sharded.
- sort_topk_jit (jit): `lax.top_k` and `cumsum` along a tp-sharded axis, `argsort` along a
  dp-sharded one with `take_along_axis`.
- bf16_attn_jit (jit): bf16 q/k/v, scores accumulated in f32 (`preferred_element_type`), an
  f32 softmax, probabilities cast to bf16, heads over tp.
- pos3_smap: a 3-axis mesh (dp, sp, tp), sequence over sp; learned position embeddings
  sliced at the shard's global offset (`axis_index("sp")`). Bug: `axis_index("tp")` (the
  same size, a different axis).
- rowpar3_smap: a row-parallel matmul on the 3-axis mesh, contraction over tp, `psum("tp")`.
  Bug: `psum("sp")` (the same size, a different axis).
- halo_conv_smap: a causal 1-D convolution (width 3) over a sequence sharded on 8 devices,
  the previous block's last two positions by `ppermute`, zeros on device 0. Bug: a circular
  permutation, so device 0 takes the last device's tail instead of zeros.
- mesh6_uneven_jit, mesh_permuted_jit (jit): a 2x3 mesh of 6 devices (a dim of 8 over 3,
  padded), and a 2x4 mesh whose devices are listed out of order.
- hash_embed_jit_signed (jit): the same hash in int32 (arithmetic shift; `take` normalizes
  the negative bucket back): the same function as hash_embed_jit, its reference.
- roll_reverse_jit, segment_sum_jit, pool_cummax_jit, hash_embed_jit, int4_dot_jit,
  reduce_precision_jit, permutation_jit (jit): `jnp.roll` / reverse along a sharded axis, a
  GNN layer's `segment_sum` over sharded edges, max pooling / `cummax` / `cumlogsumexp`
  along a sharded axis, a uint32 hash into a sharded table, int4 weights, e4m3/e5m2
  emulation by `reduce_precision`, `jax.random.permutation` of sharded rows.
- newton_while_jit (jit): a `while_loop` that stops on convergence or after 20 trips (a
  data-dependent trip count). Twin (_bug, a different function): stops at 1e-1.
- greedy_decode_jit (jit): a greedy decode `while_loop` until every row emitted EOS or 6
  steps, vocabulary on tp. Twin (_bug, a different function): at most 5 steps.
- tiny_lm_step_jit (jit): a flax Embed + MHA + MLP LM, cross-entropy, adamw train step.
- gqa_repeat_jit, lars_ema_jit, yogi_jit (jit): grouped-query attention (2 kv heads repeated
  to 8 query heads on tp), `optax.lars` + `optax.ema`, `optax.yogi`.
- gather2_smap, flat_index_smap, a2a_transpose_smap: an all_gather over two mesh axes
  (bug: the axes in the other order), a table sliced at the flat (dp, tp) device index
  (bug: dp's stride 2), rows resharded onto columns by all_to_all (bug: the received
  blocks read in reverse).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen_clients as g  # noqa: E402
import gen_clients7 as g7  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import optax  # noqa: E402
from gen_clients import Program, mesh  # noqa: E402
from gen_clients6 import _sds, _smap  # noqa: E402  (the sixth batch's helpers, the same)
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

lax = jax.lax
f32 = jnp.float32
bf16 = jnp.bfloat16
i32 = jnp.int32


def _shardings(m):
    return lambda *s: NamedSharding(m, P(*s))


def _tree_shard(tree: Any, rule: Any) -> Any:
    return jax.tree_util.tree_map_with_path(rule, tree)


def _key_names(path: Any) -> str:
    return "/".join(str(getattr(k, "key", getattr(k, "name", k))) for k in path)


# ---------------------------------------------------------------------------
# 1-3. flax linen layers with params sharded over a 2x4 mesh.

def mha_flax_jit() -> Program:
    import flax.linen as nn

    m = mesh((2, 4), ("dp", "tp"))
    b, s, d, heads = 4, 4, 8, 4

    class Block(nn.Module):
        @nn.compact
        def __call__(self, x):
            h = nn.LayerNorm()(x)
            mask = nn.make_causal_mask(jnp.ones((x.shape[0], x.shape[1])))
            return x + nn.MultiHeadDotProductAttention(num_heads=heads, qkv_features=d)(h, h, mask=mask)

    net = Block()
    params = jax.eval_shape(net.init, jax.random.key(0), _sds((b, s, d)))
    S = _shardings(m)

    def rule(path, x):  # q/k/v kernels [d, heads, hd], out kernel [heads, hd, d]: heads on tp
        name = _key_names(path)
        if "kernel" in name and x.ndim == 3:
            return S("tp") if name.find("out") >= 0 else S(None, "tp")
        if "bias" in name and x.ndim == 2:
            return S("tp")
        return S()

    return Program("mha_flax_jit", "jit: flax LayerNorm + MultiHeadDotProductAttention (causal), heads on tp, 2x4",
                   lambda p, x: net.apply(p, x), (params, _sds((b, s, d))),
                   (_tree_shard(params, rule), S("dp")), S("dp"))


def conv_ln_jit() -> Program:
    import flax.linen as nn

    m = mesh((2, 4), ("dp", "tp"))
    b, length, c, f = 4, 8, 4, 8

    class Net(nn.Module):
        @nn.compact
        def __call__(self, x):
            h = nn.gelu(nn.LayerNorm()(nn.Conv(f, kernel_size=(3,), padding="SAME")(x)))
            return nn.Dense(2)(h.mean(1))

    net = Net()
    params = jax.eval_shape(net.init, jax.random.key(0), _sds((b, length, c)))
    S = _shardings(m)

    def rule(path, x):
        name = _key_names(path)
        if name.startswith("params/Conv"):
            return S(None, None, "tp") if x.ndim == 3 else S("tp")
        return S()

    return Program("conv_ln_jit", "jit: flax Conv1D (SAME) + LayerNorm + gelu + mean-pool Dense, conv features on tp",
                   lambda p, x: net.apply(p, x), (params, _sds((b, length, c))),
                   (_tree_shard(params, rule), S("dp")), S("dp"))


def embed_take_jit() -> Program:
    import flax.linen as nn

    m = mesh((2, 4), ("dp", "tp"))
    b, s, vocab, d = 2, 8, 16, 8

    class LM(nn.Module):
        @nn.compact
        def __call__(self, tokens, shift):
            emb = nn.Embed(vocab, d)
            x = emb(tokens)
            pos = self.param("pos", nn.initializers.normal(), (s, d))
            x = x + jnp.take(pos, (jnp.arange(s) + shift) % s, axis=0)
            return emb.attend(jnp.tanh(x))

    net = LM()
    tok = _sds((b, s), i32)
    params = jax.eval_shape(net.init, jax.random.key(0), tok, _sds((), i32))
    S = _shardings(m)
    psh = {"params": {"Embed_0": {"embedding": S("tp")}, "pos": S()}}
    return Program("embed_take_jit", "jit: flax Embed (vocab over tp) + jnp.take of shifted positions + attend, 2x4",
                   lambda p, t, sh: net.apply(p, t, sh), (params, tok, _sds((), i32)),
                   (psh, S("dp"), S()), S("dp", None, "tp"),
                   options={"assume": {"t": (0, vocab), "sh": (0, 64)}})


# ---------------------------------------------------------------------------
# 4-7. optax optimizers the earlier batches lack.

def _mlp_step(name: str, what: str, tx: Any, m: Any, psh_rule: Any, d: int = 8, f: int = 16,
              b: int = 8, bsh: Any = None, options: dict | None = None) -> Program:
    params = {"w1": _sds((d, f)), "b1": _sds((f,)), "w2": _sds((f, 2))}
    state = jax.eval_shape(tx.init, params)
    S = _shardings(m)

    def step(params, state, x, y):
        def loss(p):
            return jnp.mean((jnp.tanh(x @ p["w1"] + p["b1"]) @ p["w2"] - y) ** 2)

        val, grads = jax.value_and_grad(loss)(params)
        upd, state = tx.update(grads, state, params)
        return optax.apply_updates(params, upd), state, val

    psh = {k: psh_rule(S, k) for k in params}

    def st_rule(path, x):  # an optimizer state leaf shaped like a param is sharded like it
        for k in ("w1", "b1", "w2"):
            if _key_names(path).endswith(k):
                return psh[k]
        return S()

    ssh = _tree_shard(state, st_rule)
    xsh = bsh or S("dp")
    return Program(name, what, step, (params, state, _sds((b, d)), _sds((b, 2))),
                   (psh, ssh, xsh, xsh), (psh, ssh, S()), options=options or {})


def _tp_rule(S, k):
    return {"w1": S(None, "tp"), "b1": S("tp"), "w2": S("tp", None)}[k]


def sgd_nesterov_jit() -> Program:
    return _mlp_step("sgd_nesterov_jit", "jit: MLP + optax.sgd(momentum=0.9,"
                                         " nesterov=True), params/momentum on tp, 2x4",
                     optax.sgd(0.1, momentum=0.9, nesterov=True), mesh((2, 4), ("dp", "tp")), _tp_rule)


def rmsprop_centered_jit() -> Program:
    m = mesh((8,), ("fsdp",))

    def rule(S, k):
        return S("fsdp") if k != "w2" else S("fsdp", None)

    return _mlp_step("rmsprop_centered_jit", "jit: MLP + optax.rmsprop(centered, momentum), FSDP rows over 8",
                     optax.rmsprop(0.01, decay=0.9, eps=1e-3, centered=True, momentum=0.9), m, rule,
                     bsh=NamedSharding(m, P("fsdp")))


def clip_adam_sched_jit() -> Program:
    sched = optax.piecewise_constant_schedule(1e-2, {2: 0.5, 5: 0.1})
    tx = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(sched))
    return _mlp_step("clip_adam_sched_jit", "jit: clip_by_global_norm + adam(piecewise_constant by step), tp, 2x4",
                     tx, mesh((2, 4), ("dp", "tp")), _tp_rule,
                     options={"assume": {"*count*": (0, 1000), "*nu*": (0.0, float("inf"))}})


def adagrad_jit() -> Program:
    return _mlp_step("adagrad_jit", "jit: MLP + optax.adagrad, params/accumulators on tp, 2x4",
                     optax.adagrad(0.1, eps=1e-3), mesh((2, 4), ("dp", "tp")), _tp_rule,
                     options={"assume": {"*sum_of_squares*": (0.0, float("inf"))}})


# ---------------------------------------------------------------------------
# 8-12. jit programs XLA partitions in ways the earlier batches do not hold.

def scan_wsc_grad_jit() -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    layers, b, d, f = 3, 8, 8, 16
    S = _shardings(m)

    def fwd(ws, x):
        def layer(h, w):
            h = lax.with_sharding_constraint(h, S("dp", None))
            u = lax.with_sharding_constraint(jnp.tanh(h @ w["a"]), S("dp", "tp"))
            return h + u @ w["b"], jnp.sum(u * u)

        h, aux = lax.scan(layer, x, ws)
        return jnp.mean(h * h) + 0.01 * jnp.sum(aux)

    def step(ws, x):
        loss, g_ = jax.value_and_grad(fwd)(ws, x)
        return loss, g_

    ws = {"a": _sds((layers, d, f)), "b": _sds((layers, f, d))}
    wsh = {"a": S(None, None, "tp"), "b": S(None, "tp", None)}
    return Program("scan_wsc_grad_jit", "jit: lax.scan over 3 layers, wsc on the carry in"
                                        " the body, value_and_grad, 2x4",
                   step, (ws, _sds((b, d))), (wsh, S("dp")), (S(), wsh))


def einsum_uneven_jit() -> Program:
    m = mesh((4, 2), ("x", "y"))
    S = _shardings(m)

    def f(a, bm, c):
        h = jnp.einsum("ik,kj->ij", a, bm)  # [6, 10]
        h = lax.with_sharding_constraint(jnp.tanh(h), S("x", "y"))  # 6 over 4, 10 over 2
        h2 = lax.with_sharding_constraint(jnp.einsum("ij,jl->il", h, c), S(None, "x"))  # [6, 6]: 6 over 4
        return jnp.einsum("il,ij->lj", h2, h)  # [6, 10]

    return Program("einsum_uneven_jit", "jit: einsums with intermediates constrained onto 6"
                                        " over 4 and 10 over 2 (padded), 4x2",
                   f, (_sds((6, 8)), _sds((8, 10)), _sds((10, 6))), (S(None, "y"), S("y"), S()), S("y", None))


def reduce_scatter_jit() -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    S = _shardings(m)

    def f(x, w, z):
        y = lax.with_sharding_constraint(x @ w, S("dp", "tp"))  # contraction over tp -> reduce-scatter
        col = lax.with_sharding_constraint(jnp.sum(z, 0), S("dp"))  # a dp-sharded axis summed, kept over dp
        return y, col

    return Program("reduce_scatter_jit", "jit: contraction over tp into a tp-sharded"
                                         " output, sum over dp kept sharded, 2x4",
                   f, (_sds((8, 16)), _sds((16, 8)), _sds((8, 8))), (S("dp", "tp"), S("tp", None), S("dp", None)),
                   (S("dp", "tp"), S("dp")))


def sort_topk_jit() -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    S = _shardings(m)

    def f(x, v):
        vals, idx = lax.top_k(x, 3)  # along the tp-sharded axis
        cs = jnp.cumsum(x, 1)
        order = jnp.argsort(v[:, 0], 0)  # along the dp-sharded axis
        sv = jnp.take_along_axis(v, order[:, None], 0)
        return vals, idx, cs, sv

    return Program("sort_topk_jit", "jit: top_k and cumsum along a tp-sharded axis,"
                                    " argsort + take_along_axis over dp, 2x4",
                   f, (_sds((4, 16)), _sds((8, 4))), (S(None, "tp"), S("dp", None)),
                   (S(), S(), S(None, "tp"), S("dp", None)))


def bf16_attn_jit() -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    S = _shardings(m)
    b, h, s, d = 2, 4, 4, 4

    def attn(q, k, v):
        sc = jnp.einsum("bhqd,bhkd->bhqk", q, k, preferred_element_type=f32) / np.float32(2.0)
        p = jax.nn.softmax(sc, -1).astype(bf16)
        return jnp.einsum("bhqk,bhkd->bhqd", p, v, preferred_element_type=f32)

    sds = _sds((b, h, s, d), bf16)
    sh = S("dp", "tp")
    return Program("bf16_attn_jit", "jit: bf16 q/k/v, f32-accumulated scores and softmax, bf16 probs, heads on tp, 2x4",
                   attn, (sds, sds, sds), (sh, sh, sh), sh)


# ---------------------------------------------------------------------------
# 13-15. shard_map plans on a 3-axis mesh and a halo exchange, with bug twins.

def _pos3(bug: bool) -> Program:
    m = mesh((2, 2, 2), ("dp", "sp", "tp"))
    b, s, d = 2, 8, 4
    blk = s // 2

    def ref(x, pos):
        return jnp.tanh(x + pos[None])

    def body(x, pos):
        me = lax.axis_index("tp" if bug else "sp")
        return jnp.tanh(x + lax.dynamic_slice_in_dim(pos, me * blk, blk, 0)[None])

    S = _shardings(m)
    return Program("pos3_smap_bug" if bug else "pos3_smap",
                   "shard_map on (dp, sp, tp): positions sliced at axis_index('sp') * block"
                   + (" (bug: axis_index('tp'))" if bug else ""),
                   _smap(body, m, (P("dp", "sp", "tp"), P(None, "tp")), P("dp", "sp", "tp"), check_vma=not bug),
                   (_sds((b, s, d)), _sds((s, d))), (S("dp", "sp", "tp"), S(None, "tp")), S("dp", "sp", "tp"),
                   reference=ref)


def _rowpar3(bug: bool) -> Program:
    m = mesh((2, 2, 2), ("dp", "sp", "tp"))

    def ref(x, w):
        return jax.nn.relu(x @ w)

    def body(x, w):
        return jax.nn.relu(lax.psum(x @ w, "sp" if bug else "tp"))

    S = _shardings(m)
    return Program("rowpar3_smap_bug" if bug else "rowpar3_smap",
                   "shard_map on (dp, sp, tp): row-parallel matmul, psum over tp"
                   + (" (bug: psum over sp)" if bug else ""),
                   _smap(body, m, (P(("dp", "sp"), "tp"), P("tp", None)), P(("dp", "sp")), check_vma=not bug),
                   (_sds((8, 8)), _sds((8, 4))), (S(("dp", "sp"), "tp"), S("tp", None)), S(("dp", "sp")),
                   reference=ref)


def _halo(bug: bool) -> Program:
    m = mesh((8,), ("sp",))
    n, blk, c = 8, 4, 2

    def conv(x, w):  # causal: y[t] = sum_j w[j] * x[t - 2 + j], x[<0] = 0
        xp = jnp.concatenate([jnp.zeros((2, x.shape[1]), x.dtype), x], 0)
        return sum(xp[j:j + x.shape[0]] * w[j] for j in range(3))

    def body(x, w):
        perm = [(i, (i + 1) % n) for i in range(n)] if bug else [(i, i + 1) for i in range(n - 1)]
        tail = lax.ppermute(x[-2:], "sp", perm)  # a device not sent to gets zeros
        xp = jnp.concatenate([tail, x], 0)
        return sum(xp[j:j + blk] * w[j] for j in range(3))

    S = _shardings(m)
    return Program("halo_conv_smap_bug" if bug else "halo_conv_smap",
                   "shard_map sp 8: causal conv1d, halo of 2 by ppermute, zeros on device 0"
                   + (" (bug: circular permutation)" if bug else ""),
                   _smap(body, m, (P("sp"), P()), P("sp"), check_vma=False),
                   (_sds((n * blk, c)), _sds((3, c))), (S("sp"), S()), S("sp"), reference=conv)


# ---------------------------------------------------------------------------
# 16-. Meshes and ops the partitioner handles in less common ways.

def _mesh_of(devices: list[int], shape: tuple[int, ...], names: tuple[str, ...]) -> Any:
    from jax.sharding import AxisType, Mesh

    devs = np.array([jax.devices()[i] for i in devices]).reshape(shape)
    return Mesh(devs, names, axis_types=(AxisType.Auto,) * len(shape))


def mesh6_uneven_jit() -> Program:
    m = _mesh_of(list(range(6)), (2, 3), ("dp", "tp"))
    S = _shardings(m)

    def f(x, w1, w2):
        h = lax.with_sharding_constraint(jax.nn.relu(x @ w1), S("dp", "tp"))  # 8 columns over 3
        return h @ w2

    return Program("mesh6_uneven_jit", "jit: MLP on a 2x3 mesh of 6 devices, hidden 8 over 3 (padded), 12 over 3",
                   f, (_sds((4, 12)), _sds((12, 8)), _sds((8, 6))), (S("dp", "tp"), S("tp"), S()), S("dp", "tp"))


def mesh_permuted_jit() -> Program:
    m = _mesh_of([3, 1, 7, 5, 0, 2, 6, 4], (2, 4), ("dp", "tp"))
    S = _shardings(m)

    def f(x, w1, w2):
        h = jnp.tanh(x @ w1)
        return jnp.sum(h @ w2, 0), h

    return Program("mesh_permuted_jit", "jit: MLP on a 2x4 mesh whose devices are listed out of order, 2x4",
                   f, (_sds((8, 8)), _sds((8, 16)), _sds((16, 4))), (S("dp", None), S(None, "tp"), S("tp", None)),
                   (S(), S("dp", "tp")))


def roll_reverse_jit() -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    S = _shardings(m)

    def f(x):
        return jnp.roll(x, 3, axis=1) * 2.0 + x[:, ::-1], jnp.flip(x, 0)

    return Program("roll_reverse_jit", "jit: jnp.roll and a reverse along a tp-sharded axis, flip along dp, 2x4",
                   f, (_sds((4, 16)),), (S("dp", "tp"),), (S("dp", "tp"), S("dp", "tp")))


def segment_sum_jit() -> Program:
    m = mesh((8,), ("e",))
    S = _shardings(m)
    nodes, edges, d = 6, 16, 4

    def f(h, src, dst, w):  # one GNN message-passing layer, edges sharded
        msg = jnp.tanh(h[src] @ w)
        return jax.ops.segment_sum(msg, dst, num_segments=nodes)

    return Program("segment_sum_jit", "jit: GNN layer, gather by src, segment_sum by dst, edges over 8",
                   f, (_sds((nodes, d)), _sds((edges,), i32), _sds((edges,), i32), _sds((d, d))),
                   (S(), S("e"), S("e"), S()), S(),
                   options={"assume": {"src": (0, nodes), "dst": (0, nodes)}})


def pool_cummax_jit() -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    S = _shardings(m)

    def f(x):
        mp = lax.reduce_window(x, -jnp.inf, lax.max, (1, 3), (1, 1), "SAME")  # window across shard edges
        return mp, lax.cummax(x, 1), lax.cumlogsumexp(x, 1)

    return Program("pool_cummax_jit", "jit: max pool (window 3) and cummax/cumlogsumexp along a tp-sharded axis, 2x4",
                   f, (_sds((4, 16)),), (S("dp", "tp"),), (S("dp", "tp"),) * 3)


def _hash_embed(tokens, table, signed: bool = False):
    """The hashing trick: a multiplicative hash of token ids in uint32, the bucket its top
    4 bits. `signed`: the same bits multiplied in int32, whose `>>` is arithmetic, so a
    high bit gives the bucket minus 16, which `take` normalizes back to the bucket: the
    same function, written the way an int32-only codebase does."""
    if signed:
        h = tokens * jnp.int32(np.uint32(2654435761).astype(np.int32))
        idx = h >> 28
    else:
        h = tokens.astype(jnp.uint32) * jnp.uint32(2654435761)
        idx = (h >> 28).astype(i32)
    return jnp.take(table, idx, axis=0).sum(1)


def _hash(signed: bool) -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    S = _shardings(m)
    buckets, d = 16, 4
    return Program("hash_embed_jit_signed" if signed else "hash_embed_jit",
                   "jit: uint32 multiplicative hash of token ids into a tp-sharded bucket table, 2x4"
                   + (" (in int32: the same function)" if signed else ""),
                   (lambda t, tb: _hash_embed(t, tb, True)) if signed else _hash_embed,
                   (_sds((4, 8), i32), _sds((buckets, d))), (S("dp"), S("tp")), S("dp"), reference=_hash_embed)


def int4_dot_jit() -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    S = _shardings(m)

    def f(x, wq, scale):
        w = wq.astype(bf16) * scale.astype(bf16)
        return jnp.dot(x.astype(bf16), w, preferred_element_type=f32)

    return Program("int4_dot_jit", "jit: int4 weights dequantized to bf16, bf16 dot with f32 accumulation, 2x4",
                   f, (_sds((8, 16)), _sds((16, 8), jnp.int4), _sds((8,))), (S("dp", "tp"), S("tp"), S()), S("dp"))


def reduce_precision_jit() -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    S = _shardings(m)

    def f(x, w):  # fp8 emulation as some training stacks write it
        xq = lax.reduce_precision(x, exponent_bits=4, mantissa_bits=3)
        return xq @ lax.reduce_precision(w, exponent_bits=5, mantissa_bits=2)

    return Program("reduce_precision_jit", "jit: lax.reduce_precision (e4m3 / e5m2 emulation) before a tp matmul, 2x4",
                   f, (_sds((8, 16)), _sds((16, 8))), (S("dp", "tp"), S("tp")), S("dp"))


def _newton(a, thr: float = 1e-3):
    """sqrt(a^2 + 0.5) by Newton until converged, at most 20 trips: a data-dependent trip
    count (the radicand is positive for every input, so random runs converge too)."""
    a = a * a + 0.5

    def cond(c):
        x, i = c
        return (jnp.max(jnp.abs(x * x - a)) > thr) & (i < 20)

    def body(c):
        x, i = c
        return 0.5 * (x + a / x), i + 1

    return lax.while_loop(cond, body, (jnp.ones_like(a) + a, 0))[0]


def _newton_while(bug: bool) -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    S = _shardings(m)
    return Program("newton_while_jit_bug" if bug else "newton_while_jit",
                   "jit: Newton sqrt in a while_loop, stop on max |x^2 - r| < 1e-3 or 20 trips, 2x4"
                   + (" (bug: stops at 1e-1)" if bug else ""),
                   (lambda a: _newton(a, 1e-1)) if bug else _newton, (_sds((4, 8)),), (S("dp", "tp"),),
                   S("dp", "tp"), reference=_newton)


def _greedy_decode(steps: int):
    """Greedy decoding as users write it: until every row has emitted EOS (token 0) or
    `steps` steps, a tied-embedding model's argmax token; returns the summed scores."""
    def decode(emb, w, tok):
        def cond(c):
            _, done, i, _ = c
            return jnp.logical_not(jnp.all(done)) & (i < steps)

        def body(c):
            tok, done, i, score = c
            logits = jnp.tanh(emb[tok] @ w) @ emb.T
            nxt = jnp.where(done, 0, jnp.argmax(logits, -1))
            return nxt, done | (nxt == 0), i + 1, score + jnp.where(done, 0.0, jnp.max(logits, -1))

        return lax.while_loop(cond, body, (tok, tok == 0, 0, jnp.zeros(tok.shape, f32)))[3]
    return decode


def _greedy(bug: bool) -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    S = _shardings(m)
    vocab, d = 16, 4
    return Program("greedy_decode_jit_bug" if bug else "greedy_decode_jit",
                   "jit: greedy decode while_loop until all EOS or 6 steps, vocab on tp, 2x4"
                   + (" (bug: at most 5 steps)" if bug else ""),
                   _greedy_decode(5 if bug else 6), (_sds((vocab, d)), _sds((d, d)), _sds((8,), i32)),
                   (S("tp"), S(), S("dp")), S("dp"), options={"assume": {"tok": (0, vocab)}},
                   reference=_greedy_decode(6))


def permutation_jit() -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    S = _shardings(m)

    def f(key, x):
        return jax.random.permutation(key, x, axis=0, independent=False), jax.random.randint(key, (8,), 0, 5)

    return Program("permutation_jit", "jit: jax.random.permutation of dp-sharded rows, randint, 2x4",
                   f, (jax.ShapeDtypeStruct((2,), jnp.uint32), _sds((8, 4))), (S(), S("dp")), (S("dp"), S()))


def tiny_lm_step_jit() -> Program:
    import flax.linen as nn

    m = mesh((2, 4), ("dp", "tp"))
    b, s, vocab, d, heads = 2, 4, 16, 8, 4

    class LM(nn.Module):
        @nn.compact
        def __call__(self, tok):
            emb = nn.Embed(vocab, d)
            x = emb(tok)
            h = nn.LayerNorm()(x)
            mask = nn.make_causal_mask(tok)
            x = x + nn.MultiHeadDotProductAttention(num_heads=heads, qkv_features=d)(h, h, mask=mask)
            x = x + nn.Dense(d)(nn.gelu(nn.Dense(2 * d)(nn.LayerNorm()(x))))
            return emb.attend(x)

    net = LM()
    tok = _sds((b, s), i32)
    params = jax.eval_shape(net.init, jax.random.key(0), tok)
    tx = optax.adamw(1e-3, weight_decay=0.01)
    state = jax.eval_shape(tx.init, params)
    S = _shardings(m)

    def rule(path, x):
        name = _key_names(path)
        if "embedding" in name:
            return S("tp")
        if "kernel" in name and x.ndim == 3:
            return S("tp") if "out" in name else S(None, "tp")
        if "Dense_0/kernel" in name:
            return S(None, "tp")
        if "Dense_1/kernel" in name:
            return S("tp")
        return S()

    psh = _tree_shard(params, rule)

    def st_rule(path, x):
        names = _key_names(path)
        for ppath, sh in jax.tree_util.tree_flatten_with_path(psh)[0]:
            if names.endswith(_key_names(ppath)) and x.ndim:
                return sh
        return S()

    ssh = _tree_shard(state, st_rule)

    def step(params, state, tok, labels):
        def loss(p):
            logits = net.apply(p, tok)
            return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()

        val, grads = jax.value_and_grad(loss)(params)
        upd, state = tx.update(grads, state, params)
        return optax.apply_updates(params, upd), state, val

    return Program("tiny_lm_step_jit", "jit: flax Embed + MHA + MLP LM, vocab/heads on tp, CE, adamw train step, 2x4",
                   step, (params, state, tok, tok), (psh, ssh, S("dp"), S("dp")), (psh, ssh, S()),
                   options={"assume": {"tok": (0, vocab), "labels": (0, vocab), "*nu*": (0.0, float("inf")),
                                       "*count*": (0, 1000)}})


def gqa_repeat_jit() -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    S = _shardings(m)
    b, s, hq, hkv, d = 2, 4, 8, 2, 4

    def f(q, k, v):  # grouped-query attention: kv heads (2) repeated to the 8 query heads on tp
        k = jnp.repeat(k, hq // hkv, axis=2)
        v = jnp.repeat(v, hq // hkv, axis=2)
        sc = jnp.einsum("bqhd,bkhd->bhqk", q, k) / 2.0
        return jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(sc, -1), v)

    return Program("gqa_repeat_jit", "jit: GQA, 2 kv heads repeated to 8 query heads sharded on tp, 2x4",
                   f, (_sds((b, s, hq, d)), _sds((b, s, hkv, d)), _sds((b, s, hkv, d))),
                   (S("dp", None, "tp"), S("dp"), S("dp")), S("dp", None, "tp"))


def lars_ema_jit() -> Program:
    tx = optax.chain(optax.lars(0.1, weight_decay=1e-4), optax.ema(0.9))
    return _mlp_step("lars_ema_jit", "jit: MLP + optax.lars (trust ratio per layer) then optax.ema, tp, 2x4",
                     tx, mesh((2, 4), ("dp", "tp")), _tp_rule)


def yogi_jit() -> Program:
    return _mlp_step("yogi_jit", "jit: MLP + optax.yogi (sign-based second moment), tp, 2x4",
                     optax.yogi(1e-2), mesh((2, 4), ("dp", "tp")), _tp_rule,
                     options={"assume": {"*nu*": (0.0, float("inf")), "*count*": (0, 1000)}})


def _gather2(bug: bool) -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    S = _shardings(m)

    def ref(x, w):
        return jnp.tanh(x) @ w

    def body(x, w):  # x's rows over (dp, tp): gather all 8 blocks in mesh order
        full = lax.all_gather(jnp.tanh(x), ("tp", "dp") if bug else ("dp", "tp"), axis=0, tiled=True)
        return full @ w

    return Program("gather2_smap_bug" if bug else "gather2_smap",
                   "shard_map 2x4: all_gather over (dp, tp) of rows sharded over (dp, tp), then a tp matmul"
                   + (" (bug: gathered over (tp, dp))" if bug else ""),
                   _smap(body, m, (P(("dp", "tp")), P(None, "tp")), P(None, "tp"), check_vma=False),
                   (_sds((8, 4)), _sds((4, 8))), (S(("dp", "tp")), S(None, "tp")), S(None, "tp"), reference=ref)


def _flat_index(bug: bool) -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    S = _shardings(m)
    rows = 2

    def ref(x, table):
        return x * table

    def body(x, table):  # each device's rows of a replicated table at its (dp, tp) flat index
        me = lax.axis_index("dp") * (2 if bug else 4) + lax.axis_index("tp")
        return x * lax.dynamic_slice_in_dim(table, me * rows, rows, 0)

    return Program("flat_index_smap_bug" if bug else "flat_index_smap",
                   "shard_map 2x4: a replicated table sliced at the flat (dp, tp) device index"
                   + (" (bug: dp's stride 2, not 4)" if bug else ""),
                   _smap(body, m, (P(("dp", "tp")), P()), P(("dp", "tp")), check_vma=False),
                   (_sds((16, 4)), _sds((16, 4))), (S(("dp", "tp")), S()), S(("dp", "tp")), reference=ref)


def _a2a_untiled(bug: bool) -> Program:
    m = mesh((8,), ("x",))
    S = _shardings(m)

    def ref(a):
        return a

    def body(a):  # a [1, 8] row per device -> its [8, 1] column: rows to columns by all_to_all
        out = lax.all_to_all(a, "x", 1, 0, tiled=True)
        return (out if not bug else out[::-1]).reshape(8, 1)

    return Program("a2a_transpose_smap_bug" if bug else "a2a_transpose_smap",
                   "shard_map x 8: a row-sharded matrix resharded onto columns by all_to_all"
                   + (" (bug: the received blocks read in reverse)" if bug else ""),
                   _smap(body, m, (P("x"),), P(None, "x"), check_vma=False),
                   (_sds((8, 8)),), (S("x"),), S(None, "x"), reference=ref)


PROGRAMS: g.Programs = {
    "mha_flax_jit": mha_flax_jit, "conv_ln_jit": conv_ln_jit, "embed_take_jit": embed_take_jit,
    "sgd_nesterov_jit": sgd_nesterov_jit, "rmsprop_centered_jit": rmsprop_centered_jit,
    "clip_adam_sched_jit": clip_adam_sched_jit, "adagrad_jit": adagrad_jit,
    "scan_wsc_grad_jit": scan_wsc_grad_jit, "einsum_uneven_jit": einsum_uneven_jit,
    "reduce_scatter_jit": reduce_scatter_jit, "sort_topk_jit": sort_topk_jit, "bf16_attn_jit": bf16_attn_jit,
    "pos3_smap": lambda: _pos3(False), "pos3_smap_bug": lambda: _pos3(True),
    "rowpar3_smap": lambda: _rowpar3(False), "rowpar3_smap_bug": lambda: _rowpar3(True),
    "halo_conv_smap": lambda: _halo(False), "halo_conv_smap_bug": lambda: _halo(True),
    "mesh6_uneven_jit": mesh6_uneven_jit, "mesh_permuted_jit": mesh_permuted_jit,
    "roll_reverse_jit": roll_reverse_jit, "segment_sum_jit": segment_sum_jit, "pool_cummax_jit": pool_cummax_jit,
    "hash_embed_jit": lambda: _hash(False),
    "hash_embed_jit_signed": lambda: _hash(True),
    "int4_dot_jit": int4_dot_jit, "reduce_precision_jit": reduce_precision_jit,
    "newton_while_jit": lambda: _newton_while(False),
    "newton_while_jit_bug": lambda: _newton_while(True), "permutation_jit": permutation_jit,
    "greedy_decode_jit": lambda: _greedy(False), "greedy_decode_jit_bug": lambda: _greedy(True),
    "tiny_lm_step_jit": tiny_lm_step_jit, "gqa_repeat_jit": gqa_repeat_jit, "lars_ema_jit": lars_ema_jit,
    "yogi_jit": yogi_jit, "gather2_smap": lambda: _gather2(False), "gather2_smap_bug": lambda: _gather2(True),
    "flat_index_smap": lambda: _flat_index(False), "flat_index_smap_bug": lambda: _flat_index(True),
    "a2a_transpose_smap": lambda: _a2a_untiled(False), "a2a_transpose_smap_bug": lambda: _a2a_untiled(True),
}

MUTATIONS: g.Mutations = g7.MUTATIONS

g.OUT = g.ROOT / "testdata" / "clients8"  # --export writes this batch's pairs here


def check_row(name: str, form: str, timeout_s: float) -> dict:
    """One row: the verdict, the check's CPU seconds (the machine is shared) and, for a
    not-equivalent verdict, where XLA reproduced the counterexample."""
    import time

    from tv_mlir.errors import TvError

    p = PROGRAMS[name]()
    t = time.process_time()
    try:
        v = g.tj.check(p.fn, *p.args, in_shardings=p.in_shardings, out_shardings=p.out_shardings,
                       reference=p.reference, form=form, timeout_s=timeout_s, cache=False, **p.options)
    except TvError as e:
        return {"name": name, "form": form, "verdict": "error", "exit": 3,
                "cpu_s": round(time.process_time() - t, 2), "reason": str(e)[:300]}
    c = v.counterexample
    return {"name": name, "form": form, "verdict": v.verdict, "exit": v.exit_code,
            "cpu_s": round(time.process_time() - t, 2),
            "confirmed_at": None if c is None else c.confirmed_at, "reason": (v.reason or "")[:300]}


if __name__ == "__main__":
    if sys.argv[1:2] == ["--one"]:  # a traceback here is a finding: let it show
        import json
        print(json.dumps(check_row(sys.argv[2], sys.argv[3], float(sys.argv[4]))))
        sys.exit(0)
    sys.exit(g.main(sys.argv[1:], PROGRAMS, MUTATIONS, __file__, __doc__))
