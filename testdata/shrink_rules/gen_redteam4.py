"""A fourth red-team batch of shrinking pairs (helper-39): written against the two mechanisms
that closed red-team batch 3's last holes (docs/shrinking.md, rule a "implicit clamps" and
rule b "assumed ranges") and their neighbours: a mask skipped on the one device whose block
holds the literal (the literal's shard block), a mask applied on the last device only (what
2u + 2 keeps and u + 2 does not), two inputs whose assumed ranges end at two classes' sizes,
an assumed range that ends one below the vocabulary (it does not move with it), a range that
ends at a product of sizes (a flattened index), and a clamp at the tokens' last position
written as a computed value against a gather's own clamp, and ids capped before a
scatter-add (no assumed range; `.at[].add` and a raw `lax.scatter_add`). Token ids are assumed in their
range (`assume`, per pair in the manifest's `assume`: input -> the size its range ends at, or
a number). Same form as testdata/gen_shrink_rules.py, whose helpers this imports:
`<pair>.small.{ref,ok,bug}.mlir`, listed in `manifest_redteam4.json`; every twin run on XLA
at its original sizes (4 CPU devices for the shard_maps; the generator asserts that the
correct twin agrees with the reference and the bug twin differs).

    .venv/bin/python testdata/shrink_rules/gen_redteam4.py
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from gen_shrink_rules import I32, MESH_TP, TP, Arg, Pair, _smap, write_manifest  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

F32 = jnp.float32
# pair -> {input: the size name its assumed range [0, size) ends at, or an int}
ASSUME: dict[str, dict[str, str | int]] = {}


def _onehot_rows(emb_local, ids, vl):
    """A vocabulary-parallel lookup written as a one-hot matmul (no gather, as TPU code
    often writes it): this shard's rows of the ids, zero for ids in other shards."""
    local = ids - lax.axis_index("tp") * vl
    hot = (local[:, None] == lax.broadcasted_iota(I32, (ids.shape[0], vl), 1)).astype(F32)
    return hot @ emb_local


def _pooled_ref(u: int):
    def ref(emb, ids):
        rows = jnp.take(emb, ids, axis=0, mode="clip")
        return jnp.sum(jnp.where((ids < u)[:, None], rows, 0.0), axis=0)
    return ref


def _masked_sharded(v: int, keep_extra):
    """The pooled lookup over tp with the mask ids < u applied per device before the psum;
    `keep_extra(axis)`: the devices on which the mask is (wrongly) skipped."""
    vl = v // TP

    def body(u):
        def f(emb, ids):
            rows = _onehot_rows(emb, ids, vl)
            keep = (ids < u) | keep_extra(lax.axis_index("tp"))
            return lax.psum(jnp.sum(jnp.where(keep[:, None], rows, 0.0), axis=0), "tp")
        return f
    return body


# Special tokens from u = 100 of a 1024-word vocabulary over 4 devices (blocks of 256: u is
# in block 0); the bug skips the mask on device 0 ("its block is below the special tokens").
# At 2u + 2 = 202 the vocabulary is 256 (blocks of 64) and device 0 holds no id >= 100.
def skip_first(t: int, v: int, h: int, u: int) -> Pair:
    body = _masked_sharded(v, lambda axis: jnp.zeros((), bool))
    bad = _masked_sharded(v, lambda axis: axis == 0)
    spec = (P("tp", None), P(None))
    ASSUME["skip_first"] = {"arg1": "vocab"}
    return Pair("skip_first", "b", "small", {"tokens": t, "vocab": v, "hidden": h, "special": u},
                [Arg((v, h)), Arg((t,), I32, v)], _pooled_ref(u), _smap(MESH_TP, body(u), spec, P(None)),
                _smap(MESH_TP, bad(u), spec, P(None)), f"device 0 does not mask ids >= {u} (its block holds them)")


# The same lookup; the bug masks on the last device only ("special tokens sit at the end of
# the vocabulary"). With u + 2 = 102 the vocabulary is 128 (blocks of 32): devices 0-2 hold
# ids below 100 only and the bug hides; 2u + 2 keeps an unmasked block past u.
def last_only(t: int, v: int, h: int, u: int) -> Pair:
    body = _masked_sharded(v, lambda axis: jnp.zeros((), bool))
    bad = _masked_sharded(v, lambda axis: axis != TP - 1)
    spec = (P("tp", None), P(None))
    ASSUME["last_only"] = {"arg1": "vocab"}
    return Pair("last_only", "b", "small", {"tokens": t, "vocab": v, "hidden": h, "special": u},
                [Arg((v, h)), Arg((t,), I32, v)], _pooled_ref(u), _smap(MESH_TP, body(u), spec, P(None)),
                _smap(MESH_TP, bad(u), spec, P(None)), f"only the last device masks ids >= {u}")


# Token ids in [0, vocab) and labels in [0, classes) (two ranges ending at two classes'
# sizes); per-class label counts by a scatter-add (no gather, no iota along the classes),
# labels from `real` on (padding classes) left out. The bug counts them too. The literal
# meets the labels only: it must bound the classes, and the vocabulary may still shrink.
def two_ranges(t: int, v: int, c: int, h: int, real: int) -> Pair:
    def twin(kind):
        def f(emb, ids, w, labels):
            rows = jnp.sum(jnp.take(emb, ids, axis=0, mode="clip"), axis=0)
            if kind == "ref":
                counts = jnp.zeros((c,), F32).at[labels].add(jnp.where(labels < real, 1.0, 0.0))
            elif kind == "ok":
                counts = jnp.zeros((c,), F32).at[jnp.where(labels < real, labels, c)].add(1.0, mode="drop")
            else:
                counts = jnp.zeros((c,), F32).at[labels].add(1.0)
            return rows * jnp.dot(counts, w)
        return f
    ASSUME["two_ranges"] = {"arg1": "vocab", "arg3": "classes"}
    return Pair("two_ranges", "b", "small", {"tokens": t, "vocab": v, "classes": c, "hidden": h, "real": real},
                [Arg((v, h)), Arg((t,), I32, v), Arg((c,)), Arg((t,), I32, c)], twin("ref"),
                twin("ok"), twin("bug"), f"labels from {real} on (padding classes) are counted")


# Ids assumed in [0, vocab - 1) (a range that ends one below the vocabulary: it does not
# move with it), clamped at a literal cap before a gather that clamps at the last row.
def range_below(t: int, v: int, h: int, cap: int) -> Pair:
    def ref(emb, ids):
        return jnp.take(emb, ids, axis=0, mode="clip")

    def ok(emb, ids):
        return jnp.take(emb, jnp.minimum(ids, v - 1), axis=0, mode="clip")

    def bug(emb, ids):
        return jnp.take(emb, jnp.minimum(ids, cap), axis=0, mode="clip")
    ASSUME["range_below"] = {"arg1": v - 1}
    return Pair("range_below", "a", "small", {"tokens": t, "vocab": v, "hidden": h, "cap": cap},
                [Arg((v, h)), Arg((t,), I32, v - 1)], ref, ok, bug, f"the ids are clamped at {cap}")


# A flattened index into [tokens, vocab] logits (assumed in [0, tokens x vocab): a range
# that ends at a product of sizes); flat positions from `u` on are padding and masked. The
# bug forgets the mask.
def range_product(t: int, v: int, n: int, u: int) -> Pair:
    def twin(masked, clip):
        def f(logits, flat):
            table = logits.reshape(t * v)
            idx = jnp.clip(flat, 0, t * v - 1) if clip else flat
            got = jnp.take(table, idx, axis=0, mode="clip")
            return jnp.where(flat < u, got, 0.0) if masked else got
        return f
    ASSUME["range_product"] = {"arg1": "flat"}
    return Pair("range_product", "b", "small", {"tokens": t, "vocab": v, "picks": n, "flat": t * v, "padding": u},
                [Arg((t, v)), Arg((n,), I32, t * v)], twin(True, False), twin(True, True), twin(False, False),
                f"flat positions from {u} on are not masked")


# The gather's own clamp at V - 1 (the reference) against a clamp written as a computed
# value: the correct twin clamps at `vocab - 1` computed from the embedding's row count, the
# bug at `tokens - 1` (the ids' length: a size value of another class).
def clamp_computed(t: int, v: int, h: int) -> Pair:
    """The rows' squares summed over the tokens (Newton keeps two tokens at least), so that
    at two words and two tokens the two clamps would be one."""
    def ref(emb, ids):
        rows = jnp.take(emb, ids, axis=0, mode="clip")
        return jnp.sum(rows * rows, axis=0)

    def ok(emb, ids):
        last = lax.sub(jnp.asarray(emb.shape[0], I32), jnp.asarray(1, I32))
        rows = jnp.take(emb, jnp.minimum(ids, last), axis=0, mode="clip")
        return jnp.sum(rows * rows, axis=0)

    def bug(emb, ids):
        last = lax.sub(jnp.asarray(ids.shape[0], I32), jnp.asarray(1, I32))
        rows = jnp.take(emb, jnp.minimum(ids, last), axis=0, mode="clip")
        return jnp.sum(rows * rows, axis=0)
    ASSUME["clamp_computed"] = {"arg1": "vocab"}
    return Pair("clamp_computed", "a", "small", {"tokens": t, "vocab": v, "hidden": h},
                [Arg((v, h)), Arg((t,), I32, v)], ref, ok, bug, f"the ids are clamped at tokens - 1 = {t - 1}")


# Token counts per word by a scatter-add at the ids (no assumed range: jnp's scatter drops
# ids outside the vocabulary), the ids capped at a literal first in the bug. A scatter's own
# bounds check is the gather's clamp's twin: at a vocabulary below the cap the cap never
# decides a row.
def scatter_cap(t: int, v: int, h: int, cap: int) -> Pair:
    def twin(capped, ok):
        def f(x, ids):
            at = jnp.minimum(ids, cap) if capped else ids
            return jnp.zeros((v, h), F32).at[at].add(x, mode="drop") if ok else jnp.zeros((v, h), F32).at[at].add(x)
        return f
    return Pair("scatter_cap", "a", "small", {"tokens": t, "vocab": v, "hidden": h, "cap": cap},
                [Arg((t, h)), Arg((t,), I32, v)], twin(False, False), twin(False, True), twin(True, False),
                f"the ids are capped at {cap} before the scatter-add")


# The same counts by `lax.scatter_add` itself (no index normalisation: a raw
# stablehlo.scatter, which drops updates outside the vocabulary); the correct twin scatters
# the two halves of the tokens one after the other; the bug caps the ids at `cap`.
def scatter_raw(t: int, v: int, h: int, cap: int) -> Pair:
    dn = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                     scatter_dims_to_operand_dims=(0,))

    def add(base, ids, x):
        return lax.scatter_add(base, ids[:, None], x, dn)

    def ref(x, ids):
        return add(jnp.zeros((v, h), F32), ids, x)

    def ok(x, ids):
        half = t // 2
        return add(add(jnp.zeros((v, h), F32), ids[:half], x[:half]), ids[half:], x[half:])

    def bug(x, ids):
        return add(jnp.zeros((v, h), F32), jnp.minimum(ids, cap), x)
    return Pair("scatter_raw", "a", "small", {"tokens": t, "vocab": v, "hidden": h, "cap": cap},
                [Arg((t, h)), Arg((t,), I32, v)], ref, ok, bug,
                f"the ids are capped at {cap} before a raw scatter-add")


def pairs() -> list[Pair]:
    return [skip_first(16, 1024, 4, 100), last_only(16, 1024, 4, 100), two_ranges(16, 256, 64, 4, 40),
            range_below(16, 256, 4, 200), range_product(8, 64, 16, 300), clamp_computed(64, 256, 4),
            scatter_cap(16, 256, 4, 40), scatter_raw(16, 256, 4, 40)]


def main() -> int:
    jax.config.update("jax_enable_x64", False)
    chosen = pairs()
    write_manifest(chosen, "manifest_redteam4.json", ok_tol=1e-4, assume=ASSUME)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
