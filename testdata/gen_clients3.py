"""Real-client programs, third batch (issue 14, helper-37): the parallelism plans ML-infra
users write by hand or through the partitioner, at tiny dims, on 8 CPU devices.

    .venv/bin/python testdata/gen_clients3.py --list
    .venv/bin/python testdata/gen_clients3.py --measure [NAME ...] [--forms partitioned,shardy]
    .venv/bin/python testdata/gen_clients3.py --mutants NAME ...
    .venv/bin/python testdata/gen_clients3.py --export NAME ...   # testdata/clients/NAME.*.mlir

The driver and the Program record are gen_clients.py's, the seeded bugs gen_clients2.py's
(plus the few this batch needs: an all-to-all's groups, an all-reduce's reduction kind).
shard_map plans are checked against the plain function they parallelize (`reference=`).
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
import gen_clients as g  # noqa: E402
import gen_clients2 as g2  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import optax  # noqa: E402
from gen_clients import Program, _abstract, mesh  # noqa: E402
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

lax = jax.lax


# ---------------------------------------------------------------------------
# 1. Mixture of experts with expert parallelism (GShard / Switch as written in shard_map):
#    each device routes its own group of tokens (top-2 of 4 experts, a per-group capacity,
#    tokens over capacity dropped), an all_to_all over the expert axis brings every expert
#    its slots from the whole group of devices, the expert (a GELU MLP) runs where its
#    weights live, a second all_to_all brings the results home, the gates combine them.
#    The reference is the same routing per group, every expert on one device.

def _route(x: jax.Array, router: jax.Array, capacity: int) -> tuple[jax.Array, jax.Array]:
    """GShard dispatch and combine tensors [tokens, experts, capacity] for one group: a
    token's slot in an expert is the number of earlier choices of that expert (first
    choices before second ones); past the capacity it is dropped."""
    t, e = x.shape[0], router.shape[1]
    probs = jax.nn.softmax(x @ router, -1)
    gates, idx = lax.top_k(probs, 2)
    gates = gates / gates.sum(-1, keepdims=True)
    dispatch = jnp.zeros((t, e, capacity), x.dtype)
    combine = jnp.zeros((t, e, capacity), x.dtype)
    filled = jnp.zeros((e,), jnp.int32)
    for k in range(2):
        onehot = jax.nn.one_hot(idx[:, k], e, dtype=jnp.int32)
        slot = jnp.cumsum(onehot, 0) - 1 + filled[None]
        keep = onehot * (slot < capacity)
        filled = filled + onehot.sum(0)
        d = (keep[..., None] * jax.nn.one_hot(slot, capacity, dtype=jnp.int32)).astype(x.dtype)
        dispatch, combine = dispatch + d, combine + d * gates[:, k, None, None]
    return dispatch, combine


def _experts(xe: jax.Array, w1: jax.Array, w2: jax.Array) -> jax.Array:
    return jnp.einsum("ecf,efh->ech", jax.nn.gelu(jnp.einsum("ech,ehf->ecf", xe, w1)), w2)


def moe_ep() -> Program:
    m = mesh((2, 4), ("dp", "ep"))
    groups, per, hidden, ffn, experts, capacity = 8, 4, 4, 8, 4, 2
    x = jax.ShapeDtypeStruct((groups * per, hidden), jnp.float32)
    router = jax.ShapeDtypeStruct((hidden, experts), jnp.float32)
    w1 = jax.ShapeDtypeStruct((experts, hidden, ffn), jnp.float32)
    w2 = jax.ShapeDtypeStruct((experts, ffn, hidden), jnp.float32)

    def one_group(x: jax.Array, router: jax.Array, w1: jax.Array, w2: jax.Array) -> jax.Array:
        dispatch, combine = _route(x, router, capacity)
        return jnp.einsum("tec,ech->th", combine, _experts(jnp.einsum("tec,th->ech", dispatch, x), w1, w2))

    def ref(x: jax.Array, router: jax.Array, w1: jax.Array, w2: jax.Array) -> jax.Array:
        y = jax.vmap(one_group, (0, None, None, None))(x.reshape(groups, per, hidden), router, w1, w2)
        return y.reshape(x.shape)

    def body(x: jax.Array, router: jax.Array, w1: jax.Array, w2: jax.Array) -> jax.Array:
        dispatch, combine = _route(x, router, capacity)
        xe = jnp.einsum("tec,th->ech", dispatch, x)  # [experts, capacity, hidden]
        xe = lax.all_to_all(xe, "ep", 0, 1, tiled=True)  # [1 local expert, ep * capacity, hidden]
        ye = lax.all_to_all(_experts(xe, w1, w2), "ep", 1, 0, tiled=True)  # back: [experts, capacity, hidden]
        return jnp.einsum("tec,ech->th", combine, ye)

    specs = (P(("dp", "ep")), P(), P("ep"), P("ep"))
    fn = jax.shard_map(body, mesh=m, in_specs=specs, out_specs=specs[0], check_vma=False)
    return Program("moe_ep_a2a", "MoE expert parallel in shard_map: top-2, capacity 2/group, all_to_all "
                   "dispatch + combine, 2x4", fn, (x, router, w1, w2), tuple(NamedSharding(m, s) for s in specs),
                   NamedSharding(m, specs[0]), reference=ref)


# ---------------------------------------------------------------------------
# 2. Megatron sequence parallelism as MaxText writes it: no hand collectives, only
#    with_sharding_constraint. The residual stream and its RMSNorm are sharded over the
#    sequence on tp, the norm's output is constrained replicated over tp (the partitioner's
#    all-gather) into a column-parallel matmul, the row-parallel matmul's partial sums are
#    constrained back onto the sequence (its reduce-scatter); two layers.

def megatron_sp_wsc() -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    x = jax.ShapeDtypeStruct((2, 8, 8), jnp.float32)
    w_in = jax.ShapeDtypeStruct((2, 8, 16), jnp.float32)
    w_out = jax.ShapeDtypeStruct((2, 16, 8), jnp.float32)
    g_ = jax.ShapeDtypeStruct((2, 8), jnp.float32)
    seq = NamedSharding(m, P("dp", "tp", None))
    full = NamedSharding(m, P("dp", None, None))
    hid = NamedSharding(m, P("dp", None, "tp"))
    wsc = lax.with_sharding_constraint

    def fwd(x: jax.Array, w_in: jax.Array, w_out: jax.Array, gam: jax.Array) -> jax.Array:
        for layer in range(2):
            x = wsc(x, seq)
            h = x * lax.rsqrt(jnp.mean(x * x, -1, keepdims=True) + 1e-6) * gam[layer]
            h = wsc(h, full)
            u = wsc(jax.nn.relu(h @ w_in[layer]), hid)
            x = x + wsc(u @ w_out[layer], seq)
        return x

    return Program("megatron_sp_wsc", "Megatron-SP by with_sharding_constraint: RMSNorm on seq shards, "
                   "all-gather/reduce-scatter around TP matmuls, 2 layers, 2x4", fwd, (x, w_in, w_out, g_),
                   (seq, NamedSharding(m, P(None, None, "tp")), NamedSharding(m, P(None, "tp", None)),
                    NamedSharding(m, P())), seq)


# ---------------------------------------------------------------------------
# 3. Causal ring attention in shard_map, written with a fori_loop (not unrolled): the
#    sequence over 4 devices, key/value blocks passed round the ring by ppermute, the
#    causal mask from the global positions of the block held at step i, an online softmax
#    (running max, sums rescaled by exp(m_old - m_new)); masked scores are -inf.

def ring_causal() -> Program:
    m = mesh((2, 4), ("dp", "sp"))
    n, blk, d = 4, 2, 4
    q = jax.ShapeDtypeStruct((2, n * blk, d), jnp.float32)
    scale = np.float32(1 / np.sqrt(d))

    def ref(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
        s = jnp.einsum("bqd,bkd->bqk", q, k) * scale
        s = jnp.where(jnp.tril(jnp.ones((q.shape[1], k.shape[1]), bool)), s, -jnp.inf)
        return jnp.einsum("bqk,bkd->bqd", jax.nn.softmax(s, -1), v)

    def body(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
        me = lax.axis_index("sp")
        qpos = me * blk + jnp.arange(blk)

        def step(i: jax.Array, carry: tuple[jax.Array, ...]) -> tuple[jax.Array, ...]:
            k, v, mx, num, den = carry
            src = (me - i) % n  # whose block this device holds at step i
            kpos = src * blk + jnp.arange(blk)
            s = jnp.einsum("bqd,bkd->bqk", q, k) * scale
            s = jnp.where(qpos[:, None] >= kpos[None, :], s, -jnp.inf)
            new = jnp.maximum(mx, s.max(-1, keepdims=True))
            c, p = jnp.exp(mx - new), jnp.exp(s - new)
            num = num * c + jnp.einsum("bqk,bkd->bqd", p, v)
            den = den * c + p.sum(-1, keepdims=True)
            perm = [(j, (j + 1) % n) for j in range(n)]
            return lax.ppermute(k, "sp", perm), lax.ppermute(v, "sp", perm), new, num, den

        init = (k, v, jnp.full(q.shape[:2] + (1,), -jnp.inf, q.dtype), jnp.zeros_like(q),
                jnp.zeros(q.shape[:2] + (1,), q.dtype))
        _, _, _, num, den = lax.fori_loop(0, n, step, init)
        return num / den

    spec = P("dp", "sp")
    s = NamedSharding(m, spec)
    fn = jax.shard_map(body, mesh=m, in_specs=(spec, spec, spec), out_specs=spec, check_vma=False)
    return Program("ring_causal_loop", "causal ring attention in shard_map: fori_loop, ppermute k/v, online "
                   "softmax, -inf mask, 2x4", fn, (q, q, q), (s, s, s), s, reference=ref)


# ---------------------------------------------------------------------------
# 4. ZeRO-3 / FSDP train step as jit users write it: every parameter and its Adam moments
#    sharded over fsdp on their first dim, the batch over fsdp, gradients accumulated over
#    2 microbatches with lax.scan, clip_by_global_norm(1.0) then adamw; mesh 8. The
#    partitioner all-gathers the weights and reduce-scatters the gradients.

def fsdp_adamw_scan() -> Program:
    m = mesh((8,), ("fsdp",))
    params = {"w1": jax.ShapeDtypeStruct((8, 16), jnp.float32), "b1": jax.ShapeDtypeStruct((16,), jnp.float32),
              "w2": jax.ShapeDtypeStruct((16, 8), jnp.float32)}
    tx = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(1e-3, weight_decay=0.1))
    opt = _abstract(jax.eval_shape(tx.init, params))
    x = jax.ShapeDtypeStruct((2, 16, 8), jnp.float32)  # [microbatch, rows, features]
    y = jax.ShapeDtypeStruct((2, 16, 8), jnp.float32)

    def loss(p: Any, x: jax.Array, y: jax.Array) -> jax.Array:
        return jnp.mean((jax.nn.gelu(x @ p["w1"] + p["b1"]) @ p["w2"] - y) ** 2)

    def step(params: Any, opt: Any, x: jax.Array, y: jax.Array) -> Any:
        def micro(acc: Any, xy: tuple[jax.Array, jax.Array]) -> tuple[Any, None]:
            lv, gr = jax.value_and_grad(loss)(params, *xy)
            return jax.tree.map(jnp.add, acc, (lv, gr)), None
        zero = (jnp.zeros(()), jax.tree.map(jnp.zeros_like, params))
        (lv, gr), _ = lax.scan(micro, zero, (x, y))
        gr = jax.tree.map(lambda a: a / x.shape[0], gr)
        upd, opt = tx.update(gr, opt, params)
        return optax.apply_updates(params, upd), opt, lv / x.shape[0]

    def rule(path: tuple[Any, ...], leaf: Any) -> NamedSharding:
        return NamedSharding(m, P("fsdp") if leaf.ndim >= 1 and leaf.shape[0] % 8 == 0 else P())

    psh, osh = g._shard(params, rule), g._shard(opt, rule)
    b = NamedSharding(m, P(None, "fsdp"))
    return Program("fsdp_adamw_scan", "ZeRO-3 / FSDP jit step: params + moments over 8, scan grad accum, "
                   "clip_by_global_norm + adamw, mesh 8", step, (params, opt, x, y), (psh, osh, b, b),
                   (psh, osh, NamedSharding(m, P())),
                   {"assume": {"*count*": (0, 2**31 - 1), "*nu*": (0, float("inf"))}})


# ---------------------------------------------------------------------------
# 5. An int8 quantized MLP as inference stacks write it (AQT / int8 serving): per-channel
#    int8 weights with f32 scales, activations quantized per token (absmax / 127, round,
#    clip), an int8 x int8 -> int32 dot, dequantized by both scales; the hidden dim is
#    sharded over tp so the absmax is an all-reduce max and the int32 dot an int32
#    all-reduce sum; 2x4.

def int8_mlp() -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    x = jax.ShapeDtypeStruct((8, 16), jnp.float32)
    wq = jax.ShapeDtypeStruct((16, 8), jnp.int8)
    ws = jax.ShapeDtypeStruct((8,), jnp.float32)
    w2 = jax.ShapeDtypeStruct((8, 16), jnp.float32)

    def fwd(x: jax.Array, wq: jax.Array, ws: jax.Array, w2: jax.Array) -> jax.Array:
        xs = jnp.max(jnp.abs(x), -1, keepdims=True) / 127.0
        xq = jnp.clip(jnp.round(x / xs), -127, 127).astype(jnp.int8)
        acc = lax.dot(xq, wq, preferred_element_type=jnp.int32)
        h = jax.nn.relu(acc.astype(jnp.float32) * xs * ws)
        return h @ w2

    return Program("int8_mlp", "int8 quantized MLP: per-token absmax, int8 x int8 -> int32 dot over tp, "
                   "dequant, 2x4", fwd, (x, wq, ws, w2),
                   (NamedSharding(m, P("dp", "tp")), NamedSharding(m, P("tp", None)), NamedSharding(m, P()),
                    NamedSharding(m, P(None, "tp"))), NamedSharding(m, P("dp", "tp")))


# ---------------------------------------------------------------------------
# 6. A ViT block as a pjit user shards it: a strided conv patch embedding of images over
#    dp, a class token and learned positions, attention whose heads are constrained onto tp
#    while the tokens stay on dp, the output projection's partial sums constrained back to
#    a sequence-sharded residual (with_sharding_constraint throughout); 2x4.

def vit_wsc() -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    b, hw, c, d, heads, hd = 4, 4, 3, 8, 4, 2
    img = jax.ShapeDtypeStruct((b, hw, hw, c), jnp.float32)
    wpatch = jax.ShapeDtypeStruct((2, 2, c, d), jnp.float32)
    cls = jax.ShapeDtypeStruct((1, 1, d), jnp.float32)
    pos = jax.ShapeDtypeStruct((1, (hw // 2) ** 2 + 1, d), jnp.float32)
    wqkv = jax.ShapeDtypeStruct((3, d, heads, hd), jnp.float32)
    wo = jax.ShapeDtypeStruct((heads, hd, d), jnp.float32)
    wsc = lax.with_sharding_constraint
    S = lambda *spec: NamedSharding(m, P(*spec))  # noqa: E731

    def fwd(img: jax.Array, wpatch: jax.Array, cls: jax.Array, pos: jax.Array, wqkv: jax.Array,
            wo: jax.Array) -> jax.Array:
        x = lax.conv_general_dilated(img, wpatch, (2, 2), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        x = x.reshape(b, -1, d)
        x = jnp.concatenate([jnp.broadcast_to(cls, (b, 1, d)), x], 1) + pos
        x = wsc(x, S("dp", None, None))
        q, k, v = (wsc(jnp.einsum("bsd,dhk->bshk", x, wqkv[i]), S("dp", None, "tp", None)) for i in range(3))
        a = jax.nn.softmax(jnp.einsum("bqhk,bshk->bhqs", q, k) / np.sqrt(hd).astype(np.float32), -1)
        o = wsc(jnp.einsum("bhqs,bshk->bqhk", a, v), S("dp", None, "tp", None))
        y = x + wsc(jnp.einsum("bqhk,hkd->bqd", o, wo), S("dp", "tp", None))
        return y.mean(1)

    return Program("vit_wsc", "ViT block under pjit: strided conv patches, cls + positions, heads on tp by "
                   "with_sharding_constraint, 2x4", fwd, (img, wpatch, cls, pos, wqkv, wo),
                   (S("dp"), S(), S(), S(), S(None, None, "tp"), S("tp")), S("dp"))


PROGRAMS: g.Programs = {
    "vit_wsc": vit_wsc,
    "moe_ep_a2a": moe_ep, "megatron_sp_wsc": megatron_sp_wsc, "ring_causal_loop": ring_causal,
    "fsdp_adamw_scan": fsdp_adamw_scan, "int8_mlp": int8_mlp,
}


# ---------------------------------------------------------------------------
# Seeded bugs this batch adds to gen_clients2's

def all_reduce_kind(text: str, k: int = 0) -> str:
    """The k-th all-reduce combines with another op (max for add, add for max): the
    reduction a partitioner picks from the wrong reduce."""
    c = [c for c in g.collectives(text) if c.kind == "all_reduce"][k]
    body = text[c.start:c.end]
    swapped = re.sub(r"stablehlo\.(add|maximum)\b", lambda mm: "stablehlo." + ("maximum" if mm.group(1) == "add"
                                                                              else "add"), body, count=1)
    assert swapped != body, "no add or maximum in the reduction"
    return text[:c.start] + swapped + text[c.end:]


def a2a_wrong_groups(text: str, k: int = 0) -> str:
    """The k-th all-to-all exchanges within transposed groups (integer groups), or over
    another mesh axis of its size (mesh-axes groups)."""
    c = [c for c in g.collectives(text) if c.kind == "all_to_all"][k]
    if "replica_group_mesh_axes" in c.head:
        return g2.wrong_axes_any("all_to_all")(text, k)
    return g2.wrong_groups_any("all_to_all")(text, k)


def a2a_reversed_groups(text: str, k: int = 0) -> str:
    """The k-th all-to-all with integer groups, each group's members listed in reverse:
    chunk j goes to the (n-1-j)-th device (a wrong expert order)."""
    c = [c for c in g.collectives(text) if c.kind == "all_to_all" and "replica_groups = dense<" in c.head][k]
    mm = re.search(r"replica_groups = dense<(\[\[[\d, \[\]]*\]\])>", c.head)
    groups = [list(reversed(gr)) for gr in json.loads(mm.group(1))]
    head = c.head.replace(mm.group(1), json.dumps(groups).replace(" ", ""), 1)
    return text[:c.start] + text[c.start:c.end].replace(c.head, head, 1) + text[c.end:]


_NESTED_ALL_REDUCE = re.compile(r'^ +%[\w.#]+ = "stablehlo\.all_reduce"\(%[\w.#]+\) <\{[^\n]*$', re.M)


def halved_groups(k: int = -1) -> Any:
    """The k-th all-reduce at any depth (the last by default) sums over half the devices
    only, as integer groups {0..3}, {4..7}: a partial sum over the wrong group."""
    def mutate(text: str) -> str:
        m = list(_NESTED_ALL_REDUCE.finditer(text))[k]
        line = m.group(0)
        new = re.sub(r"replica_groups = (#stablehlo\.replica_group_mesh_axes<.*?\]>|dense<[^>]*> : tensor<[^>]*>)",
                     "replica_groups = dense<[[0,1,2,3],[4,5,6,7]]> : tensor<2x4xi64>", line, count=1)
        assert new != line and "[[0, 1, 2, 3], [4, 5, 6, 7]]" not in line, "already those groups"
        return text[:m.start()] + new + text[m.end():]
    return mutate


def wrong_divisor(text: str) -> str:
    """@main's first f32 scalar constant 2.0 becomes 4.0: a mean over microbatches (or
    shards) divided by the wrong count."""
    main = text.index("func.func @main")
    m = re.compile(r"stablehlo\.constant dense<2\.000000e\+00> : tensor<f32>").search(text, main)
    assert m is not None, "no 2.0 in @main"
    return text[:m.start()] + m.group(0).replace("2.000000e+00", "4.000000e+00") + text[m.end():]


MUTATIONS: g.Mutations = {
    **g2.MUTATIONS,
    "halved_groups_last_all_reduce": halved_groups(-1),
    "dropped_all_reduce_second_last": lambda text: g2.dropped_all_reduce_nested(text, -2),
    "wrong_divisor": wrong_divisor,
    "all_reduce_kind": all_reduce_kind,
    "wrong_groups_all_to_all": a2a_wrong_groups,
    "reversed_groups_all_to_all": a2a_reversed_groups,
    "dropped_all_gather": g2.drop_collective("all_gather"),
    "dropped_reduce_scatter": g2.drop_collective("reduce_scatter"),
}


if __name__ == "__main__":
    sys.exit(g.main(sys.argv[1:], PROGRAMS, MUTATIONS, __file__, __doc__))
