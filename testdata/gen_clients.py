"""Real-client programs the project had not seen (issue 14, "new users"): small flax + optax
models, each jitted with NamedSharding in/out shardings on 8 CPU devices, written the way a
user would write them, not the way the verifier likes them.

    .venv/bin/python testdata/gen_clients.py --list
    .venv/bin/python testdata/gen_clients.py --measure [NAME ...] [--forms partitioned,shardy]
    .venv/bin/python testdata/gen_clients.py --export NAME ...   # testdata/clients/NAME.*.mlir

`--measure` runs `tv_mlir.jax.check` on each program and form in a process of its own (a
crash or a hang of one does not stop the table) and prints program, form, verdict, time and
the exit code `tv-mlir verify` would give (3 for a usage/parse error, 2 for unknown or an
internal error). Before any check, each program's sharded jit is run against the
unsharded one on random inputs (the programs are right; a not-equivalent verdict is the
verifier's bug).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import flax.linen as nn  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tv_mlir import jax as tj  # noqa: E402

OUT = ROOT / "testdata" / "clients"
AUTO = jax.sharding.AxisType.Auto


def mesh(shape: tuple[int, ...], names: tuple[str, ...]) -> jax.sharding.Mesh:
    return jax.make_mesh(shape, names, axis_types=(AUTO,) * len(shape))


@dataclass
class Program:
    name: str
    what: str
    fn: Any  # a function, or a jit object carrying its own shardings (donation)
    args: tuple[Any, ...]
    in_shardings: Any = None
    out_shardings: Any = None
    options: dict[str, Any] = field(default_factory=dict)
    reference: Any = None


def _abstract(tree: Any) -> Any:
    return jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), tree)


def _shard(tree: Any, rule: Callable[[tuple[Any, ...], Any], NamedSharding]) -> Any:
    """A sharding per leaf, chosen by its path and shape."""
    return jax.tree_util.tree_map_with_path(lambda path, x: rule(path, x), tree)


def _path(path: tuple[Any, ...]) -> str:
    return "/".join(str(getattr(k, "key", getattr(k, "name", k))) for k in path)


# ---------------------------------------------------------------------------
# 1. GPT-2 block: LayerNorm, GELU, learned positions, tied embeddings; mesh 2x4 (dp, tp).

class GPT2(nn.Module):
    vocab: int = 32
    hidden: int = 16
    heads: int = 2
    seq: int = 8

    @nn.compact
    def __call__(self, tokens: jax.Array) -> jax.Array:
        embed = nn.Embed(self.vocab, self.hidden, name="wte")
        pos = self.param("wpe", nn.initializers.normal(0.02), (self.seq, self.hidden))
        x = embed(tokens) + pos[None, : tokens.shape[1]]
        h = nn.LayerNorm(name="ln1")(x)
        h = nn.SelfAttention(num_heads=self.heads, qkv_features=self.hidden, deterministic=True,
                             name="attn")(h, mask=nn.make_causal_mask(tokens))
        x = x + h
        h = nn.LayerNorm(name="ln2")(x)
        h = nn.Dense(4 * self.hidden, name="fc")(h)
        h = nn.gelu(h)
        x = x + nn.Dense(self.hidden, name="proj")(h)
        x = nn.LayerNorm(name="lnf")(x)
        return embed.attend(x)  # tied: the LM head is the embedding's transpose


def gpt2() -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    model = GPT2()
    tokens = jax.ShapeDtypeStruct((4, 8), jnp.int32)
    params = _abstract(jax.eval_shape(lambda: model.init(jax.random.PRNGKey(0), jnp.zeros((4, 8), jnp.int32))))

    def rule(path: tuple[Any, ...], x: Any) -> NamedSharding:
        p = _path(path)
        if "fc/kernel" in p:
            return NamedSharding(m, P(None, "tp"))
        if "proj/kernel" in p:
            return NamedSharding(m, P("tp", None))
        if "wte" in p:
            return NamedSharding(m, P("tp", None))
        return NamedSharding(m, P())

    def loss(params: Any, tokens: jax.Array) -> jax.Array:
        logits = model.apply(params, tokens)
        return optax.softmax_cross_entropy_with_integer_labels(logits[:, :-1], tokens[:, 1:]).mean()

    return Program("gpt2_fwd", "GPT-2 block loss, tied embeddings, 2x4", loss, (params, tokens),
                   (_shard(params, rule), NamedSharding(m, P("dp", None))), NamedSharding(m, P()),
                   {"assume": {"tokens": (0, 32)}})


# ---------------------------------------------------------------------------
# 2. ViT patch embedding (a strided conv) and a classifier; mesh 4x2.

class PatchEmbed(nn.Module):
    @nn.compact
    def __call__(self, img: jax.Array) -> jax.Array:
        x = nn.Conv(8, kernel_size=(4, 4), strides=(4, 4), padding="VALID", name="patch")(img)
        b, h, w, c = x.shape
        x = x.reshape(b, h * w, c)
        cls = self.param("cls", nn.initializers.zeros, (1, 1, c))
        x = jnp.concatenate([jnp.broadcast_to(cls, (b, 1, c)), x], axis=1)
        x = nn.LayerNorm(name="ln")(x)
        return nn.Dense(10, name="head")(x[:, 0])


def vit() -> Program:
    m = mesh((4, 2), ("data", "model"))
    model = PatchEmbed()
    img = jax.ShapeDtypeStruct((4, 8, 8, 3), jnp.float32)
    params = _abstract(jax.eval_shape(lambda: model.init(jax.random.PRNGKey(0), jnp.zeros(img.shape))))

    def rule(path: tuple[Any, ...], x: Any) -> NamedSharding:
        p = _path(path)
        if "patch/kernel" in p:
            return NamedSharding(m, P(None, None, None, "model"))
        return NamedSharding(m, P())

    def fwd(params: Any, img: jax.Array) -> jax.Array:
        return model.apply(params, img)

    return Program("vit_patch", "ViT patch-embed conv + head, 4x2", fwd, (params, img),
                   (_shard(params, rule), NamedSharding(m, P("data"))), NamedSharding(m, P("data")))


# ---------------------------------------------------------------------------
# 3. MoE with top-2 routing, experts sharded over an "expert" axis; mesh 2x4.

class MoE(nn.Module):
    experts: int = 4
    hidden: int = 8
    ffn: int = 16

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        logits = nn.Dense(self.experts, use_bias=False, name="router")(x)  # [t, e]
        weights, idx = jax.lax.top_k(jax.nn.softmax(logits), 2)  # [t, 2]
        weights = weights / weights.sum(-1, keepdims=True)
        gate = (jax.nn.one_hot(idx, self.experts) * weights[..., None]).sum(1)  # [t, e]
        w1 = self.param("w1", nn.initializers.lecun_normal(), (self.experts, self.hidden, self.ffn))
        w2 = self.param("w2", nn.initializers.lecun_normal(), (self.experts, self.ffn, self.hidden))
        h = jax.nn.relu(jnp.einsum("th,ehf->etf", x, w1))
        y = jnp.einsum("etf,efh->eth", h, w2)
        return jnp.einsum("eth,te->th", y, gate)


def moe() -> Program:
    m = mesh((2, 4), ("data", "expert"))
    model = MoE()
    x = jax.ShapeDtypeStruct((8, 8), jnp.float32)
    params = _abstract(jax.eval_shape(lambda: model.init(jax.random.PRNGKey(0), jnp.zeros(x.shape))))

    def rule(path: tuple[Any, ...], leaf: Any) -> NamedSharding:
        p = _path(path)
        if p.endswith("w1") or p.endswith("w2"):
            return NamedSharding(m, P("expert"))
        return NamedSharding(m, P())

    def fwd(params: Any, x: jax.Array) -> jax.Array:
        return model.apply(params, x)

    return Program("moe_top2", "MoE top-2 routing, experts over 4, 2x4", fwd, (params, x),
                   (_shard(params, rule), NamedSharding(m, P("data"))), NamedSharding(m, P("data")))


# ---------------------------------------------------------------------------
# 4. nn.remat MLP, loss and gradients, on a three-axis 2x2x2 mesh.

class RematMLP(nn.Module):
    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        Block = nn.remat(nn.Dense)
        h = nn.tanh(Block(16, name="a")(x))
        return Block(4, name="b")(h)


def remat() -> Program:
    m = mesh((2, 2, 2), ("data", "fsdp", "tensor"))
    model = RematMLP()
    x = jax.ShapeDtypeStruct((8, 8), jnp.float32)
    y = jax.ShapeDtypeStruct((8, 4), jnp.float32)
    params = _abstract(jax.eval_shape(lambda: model.init(jax.random.PRNGKey(0), jnp.zeros(x.shape))))

    def rule(path: tuple[Any, ...], leaf: Any) -> NamedSharding:
        p = _path(path)
        if "a/kernel" in p:
            return NamedSharding(m, P("fsdp", "tensor"))
        if "b/kernel" in p:
            return NamedSharding(m, P("tensor", None))
        return NamedSharding(m, P())

    def grads(params: Any, x: jax.Array, y: jax.Array) -> Any:
        return jax.value_and_grad(lambda p: jnp.mean((model.apply(p, x) - y) ** 2))(params)

    psh = _shard(params, rule)
    return Program("remat_grad", "nn.remat MLP value_and_grad, 2x2x2", grads, (params, x, y),
                   (psh, NamedSharding(m, P(("data", "fsdp"))), NamedSharding(m, P(("data", "fsdp")))),
                   (NamedSharding(m, P()), psh))


# ---------------------------------------------------------------------------
# 5. with_sharding_constraint inside the model; optax chain: clip_by_global_norm + adamw
#    with a warmup-cosine schedule read from the step count; mesh 1x8.

def _wsc_mlp(m: jax.sharding.Mesh) -> Callable[..., jax.Array]:
    def f(params: Any, x: jax.Array) -> jax.Array:
        h = jax.nn.relu(x @ params["w1"])
        h = jax.lax.with_sharding_constraint(h, NamedSharding(m, P(None, "model")))
        return h @ params["w2"]
    return f


def optax_chain() -> Program:
    m = mesh((1, 8), ("data", "model"))
    f = _wsc_mlp(m)
    params = {"w1": jax.ShapeDtypeStruct((8, 16), jnp.float32), "w2": jax.ShapeDtypeStruct((16, 8), jnp.float32)}
    sched = optax.warmup_cosine_decay_schedule(0.0, 1e-2, warmup_steps=10, decay_steps=100)
    tx = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(sched))
    opt = _abstract(jax.eval_shape(tx.init, params))
    x = jax.ShapeDtypeStruct((4, 8), jnp.float32)

    def step(params: Any, opt: Any, x: jax.Array) -> Any:
        loss, g = jax.value_and_grad(lambda p: jnp.mean(f(p, x) ** 2))(params)
        upd, opt = tx.update(g, opt, params)
        return optax.apply_updates(params, upd), opt, loss

    psh = {"w1": NamedSharding(m, P(None, "model")), "w2": NamedSharding(m, P("model", None))}
    osh = _shard(opt, lambda path, leaf: psh[_path(path).split("/")[-1]]
                 if _path(path).split("/")[-1] in psh else NamedSharding(m, P()))
    return Program("optax_chain", "wsc + clip_by_global_norm + adamw(warmup cosine), 1x8", step,
                   (params, opt, x), (psh, osh, NamedSharding(m, P())), (psh, osh, NamedSharding(m, P())),
                   {"assume": {"*count*": (0, 2**31 - 1), "*nu*": (0, float("inf"))}})


# ---------------------------------------------------------------------------
# 6. bf16 compute params cast from f32 master weights, SGD on the master; mesh 2x4.

def bf16_master() -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    model = nn.Dense(8, dtype=jnp.bfloat16, param_dtype=jnp.float32)
    x = jax.ShapeDtypeStruct((8, 16), jnp.float32)
    params = _abstract(jax.eval_shape(lambda: model.init(jax.random.PRNGKey(0), jnp.zeros(x.shape))))

    def step(params: Any, x: jax.Array) -> Any:
        def loss(p: Any) -> jax.Array:
            p16 = jax.tree.map(lambda a: a.astype(jnp.bfloat16), p)
            out = model.apply(p16, x.astype(jnp.bfloat16))
            return jnp.mean(out.astype(jnp.float32) ** 2)
        lv, g = jax.value_and_grad(loss)(params)
        return jax.tree.map(lambda p, gi: p - 0.1 * gi.astype(jnp.float32), params, g), lv

    psh = {"params": {"kernel": NamedSharding(m, P(None, "tp")), "bias": NamedSharding(m, P("tp"))}}
    return Program("bf16_master", "bf16 compute, f32 master weights, SGD, 2x4", step, (params, x),
                   (psh, NamedSharding(m, P("dp"))), (psh, NamedSharding(m, P())))


# ---------------------------------------------------------------------------
# 7. Gradient accumulation with optax.MultiSteps (a cond on the mini-step); mesh 4x2.

def multisteps() -> Program:
    m = mesh((4, 2), ("dp", "tp"))
    params = {"w": jax.ShapeDtypeStruct((8, 4), jnp.float32)}
    tx = optax.MultiSteps(optax.sgd(0.1), every_k_schedule=2)
    opt = _abstract(jax.eval_shape(tx.init, params))
    x = jax.ShapeDtypeStruct((8, 8), jnp.float32)

    def step(params: Any, opt: Any, x: jax.Array) -> Any:
        loss, g = jax.value_and_grad(lambda p: jnp.mean((x @ p["w"]) ** 2))(params)
        upd, opt = tx.update(g, opt, params)
        return optax.apply_updates(params, upd), opt, loss

    psh = {"w": NamedSharding(m, P(None, "tp"))}
    osh = _shard(opt, lambda path, leaf: NamedSharding(m, P(None, "tp")) if len(leaf.shape) == 2
                 else NamedSharding(m, P()))
    return Program("multisteps", "optax.MultiSteps(sgd, k=2), 4x2", step, (params, opt, x),
                   (psh, osh, NamedSharding(m, P("dp"))), (psh, osh, NamedSharding(m, P())),
                   {"assume": {"*mini_step*": (0, 2), "*gradient_step*": (0, 2**31 - 1)}})


# ---------------------------------------------------------------------------
# 8. nn.scan over layers (stacked weights), mesh 2x2x2.

class Layer(nn.Module):
    @nn.compact
    def __call__(self, x: jax.Array, _: Any) -> tuple[jax.Array, None]:
        return x + jnp.tanh(nn.Dense(8, name="d")(x)), None


class Stack(nn.Module):
    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        scan = nn.scan(Layer, variable_axes={"params": 0}, split_rngs={"params": True}, length=3)
        return scan(name="layers")(x, None)[0]


def scan_layers() -> Program:
    m = mesh((2, 2, 2), ("a", "b", "c"))
    model = Stack()
    x = jax.ShapeDtypeStruct((8, 8), jnp.float32)
    params = _abstract(jax.eval_shape(lambda: model.init(jax.random.PRNGKey(0), jnp.zeros(x.shape))))

    def rule(path: tuple[Any, ...], leaf: Any) -> NamedSharding:
        if "kernel" in _path(path):
            return NamedSharding(m, P(None, None, "c"))
        return NamedSharding(m, P())

    def fwd(params: Any, x: jax.Array) -> jax.Array:
        return model.apply(params, x)

    return Program("scan_layers", "nn.scan over 3 layers, 2x2x2", fwd, (params, x),
                   (_shard(params, rule), NamedSharding(m, P(("a", "b")))), NamedSharding(m, P(("a", "b"))))


# ---------------------------------------------------------------------------
# 9. Dropout with an rng key argument (typed key), mesh 2x4.

class DropMLP(nn.Module):
    hidden: int = 16

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        h = jax.nn.relu(nn.Dense(self.hidden, name="a")(x))
        h = nn.Dropout(0.5, deterministic=False)(h)
        return nn.Dense(4, name="b")(h)


def dropout(batch: int = 8, hidden: int = 16, name: str = "dropout") -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    model = DropMLP(hidden)
    x = jax.ShapeDtypeStruct((batch, 8), jnp.float32)
    params = _abstract(jax.eval_shape(lambda: model.init({"params": jax.random.PRNGKey(0)}, jnp.zeros(x.shape))))
    key = jax.ShapeDtypeStruct((2,), jnp.uint32)

    def fwd(params: Any, x: jax.Array, key: jax.Array) -> jax.Array:
        return model.apply(params, x, rngs={"dropout": key})

    def rule(path: tuple[Any, ...], leaf: Any) -> NamedSharding:
        p = _path(path)
        if "a/kernel" in p:
            return NamedSharding(m, P(None, "tp"))
        if "b/kernel" in p:
            return NamedSharding(m, P("tp", None))
        return NamedSharding(m, P())

    return Program(name, f"nn.Dropout with a key argument (batch {batch}, hidden {hidden}), 2x4", fwd, (params, x, key),
                   (_shard(params, rule), NamedSharding(m, P("dp")), NamedSharding(m, P())),
                   NamedSharding(m, P("dp")))


# ---------------------------------------------------------------------------
# 10. jax.nn.dot_product_attention, heads sharded; mesh 2x4.

def dpa() -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    q = jax.ShapeDtypeStruct((2, 4, 4, 4), jnp.float32)  # [batch, seq, heads, head_dim]

    def fwd(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
        return jax.nn.dot_product_attention(q, k, v, is_causal=True)

    s = NamedSharding(m, P("dp", None, "tp"))
    return Program("dot_product_attention", "jax.nn.dot_product_attention causal, 2x4", fwd, (q, q, q),
                   (s, s, s), s)


# ---------------------------------------------------------------------------
# 11. int8 weight quantization (round, clip, convert) and a float8 cast; mesh 1x8.

def quant() -> Program:
    m = mesh((1, 8), ("data", "model"))
    w = jax.ShapeDtypeStruct((8, 16), jnp.float32)
    x = jax.ShapeDtypeStruct((4, 8), jnp.float32)

    def fwd(w: jax.Array, x: jax.Array) -> jax.Array:
        scale = jnp.max(jnp.abs(w), axis=0, keepdims=True) / 127.0
        wq = jnp.clip(jnp.round(w / scale), -127, 127).astype(jnp.int8)
        xq = x.astype(jnp.float8_e4m3fn).astype(jnp.float32)
        return xq @ (wq.astype(jnp.float32) * scale)

    return Program("int8_fp8", "int8 weight quantization + float8 cast, 1x8", fwd, (w, x),
                   (NamedSharding(m, P(None, "model")), NamedSharding(m, P())), NamedSharding(m, P(None, "model")))


# ---------------------------------------------------------------------------
# 12. A donated train step (jit object with donate_argnums), adam; mesh 2x4.

def donate() -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    params = {"w": jax.ShapeDtypeStruct((8, 8), jnp.float32)}
    tx = optax.adam(1e-3)
    opt = _abstract(jax.eval_shape(tx.init, params))
    x = jax.ShapeDtypeStruct((8, 8), jnp.float32)

    def step(params: Any, opt: Any, x: jax.Array) -> Any:
        loss, g = jax.value_and_grad(lambda p: jnp.sum(jnp.tanh(x @ p["w"])))(params)
        upd, opt = tx.update(g, opt, params)
        return optax.apply_updates(params, upd), opt, loss

    psh = {"w": NamedSharding(m, P("dp", "tp"))}
    osh = _shard(opt, lambda path, leaf: NamedSharding(m, P("dp", "tp")) if len(leaf.shape) == 2
                 else NamedSharding(m, P()))
    jitted = jax.jit(step, in_shardings=(psh, osh, NamedSharding(m, P("dp"))),
                     out_shardings=(psh, osh, NamedSharding(m, P())), donate_argnums=(0, 1))
    return Program("donated_adam", "jit(donate_argnums=(0,1)) adam step, 2x4", jitted, (params, opt, x),
                   options={"assume": {"*count*": (0, 2**31 - 1), "*nu*": (0, float("inf"))}})


# ---------------------------------------------------------------------------
# 13. flax.nnx: a module split into graph and state, an nnx.Optimizer-free functional step.

def nnx_step() -> Program:
    from flax import nnx

    class Net(nnx.Module):
        def __init__(self, rngs: nnx.Rngs) -> None:
            self.l1 = nnx.Linear(8, 16, rngs=rngs)
            self.norm = nnx.LayerNorm(16, rngs=rngs)
            self.l2 = nnx.Linear(16, 4, rngs=rngs)

        def __call__(self, x: jax.Array) -> jax.Array:
            return self.l2(nnx.gelu(self.norm(self.l1(x))))

    m = mesh((2, 4), ("dp", "tp"))
    graph, state = nnx.split(Net(nnx.Rngs(0)))
    state = _abstract(state)
    x = jax.ShapeDtypeStruct((8, 8), jnp.float32)
    y = jax.ShapeDtypeStruct((8, 4), jnp.float32)

    def step(state: Any, x: jax.Array, y: jax.Array) -> Any:
        def loss(st: Any) -> jax.Array:
            return jnp.mean((nnx.merge(graph, st)(x) - y) ** 2)
        lv, g = jax.value_and_grad(loss)(state)
        return jax.tree.map(lambda p, gi: p - 0.05 * gi, state, g), lv

    def rule(path: tuple[Any, ...], leaf: Any) -> NamedSharding:
        p = _path(path)
        if "l1/kernel" in p:
            return NamedSharding(m, P(None, "tp"))
        if "l2/kernel" in p:
            return NamedSharding(m, P("tp", None))
        return NamedSharding(m, P())

    ssh = _shard(state, rule)
    return Program("nnx_step", "flax.nnx Linear/LayerNorm/gelu SGD step, 2x4", step, (state, x, y),
                   (ssh, NamedSharding(m, P("dp")), NamedSharding(m, P("dp"))), (ssh, NamedSharding(m, P())))


# ---------------------------------------------------------------------------
# 14. A typed key (jax.random.key) as the argument, random noise added to sharded data.

def typed_key() -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    x = jax.ShapeDtypeStruct((8, 16), jnp.float32)
    key = jax.ShapeDtypeStruct((), jax.random.key(0).dtype)

    def fwd(x: jax.Array, key: jax.Array) -> jax.Array:
        k1, k2 = jax.random.split(key)
        keep = jax.random.bernoulli(k1, 0.9, x.shape)
        return jnp.where(keep, x, 0.0) + 0.01 * jax.random.normal(k2, x.shape)

    return Program("typed_key", "jax.random.key argument, bernoulli + normal, 2x4", fwd, (x, key),
                   (NamedSharding(m, P("dp", "tp")), NamedSharding(m, P())), NamedSharding(m, P("dp", "tp")))


# ---------------------------------------------------------------------------
# 15. AQT-style int8 x int8 -> int32 dot and a float8 dot, sharded contraction; mesh 2x4.

def int8_dot() -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    a = jax.ShapeDtypeStruct((8, 16), jnp.int8)
    b = jax.ShapeDtypeStruct((16, 8), jnp.int8)
    x = jax.ShapeDtypeStruct((8, 16), jnp.float8_e4m3fn)

    def fwd(a: jax.Array, b: jax.Array, x: jax.Array) -> Any:
        acc = jax.lax.dot(a, b, preferred_element_type=jnp.int32)
        f = jax.lax.dot(x, b.astype(jnp.float8_e4m3fn), preferred_element_type=jnp.float32)
        return acc, f

    return Program("int8_dot", "int8 x int8 -> int32 dot, fp8 dot, contraction over tp, 2x4", fwd, (a, b, x),
                   (NamedSharding(m, P("dp", "tp")), NamedSharding(m, P("tp", None)), NamedSharding(m, P("dp", "tp"))),
                   (NamedSharding(m, P("dp")), NamedSharding(m, P("dp"))))


# ---------------------------------------------------------------------------
# 16. cumsum along a sharded sequence, argmax (a two-operand reduce), one_hot; mesh 1x8.

def cumsum_argmax() -> Program:
    m = mesh((1, 8), ("data", "seq"))
    x = jax.ShapeDtypeStruct((4, 16), jnp.float32)

    def fwd(x: jax.Array) -> Any:
        c = jnp.cumsum(x, axis=1)
        best = jnp.argmax(c, axis=1)
        return c, jax.nn.one_hot(best, 16) * c

    s = NamedSharding(m, P(None, "seq"))
    return Program("cumsum_argmax", "cumsum over a sharded axis, argmax, one_hot, 1x8", fwd, (x,), (s,), (s, s))


# ---------------------------------------------------------------------------
# 17. jax.lax.scan over stacked layers with jax.checkpoint, gradient; mesh 2x2x2.

def scan_remat_grad() -> Program:
    m = mesh((2, 2, 2), ("data", "fsdp", "tensor"))
    w = jax.ShapeDtypeStruct((3, 8, 8), jnp.float32)
    x = jax.ShapeDtypeStruct((8, 8), jnp.float32)

    def loss(w: jax.Array, x: jax.Array) -> jax.Array:
        @jax.checkpoint
        def layer(h: jax.Array, wi: jax.Array) -> tuple[jax.Array, None]:
            return h + jnp.tanh(h @ wi), None
        h, _ = jax.lax.scan(layer, x, w)
        return jnp.sum(h ** 2)

    def fn(w: jax.Array, x: jax.Array) -> Any:
        return jax.value_and_grad(loss)(w, x)

    ws = NamedSharding(m, P(None, "fsdp", "tensor"))
    return Program("scan_remat_grad", "lax.scan + jax.checkpoint layers, grad, 2x2x2", fn, (w, x),
                   (ws, NamedSharding(m, P("data"))), (NamedSharding(m, P()), ws))


# ---------------------------------------------------------------------------
# 18. Expert parallelism with tokens routed by all-to-all (tokens over "expert" too).

def moe_a2a() -> Program:
    m = mesh((4, 2), ("expert", "tp"))
    x = jax.ShapeDtypeStruct((4, 8, 8), jnp.float32)  # [experts, capacity, hidden], dispatched
    w = jax.ShapeDtypeStruct((4, 8, 16), jnp.float32)

    def fwd(x: jax.Array, w: jax.Array) -> jax.Array:
        # Tokens arrive sharded by capacity (their data shard); experts are sharded: the
        # partitioner moves them with an all-to-all.
        x = jax.lax.with_sharding_constraint(x, NamedSharding(m, P("expert", None, None)))
        return jax.nn.relu(jnp.einsum("ech,ehf->ecf", x, w))

    return Program("moe_a2a", "expert-parallel einsum, tokens resharded (all-to-all), 4x2", fwd, (x, w),
                   (NamedSharding(m, P(None, "expert")), NamedSharding(m, P("expert", None, "tp"))),
                   NamedSharding(m, P(None, "expert", "tp")))


# ---------------------------------------------------------------------------
# 19. A sharding constraint that splits 6 rows over 4 devices (XLA pads the shards).

def uneven() -> Program:
    m = mesh((4, 2), ("a", "b"))
    x = jax.ShapeDtypeStruct((8, 8), jnp.float32)
    w = jax.ShapeDtypeStruct((8, 6), jnp.float32)

    def fwd(x: jax.Array, w: jax.Array) -> jax.Array:
        h = (x @ w).T  # [6, 8]
        h = jax.lax.with_sharding_constraint(jnp.tanh(h), NamedSharding(m, P("a", None)))
        return h.sum(0)

    return Program("uneven_wsc", "6 rows constrained over 4 devices (padded shards), 4x2", fwd, (x, w),
                   (NamedSharding(m, P("a")), NamedSharding(m, P())), NamedSharding(m, P()))


# ---------------------------------------------------------------------------
# 20. argsort-based MoE dispatch: sort tokens by expert, take_along_axis, scatter back.

def argsort_dispatch() -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    logits = jax.ShapeDtypeStruct((4, 8), jnp.float32)  # [groups, tokens]
    x = jax.ShapeDtypeStruct((4, 8, 4), jnp.float32)

    def fwd(logits: jax.Array, x: jax.Array) -> jax.Array:
        order = jnp.argsort(logits, axis=1)
        xs = jnp.take_along_axis(x, order[..., None], axis=1) * 2.0
        inv = jnp.argsort(order, axis=1)
        return jnp.take_along_axis(xs, inv[..., None], axis=1) + jnp.cumsum(xs, axis=1)

    return Program("argsort_dispatch", "argsort + take_along_axis dispatch/combine, 2x4", fwd, (logits, x),
                   (NamedSharding(m, P("dp")), NamedSharding(m, P("dp", None, "tp"))),
                   NamedSharding(m, P("dp", None, "tp")))


# ---------------------------------------------------------------------------
# 21. A reshape that splits an 8-way sharded dim (sub-axes in the Shardy form); mesh 8.

def sub_axes() -> Program:
    m = mesh((8,), ("x",))
    v = jax.ShapeDtypeStruct((16, 4), jnp.float32)

    def fwd(v: jax.Array) -> jax.Array:
        r = v.reshape(2, 8, 4)
        r = jax.lax.with_sharding_constraint(r, NamedSharding(m, P(None, "x")))
        return (r * r[::-1]).sum(0)

    return Program("sub_axes", "reshape of an 8-way dim into 2x8, resharded, mesh 8", fwd, (v,),
                   (NamedSharding(m, P("x")),), NamedSharding(m, P("x")))


# ---------------------------------------------------------------------------
# 22. A KV-cache decode step: the new key written at a position argument
#     (dynamic_update_slice into a head-sharded cache), attention over the cache.

def kv_decode() -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    cache = jax.ShapeDtypeStruct((2, 8, 4, 4), jnp.float32)  # [batch, max_len, heads, head_dim]
    new = jax.ShapeDtypeStruct((2, 1, 4, 4), jnp.float32)
    pos = jax.ShapeDtypeStruct((), jnp.int32)

    def step(cache: jax.Array, new: jax.Array, q: jax.Array, pos: jax.Array) -> Any:
        cache = jax.lax.dynamic_update_slice(cache, new, (0, pos, 0, 0))
        scores = jnp.einsum("bqhd,bkhd->bhqk", q, cache)
        mask = jnp.arange(cache.shape[1])[None, None, None, :] <= pos
        probs = jax.nn.softmax(jnp.where(mask, scores, -1e9), axis=-1)
        return cache, jnp.einsum("bhqk,bkhd->bqhd", probs, cache)

    cs = NamedSharding(m, P("dp", None, "tp"))
    return Program("kv_decode", "KV-cache decode: dynamic_update_slice at pos, heads over tp, 2x4", step,
                   (cache, new, new, pos), (cs, cs, cs, NamedSharding(m, P())), (cs, cs),
                   {"assume": {"pos": (0, 8)}})


# ---------------------------------------------------------------------------
# 23. Sampling: jax.random.categorical (Gumbel argmax) over vocab-sharded logits.

def sample() -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    logits = jax.ShapeDtypeStruct((4, 16), jnp.float32)
    key = jax.ShapeDtypeStruct((2,), jnp.uint32)

    def fwd(logits: jax.Array, key: jax.Array) -> jax.Array:
        return jax.random.categorical(key, logits, axis=-1)

    return Program("categorical", "jax.random.categorical over vocab-sharded logits, 2x4", fwd, (logits, key),
                   (NamedSharding(m, P("dp", "tp")), NamedSharding(m, P())), NamedSharding(m, P("dp")))


# ---------------------------------------------------------------------------
# 24. The part of gpt2_fwd the partitioned check does not close: a vocab-parallel embedding,
#     LayerNorm, the tied head and the integer-label cross-entropy (without the LayerNorm,
#     or without the loss, it is equivalent in seconds).

class LnTied(nn.Module):
    @nn.compact
    def __call__(self, tokens: jax.Array) -> jax.Array:
        embed = nn.Embed(32, 16, name="wte")
        return embed.attend(nn.LayerNorm(name="ln")(embed(tokens)))


def ln_tied_ce() -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    model = LnTied()
    tokens = jax.ShapeDtypeStruct((4, 8), jnp.int32)
    params = _abstract(jax.eval_shape(lambda: model.init(jax.random.PRNGKey(0), jnp.zeros((4, 8), jnp.int32))))

    def loss(params: Any, tokens: jax.Array) -> jax.Array:
        logits = model.apply(params, tokens)
        return optax.softmax_cross_entropy_with_integer_labels(logits[:, :-1], tokens[:, 1:]).mean()

    psh = _shard(params, lambda path, leaf: NamedSharding(m, P("tp", None)) if "wte" in _path(path)
                 else NamedSharding(m, P()))
    return Program("ln_tied_ce", "vocab-parallel embed, LayerNorm, tied head, CE (gpt2_fwd's core), 2x4", loss,
                   (params, tokens), (psh, NamedSharding(m, P("dp", None))), NamedSharding(m, P()),
                   {"assume": {"tokens": (0, 32)}})


# ---------------------------------------------------------------------------
# 25. A CNN in train mode: Conv, BatchNorm (batch statistics as a mutable collection),
#     max_pool, avg_pool, GELU (erf); batch over dp, channels over tp.

class CNN(nn.Module):
    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        x = nn.Conv(8, (3, 3), padding="SAME", name="c1")(x)
        x = nn.BatchNorm(use_running_average=False, name="bn")(x)
        x = nn.gelu(x, approximate=False)
        x = nn.max_pool(x, (2, 2), strides=(2, 2))
        x = nn.avg_pool(x, (2, 2), strides=(2, 2))
        return nn.Dense(4, name="head")(x.reshape(x.shape[0], -1))


def cnn_bn() -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    model = CNN()
    img = jax.ShapeDtypeStruct((4, 8, 8, 3), jnp.float32)
    variables = _abstract(jax.eval_shape(lambda: model.init(jax.random.PRNGKey(0), jnp.zeros(img.shape))))

    def fwd(variables: Any, img: jax.Array) -> Any:
        out, updates = model.apply(variables, img, mutable=["batch_stats"])
        return out, updates

    def rule(path: tuple[Any, ...], leaf: Any) -> NamedSharding:
        if "c1/kernel" in _path(path):
            return NamedSharding(m, P(None, None, None, "tp"))
        return NamedSharding(m, P())

    return Program("cnn_batchnorm", "Conv + BatchNorm(train) + max/avg pool + exact GELU, 2x4", fwd,
                   (variables, img), (_shard(variables, rule), NamedSharding(m, P("dp"))),
                   (NamedSharding(m, P("dp")), NamedSharding(m, P())))


# ---------------------------------------------------------------------------
# 26. A convolution over images sharded along their height (halo exchange); mesh 1x8 as 8.

def spatial_conv() -> Program:
    m = mesh((2, 4), ("dp", "sp"))
    img = jax.ShapeDtypeStruct((2, 16, 8, 2), jnp.float32)
    k = jax.ShapeDtypeStruct((3, 3, 2, 4), jnp.float32)

    def fwd(img: jax.Array, k: jax.Array) -> jax.Array:
        y = jax.lax.conv_general_dilated(img, k, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return jnp.tanh(y)

    s = NamedSharding(m, P("dp", "sp"))
    return Program("spatial_conv", "3x3 conv, height sharded over 4 (halo exchange), 2x4", fwd, (img, k),
                   (s, NamedSharding(m, P())), s)


Programs = dict[str, Callable[[], Program]]
Mutations = dict[str, Callable[[str], str]]

PROGRAMS: Programs = {
    "gpt2_fwd": gpt2, "vit_patch": vit, "moe_top2": moe, "remat_grad": remat, "optax_chain": optax_chain,
    "bf16_master": bf16_master, "multisteps": multisteps, "scan_layers": scan_layers, "dropout": dropout,
    "dropout_small": lambda: dropout(2, 8, "dropout_small"),
    "dot_product_attention": dpa, "int8_fp8": quant, "donated_adam": donate, "nnx_step": nnx_step,
    "typed_key": typed_key, "int8_dot": int8_dot, "cumsum_argmax": cumsum_argmax,
    "scan_remat_grad": scan_remat_grad, "moe_a2a": moe_a2a, "uneven_wsc": uneven,
    "argsort_dispatch": argsort_dispatch, "sub_axes": sub_axes, "kv_decode": kv_decode, "categorical": sample,
    "ln_tied_ce": ln_tied_ce, "cnn_batchnorm": cnn_bn, "spatial_conv": spatial_conv,
}


# ---------------------------------------------------------------------------
# Seeded partitioner bugs in a partitioned module's text

_COLLECTIVE = re.compile(r'^    (%[\w.]+) = "stablehlo\.(\w+)"\((%[\w.#]+)\) <\{([^\n]*)$', re.M)


@dataclass(frozen=True)
class Collective:
    kind: str
    result: str
    operand: str
    start: int  # its first line
    end: int  # past its last line (its region's closing line)
    head: str  # the first line's attributes


def collectives(text: str) -> list[Collective]:
    out = []
    for m in _COLLECTIVE.finditer(text):
        if m.group(2) not in ("all_reduce", "all_gather", "all_to_all", "reduce_scatter", "collective_permute"):
            continue
        end = text.index("\n", m.start())
        if text[m.start():end].rstrip().endswith("({"):
            end = text.index("\n", text.index("\n    })", m.start()) + 1)
        out.append(Collective(m.group(2), m.group(1), m.group(3), m.start(), end + 1, m.group(4)))
    return out


def drop_all_reduce(text: str, k: int = 0) -> str:
    """The k-th all-reduce is still computed, but every later use reads its operand (the
    device's partial sum)."""
    c = [c for c in collectives(text) if c.kind == "all_reduce"][k]
    return text[:c.end] + reuse(text[c.end:], c.result, c.operand)


def reuse(rest: str, old: str, new: str) -> str:
    """Uses of `old` read `new` up to the end of the function (a later function numbers
    its values afresh: renaming there would redefine a name)."""
    end = rest.find("\n  }")
    end = len(rest) if end < 0 else end
    body = re.sub(rf"{re.escape(old)}(?![\w.#])", new, rest[:end])
    assert body != rest[:end], "the collective has no uses"
    return body + rest[end:]


def wrong_axes(text: str, k: int = 0) -> str:
    """The k-th all-reduce over mesh axes reduces over another axis of its mesh (the groups
    of a wrong replica-groups attribute; an all-reduce keeps its shape over any axis)."""
    c = [c for c in collectives(text) if c.kind == "all_reduce" and "replica_group_mesh_axes" in c.head][k]
    mesh_name = re.search(r"replica_group_mesh_axes<mesh = @([\w.$-]+)", c.head).group(1)
    decl = re.search(rf"sdy\.mesh @{re.escape(mesh_name)} = <\[([^\]]*)\]", text).group(1)
    axes = [a for a, n in re.findall(r'"(\w+)"=(\d+)', decl) if int(n) > 1]
    used = re.findall(r'axis_ref<name = "(\w+)"', c.head)
    other = next(a for a in axes if a not in used)
    head = re.sub(r'axis_ref<name = "\w+"', f'axis_ref<name = "{other}"', c.head, count=1)
    return text[:c.start] + text[c.start:c.end].replace(c.head, head, 1) + text[c.end:]


def wrong_groups(text: str, k: int = 0) -> str:
    """The k-th all-reduce with integer groups gets its groups transposed (strided where
    they were contiguous), the same count and size."""
    c = [c for c in collectives(text) if c.kind == "all_reduce" and "replica_groups = dense<" in c.head][k]
    m = re.search(r"replica_groups = dense<(\[\[[\d, \[\]]*\]\])> : tensor<(\d+)x(\d+)xi64>", c.head)
    groups = np.array(json.loads(m.group(1)))
    flipped = groups.reshape(-1).reshape(groups.shape[1], groups.shape[0]).T
    if np.array_equal(np.sort(flipped, 1), np.sort(groups, 1)):
        flipped = groups.T.reshape(groups.shape)
    head = c.head.replace(m.group(1), json.dumps(flipped.tolist()).replace(" ", ""), 1)
    return text[:c.start] + text[c.start:c.end].replace(c.head, head, 1) + text[c.end:]


# ---------------------------------------------------------------------------
# Driver

def _random(spec: Any, rng: np.random.Generator) -> Any:
    def one(path: tuple[Any, ...], s: Any) -> Any:
        if jax.dtypes.issubdtype(s.dtype, jax.dtypes.prng_key):
            return jax.random.key(int(rng.integers(0, 1 << 30)))
        if jnp.issubdtype(s.dtype, jnp.integer):
            return rng.integers(0, 8, size=s.shape).astype(s.dtype)
        x = rng.normal(size=s.shape)
        return (np.abs(x) if "nu" in _path(path) else x).astype(s.dtype)  # a second moment is >= 0
    return jax.tree_util.tree_map_with_path(one, spec)


def sanity(p: Program) -> float:
    """The sharded jit against the unsharded one on random inputs: max abs difference."""
    rng = np.random.default_rng(0)
    args = tuple(_random(a, rng) for a in p.args)
    ref = jax.jit(tj._unjitted(p.reference or p.fn))(*args)
    sharded = tj._jitted(p.fn, p.in_shardings, p.out_shardings)
    if tj._is_jit(p.fn):  # a donating jit: give it copies
        sharded = jax.jit(tj._unjitted(p.fn))
    got = sharded(*args)
    diffs = jax.tree.map(lambda a, b: float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))
                         if np.size(a) else 0.0, ref, got)
    return max(jax.tree.leaves(diffs) or [0.0])


def check_one(name: str, form: str, timeout_s: float, programs: Programs | None = None) -> dict[str, Any]:
    from tv_mlir.errors import TvError, Unsupported

    p = (programs or PROGRAMS)[name]()
    t = time.perf_counter()
    try:
        v = tj.check(p.fn, *p.args, in_shardings=p.in_shardings, out_shardings=p.out_shardings,
                     reference=p.reference, form=form, timeout_s=timeout_s, cache=False, **p.options)
    except Unsupported as e:
        return {"verdict": "unsupported", "exit": 2, "time": time.perf_counter() - t, "reason": str(e)[:300]}
    except TvError as e:
        return {"verdict": "error", "exit": 3, "time": time.perf_counter() - t, "reason": str(e)[:300]}
    except Exception as e:  # noqa: BLE001 - a traceback is what we measure here
        import traceback
        return {"verdict": "crash", "exit": 2, "time": time.perf_counter() - t,
                "reason": f"{type(e).__name__}: {e}"[:300], "tb": traceback.format_exc()[-2000:]}
    return {"verdict": v.verdict, "exit": v.exit_code, "time": time.perf_counter() - t,
            "reason": (v.reason or "")[:300]}


def measure(names: list[str], forms: list[str], timeout_s: float, script: str = __file__) -> None:
    print(f"{'program':<22} {'form':<12} {'verdict':<15} {'time s':>7} {'exit':>4}  reason")
    for name in names:
        for form in forms:
            t = time.perf_counter()
            try:
                r = subprocess.run([sys.executable, script, "--one", name, form, str(timeout_s)],
                                   capture_output=True, text=True, timeout=timeout_s * 2 + 120)
                lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
                res = json.loads(lines[-1]) if lines else {"verdict": "died", "exit": r.returncode,
                                                          "time": time.perf_counter() - t,
                                                          "reason": r.stderr.strip().splitlines()[-1:]}
            except subprocess.TimeoutExpired:
                res = {"verdict": "no verdict", "exit": "-", "time": time.perf_counter() - t, "reason": "killed"}
            print(f"{name:<22} {form:<12} {res['verdict']:<15} {res['time']:7.1f} {res['exit']!s:>4}  "
                  f"{str(res.get('reason', ''))[:160]}", flush=True)
            if res.get("tb"):
                print("    " + res["tb"].strip().splitlines()[-3].strip() + " | " + res["tb"].strip().splitlines()[-1])


def export(names: list[str], forms: list[str], programs: Programs | None = None) -> None:
    # loc(...) file names independent of the checkout and the virtualenv's location.
    jax.config.update("jax_hlo_source_file_canonicalization_regex", r"^.*/(?=testdata/)|^.*/site-packages/")
    for name in names:
        p = (programs or PROGRAMS)[name]()
        for form in forms:
            tj.export_pair(p.fn, *p.args, in_shardings=p.in_shardings, out_shardings=p.out_shardings,
                           reference=p.reference, form=form, directory=OUT, name=name)
        print(name, "sanity max |sharded - ref| =", sanity(p))


MUTATIONS: Mutations = {
    "dropped_all_reduce": drop_all_reduce, "wrong_axes": wrong_axes, "wrong_groups": wrong_groups,
}


def xla_outputs(ref_text: str, other_text: str, seed: int = 0) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Both modules run by XLA (the partitioned one on 8 host devices, assembled by its
    out-shardings) on one random input set: ground truth that does not need the verifier."""
    from tv_mlir.api import prepare
    from tv_mlir.execute.xla import XlaRunner
    from tv_mlir.frontend.classify import check_signatures
    from tv_mlir.options import Options
    from tv_mlir.witness.replay import run_on_xla

    options, runner = Options(), XlaRunner()
    ref, other = prepare(ref_text, options), prepare(other_text, options)
    check_signatures(ref, other)
    rng = np.random.default_rng(seed)
    inputs = [rng.integers(0, 4, size=t.shape).astype(np.int64) if t.is_int else
              np.abs(rng.normal(size=t.shape)) for t in ref.global_arg_types()]
    return run_on_xla(runner, ref, inputs)[0], run_on_xla(runner, other, inputs)[0]


def changes_outputs(ref_text: str, other_text: str) -> float:
    """The largest difference between the two modules' outputs on XLA."""
    a, b = xla_outputs(ref_text, other_text)
    return max(float(np.max(np.abs(np.asarray(x, np.float64) - np.asarray(y, np.float64)))) if np.size(x) else 0.0
               for x, y in zip(a, b))


def mutants(name: str, programs: Programs | None = None, mutations: Mutations | None = None) -> None:
    """Each seeded bug that applies to the program's partitioned module: does it change
    the outputs on XLA, and what does the verifier say."""
    from tv_mlir.api import verify
    from tv_mlir.errors import TvError

    p = (programs or PROGRAMS)[name]()
    ref_text, text = tj._pair(p.fn, p.args, p.in_shardings, p.out_shardings, p.reference, "partitioned")
    print(f"{name}: unmutated max |ref - partitioned| on XLA = {changes_outputs(ref_text, text):.2e}")
    for mname, mutate in (mutations or MUTATIONS).items():
        try:
            bad = mutate(text)
        except (IndexError, StopIteration, AssertionError, AttributeError):
            continue
        t = time.perf_counter()
        try:
            v = verify(ref_text, bad, timeout_s=120, **p.options)
        except TvError as e:  # a mutant the module's own types refuse: not a partitioner bug we model
            print(f"  {mname:<20} refused: {str(e)[:150]}")
            continue
        confirmed = v.counterexample is not None and any(
            r.confirmed for r in v.counterexample.replay if "xla" in r.backend)
        print(f"  {mname:<20} XLA change {changes_outputs(ref_text, bad):.2e}  verdict {v.verdict} "
              f"(exit {v.exit_code}, {time.perf_counter() - t:.1f} s, XLA-confirmed {confirmed})", flush=True)


def main(argv: list[str], programs: Programs | None = None, mutations: Mutations | None = None,
         script: str = __file__, doc: str | None = __doc__) -> int:
    """The command line of this script, and of gen_clients2.py over its own programs."""
    programs = programs or PROGRAMS
    forms = ["partitioned", "shardy"]
    if "--forms" in argv:
        i = argv.index("--forms")
        forms = argv[i + 1].split(",")
        argv = argv[:i] + argv[i + 2:]
    if argv[:1] == ["--one"]:
        print(json.dumps(check_one(argv[1], argv[2], float(argv[3]), programs)))
        return 0
    if argv[:1] == ["--list"]:
        for name, build in programs.items():
            p = build()
            print(f"{name:<22} {p.what:<55} sanity {sanity(p):.2e}")
        return 0
    if argv[:1] == ["--measure"]:
        names = argv[1:] or list(programs)
        measure(names, forms, float(os.environ.get("CLIENT_TIMEOUT", "120")), script)
        return 0
    if argv[:1] == ["--mutants"]:
        for name in argv[1:]:
            mutants(name, programs, mutations)
        return 0
    if argv[:1] == ["--export"]:
        export(argv[1:] or list(programs), forms, programs)
        return 0
    print(doc)
    return 3


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
