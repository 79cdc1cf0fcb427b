"""Generate testdata/flax/: a Llama-style model written with flax layers, trained with
optax.adamw, sharded with `jax.jit` + NamedSharding on a 2x4 ("dp", "tp") mesh (FSDP over
dp on the parameters, tensor parallelism over tp on attention and MLP, data-parallel
batch), exported through `tv_mlir.jax.export_pair` as a real client would.

Run from the repository root:

    .venv/bin/python testdata/gen_flax.py                 # export (about 3 minutes)
    .venv/bin/python testdata/gen_flax.py --mutations-only  # or --block-only: the MLP block's files
    FLAX_TIMEOUT=600 .venv/bin/python testdata/gen_flax.py --measure [LABEL-PREFIX]
    .venv/bin/python testdata/gen_flax.py --measure-step [LAYERS] [--no-nu]  # the step through check, timed

Writes, for each variant (fwd: the loss; fwdbwd: the loss and its gradients; step: one
adamw step, new parameters, new optimizer state and the loss):

- ``<variant>.ref.mlir``: the function jitted for one device (no shardings);
- ``<variant>.partitioned.mlir``: XLA's per-device module after SPMD partitioning;
- ``<variant>.shardy.mlir``: jax's Shardy lowering (the global program, annotated);

and ``mut_<name>.partitioned.mlir``: the partitioned forward module with one bug a buggy
partitioner could produce (MUTATIONS below; each is checked to change the module's text
and to still parse). Before writing, it checks numerically that the sharded jit equals the
reference on random inputs. Model code: `model.py` style, here in one file; dims tiny
(vocab 64, hidden 16, 4 heads of 4, 2 kv heads, ffn 32, seq 8, batch 4, 1 layer).
"""
from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
os.environ["JAX_PLATFORMS"] = "cpu"

import flax.linen as nn  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tv_mlir, run from anywhere
from tv_mlir import jax as tj  # noqa: E402

# Make loc(...) file names independent of the checkout and the virtualenv's location.
jax.config.update("jax_hlo_source_file_canonicalization_regex", r"^.*/(?=testdata/)|^.*/site-packages/")

OUT = ROOT / "testdata" / "flax"


@dataclass(frozen=True)
class Config:
    vocab: int = 64
    hidden: int = 16
    heads: int = 4
    kv_heads: int = 2
    ffn: int = 32
    seq: int = 8
    batch: int = 4
    layers: int = 1

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


CFG = Config()
MESH = jax.make_mesh((2, 4), ("dp", "tp"), axis_types=(jax.sharding.AxisType.Auto,) * 2)


# ---------------------------------------------------------------------------
# The model


def rope(x: jax.Array, positions: jax.Array) -> jax.Array:
    """Rotary position embedding over the last axis (pairs of halves), x: [b, s, h, d]."""
    d = x.shape[-1]
    freqs = 1.0 / (10000.0 ** (jnp.arange(0, d, 2, dtype=jnp.float32) / d))
    angles = positions[:, None].astype(jnp.float32) * freqs[None, :]  # [s, d/2]
    cos, sin = jnp.cos(angles)[None, :, None, :], jnp.sin(angles)[None, :, None, :]
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return jnp.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)


class Attention(nn.Module):
    cfg: Config

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        c = self.cfg
        q = nn.DenseGeneral((c.heads, c.head_dim), use_bias=False, name="q")(x)
        k = nn.DenseGeneral((c.kv_heads, c.head_dim), use_bias=False, name="k")(x)
        v = nn.DenseGeneral((c.kv_heads, c.head_dim), use_bias=False, name="v")(x)
        positions = jnp.arange(x.shape[1])
        q, k = rope(q, positions), rope(k, positions)
        group = c.heads // c.kv_heads  # grouped-query attention: each kv head serves `group` q heads
        k, v = jnp.repeat(k, group, axis=2), jnp.repeat(v, group, axis=2)
        scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(c.head_dim).astype(np.float32)
        causal = jnp.tril(jnp.ones((x.shape[1], x.shape[1]), dtype=bool))
        scores = jnp.where(causal[None, None], scores, jnp.finfo(jnp.float32).min)
        probs = jax.nn.softmax(scores, axis=-1)
        out = jnp.einsum("bhqk,bkhd->bqhd", probs, v)
        return nn.DenseGeneral(c.hidden, axis=(-2, -1), use_bias=False, name="o")(out)


class SwiGLU(nn.Module):
    cfg: Config

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        gate = nn.Dense(self.cfg.ffn, use_bias=False, name="gate")(x)
        up = nn.Dense(self.cfg.ffn, use_bias=False, name="up")(x)
        return nn.Dense(self.cfg.hidden, use_bias=False, name="down")(nn.silu(gate) * up)


class Block(nn.Module):
    cfg: Config

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        x = x + Attention(self.cfg, name="attn")(nn.RMSNorm(name="attn_norm")(x))
        return x + SwiGLU(self.cfg, name="mlp")(nn.RMSNorm(name="mlp_norm")(x))


class MLPBlock(nn.Module):
    """The model's MLP half-block alone (RMSNorm, SwiGLU, residual): the part of the model
    the symbolic core verifies in seconds today, so the test suite runs it."""

    cfg: Config

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        return x + SwiGLU(self.cfg, name="mlp")(nn.RMSNorm(name="mlp_norm")(x))


class Llama(nn.Module):
    cfg: Config

    @nn.compact
    def __call__(self, tokens: jax.Array) -> jax.Array:
        x = nn.Embed(self.cfg.vocab, self.cfg.hidden, name="embed")(tokens)
        for i in range(self.cfg.layers):
            x = Block(self.cfg, name=f"layer_{i}")(x)
        x = nn.RMSNorm(name="final_norm")(x)
        return nn.Dense(self.cfg.vocab, use_bias=False, name="lm_head")(x)


OPT = optax.adamw(1e-3, weight_decay=0.1)


def functions(cfg: Config) -> dict[str, Callable[..., Any]]:
    """The three programs a user would check, for a model of these dims."""
    model = Llama(cfg)

    def loss_fn(params: Any, batch: dict[str, jax.Array]) -> jax.Array:
        logits = model.apply({"params": params}, batch["tokens"])
        return optax.softmax_cross_entropy_with_integer_labels(logits, batch["targets"]).mean()

    def fwd(params: Any, batch: dict[str, jax.Array]) -> jax.Array:
        return loss_fn(params, batch)

    def fwdbwd(params: Any, batch: dict[str, jax.Array]) -> tuple[jax.Array, Any]:
        return jax.value_and_grad(loss_fn)(params, batch)

    def step(params: Any, opt_state: Any, batch: dict[str, jax.Array]) -> tuple[Any, Any, jax.Array]:
        loss, grads = jax.value_and_grad(loss_fn)(params, batch)
        updates, opt_state = OPT.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss
    return {"fwd": fwd, "fwdbwd": fwdbwd, "step": step}


# ---------------------------------------------------------------------------
# Shardings: FSDP over dp on every matrix's non-TP dimension, TP over tp on heads and ffn,
# the batch over dp.

def param_spec(path: tuple[Any, ...], leaf: Any) -> P:
    names = [getattr(k, "key", getattr(k, "name", str(k))) for k in path]
    name = "/".join(str(n) for n in names)
    if leaf.ndim == 1:  # RMSNorm scales; adamw's count is a scalar
        return P()
    if name.endswith("embed/embedding"):  # [vocab, hidden]
        return P("tp", "dp")
    if name.endswith("attn/q/kernel"):  # [hidden, heads, head_dim]
        return P("dp", "tp", None)
    if name.endswith(("attn/k/kernel", "attn/v/kernel")):  # [hidden, kv_heads, head_dim]: 2 kv heads, not split 4 ways
        return P("dp", None, None)
    if name.endswith("attn/o/kernel"):  # [heads, head_dim, hidden]
        return P("tp", None, "dp")
    if name.endswith(("mlp/gate/kernel", "mlp/up/kernel")):  # [hidden, ffn]
        return P("dp", "tp")
    if name.endswith("mlp/down/kernel"):  # [ffn, hidden]
        return P("tp", "dp")
    if name.endswith("lm_head/kernel"):  # [hidden, vocab]
        return P("dp", "tp")
    raise ValueError(f"no sharding rule for {name}")


def shardings_of(tree: Any) -> Any:
    def spec(path: tuple[Any, ...], leaf: Any) -> NamedSharding:
        return NamedSharding(MESH, param_spec(path, leaf) if leaf.ndim else P())
    return jax.tree_util.tree_map_with_path(spec, tree)


BATCH_SHARDING = {"tokens": NamedSharding(MESH, P("dp", None)), "targets": NamedSharding(MESH, P("dp", None))}
REPLICATED = NamedSharding(MESH, P())


def specs(cfg: Config) -> tuple[Any, Any, dict[str, jax.ShapeDtypeStruct]]:
    """Parameters, optimizer state and batch as ShapeDtypeStructs."""
    tokens = jax.ShapeDtypeStruct((cfg.batch, cfg.seq), jnp.int32)
    model = Llama(cfg)
    params = jax.eval_shape(lambda: model.init(jax.random.key(0), jnp.zeros(tokens.shape, jnp.int32))["params"])
    opt_state = jax.eval_shape(OPT.init, params)
    return params, opt_state, {"tokens": tokens, "targets": tokens}


@dataclass(frozen=True)
class Variant:
    name: str
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    in_shardings: Any
    out_shardings: Any


def variants(cfg: Config) -> list[Variant]:
    params, opt_state, batch = specs(cfg)
    ps, os_ = shardings_of(params), shardings_of(opt_state)
    fns = functions(cfg)
    return [
        Variant("fwd", fns["fwd"], (params, batch), (ps, BATCH_SHARDING), REPLICATED),
        Variant("fwdbwd", fns["fwdbwd"], (params, batch), (ps, BATCH_SHARDING), (REPLICATED, ps)),
        Variant("step", fns["step"], (params, opt_state, batch), (ps, os_, BATCH_SHARDING), (ps, os_, REPLICATED)),
    ]


def block_variants(cfg: Config) -> list[Variant]:
    """The MLP block, forward and forward+backward (of the sum of squares of its output),
    with the model's shardings: FSDP over dp, TP over tp, the batch over dp."""
    block = MLPBlock(cfg)
    x = jax.ShapeDtypeStruct((cfg.batch, cfg.seq, cfg.hidden), jnp.float32)
    params = jax.eval_shape(lambda: block.init(jax.random.key(0), jnp.zeros(x.shape))["params"])
    ps, xs = shardings_of(params), NamedSharding(MESH, P("dp", None, None))

    def mlp_fwd(params: Any, x: jax.Array) -> jax.Array:
        return block.apply({"params": params}, x)

    def mlp_fwdbwd(params: Any, x: jax.Array) -> tuple[jax.Array, Any]:
        return jax.value_and_grad(lambda p, x: jnp.sum(mlp_fwd(p, x) ** 2))(params, x)
    return [Variant("mlp_fwd", mlp_fwd, (params, x), (ps, xs), xs),
            Variant("mlp_fwdbwd", mlp_fwdbwd, (params, x), (ps, xs), (REPLICATED, ps))]


# The model sizes exported: the tiny Llama (files without prefix) and a smaller one
# with the same structure (`mini_`: vocab 16, hidden 8, 4 heads of 2, ffn 16, seq 2, batch 4:
# two sequences per dp shard, or the all-gather mutation along the sequence is no bug there)
# whose forward the symbolic core can finish today (the forward passes its term budget).
SIZES = {"": CFG, "mini_": Config(vocab=16, hidden=8, heads=4, kv_heads=2, ffn=16, seq=2, batch=4)}


def assume(cfg: Config) -> dict[str, tuple[int, int]]:
    """Token ids outside the vocabulary: flax's Embed looks them up with jnp.take (NaN fill)
    while the partitioned lookup masks them per shard; the check assumes real token ids."""
    return {"tokens": (0, cfg.vocab), "targets": (0, cfg.vocab)}


FORMS = ("partitioned", "shardy")


def concrete(cfg: Config, args: tuple[Any, ...], seed: int = 0) -> tuple[Any, ...]:
    """Random arrays for ShapeDtypeStructs: integers are token ids, floats small normals."""
    rng = np.random.default_rng(seed)

    def make(s: Any) -> Any:
        if jnp.issubdtype(s.dtype, jnp.integer):
            return jnp.asarray(rng.integers(0, cfg.vocab, size=s.shape), s.dtype)
        return jnp.asarray(rng.normal(size=s.shape) * 0.5, s.dtype)
    return jax.tree.map(make, args)


def check_numerics(cfg: Config, v: Variant) -> None:
    """The sharded jit equals the unsharded one on random inputs (the generator's own
    ground truth, independent of the verifier)."""
    args = concrete(cfg, v.args)
    want = jax.jit(v.fn)(*args)
    got = jax.jit(v.fn, in_shardings=v.in_shardings, out_shardings=v.out_shardings)(*args)
    for a, b in zip(jax.tree.leaves(want), jax.tree.leaves(got)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------------
# Mutations of the partitioned forward module: what a buggy partitioner could emit.


@dataclass(frozen=True)
class Mutation:
    name: str
    what: str
    apply: Callable[[str], str]


def _op_span(text: str, handle: int) -> tuple[int, int, str, str]:
    """The collective with channel handle `handle`: its text span (one line, or up to the
    end of its region), result name and operand name."""
    m = re.search(r"^    (%[\w.]+) = \"stablehlo\.\w+\"\((%[\w.#]+)\) <\{[^\n]*channel_handle<handle = "
                      rf"{handle}, ", text, flags=re.M)
    if m is None:
        raise RuntimeError(f"no collective with channel handle {handle}")
    end = text.index("\n", m.start())
    if text[m.start():end].rstrip().endswith("({"):  # a region: up to its closing line
        end = text.index("\n", text.index("\n    })", m.start()) + 1)
    return m.start(), end + 1, m.group(1), m.group(2)


def _uses_after(text: str, at: int, old: str, new: str) -> str:
    """Every use of the SSA value `old` after position `at` renamed to `new`."""
    rest = re.sub(rf"{re.escape(old)}(?![\w.#])", new, text[at:])
    if rest == text[at:]:
        raise RuntimeError(f"{old} has no uses")
    return text[:at] + rest


def drop_all_reduce(handle: int) -> Callable[[str], str]:
    """The all-reduce is still computed, but its users read the partial sums."""
    def apply(text: str) -> str:
        _, end, result, operand = _op_span(text, handle)
        return _uses_after(text, end, result, operand)
    return apply


def replace_in_op(handle: int, old: str, new: str) -> Callable[[str], str]:
    """One substring of the collective's own text replaced (groups, pairs, its reduction)."""
    def apply(text: str) -> str:
        start, end, _, _ = _op_span(text, handle)
        op = text[start:end]
        if old not in op:
            raise RuntimeError(f"{old!r} not in the collective with handle {handle}")
        return text[:start] + op.replace(old, new, 1) + text[end:]
    return apply


def replace_line(pattern: str, new: str) -> Callable[[str], str]:
    """The one line matching `pattern` (a regex) with its match replaced by `new`."""
    def apply(text: str) -> str:
        found = list(re.finditer(pattern, text, flags=re.M))
        if len(found) != 1:
            raise RuntimeError(f"{len(found)} matches of {pattern}")
        m = found[0]
        return text[:m.start()] + m.expand(new) + text[m.end():]
    return apply


def _dims(t: str) -> list[int]:
    return [int(d) for d in t.split("x")[:-1]]


def _tensor(dims: list[int], elem: str) -> str:
    return f"tensor<{'x'.join(map(str, dims))}x{elem}>"


def all_gather_wrong_dim(handle: int, dim: int) -> Callable[[str], str]:
    """The shards concatenated along `dim` instead, then reshaped to the expected type
    (what a partitioner that confuses two dimensions of equal role emits)."""
    def apply(text: str) -> str:
        start, end, result, _ = _op_span(text, handle)
        op = text[start:end]
        m = re.search(r"all_gather_dim = (\d+) : i64.*: \(tensor<([\dx]+)x(\w+)>\) -> tensor<([\dx]+x\w+)>", op)
        assert m is not None
        old_dim, local, elem = int(m.group(1)), _dims(m.group(2) + "x"), m.group(3)
        out = _dims(m.group(4))
        wrong = list(local)
        wrong[dim] *= out[old_dim] // local[old_dim]
        op2 = op.replace(f"all_gather_dim = {old_dim} : i64", f"all_gather_dim = {dim} : i64", 1)
        op2 = op2.replace(f"-> {_tensor(out, elem)}", f"-> {_tensor(wrong, elem)}", 1)
        op2 = op2.replace(f"{result} = ", f"%wrong_dim_{result[1:]} = ", 1)
        reshape = (f"    {result} = stablehlo.reshape %wrong_dim_{result[1:]} : "
                       f"({_tensor(wrong, elem)}) -> {_tensor(out, elem)}\n")
        return text[:start] + op2 + reshape + text[end:]
    return apply


def reduce_scatter_for_all_reduce(handle: int, dim: int, shards: int) -> Callable[[str], str]:
    """A reduce-scatter where the all-reduce belongs: each device gets only its slice of the
    sum, and its copies are concatenated to fill the expected type."""
    def apply(text: str) -> str:
        start, end, result, _ = _op_span(text, handle)
        op = text[start:end]
        m = re.search(r"\}\) : \(tensor<([\dx]+x\w+)>\) -> tensor<([\dx]+x\w+)>", op)
        assert m is not None
        full = _dims(m.group(1))
        elem = m.group(1).split("x")[-1]
        d = next(k for k in [dim, *range(len(full))] if full[k] % shards == 0)  # the first dim that splits
        part = list(full)
        part[d] //= shards
        op2 = op.replace('"stablehlo.all_reduce"', '"stablehlo.reduce_scatter"', 1)
        op2 = op2.replace("<{channel_handle", f"<{{scatter_dimension = {d} : i64, channel_handle", 1)
        op2 = op2.replace(f"-> {_tensor(full, elem)}", f"-> {_tensor(part, elem)}", 1)
        op2 = op2.replace(f"{result} = ", f"%scattered_{result[1:]} = ", 1)
        copies = ", ".join([f"%scattered_{result[1:]}"] * shards)
        concat = (f"    {result} = stablehlo.concatenate {copies}, dim = {d} : "
                      f"({', '.join([_tensor(part, elem)] * shards)}) -> {_tensor(full, elem)}\n")
        return text[:start] + op2 + concat + text[end:]
    return apply


TP_GROUPS = "dense<[[0, 1, 2, 3], [4, 5, 6, 7]]> : tensor<2x4xi64>"


def mutations(cfg: Config) -> list[Mutation]:
    """The channel handles name collectives of the partitioned forward (the same in both
    sizes: one program structure); the divisor is the global token count."""
    tokens = cfg.batch * cfg.seq
    return [
        Mutation("dropped_all_reduce", "the vocab-parallel embedding lookup's all-reduce over tp dropped: each device "
                 "keeps its shard's partial rows", drop_all_reduce(22)),
        Mutation("wrong_replica_groups", "an all-reduce over tp given groups that mix dp and tp "
                 "({0,2,4,6},{1,3,5,7})",
                 replace_in_op(27, TP_GROUPS, "dense<[[0, 2, 4, 6], [1, 3, 5, 7]]> : tensor<2x4xi64>")),
        Mutation("all_gather_wrong_dim", "the token ids all-gathered over dp along the sequence instead of the batch "
                 "dimension (then reshaped)", all_gather_wrong_dim(21, 1)),
        Mutation("wrong_divisor", f"the loss mean divided by the local token count ({tokens // 2}) instead of the "
                 f"global one ({tokens})",
                 replace_line(rf"(%cst_\d+ = stablehlo\.constant dense<){re.escape(f'{tokens:.6e}')}(> : tensor<f32>)",
                              rf"\g<1>{tokens // 2:.6e}\g<2>")),
        # The forward's only collective-permute swaps token ids between the dp halves (2<->4,
        # 3<->5): it is its own inverse, so reversing its pairs changes nothing, and so does
        # sending 2->5, 3->4 (devices 4 and 5 hold the same tokens). A permute that leaves
        # the ids in place is the bug: every device then all-gathers its own half twice.
        Mutation("permute_in_place", "the collective-permute that exchanges token ids between the dp halves "
                 "(2<->4, 3<->5) leaves them in place",
                 replace_in_op(14, "[2, 4], [3, 5], [4, 2], [5, 3]", "[2, 2], [3, 3], [4, 4], [5, 5]")),
        Mutation("offset_wrong_axis", "the embedding shard's vocabulary offset taken from the dp index of the "
                 "partition instead of the tp index",
                 replace_line(r"(dense<)\[0, 1, 2, 3, 0, 1, 2, 3\](> : tensor<8xui32>)",
                              r"\g<1>[0, 0, 0, 0, 1, 1, 1, 1]\g<2>")),
        Mutation("reduce_scatter_for_all_reduce", "a reduce-scatter over tp where the all-reduce belongs (its slice "
                 "repeated to fill the shape)", reduce_scatter_for_all_reduce(31, 0, 4)),
        Mutation("all_reduce_max", "an all-reduce over dp that takes the maximum instead of the sum",
                 replace_in_op(25, "stablehlo.add", "stablehlo.maximum")),
    ]


def write(name: str, text: str) -> None:
    (OUT / name).write_text(text)
    print(f"wrote testdata/flax/{name}")


def block_mutations() -> list[Mutation]:
    """Bugs in the MLP block's partitioned module (three FSDP all-gathers over dp, one TP
    all-reduce over tp), verified by the test suite."""
    return [
        Mutation("dropped_all_reduce", "the row-parallel down projection's all-reduce over tp dropped",
                 drop_all_reduce(4)),
        Mutation("wrong_replica_groups", "the all-reduce over tp given groups that mix dp and tp",
                 replace_in_op(4, TP_GROUPS, "dense<[[0, 2, 4, 6], [1, 3, 5, 7]]> : tensor<2x4xi64>")),
        Mutation("all_gather_wrong_dim", "the FSDP all-gather of the gate kernel along its ffn dimension instead of "
                 "its hidden dimension (then reshaped)", all_gather_wrong_dim(1, 1)),
        Mutation("reduce_scatter_for_all_reduce", "a reduce-scatter over tp where the all-reduce belongs",
                 reduce_scatter_for_all_reduce(4, 0, 4)),
    ]


def mutants(prefix: str) -> dict[str, str]:
    """Mutation name -> the mutated text of `<prefix>fwd.partitioned.mlir` (each checked to
    change the text and to parse and verify as MLIR); prefix "mlp_": the MLP block's."""
    from jax._src.interpreters import mlir

    base = (OUT / f"{prefix}fwd.partitioned.mlir").read_text()
    out = {}
    for m in (block_mutations() if prefix == "mlp_" else mutations(SIZES[prefix])):
        text = m.apply(base)
        assert text != base, m.name
        with mlir.make_ir_context():
            assert mlir.ir.Module.parse(text).operation.verify(), m.name
        out[m.name] = text
    return out


# ---------------------------------------------------------------------------
# --measure: the verifier on every exported pair, as a benchmark (not a test: the symbolic
# core needs minutes for these today; tests/test_flax_client.py runs what is affordable).


def pairs(prefix: str) -> list[tuple[str, Path, Path, str]]:
    """(label, ref, other, expected verdict) for one model size."""
    out = [(f"{prefix}{v} {form}", OUT / f"{prefix}{v}.ref.mlir", OUT / f"{prefix}{v}.{form}.mlir", "equivalent")
           for v in ("fwd", "fwdbwd", "step") for form in FORMS]
    out += [(f"{prefix}mut {m.name}", OUT / f"{prefix}fwd.ref.mlir", OUT / f"{prefix}mut_{m.name}.partitioned.mlir",
             "not-equivalent") for m in mutations(SIZES[prefix])]
    if prefix == "":
        out += [(f"{v} {form}", OUT / f"{v}.ref.mlir", OUT / f"{v}.{form}.mlir", "equivalent")
                for v in ("mlp_fwd", "mlp_fwdbwd") for form in FORMS]
        out += [(f"mlp_mut {m.name}", OUT / "mlp_fwd.ref.mlir", OUT / f"mlp_mut_{m.name}.partitioned.mlir",
                 "not-equivalent") for m in block_mutations()]
    return out


def measure(only: str, timeout_s: float) -> None:
    """`tv-mlir verify --json` on each pair whose label starts with `only`, in a subprocess
    stopped after `timeout_s` (wall clock); one table row per pair as it finishes."""
    import json
    import subprocess
    import time

    cli = [sys.executable, "-m", "tv_mlir"]
    print(f"{'pair':<42} {'expect':<15} {'verdict':<15} {'time s':>8}  confirmed  note", flush=True)
    for prefix, cfg in SIZES.items():
        for label, ref, other, expect in pairs(prefix):
            if not label.startswith(only):
                continue
            # The MLP block has no token inputs to bound.
            bounds = {} if label.startswith("mlp") else assume(cfg)
            flags = [f"--assume={n}={lo}:{hi}" for n, (lo, hi) in bounds.items()]
            t0 = time.perf_counter()
            try:
                p = subprocess.run([*cli, "verify", str(ref), str(other), "--json", *flags], capture_output=True,
                                   text=True, timeout=timeout_s, cwd=ROOT)
                v = json.loads(p.stdout) if p.stdout.strip() else {"verdict": "error", "reason": p.stderr[-200:]}
            except subprocess.TimeoutExpired:
                v = {"verdict": "timeout", "reason": f"stopped after {timeout_s:.0f} s"}
            dt = time.perf_counter() - t0
            c = v.get("counterexample") or {}
            confirmed = c.get("confirmed_at") or ("-" if not c else "no")
            note = (v.get("reason") or v.get("error") or "")[:110]
            print(f"{label:<42} {expect:<15} {v['verdict']:<15} {dt:8.1f}  {confirmed:<9}  {note}", flush=True)


def xla_losses(prefix: str, seeds: int = 1) -> dict[str, list[float]]:
    """The loss of the reference, the partitioned forward and each mutant, run by XLA (the
    verifier's XLA runner; partitioned modules on 8 host devices) on random inputs with
    token ids inside the vocabulary: ground truth that does not depend on the verifier."""
    from tv_mlir.api import prepare
    from tv_mlir.execute.xla import XlaRunner
    from tv_mlir.frontend.classify import check_signatures
    from tv_mlir.options import Options
    from tv_mlir.witness.replay import run_on_xla

    options, runner, cfg = Options(), XlaRunner(), SIZES[prefix]
    ref = prepare(OUT / f"{prefix}fwd.ref.mlir", options)
    rng = np.random.default_rng(0)
    inputs = [[rng.integers(0, cfg.vocab, size=t.shape).astype(np.int64) if t.is_int else
               np.round(rng.normal(size=t.shape) * 0.5, 3) for t in ref.global_arg_types()] for _ in range(seeds)]

    def losses(name: str) -> list[float]:
        m = prepare(OUT / f"{prefix}{name}.mlir", options)
        check_signatures(ref, m)  # classifies a partitioned module as one device's program
        return [float(run_on_xla(runner, m, x)[0][0]) for x in inputs]
    out = {"ref": losses("fwd.ref"), "partitioned": losses("fwd.partitioned")}
    for m in mutations(cfg):
        out[m.name] = losses(f"mut_{m.name}.partitioned")
    return out


def check_mutants_on_xla(prefix: str) -> None:
    """The partitioned forward gives the reference's loss on XLA; every mutant another."""
    got = xla_losses(prefix, seeds=2)
    want = got.pop("ref")

    def rel(loss: list[float]) -> float:
        return max(abs(g - w) / abs(w) for g, w in zip(loss, want))
    noise = rel(got.pop("partitioned"))  # f32 reordering: ~1e-7
    assert noise < 1e-6, f"{prefix}fwd.partitioned differs from the reference on XLA by {noise}"
    for name, loss in got.items():
        # 100x the partitioned module's own deviation at least (measured: 1.7e-3 to 1.0;
        # an all-reduce taking the max of the q projection's dp halves moves the loss least)
        assert rel(loss) > 1e-5, f"{prefix}mut_{name} does not change the loss on XLA ({loss} vs {want})"


# Llama-3-8B widths (issue 14's measure): one layer, batch 4 (2 sequences per dp shard; with
# batch 2 the loss's token count 2 x 2048 equals the hidden width 4096 and XLA folds the two
# divisors into one constant).
LLAMA_8B = Config(vocab=32000, hidden=4096, heads=32, kv_heads=8, ffn=14336, seq=2048, batch=4, layers=1)


def measure_8b(variant: str, form: str = "partitioned", second_witness: bool = True) -> dict[str, Any]:
    """`.venv/bin/python testdata/gen_flax.py --measure-8b [fwd|fwdbwd|step] [partitioned|shardy]
    [--one-witness]` (the last: no second witness at grown sizes, as `check(second_witness=False)`):
    `tv_mlir.jax.check`'s two phases on the model at Llama-3-8B widths, given as
    ShapeDtypeStructs: the export (tracing both sides, XLA's compile up to the partitioner)
    and the verification. Returns the verdict, its reason, the kept (pinned) classes, the
    times and this process's peak resident memory (nothing of the model's size may be
    allocated: the embedding alone is 0.5 GB)."""
    import resource
    import time

    from tv_mlir.api import verify
    from tv_mlir.heap import peak_rss_mb

    def cpu() -> float:  # this process and its children, user + sys (wall is noisy on shared cores)
        own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime

    cfg = LLAMA_8B
    v = next(v for v in variants(cfg) if v.name == variant)
    bounds = {**assume(cfg), **({"count": (0, 2**31 - 1)} if variant == "step" else {})}
    c0, t0 = cpu(), time.perf_counter()
    ref, other = tj._pair(v.fn, v.args, v.in_shardings, v.out_shardings, None, form)
    t1 = time.perf_counter()
    verdict = verify(tj._named(ref, f"{variant}.ref.mlir"), tj._named(other, f"{variant}.{form}.mlir"),
                     assume=bounds, second_witness=second_witness)
    c2, t2 = cpu(), time.perf_counter()
    shrink = verdict.shrink or {}
    return {"pair": f"8b {variant} {form}", "verdict": verdict.verdict, "reason": verdict.reason,
            "export_s": round(t1 - t0, 2), "verify_s": round(t2 - t1, 2), "total_s": round(t2 - t0, 2),
            "cpu_s": round(c2 - c0, 2),
            "max_rss_mb": round(peak_rss_mb()),
            "kept": [(c["original"], c["where"], c.get("reason", "")) for c in shrink.get("kept", [])],
            "shrunk": [(c["original"], c["verified"], c["where"]) for c in shrink.get("shrunk", [])]}


def measure_step(layers: int = 1, nu: bool = True, form: str = "partitioned") -> dict[str, Any]:
    """`.venv/bin/python testdata/gen_flax.py --measure-step [LAYERS] [--no-nu] [--shardy]`:
    the train step at the issue's tiny dims (`layers` decoder layers) through
    `tv_mlir.jax.check` (issue 14's measure: 15 s for 1 layer, 20 s for 2), with the token
    ids, the step count and (unless `nu` is False) Adam's second moment assumed as a user
    states them, no proof cache. Wall and CPU seconds (this process and its children) of
    check's two phases, the export (tracing both sides, XLA's compile up to the
    partitioner) and the verification, and the stages' own times."""
    import resource
    import time

    from tv_mlir.api import verify
    from tv_mlir.heap import peak_rss_mb

    def cpu() -> float:
        own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime

    cfg = Config(layers=layers)
    v = next(v for v in variants(cfg) if v.name == "step")
    bounds: dict[str, Any] = {**assume(cfg), "count": (0, 2**31 - 1)}
    if nu:
        bounds["*nu*"] = (0, float("inf"))
    c0, t0 = cpu(), time.perf_counter()
    ref, other = tj._pair(v.fn, v.args, v.in_shardings, v.out_shardings, None, form)
    c1, t1 = cpu(), time.perf_counter()
    verdict = verify(tj._named(ref, "step.ref.mlir"), tj._named(other, f"step.{form}.mlir"), assume=bounds,
                     cache=False)
    c2, t2 = cpu(), time.perf_counter()
    stages = verdict.stages or {}
    return {"pair": f"step L{layers} {form}{'' if nu else ' (nu not assumed)'}", "verdict": verdict.verdict,
            "wall_s": round(t2 - t0, 2), "cpu_s": round(c2 - c0, 2),
            "export_wall_s": round(t1 - t0, 2), "export_cpu_s": round(c1 - c0, 2),
            "verify_wall_s": round(t2 - t1, 2), "verify_cpu_s": round(c2 - c1, 2),
            "stages": [(s["name"], s["verdict"], s["time_s"], s["ref_ops"], s["other_ops"])
                       for s in stages.get("list", [])],
            "max_rss_mb": round(peak_rss_mb())}


def main() -> None:
    if "--measure-8b" in sys.argv:
        import json

        args = [a for a in sys.argv[sys.argv.index("--measure-8b") + 1:] if not a.startswith("--")]
        print(json.dumps(measure_8b(*(args[:2] or ["fwd"]), second_witness="--one-witness" not in sys.argv)))
        return
    if "--measure-step" in sys.argv:
        import json

        args = [a for a in sys.argv[sys.argv.index("--measure-step") + 1:] if not a.startswith("--")]
        print(json.dumps(measure_step(int(args[0]) if args else 1, "--no-nu" not in sys.argv,
                                      "shardy" if "--shardy" in sys.argv else "partitioned")))
        return
    if "--measure" in sys.argv:
        args = sys.argv[sys.argv.index("--measure") + 1:]
        only = next((a for a in args if not a.startswith("--")), "")
        timeout_s = float(os.environ.get("FLAX_TIMEOUT", "600"))
        measure(only, timeout_s)
        return
    OUT.mkdir(parents=True, exist_ok=True)
    for prefix, cfg in ({} if "--block-only" in sys.argv else SIZES).items():
        for v in ([] if "--mutations-only" in sys.argv else variants(cfg)):
            check_numerics(cfg, v)
            for form in FORMS:
                    ref, other = tj.export_pair(v.fn, *v.args, in_shardings=v.in_shardings,
                                                out_shardings=v.out_shardings, form=form, directory=OUT,
                                                name=prefix + v.name)
                    print(f"wrote {ref.relative_to(ROOT)} and {other.relative_to(ROOT)}")
        for name, text in mutants(prefix).items():
            write(f"{prefix}mut_{name}.partitioned.mlir", text)
        check_mutants_on_xla(prefix)
    for v in ([] if "--mutations-only" in sys.argv else block_variants(CFG)):
        check_numerics(CFG, v)
        for form in FORMS:
            tj.export_pair(v.fn, *v.args, in_shardings=v.in_shardings, out_shardings=v.out_shardings, form=form,
                           directory=OUT, name=v.name)
            print(f"wrote testdata/flax/{v.name}.ref.mlir and {v.name}.{form}.mlir")
    for name, text in mutants("mlp_").items():
        write(f"mlp_mut_{name}.partitioned.mlir", text)


if __name__ == "__main__":
    main()
