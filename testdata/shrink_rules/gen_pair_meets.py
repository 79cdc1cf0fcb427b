"""Shrinking-rule pairs for rule (a)'s size values that meet (docs/shrinking.md, rule a
"size values that meet"). Same form and XLA ground truth as testdata/gen_shrink_rules.py:
per pair and variant a reference, a correct twin and a bug twin, run on XLA at their
original sizes (the correct twin agrees with the reference, the bug twin differs), written
to `<pair>.<variant>.{ref,ok,bug}.mlir` and listed in `manifest_pair_meets.json`.

    .venv/bin/python testdata/shrink_rules/gen_pair_meets.py
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import jax.numpy as jnp  # noqa: E402
from gen_shrink_rules import I32, Arg, Pair, write_manifest  # noqa: E402


# (a, size values that meet) An embedding lookup of n tokens whose ids are clamped at the
# vocabulary's last row (a size value of the vocabulary, V - 1, combined with the ids),
# masked where an id is negative (a select whose predicate reads the ids and whose branch
# is the looked-up row), then the mean over the tokens of the squared rows (a size value of
# the tokens, n, combined with the rows: the embedding's data, which the ids only pick).
# V > n at the original sizes. The two size values never meet, so the vocabulary need not
# stay above the tokens. The bug clamps the ids at the tokens' last position n - 1, a size
# value of the tokens combined with the ids where the reference combines V - 1: the two
# meet and must keep their order, or at V' = n' the bug's clamp is the reference's.
def pair_clamp(v: int, h: int, n: int, variant: str) -> Pair:
    def look(emb, ids, last):
        rows = jnp.take(emb, jnp.minimum(ids, last), axis=0, mode="clip")
        rows = jnp.where((ids >= 0)[:, None], rows, 0.0)
        return jnp.mean(rows * rows, axis=0)

    def ref(emb, ids):
        return look(emb, ids, v - 1)

    def ok(emb, ids):
        rows = jnp.take(emb, jnp.where(ids < v - 1, ids, v - 1), axis=0, mode="clip")
        rows = jnp.where((ids >= 0)[:, None], rows, 0.0)
        return jnp.sum(rows * rows, axis=0) / n

    def bug(emb, ids):
        return look(emb, ids, n - 1)

    return Pair("pair_clamp", "a", variant, {"vocab": v, "hidden": h, "tokens": n},
                [Arg((v, h)), Arg((n,), I32, v)], ref, ok, bug,
                "the ids clamped at the tokens' last position instead of the vocabulary's last row")


def pairs() -> list[Pair]:
    return [pair_clamp(64, 4, 16, "small"), pair_clamp(32000, 8, 2048, "big")]


def main() -> int:
    return write_manifest(pairs(), "manifest_pair_meets.json")

if __name__ == "__main__":
    raise SystemExit(main())
