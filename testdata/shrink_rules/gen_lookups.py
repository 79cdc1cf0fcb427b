"""Shrinking-rule pairs for rule (k)'s index predicates and counts through uninterpreted ops
(docs/shrinking.md, rule k "lookups" and "atoms"). Same form and XLA ground truth as
testdata/gen_shrink_rules.py: per pair and variant a reference, a correct twin and a bug
twin, run on XLA at their original sizes (the correct twin agrees with the reference, the
bug twin differs), written to `<pair>.<variant>.{ref,ok,bug}.mlir` and listed in
`manifest_lookups.json`.

    .venv/bin/python testdata/shrink_rules/gen_lookups.py
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from gen_shrink_rules import I32, OUT, RUN_LIMIT, Arg, Pair, _max_diff, write_twins  # noqa: E402

SHARDS = 4


# (k, index predicates) A vocabulary-parallel embedding lookup written out in one program:
# the vocabulary of v words in SHARDS blocks; each block contributes its row where the
# token lies in it (`t < off or t > off + vs - 1` masks it to 0), and the rows add up, as
# XLA's partitioned lookup does with its offset table. The tokens then meet exp and log
# over the sequence (a log-sum-exp of a per-token score, plus a sum of squares), so rule (k) pinned
# the token class. With `tokens in [0, v)` assumed, the shard tests split the tokens into
# 4 types and rule (k) bounds the class instead. The bug's mask of each block ends one
# word early (`off + vs - 2`): the last word of every block reads a zero row.
def lookup_shards(v: int, h: int, n: int, variant: str) -> Pair:
    vs = v // SHARDS

    def tail(x, w):
        s = x @ w  # [n]
        return jax.nn.logsumexp(s) + 0.5 * jnp.sum(x * x)

    def ref(emb, w, ids):
        return tail(emb[ids], w)

    def sharded(last):
        def fn(emb, w, ids):
            rows = []
            for j in range(SHARDS):
                off = j * vs
                out = (ids < off) | (ids > off + last)
                local = jnp.take(emb[off:off + vs], jnp.clip(ids - off, 0, vs - 1), axis=0)
                rows.append(jnp.where(out[:, None], 0.0, local))
            return tail(sum(rows), w)
        return fn

    return Pair("lookup_shards", "k", variant, {"vocab": v, "hidden": h, "tokens": n},
                [Arg((v, h)), Arg((h,)), Arg((n,), I32, v)], ref, sharded(vs - 1), sharded(vs - 2),
                "each vocabulary block's mask ends one word early: the block's last word reads a zero row")


# (k, atoms) count_triples (gen_more.py) inside exp: C(k, 3) of the count of positive
# entries, scaled to about 1 at half the entries, through exp; the bug divides by 3
# instead of 3!, which agrees for k = 0, 1, 2. A count through an uninterpreted op has
# its argument's degree (3), not none.
def count_exp(n: int, variant: str) -> Pair:
    half = n // 2
    scale = 6.0 / (half * (half - 1) * (half - 2))  # C(k, 3) * scale is about 1 at k = n / 2

    def count(x):
        return jnp.sum((x > 0).astype(jnp.float32))

    def ref(x):
        k = count(x)
        return jnp.exp(k * (k - 1) * (k - 2) / 6.0 * scale) + jnp.sum(x)

    def ok(x):
        k = count(x)
        return jnp.exp(scale * ((k - 2) * (k - 1) * k / 6.0)) + jnp.sum(x)

    def bug(x):
        k = count(x)
        return jnp.exp(k * (k - 1) * (k - 2) / 3.0 * scale) + jnp.sum(x)

    return Pair("count_exp", "k", variant, {"n": n}, [Arg((n,))], ref, ok, bug,
                "C(k, 3) inside exp divided by 3, not 3!: equal for counts up to 2")


def pairs() -> list[Pair]:
    return [lookup_shards(64, 4, 32, "small"), lookup_shards(32000, 8, 2048, "big"),
            count_exp(64, "small")]  # a big variant's witness (k = 3 at 8 entries) moves exp by 1e-8


def main() -> int:
    manifest = []
    for p in pairs():
        stem = f"{p.name}.{p.variant}"
        specs = [a.spec() for a in p.args]
        ran = sum(int(np.prod(a.shape)) for a in p.args) <= RUN_LIMIT
        if ran:
            ok_diff, bug_diff = _max_diff(p, p.ref, p.ok), _max_diff(p, p.ref, p.bug)
            assert ok_diff < 1e-5, f"{stem}: the correct twin differs from the reference by {ok_diff}"
            assert bug_diff > 1e-3, f"{stem}: the bug twin does not differ from the reference ({bug_diff})"
            print(f"{stem}: ok {ok_diff:.2e}, bug {bug_diff:.2e}")
        manifest.append(write_twins(p, stem, specs, ran))
    (OUT / "manifest_lookups.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
