"""A third red-team batch of shrinking pairs (issue 12, helper-36): sharded training code
written fresh by an adversary who has read docs/shrinking.md's rules and aims at their
edges, with mechanisms the first two batches (gen_redteam.py, gen_redteam2.py) did not
use: a product reduction against its second-order expansion (Newton's pair for a multiply
reducer), `any` against `all`, counts and prefix sums kept in int8 and int32 sums of squared
positions (wraps in a reduction, not in an add), recurrences over the sequence and
gradient-accumulation scans whose bug reads a carried counter, literals above 2^16 (Llama-3's
special tokens at 128000 of 128256 words, a 70000-position limit of a 131072-long context,
a count compared with 70000), a mask on squared positions, positions by a prefix count of the
attention mask, attention sinks below the window, a flattened index in int16 and an fp16
loss scale equal to the hidden size. Each is a reference, a correct twin and a bug twin
whose bug shows at the original sizes on XLA (8 CPU devices); same form as
testdata/gen_shrink_rules.py, whose helpers this imports: `<pair>.<variant>.{ref,ok,bug}.mlir`,
listed in `manifest_redteam3.json`.

    .venv/bin/python testdata/shrink_rules/gen_redteam3.py

`rule` names the mechanism each probes (the letters of docs/shrinking.md; `n` is Newton's
bound on a summed class, `o` integer overflow).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from gen_shrink_rules import I32, MESH_D, MESH_TP, OUT, TP, Arg, Pair, _smap, write_manifest  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

F32 = jnp.float32


def _rows(local: int, shape: tuple[int, ...], dim: int = 0) -> jax.Array:
    """Global row positions of this tp shard: the shard index times the local length."""
    return lax.axis_index("tp") * local + lax.broadcasted_iota(I32, shape, dim)


def _dp(ndim: int) -> jax.sharding.NamedSharding:
    """Rows over a 4-way `dp` axis (jit + NamedSharding), the other dims replicated."""
    mesh = jax.sharding.Mesh(np.array(jax.devices()[:TP]), ("dp",))
    return jax.sharding.NamedSharding(mesh, P("dp", *([None] * (ndim - 1))))


def _jit_rows(fn):
    """`fn` with its first input and its result sharded by rows over dp."""
    def f(*xs):
        xs = (lax.with_sharding_constraint(xs[0], _dp(xs[0].ndim)), *xs[1:])
        out = fn(*xs)
        return lax.with_sharding_constraint(out, _dp(out.ndim))
    return f


# The probability that no expert fires, prod(1 - p) over 8 experts, tokens sharded by dp;
# the bug writes its second-order inclusion-exclusion 1 - s1 + (s1^2 - s2) / 2, which is
# the product exactly when there are two experts.
def prod_pair(t: int, e: int, variant: str = "small") -> Pair:
    def ref(p):
        return jnp.prod(1.0 - p, axis=1)

    def ok(p):
        return jnp.prod(jnp.prod((1.0 - p).reshape(t, e // 2, 2), axis=2), axis=1)

    def bug(p):
        s1, s2 = jnp.sum(p, axis=1), jnp.sum(p * p, axis=1)
        return 1.0 - s1 + (s1 * s1 - s2) / 2.0

    return Pair("prod_pair", "n", variant, {"tokens": t, "experts": e}, [Arg((t, e))], ref, _jit_rows(ok),
                _jit_rows(bug), "prod(1 - p) written as its second-order expansion (exact for 2 experts)")


# A row is kept when any of its features is positive; the bug keeps it when all are. At one
# feature the two are the same.
def any_all(t: int, h: int) -> Pair:
    def ref(x):
        return jnp.any(x > 0, axis=1).astype(F32)

    def ok(x):
        return (jnp.max(x, axis=1) > 0).astype(F32)

    def bug(x):
        return jnp.all(x > 0, axis=1).astype(F32)

    return Pair("any_all", "c", "small", {"tokens": t, "hidden": h}, [Arg((t, h))], ref, _jit_rows(ok),
                _jit_rows(bug), "the row mask is all(x > 0) instead of any(x > 0)")


# Per-feature counts of tokens above -1 over a sequence sharded by tp: local int32 counts
# psum'd in int32; the bug psums them as int8 to save bandwidth (wraps past 127 tokens).
def count_i8(s: int, h: int, variant: str = "small") -> Pair:
    local = s // TP

    def ref(x, w):
        y = x @ w
        return y * jnp.sum(y > -1.0, axis=0).astype(F32)

    def body(dt):
        def f(x, w):
            y = x @ w
            return y * lax.psum(jnp.sum(y > -1.0, axis=0).astype(dt), "tp").astype(F32)
        return f

    return Pair("count_i8", "o", variant, {"seq": s, "hidden": h, "local": local}, [Arg((s, h)), Arg((h, h))], ref,
                _smap(MESH_TP, body(I32), (P("tp", None), P(None, None)), P("tp", None)),
                _smap(MESH_TP, body(jnp.int8), (P("tp", None), P(None, None)), P("tp", None)),
                "the token counts are psum'd as int8 (wraps past 127)")


# Position weights pos^2 / sum(pos^2) over a sequence sharded by tp; the bug sums the
# squared positions in int32 (sum of i^2 for i < 2048 is 2.86e9: wraps) before converting.
def int_sum_wrap(s: int, h: int, variant: str = "small") -> Pair:
    local = s // TP

    def ref(x, wt):
        w = lax.iota(F32, s) ** 2
        return (x @ wt) * (w / jnp.sum(w))[:, None]

    def body(in_int):
        def f(x, wt):
            pos = _rows(local, (local,))
            if in_int:
                total = lax.psum(jnp.sum(pos * pos), "tp").astype(F32)
            else:
                total = lax.psum(jnp.sum(pos.astype(F32) ** 2), "tp")
            return (x @ wt) * (pos.astype(F32) ** 2 / total)[:, None]
        return f

    def sharded(in_int):
        return _smap(MESH_TP, body(in_int), (P("tp", None), P(None, None)), P("tp", None))

    return Pair("int_sum_wrap", "o", variant, {"seq": s, "hidden": h}, [Arg((s, h)), Arg((h, h))], ref, sharded(False),
                sharded(True), "the sum of squared positions is taken in int32 (wraps past 2^31)")


# Prefix positions of a packed row by a cumulative int8 count of the attention mask
# (positions past 127 wrap); the reference and the correct twin count in int32.
def cum_i8(b: int, s: int) -> Pair:
    def ref(x, m):
        return x * (jnp.cumsum(m, axis=1) - 1).astype(F32)

    def twin(dt):
        def f(x, m):
            return x * (jnp.cumsum(m.astype(dt), axis=1, dtype=dt) - 1).astype(F32)
        return f

    return Pair("cum_i8", "o", "small", {"batch": b, "seq": s}, [Arg((b, s)), Arg((b, s), I32, 2)], ref,
                _jit_rows(twin(I32)), _jit_rows(twin(jnp.int8)), "the prefix count of the mask is kept in int8")


# A decaying recurrence h_t = 0.9 h_{t-1} + x_t over the sequence (a linear RNN written as a
# scan; the features sharded by tp). The bug resets the state at step `cut` (a hard-coded
# document boundary) by a step counter it carries: at a sequence shorter than `cut` it never
# fires.
def scan_reset(s: int, h: int, cut: int, variant: str = "small") -> Pair:
    def rnn(x, cut_at):
        def step(carry, xt):
            state, t = carry
            if cut_at is not None:
                state = jnp.where(t == cut_at, jnp.zeros_like(state), state)
            state = 0.9 * state + xt
            return (state, t + 1), state
        return lax.scan(step, (jnp.zeros(x.shape[1:], F32), jnp.int32(0)), x)[1]

    def sharded(cut_at):
        return _smap(MESH_TP, lambda x: rnn(x, cut_at), (P(None, "tp"),), P(None, "tp"))

    return Pair("scan_reset", "t", variant, {"seq": s, "hidden": h, "cut": cut}, [Arg((s, h))],
                lambda x: rnn(x, None), sharded(None), sharded(cut),
                f"the recurrence's state is reset at step {cut} (a carried counter)")


# Gradient accumulation over m microbatches (a scan over the leading dim, batch rows
# sharded by tp): sum over microbatches of the per-feature sum of squares. The bug stops
# accumulating after `keep` microbatches (a counter carried by the scan).
def accum_skip(m: int, mb: int, h: int, keep: int, variant: str = "small") -> Pair:
    def acc(x, limit):
        def step(carry, xm):
            total, k = carry
            g = jnp.sum(xm * xm, axis=0)
            if limit is not None:
                g = jnp.where(k < limit, g, jnp.zeros_like(g))
            return (total + g, k + 1), None
        return lax.scan(step, (jnp.zeros(x.shape[2:], F32), jnp.int32(0)), x)[0][0]

    def sharded(limit):
        def f(x):
            return lax.psum(acc(x, limit), "tp")
        return _smap(MESH_TP, f, (P(None, "tp", None),), P(None))

    return Pair("accum_skip", "t", variant, {"micro": m, "mb": mb, "hidden": h}, [Arg((m, mb, h))],
                lambda x: acc(x, None), sharded(None), sharded(keep),
                f"microbatches from {keep} on are not accumulated")


# Llama-3's vocabulary (128256 words) sharded by tp for the lookup; tokens at or above
# 128000 (special tokens) are left out of the pooled sum. The bug forgets the mask: it
# differs only where an id reaches 128000, a literal above 2^16.
def special_ids(t: int, v: int, h: int, special: int, variant: str = "small", proj: int = 0) -> Pair:
    """`proj` > 0: the pooled sum added to a proj x proj projection of another input
    (replicated), so that the full-size check is over its compute budget while the embedding
    stays small."""
    vl = v // TP

    def pooled(emb, ids):
        rows = jnp.take(emb, ids, axis=0, mode="clip")
        return jnp.sum(jnp.where((ids < special)[:, None], rows, 0.0), axis=0)

    def body(masked):
        def f(emb, ids, *xw):
            local = ids - lax.axis_index("tp") * vl
            inside = (local >= 0) & (local < vl)
            rows = jnp.where(inside[:, None], jnp.take(emb, jnp.clip(local, 0, vl - 1), axis=0), 0.0)
            rows = lax.psum(rows, "tp")
            if masked:
                rows = jnp.where((ids < special)[:, None], rows, 0.0)
            out = jnp.sum(rows, axis=0)
            return xw[0] @ xw[1] + jnp.sum(out) if xw else out
        return f

    extra = [Arg((t, proj)), Arg((proj, proj))] if proj else []
    specs = (P("tp", None), P(None)) + (P(None, None),) * len(extra)
    out_specs = P(None, None) if proj else P(None)

    def sharded(masked):
        return _smap(MESH_TP, body(masked), specs, out_specs)

    def ref(emb, ids, *xw):
        return xw[0] @ xw[1] + jnp.sum(pooled(emb, ids)) if xw else pooled(emb, ids)

    sizes = {"tokens": t, "vocab": v, "hidden": h, "special": special} | ({"proj": proj} if proj else {})
    return Pair("special_ids", "a", variant, sizes, [Arg((v, h)), Arg((t,), I32, v), *extra], ref, sharded(True),
                sharded(False), f"tokens at or above {special} (special tokens) are not masked out")


# A 131072-long context whose positions past a limit are damped (float positions compared
# with a float literal above 2^16, sequence sharded by tp). The bug forgets the damping.
def long_ctx(s: int, h: int, limit: float, as_int: bool, variant: str = "small") -> Pair:
    local = s // TP
    name = "long_ctx_int" if as_int else "long_ctx"

    def damp(pos):
        past = (pos >= int(limit)) if as_int else (pos.astype(F32) >= limit)
        return jnp.where(past, 0.5, 1.0)

    def ref(x, w):
        return (x @ w) * damp(lax.iota(I32, s))[:, None]

    def body(damped):
        def f(x, w):
            return (x @ w) * damp(_rows(local, (local,)))[:, None] if damped else (x @ w) * 1.0
        return f

    def sharded(damped):
        return _smap(MESH_TP, body(damped), (P("tp", None), P(None, None)), P("tp", None))

    return Pair(name, "b", variant, {"seq": s, "hidden": h, "limit": int(limit)}, [Arg((s, h)), Arg((h, h))], ref,
                sharded(True), sharded(False), f"positions from {int(limit)} on are not damped")


# A loss weight that switches when more than `limit` tokens are positive (a count compared
# with a literal above 2^16; tokens sharded by tp). The bug compares with `wrong`.
def count_big(t: int, limit: int, wrong: int, as_float: bool = False) -> Pair:
    """`as_float`: the count taken as a float32 sum and compared with float literals."""
    dt = F32 if as_float else I32
    lim, bad = (float(limit), float(wrong)) if as_float else (limit, wrong)

    def ref(x):
        n = jnp.sum(x > 0, dtype=dt)
        return x * jnp.where(n > lim, 1.0, 2.0)

    def body(c):
        def f(x):
            n = lax.psum(jnp.sum(x > 0, dtype=dt), "tp")
            return x * jnp.where(n > c, 1.0, 2.0)
        return f

    def sharded(c):
        return _smap(MESH_TP, body(c), (P("tp"),), P("tp"))

    return Pair("count_big_f" if as_float else "count_big", "k", "small", {"tokens": t, "limit": limit}, [Arg((t,))],
                ref, sharded(lim),
                sharded(bad), f"the count is compared with {wrong} instead of {limit}")


# Positions whose square passes a threshold (a distance cut-off written on squared
# positions, `i * i >= r2`) are masked; the bug forgets the mask.
def pos_sq(s: int, h: int, r2: int, variant: str = "small") -> Pair:
    local = s // TP

    def ref(x):
        i = lax.iota(I32, s)
        return jnp.where((i * i >= r2)[:, None], 0.0, x)

    def body(masked):
        def f(x):
            i = _rows(local, (local,))
            return jnp.where((i * i >= r2)[:, None], 0.0, x) if masked else x * 1.0
        return f

    def sharded(masked):
        return _smap(MESH_TP, body(masked), (P("tp", None),), P("tp", None))

    return Pair("pos_sq", "b", variant, {"seq": s, "hidden": h, "r2": r2}, [Arg((s, h))], ref, sharded(True),
                sharded(False), f"positions with i^2 >= {r2} are not masked")


# Left-padded rows: positions are the prefix count of the attention mask minus one, and
# tokens at positions past `cap` are dropped (a maximum length). The sequence is sharded by
# tp: the correct twin adds the counts of the shards before it; the bug forgets the cap.
def cum_pos(b: int, s: int, cap: int, variant: str = "small") -> Pair:
    def ref(x, m):
        pos = jnp.cumsum(m, axis=1) - 1
        return jnp.where(pos < cap, x, 0.0)

    def body(capped):
        def f(x, m):
            tot = lax.all_gather(jnp.sum(m, axis=1), "tp")  # [tp, b]
            before = jnp.sum(jnp.where(jnp.arange(TP)[:, None] < lax.axis_index("tp"), tot, 0), axis=0)
            pos = jnp.cumsum(m, axis=1) - 1 + before[:, None]
            return jnp.where(pos < cap, x, 0.0) if capped else x * 1.0
        return f

    def sharded(capped):
        return _smap(MESH_TP, body(capped), (P(None, "tp"), P(None, "tp")), P(None, "tp"))

    return Pair("cum_pos", "k", variant, {"batch": b, "seq": s, "cap": cap}, [Arg((b, s)), Arg((b, s), I32, 2)],
                ref, sharded(True), sharded(False), f"tokens at prefix positions from {cap} on are not dropped")


# StreamingLLM attention: causal, within a window of `w`, plus the first `sinks` keys always
# visible; queries sharded by tp. The bug keeps one sink fewer.
def sinks(s: int, h: int, w: int, n_sinks: int) -> Pair:
    local = s // TP

    def mask(i, j, k):
        return ((j <= i) & ((j < k) | (i - j < w))).astype(F32)

    def ref(v):
        return mask(lax.broadcasted_iota(I32, (s, s), 0), lax.broadcasted_iota(I32, (s, s), 1), n_sinks) @ v

    def body(k):
        def f(v):
            return mask(_rows(local, (local, s)), lax.broadcasted_iota(I32, (local, s), 1), k) @ v
        return f

    def sharded(k):
        return _smap(MESH_TP, body(k), (P(None, None),), P("tp", None))

    return Pair("sinks", "b", "small", {"seq": s, "hidden": h, "window": w, "sinks": n_sinks}, [Arg((s, h))], ref,
                sharded(n_sinks), sharded(n_sinks - 1), f"{n_sinks - 1} attention sinks instead of {n_sinks}")


# The target logit picked from the flattened [tokens, vocab] logits at t * V + label; the
# bug computes the flat index in int16 (64 x 1024 = 2^16: wraps past 32767).
def flat_i16(t: int, v: int) -> Pair:
    def ref(logits, labels):
        return jnp.take_along_axis(logits, labels[:, None], axis=1)[:, 0]

    def twin(dt):
        def f(logits, labels):
            idx = jnp.arange(t, dtype=dt) * jnp.asarray(v, dt) + labels.astype(dt)
            return jnp.take(logits.reshape(-1), idx.astype(I32), mode="clip")
        return f

    return Pair("flat_i16", "o", "small", {"tokens": t, "vocab": v}, [Arg((t, v)), Arg((t,), I32, v)], ref,
                _jit_rows(twin(I32)), _jit_rows(twin(jnp.int16)), "the flat index t * V + label is computed in int16")


# fp16-style loss scaling by a literal equal to the hidden size: the correct twin scales the
# projected sum by `scale` and unscales by the same literal, the bug unscales by the sequence
# length (a different class of another size).
def loss_scale(s: int, hdim: int, variant: str = "small") -> Pair:
    scale = float(hdim)

    def ref(x, w):
        return jnp.sum(x @ w, axis=0) / s

    def twin(unscale):
        def f(x, w):
            return jnp.sum((x @ w) * scale, axis=0) / unscale / s
        return f

    return Pair("loss_scale", "a", variant, {"seq": s, "hidden": hdim}, [Arg((s, hdim)), Arg((hdim, hdim))], ref,
                _jit_rows(twin(scale)), _jit_rows(twin(float(s))),
                f"the loss is unscaled by {float(s)} (the sequence) instead of the scale {scale}")


# Positions past a half-integer limit (`pos > 40.5` as floats, a limit taken from a config in
# tokens plus a half for rounding) are masked; the bug forgets the mask.
def pos_half(s: int, h: int, limit: float, variant: str = "small") -> Pair:
    local = s // TP

    def ref(x):
        return jnp.where((lax.iota(F32, s) > limit)[:, None], 0.0, x)

    def body(masked):
        def f(x):
            pos = _rows(local, (local,)).astype(F32)
            return jnp.where((pos > limit)[:, None], 0.0, x) if masked else x * 1.0
        return f

    def sharded(masked):
        return _smap(MESH_TP, body(masked), (P("tp", None),), P("tp", None))

    return Pair("pos_half", "b", variant, {"seq": s, "hidden": h}, [Arg((s, h))], ref, sharded(True), sharded(False),
                f"positions past {limit} are not masked")


# The normaliser sum(pos^2) taken in int32 on each shard (4096 positions: shard 3's own
# sum is 1.3e10, past 2^31) as an integer dot product of its positions, then psum'd as a
# float (`dot`); or the whole sum(pos^2) over 2048 positions (2.9e9) as one int32
# `reduce` of a jit program (`reduce`). The correct twins sum in float.
def int_wrap(s: int, h: int, form: str) -> Pair:
    local = s // TP

    def ref(x):
        w = lax.iota(F32, s) ** 2
        return x * (w / jnp.sum(w))[:, None]

    def body(in_int):
        def f(x):
            pos = _rows(local, (local,))
            total = lax.psum(jnp.dot(pos, pos).astype(F32) if in_int else jnp.dot(pos.astype(F32), pos.astype(F32)),
                             "tp")
            return x * (pos.astype(F32) ** 2 / total)[:, None]
        return f

    def whole(in_int):
        def f(x):
            pos = lax.iota(I32, s)
            total = jnp.sum(pos * pos).astype(F32) if in_int else jnp.sum(pos.astype(F32) ** 2)
            return x * (pos.astype(F32) ** 2 / total)[:, None]
        return _jit_rows(f)

    if form == "dot":
        ok, bug = (_smap(MESH_TP, body(b), (P("tp", None),), P("tp", None)) for b in (False, True))
    else:
        ok, bug = whole(False), whole(True)
    return Pair(f"int_{form}_wrap", "o", "small", {"seq": s, "hidden": h}, [Arg((s, h))], ref, ok, bug,
                f"sum(pos^2) is an int32 {form} (wraps past 2^31)")


# Positions taken as floats (`arange(S, dtype=float32)`, as RoPE's angles want them) and
# stored as int8 for a small bucket table; the correct twin converts to int32 (256 positions:
# the int8 ones wrap from 128 on).
def fpos_i8(s: int, h: int) -> Pair:
    local = s // TP

    def ref(x):
        return x * (lax.iota(F32, s).astype(I32) // 16).astype(F32)[:, None]

    def body(dt):
        def f(x):
            pos = _rows(local, (local,)).astype(F32)
            return x * (pos.astype(dt).astype(I32) // 16).astype(F32)[:, None]
        return f

    ok, bug = (_smap(MESH_TP, body(dt), (P("tp", None),), P("tp", None)) for dt in (I32, jnp.int8))
    return Pair("fpos_i8", "o", "small", {"seq": s, "hidden": h}, [Arg((s, h))], ref, ok, bug,
                "float positions are stored as int8 (wrap from 128 on)")


# Token frequencies by a scatter-add of ones at the ids (duplicates add up), kept in int8;
# 16384 tokens over 64 words give ~256 per word: int8 counts wrap. The correct twin counts in
# int32, as the reference's one-hot sum does.
def bincount_i8(t: int, v: int, h: int) -> Pair:
    def ref(emb, ids):
        counts = jnp.sum(ids[:, None] == jnp.arange(v)[None, :], axis=0)
        return emb * counts.astype(F32)[:, None]

    def twin(dt):
        def f(emb, ids):
            counts = jnp.zeros((v,), dt).at[ids].add(jnp.ones(ids.shape, dt))
            return emb * counts.astype(F32)[:, None]
        return f

    return Pair("bincount_i8", "o", "small", {"tokens": t, "vocab": v, "hidden": h}, [Arg((v, h)), Arg((t,), I32, v)],
                ref, twin(I32), twin(jnp.int8), "the token counts are scatter-added in int8")


# RoPE on a sequence sharded by tp (positions tp * local + i); the bug's positions are rolled
# by the shard index (tp * local + (i + tp) % local), right on shard 0 only.
def rope_roll(s: int, d: int) -> Pair:
    local = s // TP
    inv = 1.0 / (10000.0 ** (jnp.arange(0, d, 2, dtype=F32) / d))

    def rope(x, pos):
        ang = pos.astype(F32)[:, None] * inv[None, :]
        x1, x2 = x[:, : d // 2], x[:, d // 2:]
        c, sn = jnp.cos(ang), jnp.sin(ang)
        return jnp.concatenate([x1 * c - x2 * sn, x1 * sn + x2 * c], axis=1)

    def body(rolled):
        def f(x):
            i = lax.iota(I32, local)
            i = (i + lax.axis_index("tp")) % local if rolled else i
            return rope(x, lax.axis_index("tp") * local + i)
        return f

    ok, bug = (_smap(MESH_TP, body(r), (P("tp", None),), P("tp", None)) for r in (False, True))
    return Pair("rope_roll", "h", "small", {"seq": s, "head_dim": d}, [Arg((s, d))],
                lambda x: rope(x, lax.iota(I32, s)), ok, bug, "RoPE positions rolled by the shard index")


# Top-2 over a vocabulary sharded by tp: each shard's top 2, gathered, then the top 2 of the
# candidates; the bug keeps only each shard's best (the second best of the whole vocabulary
# is lost when one shard holds both).
def topk_merge(b: int, v: int) -> Pair:
    def ref(x):
        return lax.top_k(x, 2)[0]

    def body(k_local):
        def f(x):
            cand = lax.all_gather(lax.top_k(x, k_local)[0], "tp", axis=1, tiled=True)
            return lax.top_k(cand, 2)[0]
        return f

    ok, bug = (_smap(MESH_TP, body(k), (P(None, "tp"),), P(None, None)) for k in (2, 1))
    return Pair("topk_merge", "c", "small", {"batch": b, "vocab": v}, [Arg((b, v))], ref, ok, bug,
                "each shard contributes its best logit only")


# Newton's pair of docs/shrinking.md with the cube written as `lax.pow(x, 3.0)` (a power with
# a constant exponent, as `x ** 3.0` on a traced exponent gives): per row, sum over the
# features of x^3 against 1.5 p1 p2 - 0.5 p1^3, equal for two features and no more; the
# correct twin cubes by multiplying.
def newton_pow(t: int, h: int) -> Pair:
    def ref(x):
        return jnp.sum(lax.pow(x, jnp.float32(3.0)), axis=1)

    def ok(x):
        return jnp.sum(x * x * x, axis=1)

    def bug(x):
        p1, p2 = jnp.sum(x, axis=1), jnp.sum(x * x, axis=1)
        return 1.5 * p1 * p2 - 0.5 * p1 * p1 * p1

    return Pair("newton_pow", "n", "small", {"tokens": t, "hidden": h}, [Arg((t, h))], ref, _jit_rows(ok),
                _jit_rows(bug), "sum(x^3) by Newton's identities for two features")


# Twice the mean of the first 7 features (the rest masked by `j < 7`, which keeps the hidden
# positions at 2 x 7 + 2 = 16), against the bug's sum divided by 8 written as a chain of
# nine power-of-two scalings (a loss scale, its unscale, accumulation and device factors):
# at hidden' = 16 the mean's 2 / hidden' is 1 / 8.
def ratio_chain(b: int, h: int) -> Pair:
    def masked(x):
        return jnp.where(lax.broadcasted_iota(I32, x.shape, 1) < 7, x, 0.0)

    def ref(x):
        return jnp.mean(masked(x), axis=1) * 2.0

    def ok(x):
        return jnp.sum(masked(x), axis=1) * 2.0 / h

    def bug(x):
        y = jnp.sum(masked(x), axis=1)
        for c in (0.5, 0.5, 0.5, 2.0, 0.5, 2.0, 0.5, 2.0, 0.5):
            y = y * c
        return y

    return Pair("ratio_chain", "a", "small", {"batch": b, "hidden": h}, [Arg((b, h))], ref, ok, bug,
                "the masked sum is divided by 8 (nine scalings) where twice the mean is right")


# An embedding lookup over Llama-3's 128256 words sharded by tp: the reference clamps the ids
# at the last row (jnp.take's clip mode), the correct twin's shards test their block; the
# bug clamps the ids at 99999 first (a stale vocabulary size, a literal above 2^16).
def clamp_big(t: int, v: int, h: int, cap: int) -> Pair:
    vl = v // TP

    def ref(emb, ids):
        return jnp.take(emb, ids, axis=0, mode="clip")

    def body(capped):
        def f(emb, ids):
            ids = jnp.minimum(ids, cap) if capped else ids
            local = ids - lax.axis_index("tp") * vl
            inside = (local >= 0) & (local < vl)
            rows = jnp.where(inside[:, None], jnp.take(emb, jnp.clip(local, 0, vl - 1), axis=0), 0.0)
            return lax.psum(rows, "tp")
        return f

    def sharded(capped):
        return _smap(MESH_TP, body(capped), (P("tp", None), P(None)), P(None, None))

    return Pair("clamp_big", "a", "small", {"tokens": t, "vocab": v, "hidden": h, "cap": cap},
                [Arg((v, h)), Arg((t,), I32, v)], ref, sharded(False), sharded(True),
                f"the ids are clamped at {cap} before the lookup")


# A 6-row table (per-expert biases of 6 experts) looked up at expert ids assumed in [0, 6):
# the reference clamps them at the last row with a literal 5 (below rule a's tie minimum 8),
# the correct twin with jnp.take's clip mode; the bug clamps at 4.
def small_clamp(t: int, e: int, h: int) -> Pair:
    def ref(table, ids):
        return jnp.take(table, jnp.minimum(ids, e - 1), axis=0, mode="clip")

    def ok(table, ids):
        return jnp.take(table, ids, axis=0, mode="clip")

    def bug(table, ids):
        return jnp.take(table, jnp.minimum(ids, e - 2), axis=0, mode="clip")

    return Pair("small_clamp", "a", "small", {"tokens": t, "experts": e, "hidden": h},
                [Arg((e, h)), Arg((t,), I32, e)], ref, ok, bug, f"the ids are clamped at {e - 2} instead of {e - 1}")


# Integer positions of a 131072-long context (jit, rows over dp) doubled and compared with
# 140000 (positions from 70000 on damped); the bug forgets the damping.
def long_ctx_scaled(s: int, h: int) -> Pair:
    def twin(damped):
        def f(x):
            pos = lax.iota(I32, s)
            return x * jnp.where(pos * 2 >= 140000, 0.5, 1.0)[:, None] if damped else x * 1.0
        return f

    return Pair("long_ctx_scaled", "b", "small", {"seq": s, "hidden": h}, [Arg((s, h))], twin(True),
                _jit_rows(twin(True)), _jit_rows(twin(False)), "positions with 2 pos >= 140000 are not damped")


# The mean over a batch of 64 rows sharded over 8 devices: the correct twin psums the local
# sums and divides by 64; the bug takes the pmean of the local sums (divides by the device
# count 8, where the local batch's count is missing). At one row per device the two agree.
def pmean_sums(b: int, h: int, variant: str = "small") -> Pair:
    def ref(x):
        return jnp.mean(x, axis=0)

    def body(device_mean):
        def f(x):
            s = jnp.sum(x, axis=0)
            return lax.pmean(s, "d") if device_mean else lax.psum(s, "d") / b
        return f

    def sharded(device_mean):
        return _smap(MESH_D, body(device_mean), (P("d", None),), P(None))

    return Pair("pmean_sums", "f", variant, {"batch": b, "hidden": h}, [Arg((b, h))], ref, sharded(False),
                sharded(True), "the loss is the pmean of the local sums (divided by 8 devices, not 64 rows)")


# The third-largest router logit of 8 experts by ranks (rank_i = #{j : x_j > x_i}; the logit
# of rank 2), a sort-free top-k; the correct twin writes the ranks with `>=` against the
# other experts; the bug takes the smallest logit, which is the third largest of 3.
def rank_third(t: int, e: int) -> Pair:
    def ranks(x):
        return jnp.sum(x[:, None, :] > x[:, :, None], axis=2)

    def ref(x):
        return jnp.sum(jnp.where(ranks(x) == 2, x, 0.0), axis=1)

    def ok(x):
        below = e - 1 - jnp.sum(x[:, :, None] >= x[:, None, :], axis=2) + 1  # ties broken as in ranks()
        return jnp.sum(jnp.where(below == 2, x, 0.0), axis=1)

    def bug(x):
        return jnp.min(x, axis=1)

    return Pair("rank_third", "k", "small", {"tokens": t, "experts": e}, [Arg((t, e))], ref, _jit_rows(ok),
                _jit_rows(bug), "the third-largest logit is taken as the smallest (right for 3 experts only)")


def pairs() -> list[Pair]:
    return [
        prod_pair(16, 8), any_all(16, 8), count_i8(256, 4), int_sum_wrap(2048, 4), cum_i8(4, 256),
        scan_reset(64, 8, 40), accum_skip(8, 8, 4, 6), special_ids(64, 128256, 8, 128000),
        long_ctx(131072, 2, 70000.0, False), long_ctx(131072, 2, 70000, True), count_big(131072, 70000, 60000),
        pos_sq(64, 4, 1600), cum_pos(4, 64, 40), sinks(64, 4, 16, 4), flat_i16(64, 1024), loss_scale(32, 64),
        pos_half(64, 4, 40.5), int_wrap(4096, 4, "dot"), int_wrap(2048, 4, "reduce"),
        fpos_i8(256, 4), bincount_i8(16384, 64, 4), rope_roll(64, 8), topk_merge(8, 64),
        newton_pow(16, 8), ratio_chain(4, 64), clamp_big(64, 128256, 8, 99999),
        small_clamp(64, 6, 4), long_ctx_scaled(131072, 2), pmean_sums(64, 4), rank_third(16, 8),
        count_big(131072, 70000, 60000, True),
        # realistic sizes
        prod_pair(16384, 64, "big"), scan_reset(2048, 4096, 1000, "big"), accum_skip(16, 512, 4096, 12, "big"),
        special_ids(2048, 128256, 64, 128000, "big", proj=4096), count_i8(2048, 4096, "big"),
        long_ctx(131072, 256, 70000.0, False, "big"), pos_sq(2048, 4096, 1000000, "big"),
        cum_pos(8, 2048, 1000, "big"), loss_scale(2048, 4096, "big"), int_sum_wrap(2048, 4096, "big"),
    ]


def main(only: list[str]) -> int:
    """Every pair, or (names given: `prod_pair.small ...`) only those, the others' manifest
    entries kept as they are."""
    if not only:
        return write_manifest(pairs(), "manifest_redteam3.json", ok_tol=1e-4)
    path = OUT / "manifest_redteam3.json"
    old = {f'{e["pair"]}.{e["variant"]}': e for e in json.loads(path.read_text())}
    chosen = [p for p in pairs() if f"{p.name}.{p.variant}" in only]
    write_manifest(chosen, "manifest_redteam3.json", ok_tol=1e-4)
    new = {f'{e["pair"]}.{e["variant"]}': e for e in json.loads(path.read_text())}
    entries = [new.get(k, old.get(k)) for k in (f"{p.name}.{p.variant}" for p in pairs())]
    path.write_text(json.dumps([e for e in entries if e is not None], indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
