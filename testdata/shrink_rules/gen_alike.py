"""Shrinking-rule pairs for rule (a), classes of one size (docs/shrinking.md): a constant
that is the size (or size - 1) of several classes of one original size, like a vocabulary
of 32000 words that is both the embedding's rows and the LM head's columns (two classes no
op joins). Such a constant was ambiguous and pinned both classes; now the classes grow to
one size and the constant is rewritten with it. Same form and XLA ground truth as
testdata/gen_shrink_rules.py: per pair and variant a reference, a correct twin and a bug
twin, run on XLA at their original sizes (the correct twin agrees with the reference, the
bug twin differs), written to `<pair>.<variant>.{ref,ok,bug}.mlir` and listed in
`manifest_alike.json`.

    .venv/bin/python testdata/shrink_rules/gen_alike.py
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from gen_shrink_rules import I32, OUT, RUN_LIMIT, Arg, Pair, _max_diff, write_twins  # noqa: E402


# (a, classes of one size) Embedding lookup and the LM head's target logit over one
# vocabulary size v, two classes: the tokens and the targets are clipped to [0, v - 1]
# with the literal v - 1 (the constant names both classes). The output adds the mean of
# the cubed logits over the vocabulary (a sum would drown the pick), so that the head's
# vocabulary needs Newton's degree 3 where the embedding's needs 2 (two sizes the classes
# must not keep: a clip at one class's v' - 1 would index past the other's). The correct
# twin clips with jnp.take's own clip mode and min/max; the bug clips the targets at
# v - 2, so a target v - 1 reads the word before it.
def vocab_alike(v: int, h: int, t: int, variant: str) -> Pair:
    def logits(emb, w, ids):
        return emb[ids] @ w

    def out(x, picked):
        return picked[:, 0] + jnp.mean(x ** 3, axis=1)

    def ref(emb, w, ids, tgt):
        x = logits(emb, w, jnp.clip(ids, 0, v - 1))
        return out(x, jnp.take_along_axis(x, jnp.clip(tgt, 0, v - 1)[:, None], axis=1))

    def ok(emb, w, ids, tgt):
        x = jnp.take(emb, ids, axis=0, mode="clip") @ w
        return out(x, jnp.take_along_axis(x, jnp.minimum(jnp.maximum(tgt, 0), v - 1)[:, None], axis=1))

    def bug(emb, w, ids, tgt):
        x = logits(emb, w, jnp.clip(ids, 0, v - 1))
        return out(x, jnp.take_along_axis(x, jnp.clip(tgt, 0, v - 2)[:, None], axis=1))

    return Pair("vocab_alike", "a", variant, {"vocab": v, "hidden": h, "tokens": t},
                [Arg((v, h)), Arg((h, v)), Arg((t,), I32, v), Arg((t,), I32, v)], ref, ok, bug,
                "the targets are clipped at vocab - 2, not vocab - 1")


def pairs() -> list[Pair]:
    return [vocab_alike(64, 4, 8, "small"), vocab_alike(32000, 8, 16, "big")]


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
    (OUT / "manifest_alike.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
