"""Shrinking-rule pairs for the gaps left open after rules a-k (issue 12): ratios of a size
(a size value scaled by a literal factor, against a literal), positions that reach a
constant through a gather, and a count whose predicate reads other positions (the
degree of a compare). Same form and XLA ground truth as testdata/gen_shrink_rules.py,
whose helpers this imports: per pair and variant a reference, a correct twin and a bug
twin, run on XLA at their original sizes (the correct twin agrees with the reference, the
bug twin differs), written to `<pair>.<variant>.{ref,ok,bug}.mlir` and listed in
`manifest_gaps.json`.

    .venv/bin/python testdata/shrink_rules/gen_gaps.py
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

F32 = jnp.float32


# (a, ratios) A mean scaled by 2 against a sum divided by the literal 8. At the original
# sizes the reference divides by hidden / 2 = 2048 and the bug by 8; rule (a) keeps the
# mean's divisor above the literal (hidden' > 8), but the scaled divisor hidden' / 2 is
# what meets it: at hidden' = 16 both divide by 8.
def ratio_scaled(b: int, h: int, variant: str) -> Pair:
    def ref(x):
        return jnp.mean(x, axis=1) * 2.0

    def ok(x):
        return jnp.sum(x, axis=1) * 2.0 / h

    def bug(x):
        return jnp.sum(x, axis=1) / 8.0

    return Pair("ratio_scaled", "a", variant, {"batch": b, "hidden": h}, [Arg((b, h))], ref, ok, bug,
                "the sum is divided by 8 where twice the mean (a divide by hidden / 2) is right")


# (a, ratios above a size) Half a mean, written once as mean * 0.5 and once with the
# folded reciprocal 0.5 / hidden = 1 / 8192: a literal twice the size, which no rewrite
# ties to the class. Kept at 8192 while hidden shrinks, the correct twin divides by 8192
# where the reference divides by 2 hidden': a difference the original programs do not have.
def ratio_above(b: int, h: int, variant: str) -> Pair:
    def ref(x):
        return jnp.mean(x, axis=1) * 0.5

    def ok(x):
        return jnp.sum(x, axis=1) * (0.5 / h)

    def bug(x):
        return jnp.sum(x, axis=1) * (1.0 / h)

    return Pair("ratio_above", "a", variant, {"batch": b, "hidden": h}, [Arg((b, h))], ref, ok, bug,
                "the mean is not halved")


# (b, positions through a gather) Tokens looked up by id (a permutation of the sequence
# or a packed batch's position ids), each with its position as a feature, and masked past
# position T. The reference reads the position through a gather of the iota
# (arange(S)[ids] >= T); the correct twin compares the ids themselves; the bug has no
# mask. At a shrunk sequence every id is below T and the mask never fires.
def pos_gather(t: int, s: int, h: int, thr: int, variant: str) -> Pair:
    # Lookups clamp out-of-range ids (mode="clip", no index constants: a clip at S - 1
    # would be a size value that rule (a) keeps above T by itself); the correct twin's
    # compare of the id agrees for every int32 id, as S - 1 >= T.
    def rows(x, ids):
        pos = jnp.arange(s, dtype=F32)
        return pos, jnp.take(x + pos[:, None], ids, axis=0, mode="clip")

    def ref(x, ids):
        pos, g = rows(x, ids)
        return jnp.where((jnp.take(pos, ids, mode="clip") >= float(thr))[:, None], 0.0, g)

    def ok(x, ids):
        _, g = rows(x, ids)
        return jnp.where((ids.astype(F32) >= float(thr))[:, None], 0.0, g)

    def bug(x, ids):
        return rows(x, ids)[1]

    return Pair("pos_gather", "b", variant, {"tokens": t, "seq": s, "hidden": h, "threshold": thr},
                [Arg((s, h)), Arg((t,), I32, s)], ref, ok, bug,
                f"the mask of tokens at position >= {thr} (a gather of an iota compared with {thr}) is missing")


# (b, positions picked by a one-hot) The same lookup written as TPU code writes it: a
# one-hot matrix of the ids times the table, and times the positions (one_hot(ids, S) @
# arange(S) is the id's position). A sum, not a move: the reference's mask reads a
# position through a dot. An id outside [0, S) has a zero one-hot row (a zero token,
# unmasked either way), so the correct twin agrees at every int32 input and every size.
def pos_onehot(t: int, s: int, h: int, thr: int, variant: str) -> Pair:
    def rows(x, ids):
        pos = jnp.arange(s, dtype=F32)
        oh = jax.nn.one_hot(ids, s, dtype=F32)
        return oh @ pos, oh @ (x + pos[:, None])

    def ref(x, ids):
        p, g = rows(x, ids)
        return jnp.where((p >= float(thr))[:, None], 0.0, g)

    def ok(x, ids):
        _, g = rows(x, ids)
        return jnp.where((ids.astype(F32) >= float(thr))[:, None], 0.0, g)

    def bug(x, ids):
        return rows(x, ids)[1]

    return Pair("pos_onehot", "b", variant, {"tokens": t, "seq": s, "hidden": h, "threshold": thr},
                [Arg((s, h)), Arg((t,), I32, s)], ref, ok, bug,
                f"the mask of tokens at position >= {thr} (one_hot(ids) @ arange(S) compared with {thr}) is missing")


# (k, a compare of the degree) C(k, 3) for k the number of tokens above the mean: a
# predicate that reads every position. The bug divides by 3 instead of 3! (equal for
# k = 0, 1, 2). The compare counts as degree 1 in the summand; what keeps the bug visible
# is rule (k), not the degree.
def count_above_mean(n: int, variant: str) -> Pair:
    def count(x):
        return jnp.sum(jnp.where(x > jnp.mean(x), 1.0, 0.0))

    def ref(x):
        k = count(x)
        return k * (k - 1.0) * (k - 2.0) / 6.0

    def twin(divisor: float):
        def f(x):
            k = count(x)
            return (k * k * k - 3.0 * k * k + 2.0 * k) / divisor
        return f

    return Pair("count_above_mean", "k", variant, {"tokens": n}, [Arg((n,))], ref, twin(6.0), twin(3.0),
                "C(k, 3) of the count of tokens above the mean divides by 3 instead of 6")


def pairs() -> list[Pair]:
    return [
        ratio_scaled(12, 64, "small"), ratio_scaled(128, 4096, "big"),
        ratio_above(12, 64, "small"), ratio_above(128, 4096, "big"),
        pos_gather(8, 64, 4, 40, "small"), pos_gather(64, 2048, 4096, 1000, "big"),
        pos_onehot(8, 64, 4, 40, "small"), pos_onehot(64, 2048, 4096, 1000, "big"),
        count_above_mean(64, "small"), count_above_mean(32768, "big"),
    ]


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
    (OUT / "manifest_gaps.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
