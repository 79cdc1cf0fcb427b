"""Generate the benchmark programs of the fast symbolic core (issue 11) in testdata/core/.

Run from the repository root:

    .venv/bin/python testdata/gen_core.py      # sets its own 8-device XLA flags

Plain jax, no flax. Every program is a single-device reference and a ``jax.shard_map``
version on the 2x4 ("dp", "tp") mesh of testdata/gen_sharded.py, whose case type, numeric
check and export helpers this script imports (``Case``, ``check``, ``export_case``,
``validate``, ``manifest_entry``):

- ``decoder_L{1,2,4,16}``: a forward-only decoder stack of L layers (pre-RMSNorm, causal
  multi-head attention, SwiGLU MLP, residuals); batch 4, seq 8, hidden 16, 4 heads of 4,
  ffn 32; tensor-parallel over tp the Megatron way (q/k/v and gate/up column-parallel,
  o and down row-parallel with a psum), the batch data-parallel over dp. Per-layer weights
  are stacked on a leading layer dim. Bug twin ``decoder_L2_bug_missing_psum``: the MLP's
  row-parallel psum is missing in layer 2.
- ``llama_train_step``: one training step of a 1-layer Llama (vocab-parallel embedding,
  RMSNorm, GQA attention with RoPE (4 query heads, 2 kv heads), SwiGLU, vocab-parallel LM
  head and cross entropy on integer labels, jax.grad, AdamW written out: m, v, bias
  correction, decoupled weight decay); vocab 64, hidden 16, ffn 32, seq 8, batch 4. The
  sharded step splits the batch over dp (loss and gradients psum'ed over dp) and the model
  over tp with Megatron's conjugate operators (``copy_to_tp``: identity forward, psum
  backward; ``reduce_from_tp``: psum forward, identity backward), which keep jax.grad right
  under ``check_vma=False``. The two kv heads are replicated over the 4 tp shards (each
  shard slices the one its query head reads). Token ids and labels are clamped to
  [0, vocab) by both programs, as the vocab_ce plan of gen_sharded does. Correct plan only.

For every case the numeric check of gen_sharded runs first (fixed seeds; correct plans
agree with the reference within rtol 1e-4 / atol 1e-5 and replicas agree, the bug twin
differs by > 1e-3); then ``<plan>.ref.mlir``, ``<name>.shardy.mlir`` and
``<name>.gspmd.mlir`` are written (no partitioned form: ``partitioned`` is null in the
manifest), each parsed back, and the global signatures of the reference and the sharded
programs compared. ``manifest.json`` is a list in the format of testdata/sharded's, plus
``sizes``. Output is byte-identical on rerun; the script asserts when an expectation fails.
"""

from __future__ import annotations

import inspect
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gen_sharded as gs  # noqa: E402  (sets the 8-device XLA flags before importing jax)
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

OUT = gs.HERE / "core"
F32, I32 = gs.F32, gs.I32
DP, TP = gs.DP, gs.TP
SEED = 20261211

RMS_EPS = 1e-6
MASK = -1e9


@dataclass(frozen=True)
class Init(gs.Arg):
    """A float input drawn as gen_sharded's, times `scale` (1/sqrt(fan_in) for weights, so
    that 16 layers stay in range), made non-negative for a second-moment state."""

    scale: float = 1.0
    positive: bool = False

    def draw(self, rng: np.random.Generator) -> np.ndarray:
        x = super().draw(rng)
        if self.positive:
            x = np.abs(x)
        return (x * np.float32(self.scale)).astype(np.float32)


def w(name: str, *shape: int, fan_in: int | None = None, scale: float = 1.0, positive: bool = False) -> Init:
    s = scale / np.sqrt(fan_in) if fan_in else scale
    return Init(name, tuple(shape), F32, scale=float(s), positive=positive)


def named(fn: Callable[..., Any], names: list[str]) -> Callable[..., Any]:
    """`fn(*args)` with parameters called `names`: the exported @main arguments carry them as
    loc("name"), the same on the reference and the sharded side."""

    def wrapper(*args):
        return fn(*args)

    wrapper.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names])
    wrapper.__name__ = wrapper.__qualname__ = fn.__name__
    return wrapper


# --------------------------------------------------------------------------
# Shared pieces
# --------------------------------------------------------------------------


def _rmsnorm(x, g):
    return x * lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + RMS_EPS) * g


def _causal_attention(q, k, v):
    # q [b, s, nh, hd], k/v [b, s, nh, hd] -> [b, s, nh * hd]
    b, s, nh, hd = q.shape
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) * (1.0 / np.sqrt(hd))
    causal = jnp.tril(jnp.ones((s, s), dtype=bool))
    p = jax.nn.softmax(jnp.where(causal, scores, MASK), axis=-1)
    return jnp.einsum("bhqk,bkhd->bqhd", p, v).reshape(b, s, nh * hd)


def _swiglu(h, wg, wu, wd):
    return (jax.nn.silu(h @ wg) * (h @ wu)) @ wd


def _no_reduce(x):
    return x


def _psum_tp(x):
    return lax.psum(x, "tp")


# --------------------------------------------------------------------------
# 1. decoder_L{1,2,4,16}: forward-only tensor-parallel decoder stack
# --------------------------------------------------------------------------

DEC = {"batch": 4, "seq": 8, "hidden": 16, "heads": 4, "head_dim": 4, "ffn": 32}
DEC_LAYERS = (1, 2, 4, 16)
DEC_NAMES = ["x", "attn_norm", "wq", "wk", "wv", "wo", "mlp_norm", "w_gate", "w_up", "w_down"]


def _decoder(x, attn_norm, wq, wk, wv, wo, mlp_norm, w_gate, w_up, w_down, attn_reduce, mlp_reduces):
    """L layers (the leading dim of every weight). On the sharded side the weights are this
    tp shard's columns (q/k/v, gate/up) or rows (o, down), so the number of heads is local,
    and attn_reduce / mlp_reduces[l] all-reduce the row-parallel partial sums."""
    b, s, _ = x.shape
    hd = DEC["head_dim"]
    for l in range(wq.shape[0]):
        h = _rmsnorm(x, attn_norm[l])
        nh = wq.shape[-1] // hd
        q, k, v = ((h @ m[l]).reshape(b, s, nh, hd) for m in (wq, wk, wv))
        x = x + attn_reduce(_causal_attention(q, k, v) @ wo[l])
        h = _rmsnorm(x, mlp_norm[l])
        x = x + mlp_reduces[l](_swiglu(h, w_gate[l], w_up[l], w_down[l]))
    return x


def decoder_ref(*args):
    n_layers = args[2].shape[0]
    return _decoder(*args, _no_reduce, [_no_reduce] * n_layers)


def decoder_tp(*args):
    n_layers = args[2].shape[0]
    return _decoder(*args, _psum_tp, [_psum_tp] * n_layers)


def decoder_tp_bug_missing_psum(*args):
    n_layers = args[2].shape[0]
    reduces = [_psum_tp] * n_layers
    reduces[1] = _no_reduce  # BUG: layer 2's MLP partial sums never all-reduced over tp
    return _decoder(*args, _psum_tp, reduces)


def decoder_args(n_layers: int) -> list[gs.Arg]:
    B, S, H, NH, HD, F = (DEC[k] for k in ("batch", "seq", "hidden", "heads", "head_dim", "ffn"))
    L, A = n_layers, NH * HD
    return [gs.f32("x", B, S, H), w("attn_norm", L, H),
            w("wq", L, H, A, fan_in=H), w("wk", L, H, A, fan_in=H), w("wv", L, H, A, fan_in=H),
            w("wo", L, A, H, fan_in=A), w("mlp_norm", L, H),
            w("w_gate", L, H, F, fan_in=H), w("w_up", L, H, F, fan_in=H), w("w_down", L, F, H, fan_in=F)]


COL = P(None, None, "tp")  # [L, in, out] split on out
ROW = P(None, "tp", None)  # [L, in, out] split on in
DEC_SPECS = (P("dp", None, None), P(), COL, COL, COL, ROW, P(), COL, COL, ROW)
DEC_OUT = P("dp", None, None)


# --------------------------------------------------------------------------
# 2. llama_train_step: 1-layer Llama training step, dp x tp
# --------------------------------------------------------------------------

LLAMA = {"batch": 4, "seq": 8, "hidden": 16, "heads": 4, "kv_heads": 2, "head_dim": 4,
         "ffn": 32, "vocab": 64, "layers": 1}
ROPE_THETA = 10000.0
LR, BETA1, BETA2, ADAM_EPS, WEIGHT_DECAY = 1e-2, 0.9, 0.999, 1e-8, 0.1
PARAMS = ["embed", "attn_norm", "wq", "wk", "wv", "wo", "mlp_norm", "w_gate", "w_up", "w_down",
          "final_norm", "lm_head"]
# tp layout (Megatron): vocab-parallel embedding and LM head, column-parallel q / gate / up,
# row-parallel o / down; norms and the 2 kv-head projections replicated.
PARAM_SPECS = {"embed": P("tp", None), "attn_norm": P(), "wq": P(None, "tp"), "wk": P(), "wv": P(),
               "wo": P("tp", None), "mlp_norm": P(), "w_gate": P(None, "tp"), "w_up": P(None, "tp"),
               "w_down": P("tp", None), "final_norm": P(), "lm_head": P(None, "tp")}
LLAMA_NAMES = (["tokens", "labels", "step"] + PARAMS + [f"m_{p}" for p in PARAMS]
               + [f"v_{p}" for p in PARAMS])


@jax.custom_vjp
def copy_to_tp(x):
    """Megatron's f: a replicated activation (or weight) entering a tp-split computation."""
    return x


copy_to_tp.defvjp(lambda x: (x, None), lambda _, ct: (lax.psum(ct, "tp"),))


@jax.custom_vjp
def reduce_from_tp(x):
    """Megatron's g: all-reduce of tp partial sums; every shard's copy of the result is the
    one value the loss reads, so its cotangent goes back unchanged."""
    return lax.psum(x, "tp")


reduce_from_tp.defvjp(lambda x: (lax.psum(x, "tp"), None), lambda _, ct: (ct,))


def _rope(t):
    # t [b, s, nh, hd], rotate-half form, positions 0..s-1
    s, hd = t.shape[1], t.shape[-1]
    inv_freq = (ROPE_THETA ** (-np.arange(0, hd, 2) / hd)).astype(np.float32)
    ang = lax.iota(I32, s).astype(F32)[:, None] * inv_freq[None, :]
    cos, sin = jnp.cos(ang)[None, :, None, :], jnp.sin(ang)[None, :, None, :]
    t1, t2 = t[..., : hd // 2], t[..., hd // 2 :]
    return jnp.concatenate([t1 * cos - t2 * sin, t2 * cos + t1 * sin], axis=-1)


def _clamp_ids(ids):
    return jnp.clip(ids, 0, LLAMA["vocab"] - 1)


def _llama_block(x, p, kv_slice, enter, reduce):
    """One pre-norm layer. `enter`/`reduce`: identity on the reference, copy_to_tp /
    reduce_from_tp on a tp shard; kv_slice picks the kv projections this shard's query heads
    read (all of them on the reference) and repeats them to one per query head."""
    b, s, _ = x.shape
    hd = LLAMA["head_dim"]
    h = enter(_rmsnorm(x, p["attn_norm"]))
    nh = p["wq"].shape[-1] // hd
    q = _rope((h @ p["wq"]).reshape(b, s, nh, hd))
    wk, wv = kv_slice(p["wk"]), kv_slice(p["wv"])
    k = _rope((h @ wk).reshape(b, s, wk.shape[-1] // hd, hd))
    v = (h @ wv).reshape(b, s, wv.shape[-1] // hd, hd)
    k, v = (jnp.repeat(t, nh // t.shape[2], axis=2) for t in (k, v))
    x = x + reduce(_causal_attention(q, k, v) @ p["wo"])
    h = enter(_rmsnorm(x, p["mlp_norm"]))
    return x + reduce(_swiglu(h, p["w_gate"], p["w_up"], p["w_down"]))


def _loss_ref(p, tokens, labels):
    x = jnp.take(p["embed"], _clamp_ids(tokens), axis=0, mode="clip")
    x = _llama_block(x, p, lambda m: m, lambda t: t, lambda t: t)
    logits = _rmsnorm(x, p["final_norm"]) @ p["lm_head"]
    logp = jax.nn.log_softmax(logits, axis=-1)
    ce = -jnp.take_along_axis(logp, _clamp_ids(labels)[..., None], axis=-1)[..., 0]
    return jnp.mean(ce)


def _loss_tp(p, tokens, labels):
    """This (dp, tp) shard's part of the global mean loss: its dp batch slice's cross
    entropy sum over all B * S tokens (the psum over dp adds the parts); the same value on
    every tp shard of a dp group."""
    r = lax.axis_index("tp")
    hd, nh_all, nkv = LLAMA["head_dim"], LLAMA["heads"], LLAMA["kv_heads"]
    # vocab-parallel embedding: look up the ids in this shard's vocab rows, 0 elsewhere
    vl = p["embed"].shape[0]
    local = _clamp_ids(tokens) - r * vl
    hit = (local >= 0) & (local < vl)
    e = jnp.take(p["embed"], jnp.clip(local, 0, vl - 1), axis=0, mode="clip")
    x = reduce_from_tp(jnp.where(hit[..., None], e, 0.0))

    nh = p["wq"].shape[-1] // hd  # query heads on this shard, all in one kv group
    group = nh_all // nkv
    assert group % nh == 0, "a shard's query heads must share one kv head"

    def kv_slice(m):
        return lax.dynamic_slice_in_dim(copy_to_tp(m), (r * nh // group) * hd, hd, axis=1)

    x = _llama_block(x, p, kv_slice, copy_to_tp, reduce_from_tp)
    logits = copy_to_tp(_rmsnorm(x, p["final_norm"])) @ p["lm_head"]  # [b, s, V/tp]
    # vocab-parallel cross entropy (the max only shifts: no gradient through it)
    vl = logits.shape[-1]
    gmax = lax.pmax(lax.stop_gradient(jnp.max(logits, axis=-1)), "tp")
    z = logits - gmax[..., None]
    sumexp = reduce_from_tp(jnp.sum(jnp.exp(z), axis=-1))
    lt = _clamp_ids(labels) - r * vl
    picked = jnp.take_along_axis(z, jnp.clip(lt, 0, vl - 1)[..., None], axis=-1)[..., 0]
    target_z = reduce_from_tp(jnp.where((lt >= 0) & (lt < vl), picked, 0.0))
    ce = jnp.log(sumexp) - target_z
    return jnp.sum(ce) / (ce.size * DP)


def _adamw(p, g, m, v, step):
    # step: the number of completed steps, shape [1]: a scalar shard_map argument is
    # exported with an sdy.sharding the reference's lacks
    t = (step[0] + 1).astype(F32)
    m = BETA1 * m + (1 - BETA1) * g
    v = BETA2 * v + (1 - BETA2) * g * g
    m_hat = m / (1 - jnp.power(jnp.float32(BETA1), t))
    v_hat = v / (1 - jnp.power(jnp.float32(BETA2), t))
    return p - LR * (m_hat / (jnp.sqrt(v_hat) + ADAM_EPS) + WEIGHT_DECAY * p), m, v


def _unflatten(args):
    tokens, labels, step = args[:3]
    n = len(PARAMS)
    p, m, v = (dict(zip(PARAMS, args[3 + i * n: 3 + (i + 1) * n])) for i in range(3))
    return tokens, labels, step, p, m, v


def _update(p, grads, m, v, step):
    new = {k: _adamw(p[k], grads[k], m[k], v[k], step) for k in PARAMS}
    return ([new[k][0] for k in PARAMS], [new[k][1] for k in PARAMS], [new[k][2] for k in PARAMS])


def llama_ref(*args):
    tokens, labels, step, p, m, v = _unflatten(args)
    loss, grads = jax.value_and_grad(_loss_ref)(p, tokens, labels)
    new_p, new_m, new_v = _update(p, grads, m, v, step)
    return (loss, *new_p, *new_m, *new_v)


def llama_train_step(*args):
    tokens, labels, step, p, m, v = _unflatten(args)
    loss, grads = jax.value_and_grad(_loss_tp)(p, tokens, labels)
    loss = lax.psum(loss, "dp")
    grads = lax.psum(grads, "dp")
    new_p, new_m, new_v = _update(p, grads, m, v, step)
    return (loss, *new_p, *new_m, *new_v)


def llama_args() -> list[gs.Arg]:
    B, S, H, NH, NKV, HD, F, V = (LLAMA[k] for k in
                                  ("batch", "seq", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab"))
    shapes = {"embed": ((V, H), None), "attn_norm": ((H,), None), "wq": ((H, NH * HD), H),
              "wk": ((H, NKV * HD), H), "wv": ((H, NKV * HD), H), "wo": ((NH * HD, H), NH * HD),
              "mlp_norm": ((H,), None), "w_gate": ((H, F), H), "w_up": ((H, F), H), "w_down": ((F, H), F),
              "final_norm": ((H,), None), "lm_head": ((H, V), H)}
    args: list[gs.Arg] = [gs.i32("tokens", B, S, hi=V), gs.i32("labels", B, S, hi=V), gs.i32("step", 1, hi=1000)]
    args += [w(k, *shapes[k][0], fan_in=shapes[k][1]) for k in PARAMS]
    args += [w(f"m_{k}", *shapes[k][0], scale=1e-2) for k in PARAMS]
    args += [w(f"v_{k}", *shapes[k][0], scale=1e-4, positive=True) for k in PARAMS]
    return args


LLAMA_SPECS = (P("dp", None), P("dp", None), P()) + tuple(PARAM_SPECS[k] for k in PARAMS) * 3
LLAMA_OUT = (P(),) + tuple(PARAM_SPECS[k] for k in PARAMS) * 3


# --------------------------------------------------------------------------
# Case table, main
# --------------------------------------------------------------------------


def cases() -> list[tuple[gs.Case, dict[str, int]]]:
    out: list[tuple[gs.Case, dict[str, int]]] = []
    for n_layers in DEC_LAYERS:
        name = f"decoder_L{n_layers}"
        sizes = {**DEC, "layers": n_layers}
        args = decoder_args(n_layers)
        ref = named(decoder_ref, DEC_NAMES)
        out.append((gs.Case(name, name, args, ref, named(decoder_tp, DEC_NAMES), DEC_SPECS, DEC_OUT), sizes))
        if n_layers == 2:
            out.append((gs.Case(
                "decoder_L2_bug_missing_psum", name, args, ref, named(decoder_tp_bug_missing_psum, DEC_NAMES),
                DEC_SPECS, DEC_OUT, "not-equivalent", "value",
                "row-parallel MLP partial sums of layer 2 never all-reduced over tp (missing psum)"), sizes))
    out.append((gs.Case("llama_train_step", "llama_train_step", llama_args(), named(llama_ref, LLAMA_NAMES),
                        named(llama_train_step, LLAMA_NAMES), LLAMA_SPECS, LLAMA_OUT), dict(LLAMA)))
    return out


# What a user states about a pair's inputs (`--assume`, the manifest's "assume"; "inf": no
# upper bound): the optimizer's second moment is never negative and the step count is a
# count. Without them sqrt(v_hat) may be NaN and 1 - b^t may be 0, which the verifier must
# carry as IEEE class terms (bench/run.py times the pair both ways). The step's bound is
# 0 <= step < INT_MAX (the upper bound is exclusive), not "inf": `_adamw` computes t = step + 1
# in int32, which wraps to INT_MIN at step = INT_MAX, so with "inf" the interval of t holds 0
# and 1 - b^t may be 0 again (optax increments its count with a saturating add, so there
# `count=0:inf` suffices).
ASSUME = {"llama_train_step": {"step": [0, 2147483647], "v_*": [0, "inf"]}}


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    table = cases()
    gs.validate([c for c, _ in table])
    manifest = []
    for k, (case, sizes) in enumerate(table):
        msg = gs.check(case, SEED + k)
        files = gs.export_case(case, OUT, False)
        manifest.append({**gs.manifest_entry(case, files), "sizes": sizes,
                         **({"assume": ASSUME[case.name]} if case.name in ASSUME else {})})
        print(f"{case.name:30s} {case.expect:15s} {msg}", flush=True)
    written = {m[k] for m in manifest for k in ("ref", "shardy", "gspmd") if m[k]}
    for p in sorted(OUT.glob("*.mlir")):
        if p.name not in written:  # stale: a removed case
            p.unlink()
    (OUT / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"wrote {len(manifest)} cases to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
