"""Real-client programs, fifth batch (issue 14, stop 44): losses and recurrences whose sharded
form is written by hand and whose usual bugs are silent, at tiny dims, on 8 CPU devices.

    .venv/bin/python testdata/gen_clients5.py --list
    .venv/bin/python testdata/gen_clients5.py --measure [NAME ...] [--forms partitioned,shardy]
    .venv/bin/python testdata/gen_clients5.py --export NAME ...   # testdata/clients/NAME.*.mlir

The driver and the Program record are gen_clients.py's. Every program here is a shard_map
plan checked against the plain function it parallelizes (`reference=`); each `*_bug` twin
is the same plan with the mistake a user makes there (`--list` prints its difference from
the reference on XLA, which must not be 0):

- clip_contrastive: CLIP's symmetric InfoNCE over a data-parallel batch; every device
  all-gathers the other devices' embeddings as negatives. Bug: negatives from the local
  batch only (the loss of a smaller batch: plausible numbers, a worse model).
- vocab_ce: Megatron's vocab-parallel cross entropy with label smoothing, by hand: a max
  over the vocabulary shards (pmax), the sum of exponentials (psum), the target's logit from
  the shard that owns it. Bug: each shard shifts by its own max before the psum.
- token_mean_accum: gradient accumulation over micro-batches of padded sequences, the loss
  a mean over real tokens. Bug: the mean of the per-micro-batch means (right only when
  every micro-batch holds as many real tokens).
- linear_scan_sp: a gated linear recurrence (h_t = a_t h_{t-1} + x_t, the core of
  Mamba/RWKV-style layers) with the sequence sharded: each device scans its block from 0,
  the carries pass along the devices as an exclusive prefix product-sum (all_gather of
  the block summaries), then each block is corrected. Bug: the carry taken from the next
  device instead of the previous one.
- dpo_loss: DPO's loss over chosen/rejected completions: per-token log-probabilities of the
  labels under a policy and a frozen reference, vocab-parallel (the label's logit from its
  owner shard), summed over completion tokens by a mask, then -log sigmoid(beta * margin),
  batch over dp.
- kd_temperature: knowledge distillation, KL(teacher_T || student_T) * T^2 with the
  vocabulary sharded over tp and the batch over dp.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

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
f32 = jnp.float32
i32 = jnp.int32


def _sds(shape: tuple[int, ...], dtype=f32) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(shape, dtype)


# ---------------------------------------------------------------------------
# 1. CLIP contrastive loss, data parallel: the logits of a device's images against every
#    text in the global batch; the labels are the device's own rows of the global batch.

def _unit(x: jax.Array, eps: float) -> jax.Array:
    """x over its norm; eps 0 is the usual x / norm(x), whose class is NaN at x = 0."""
    sq = jnp.sum(x * x, -1, keepdims=True)
    return x * lax.rsqrt(sq + eps if eps else sq)


def _clip_ref(img: jax.Array, txt: jax.Array, scale: jax.Array, eps: float = 0.0) -> jax.Array:
    def unit(x: jax.Array) -> jax.Array:
        return _unit(x, eps)
    i, t = unit(img), unit(txt)
    logits = jnp.exp(scale) * i @ t.T
    n = jnp.arange(img.shape[0])
    li = -jnp.mean(jax.nn.log_softmax(logits, -1)[n, n])
    lt = -jnp.mean(jax.nn.log_softmax(logits.T, -1)[n, n])
    return (li + lt) / 2


def _clip(bug: bool, eps: float = 0.0) -> Program:
    m = mesh((8,), ("dp",))
    b, d = 16, 4

    def body(img: jax.Array, txt: jax.Array, scale: jax.Array) -> jax.Array:
        def unit(x: jax.Array) -> jax.Array:
            return _unit(x, eps)
        i, t = unit(img), unit(txt)
        if bug:
            all_i, all_t, off = i, t, 0
        else:
            all_i = lax.all_gather(i, "dp", tiled=True)
            all_t = lax.all_gather(t, "dp", tiled=True)
            off = lax.axis_index("dp") * i.shape[0]
        n = jnp.arange(i.shape[0])
        li = jax.nn.log_softmax(jnp.exp(scale) * i @ all_t.T, -1)[n, n + off]
        lt = jax.nn.log_softmax(jnp.exp(scale) * t @ all_i.T, -1)[n, n + off]
        return lax.pmean(-(jnp.mean(li) + jnp.mean(lt)) / 2, "dp")

    fn = jax.shard_map(body, mesh=m, in_specs=(P("dp"), P("dp"), P()), out_specs=P(), check_vma=False)
    s = NamedSharding(m, P("dp"))
    return Program("clip_contrastive_bug" if bug else "clip_contrastive",
                   "CLIP InfoNCE, negatives all-gathered over dp 8"
                   + (" (bug: local negatives only)" if bug else ""),
                   fn, (_sds((b, d)), _sds((b, d)), _sds(())), (s, s, NamedSharding(m, P())),
                   NamedSharding(m, P()), reference=lambda i, t, s: _clip_ref(i, t, s, eps))


def clip_contrastive() -> Program:
    return _clip(False)


def clip_contrastive_bug() -> Program:
    return _clip(True)


def clip_eps() -> Program:
    p = _clip(False, 1e-6)
    p.name = "clip_eps"
    return p


# ---------------------------------------------------------------------------
# 2. Vocab-parallel cross entropy with label smoothing, by hand (Megatron's form).

EPS = 0.1


def _vocab_ce_ref(logits: jax.Array, labels: jax.Array) -> jax.Array:
    lp = jax.nn.log_softmax(logits, -1)
    nll = -jnp.take_along_axis(lp, labels[:, None], -1)[:, 0]
    return jnp.mean((1 - EPS) * nll - EPS * jnp.mean(lp, -1))


def _vocab_ce(bug: bool) -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    t, v = 8, 16

    def body(logits: jax.Array, labels: jax.Array) -> jax.Array:
        vl = logits.shape[-1]
        local_max = jnp.max(logits, -1, keepdims=True)
        mx = local_max if bug else lax.pmax(lax.stop_gradient(local_max), "tp")
        z = logits - mx
        lse = jnp.log(lax.psum(jnp.sum(jnp.exp(z), -1), "tp"))
        start = lax.axis_index("tp") * vl
        local = labels - start
        mine = (local >= 0) & (local < vl)
        picked = jnp.take_along_axis(z, jnp.clip(local, 0, vl - 1)[:, None], -1)[:, 0]
        target = lax.psum(jnp.where(mine, picked, 0.0), "tp")
        mean_z = lax.psum(jnp.sum(z, -1), "tp") / (vl * 4)
        nll = lse - target
        smooth = lse - mean_z
        return lax.pmean(jnp.mean((1 - EPS) * nll + EPS * smooth), "dp")

    fn = jax.shard_map(body, mesh=m, in_specs=(P("dp", "tp"), P("dp")), out_specs=P(), check_vma=False)
    return Program("vocab_ce_bug" if bug else "vocab_ce",
                   "vocab-parallel label-smoothed CE by hand (pmax, psum, owner's logit), 2x4"
                   + (" (bug: each shard shifts by its own max)" if bug else ""),
                   fn, (_sds((t, v)), _sds((t,), i32)),
                   (NamedSharding(m, P("dp", "tp")), NamedSharding(m, P("dp"))), NamedSharding(m, P()),
                   options={"assume": {"labels": (0, v - 1)}}, reference=_vocab_ce_ref)


def vocab_ce() -> Program:
    return _vocab_ce(False)


def vocab_ce_bug() -> Program:
    return _vocab_ce(True)


# ---------------------------------------------------------------------------
# 3. Gradient accumulation, the loss a mean over real tokens of the whole batch.

def _token_loss(w: jax.Array, x: jax.Array, y: jax.Array, mask: jax.Array) -> tuple[jax.Array, jax.Array]:
    err = jnp.sum((jnp.tanh(x @ w) - y) ** 2, -1)  # [b, s]
    return jnp.sum(err * mask), jnp.sum(mask)


def _token_mean_ref(w: jax.Array, x: jax.Array, y: jax.Array, mask: jax.Array) -> tuple[jax.Array, jax.Array]:
    def loss(w: jax.Array) -> jax.Array:
        s, n = _token_loss(w, x, y, mask)
        return s / jnp.maximum(n, 1.0)
    lv, gr = jax.value_and_grad(loss)(w)
    return w - 0.1 * gr, lv


def _token_mean(bug: bool) -> Program:
    m = mesh((8,), ("dp",))
    b, s, d, micro = 32, 4, 4, 2

    def body(w: jax.Array, x: jax.Array, y: jax.Array, mask: jax.Array) -> tuple[jax.Array, jax.Array]:
        xs, ys, ms = (a.reshape(micro, a.shape[0] // micro, *a.shape[1:]) for a in (x, y, mask))
        n_all = jnp.maximum(lax.psum(jnp.sum(mask), "dp"), 1.0)

        Carry = tuple[jax.Array, jax.Array]

        def one(carry: Carry, mb: tuple[jax.Array, ...]) -> tuple[Carry, None]:
            acc_l, acc_g = carry
            xm, ym, mm = mb
            if bug:
                def f(w: jax.Array) -> jax.Array:
                    s_, n_ = _token_loss(w, xm, ym, mm)
                    return s_ / jnp.maximum(n_, 1.0) / (micro * 8)
            else:
                def f(w: jax.Array) -> jax.Array:
                    return _token_loss(w, xm, ym, mm)[0] / n_all
            lv, gr = jax.value_and_grad(f)(w)
            return (acc_l + lv, acc_g + gr), None

        (lv, gr), _ = lax.scan(one, (jnp.zeros((), f32), jnp.zeros_like(w)), (xs, ys, ms))
        gr, lv = lax.psum(gr, "dp"), lax.psum(lv, "dp")
        return w - 0.1 * gr, lv

    fn = jax.shard_map(body, mesh=m, in_specs=(P(), P("dp"), P("dp"), P("dp")), out_specs=(P(), P()),
                       check_vma=False)
    S = lambda *spec: NamedSharding(m, P(*spec))  # noqa: E731
    return Program("token_mean_accum_bug" if bug else "token_mean_accum",
                   "grad accumulation (scan over 2 micro-batches), loss a mean over real tokens, dp 8"
                   + (" (bug: mean of micro-batch means)" if bug else ""),
                   fn, (_sds((d, d)), _sds((b, s, d)), _sds((b, s, d)), _sds((b, s))),
                   (S(), S("dp"), S("dp"), S("dp")), (S(), S()),
                   reference=_token_mean_ref)


def token_mean_accum() -> Program:
    return _token_mean(False)


def token_mean_accum_bug() -> Program:
    return _token_mean(True)


# ---------------------------------------------------------------------------
# 4. A gated linear recurrence over a sharded sequence.

def _linear_scan_ref(a: jax.Array, x: jax.Array) -> jax.Array:
    def step(h: jax.Array, ax: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        h = ax[0] * h + ax[1]
        return h, h
    _, hs = lax.scan(step, jnp.zeros(a.shape[1:], f32), (a, x))
    return hs


def _linear_scan(bug: bool) -> Program:
    n = 4
    m = mesh((n,), ("sp",))
    s, d = 8, 2

    def body(a: jax.Array, x: jax.Array) -> jax.Array:
        hs = _linear_scan_ref(a, x)  # this block scanned from h = 0
        decay = jnp.cumprod(a, 0)  # what a carry into the block is multiplied by at each step
        # the block as a map h -> A h + B, gathered from every device
        summ_a = lax.all_gather(decay[-1], "sp")  # [n, d]
        summ_b = lax.all_gather(hs[-1], "sp")
        me = lax.axis_index("sp")
        src = me + 1 if bug else me - 1

        def carry_into(k: int, h: jax.Array) -> jax.Array:
            # compose the blocks 0..src in order: h -> A_k h + B_k
            return jnp.where(k <= src, summ_a[k] * h + summ_b[k], h)

        h0 = lax.fori_loop(0, n, carry_into, jnp.zeros((d,), f32))
        return hs + decay * h0

    fn = jax.shard_map(body, mesh=m, in_specs=(P("sp"), P("sp")), out_specs=P("sp"), check_vma=False)
    s_ = NamedSharding(m, P("sp"))
    return Program("linear_scan_sp_bug" if bug else "linear_scan_sp",
                   "gated linear recurrence, sequence over sp 4, carries composed from gathered summaries"
                   + (" (bug: carry from the next device)" if bug else ""),
                   fn, (_sds((s, d)), _sds((s, d))), (s_, s_), s_, reference=_linear_scan_ref)


def linear_scan_sp() -> Program:
    return _linear_scan(False)


def linear_scan_sp_bug() -> Program:
    return _linear_scan(True)


# ---------------------------------------------------------------------------
# 5. DPO over chosen/rejected completions, vocab-parallel log-probabilities.

BETA = 0.1


def _logp_ref(logits: jax.Array, labels: jax.Array, mask: jax.Array) -> jax.Array:
    lp = jax.nn.log_softmax(logits, -1)
    return jnp.sum(jnp.take_along_axis(lp, labels[..., None], -1)[..., 0] * mask, -1)  # [b]


def _dpo_ref(pc: jax.Array, pr: jax.Array, rc: jax.Array, rr: jax.Array, lc: jax.Array, lr: jax.Array,
             mc: jax.Array, mr: jax.Array) -> jax.Array:
    margin = (_logp_ref(pc, lc, mc) - _logp_ref(rc, lc, mc)) - (_logp_ref(pr, lr, mr) - _logp_ref(rr, lr, mr))
    return -jnp.mean(jax.nn.log_sigmoid(BETA * margin))


def dpo_loss() -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    b, s, v = 4, 4, 8

    def logp(logits: jax.Array, labels: jax.Array, mask: jax.Array) -> jax.Array:
        vl = logits.shape[-1]
        mx = lax.pmax(jnp.max(logits, -1, keepdims=True), "tp")
        z = logits - mx
        lse = jnp.log(lax.psum(jnp.sum(jnp.exp(z), -1), "tp"))
        local = labels - lax.axis_index("tp") * vl
        mine = (local >= 0) & (local < vl)
        picked = jnp.take_along_axis(z, jnp.clip(local, 0, vl - 1)[..., None], -1)[..., 0]
        return jnp.sum((lax.psum(jnp.where(mine, picked, 0.0), "tp") - lse) * mask, -1)

    def body(pc: jax.Array, pr: jax.Array, rc: jax.Array, rr: jax.Array, lc: jax.Array, lr: jax.Array,
             mc: jax.Array, mr: jax.Array) -> jax.Array:
        margin = (logp(pc, lc, mc) - logp(rc, lc, mc)) - (logp(pr, lr, mr) - logp(rr, lr, mr))
        return lax.pmean(-jnp.mean(jax.nn.log_sigmoid(BETA * margin)), "dp")

    lg, lb = P("dp", None, "tp"), P("dp")
    fn = jax.shard_map(body, mesh=m, in_specs=(lg,) * 4 + (lb,) * 4, out_specs=P(), check_vma=False)
    S = lambda spec: NamedSharding(m, spec)  # noqa: E731
    return Program("dpo_loss", "DPO loss, policy and reference log-probs vocab-parallel over tp, batch over dp, 2x4",
                   fn, (_sds((b, s, v)),) * 4 + (_sds((b, s), i32),) * 2 + (_sds((b, s)),) * 2,
                   (S(lg),) * 4 + (S(lb),) * 4, S(P()),
                   options={"assume": {"lc": (0, v - 1), "lr": (0, v - 1)}},
                   reference=_dpo_ref)


# ---------------------------------------------------------------------------
# 6. Knowledge distillation with a temperature, vocabulary over tp.

T = 2.0


def _kd_ref(student: jax.Array, teacher: jax.Array) -> jax.Array:
    pt = jax.nn.softmax(teacher / T, -1)
    kl = jnp.sum(pt * (jax.nn.log_softmax(teacher / T, -1) - jax.nn.log_softmax(student / T, -1)), -1)
    return jnp.mean(kl) * T * T


def kd_temperature() -> Program:
    m = mesh((2, 4), ("dp", "tp"))
    t, v = 4, 16

    def softmax_parts(x: jax.Array) -> tuple[jax.Array, jax.Array]:
        """softmax(x) and log_softmax(x) over the sharded vocabulary, as jax.nn writes them."""
        z = x - lax.pmax(jnp.max(x, -1, keepdims=True), "tp")
        e = jnp.exp(z)
        total = lax.psum(jnp.sum(e, -1, keepdims=True), "tp")
        return e / total, z - jnp.log(total)

    def body(student: jax.Array, teacher: jax.Array) -> jax.Array:
        (pt, lt), (_, ls) = softmax_parts(teacher / T), softmax_parts(student / T)
        kl = lax.psum(jnp.sum(pt * (lt - ls), -1), "tp")
        return lax.pmean(jnp.mean(kl), "dp") * T * T

    spec = P("dp", "tp")
    fn = jax.shard_map(body, mesh=m, in_specs=(spec, spec), out_specs=P(), check_vma=False)
    S = lambda spec: NamedSharding(m, spec)  # noqa: E731
    return Program("kd_temperature", "distillation KL at temperature 2, vocabulary over tp, 2x4",
                   fn, (_sds((t, v)), _sds((t, v))), (S(spec), S(spec)), S(P()), reference=_kd_ref)


PROGRAMS: g.Programs = {
    "clip_contrastive": clip_contrastive, "clip_contrastive_bug": clip_contrastive_bug, "clip_eps": clip_eps,
    "vocab_ce": vocab_ce, "vocab_ce_bug": vocab_ce_bug,
    "token_mean_accum": token_mean_accum, "token_mean_accum_bug": token_mean_accum_bug,
    "linear_scan_sp": linear_scan_sp, "linear_scan_sp_bug": linear_scan_sp_bug,
    "dpo_loss": dpo_loss, "kd_temperature": kd_temperature,
}

MUTATIONS: g.Mutations = g3.MUTATIONS


if __name__ == "__main__":
    sys.exit(g.main(sys.argv[1:], PROGRAMS, MUTATIONS, __file__, __doc__))
