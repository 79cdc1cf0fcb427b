"""Shrinking-rule pairs for rule (a)'s literals that meet (docs/shrinking.md, rule a
"literals that meet"). Same form and XLA ground truth as testdata/gen_shrink_rules.py: per
pair and variant a reference, a correct twin and a bug twin, run on XLA at their original
sizes (the correct twin agrees with the reference, the bug twin differs), written to
`<pair>.<variant>.{ref,ok,bug}.mlir` and listed in `manifest_meets.json`.

    .venv/bin/python testdata/shrink_rules/gen_meets.py
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import jax.numpy as jnp  # noqa: E402
from gen_shrink_rules import I32, Arg, Pair, write_manifest  # noqa: E402


# (a, literals that meet) An embedding lookup whose ids are clamped at the vocabulary's
# last row, scaled by a RoPE-like frequency table over the hidden positions with the base
# `base` (a literal below the vocabulary, combined with hidden positions only). The
# correct twin writes the clamp as a select; the bug clamps the ids at the literal `cap`
# (the rows past it read row `cap`). The frequency base never meets the ids, so it need
# not keep the vocabulary above it; the bug's cap meets them (both clamp the ids) and must:
# with the vocabulary shrunk below the cap, the bug's clamp never bites and hides.
def meet_clamp(v: int, h: int, n: int, base: float, cap: int, variant: str) -> Pair:
    def scale():
        return 1.0 / (base ** (jnp.arange(h, dtype=jnp.float32) / h))

    def look(emb, rows):
        return jnp.take(emb, rows, axis=0, mode="clip") * scale()[None, :]

    def ref(emb, ids):
        return look(emb, jnp.minimum(ids, v - 1))

    def ok(emb, ids):
        return look(emb, jnp.where(ids < v - 1, ids, v - 1))

    def bug(emb, ids):
        return look(emb, jnp.minimum(ids, cap))

    return Pair("meet_clamp", "a", variant, {"vocab": v, "hidden": h, "tokens": n, "base": int(base), "cap": cap},
                [Arg((v, h)), Arg((n,), I32, v)], ref, ok, bug,
                f"the ids clamped at the literal {cap} instead of the vocabulary's last row")


def pairs() -> list[Pair]:
    return [meet_clamp(256, 8, 8, 100.0, 40, "small"), meet_clamp(32000, 8, 16, 10000.0, 1000, "big")]


def main() -> int:
    return write_manifest(pairs(), "manifest_meets.json")

if __name__ == "__main__":
    raise SystemExit(main())
