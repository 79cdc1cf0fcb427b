"""A third red-team batch of shrinking pairs (helper-36; testdata/shrink_rules/
gen_redteam3.py, manifest_redteam3.json: sharded training code aimed at the edges of
docs/shrinking.md's rules, each bug XLA-checked at the original sizes on 8 devices).

Every pair's verdict is held here, on its small variant (the realistic ones are listed in
the manifest; docs/shrinking.md, "Red-team batch 3", has their verdicts):
- a bug twin, verified with the full-size check and the second witness off (so that
  shrinking's rules are what is tested), is never `equivalent`; it is `not-equivalent`
  confirmed at the original sizes, or `unknown` for the reason recorded in UNKNOWN;
- a correct twin, verified as a user would (default options), never exits 1; it is
  `equivalent`, or `unknown` for the reason recorded in UNKNOWN.

The holes this batch found are HOLES: bug twins that shrinking's rules prove `equivalent`
(only the full-size check catches them, and only where it fits its budget: their
realistic variants are `equivalent` by default). Each is an `xfail(strict=True)` that names
the hole, so that the fix turns it into a failure to be unmarked."""
from __future__ import annotations

import json
from typing import Any

import pytest

import tv_mlir
from tests.conftest import TESTDATA

D = TESTDATA / "shrink_rules"
MANIFEST = json.loads((D / "manifest_redteam3.json").read_text())
RULES_ONLY: dict[str, Any] = {"full_size_check": "off", "second_witness": False}
# Integer inputs and the range the verdict assumes for them: token ids and labels inside the
# vocabulary (outside it jnp.take clips and a scatter-add wraps negative ids where the
# one-hot reference drops them: real differences these pairs are not about), attention
# masks of zeros and ones.
ASSUME = {"special_ids": ("arg1", "vocab"), "small_clamp": ("arg1", "experts"), "clamp_big": ("arg1", "vocab"), "flat_i16": ("arg1", "vocab"), "bincount_i8": ("arg1", "vocab"),
          "cum_i8": ("arg1", None), "cum_pos": ("arg1", None)}
# Shrinking's rules prove these bug twins equal at the shrunk sizes (the bug needs a size the
# plan does not keep); pair -> the hole. At the small sizes the full-size check then finds
# each (default options: `not-equivalent`, confirmed); at realistic sizes it is over its
# budget and the default verdict is a wrong `equivalent` (BIG_HOLES).
HOLES = {
    "count_i8": "integer overflow in an all_reduce: the int8 psum of per-shard token counts wraps past 127 at "
                "256 tokens; overflow.py has no interval for a compare, a reduce or a collective, so the tokens "
                "shrink to 16",
    "int_sum_wrap": "integer overflow in an all_reduce: the int32 psum of sum(pos^2) over 2048 positions "
                    "(2.9e9) wraps; the positions shrink to 16",
    "int_dot_wrap": "integer overflow in a dot_general: an int32 dot of a shard's 1024 positions with "
                    "themselves (1.3e10) wraps; the positions shrink to 16",
    "int_reduce_wrap": "integer overflow in a reduce: an int32 sum of pos^2 over 2048 positions wraps; "
                       "the positions shrink to 4",
    "bincount_i8": "integer overflow in a scatter-add: int8 token counts of 16384 tokens over 64 words wrap; "
                   "tokens and vocabulary shrink to 4",
    "special_ids": "rule a's literals stop at 2^16 (constants._ORDER_MAX): the mask ids < 128000 (Llama-3's "
                   "special tokens) is left out, the 128256-word vocabulary shrinks to 8 and the assumed ids "
                   "follow it below 128000",
    "clamp_big": "rule a's literals stop at 2^16: the ids clamped at 99999 (a literal that meets them where "
                 "jnp.take's clamp at V - 1 does) leave the 128256-word vocabulary free to shrink to 8",
    "long_ctx": "rule b's float window bounds stop at 2^16 (facts.position_constants): float positions compared "
                "with 70000.0 name no position, and the 131072 positions shrink to 4",
}
# Realistic variants (a 4096 x 4096 projection first: the full-size check is over its
# compute budget) whose default verdict is `equivalent`: the second witness's twofold sizes
# neither wrap nor reach 70000.
BIG_HOLES = {p: HOLES[p] for p in ("count_i8", "int_sum_wrap", "long_ctx", "special_ids")}
# (pair, twin) -> what its `unknown` says, and why.
UNKNOWN = {
    # the int16 flat index wraps (overflow.py pins tokens and vocabulary): 65536 symbolic
    # positions of the flattened logits are not encoded
    ("flat_i16", "bug"): "symbolic positions", ("flat_i16", "ok"): "symbolic positions",
}
# The small pairs held here: each twin's verdict takes at most a few seconds on two shared
# cores. The others (cum_i8, scan_reset, long_ctx_int, long_ctx_scaled, count_big, count_big_f,
# flat_i16, fpos_i8, pos_half, topk_merge, newton_pow: 6 to 200 s, kept classes, XLA replays or replays of 131072 rows) are in the manifest with
# their verdicts in docs/shrinking.md ("Red-team batch 3").
FAST = ["prod_pair", "any_all", "accum_skip", "pos_sq", "cum_pos", "sinks", "loss_scale", "rope_roll", "pmean_sums",
        "rank_third", "small_clamp", "ratio_chain"]
FAST_OK = FAST + ["count_i8", "int_sum_wrap", "int_dot_wrap", "int_reduce_wrap", "pos_half", "fpos_i8"]


def _cases(pairs: list[str], holes: dict[str, str]) -> list:
    return [pytest.param(p, id=p, marks=[pytest.mark.xfail(strict=True, raises=AssertionError, reason=holes[p])] if p in holes else [])
            for p in pairs]


def _verify(pair: str, kind: str, variant: str = "small", **kw: Any) -> tv_mlir.Verdict:
    e = next(x for x in MANIFEST if x["pair"] == pair and x["variant"] == variant)
    if pair in ASSUME:
        name, size = ASSUME[pair]
        kw["assume"] = {name: (0, e["sizes"][size] if size else 2)}
    return tv_mlir.verify(str(D / e["files"]["ref"]), str(D / e["files"][kind]), timeout_s=60, **kw)


def test_manifest_lists_every_pair_ran_on_xla() -> None:
    assert len({e["pair"] for e in MANIFEST}) >= 15
    for e in MANIFEST:
        assert e["ran_on_xla"] or e["variant"] == "big", e
        for f in e["files"].values():
            assert (D / f).exists(), f
    # no pair of the earlier batches again
    earlier = {e["pair"] for m in ("manifest_redteam.json", "manifest_redteam2.json")
               for e in json.loads((D / m).read_text())}
    assert not earlier & {e["pair"] for e in MANIFEST}
    assert set(HOLES) | set(FAST_OK) <= {e["pair"] for e in MANIFEST if e["variant"] == "small"}


@pytest.mark.parametrize("pair", _cases(FAST + sorted(HOLES), HOLES))
def test_bug_twin_is_never_equivalent(pair: str) -> None:
    v = _verify(pair, "bug", **RULES_ONLY)
    assert v.verdict != "equivalent", v.reason
    if (pair, "bug") in UNKNOWN:
        assert v.verdict == "unknown" and UNKNOWN[pair, "bug"] in v.reason, v.reason
        return
    c = v.counterexample
    assert v.verdict == "not-equivalent" and v.exit_code == 1, v.reason
    assert c is not None and c.confirmed and c.confirmed_at == "original sizes", (c, v.reason)


@pytest.mark.parametrize("pair", _cases(FAST_OK, {}))
def test_correct_twin_never_exits_1(pair: str) -> None:
    v = _verify(pair, "ok")
    assert v.exit_code != 1, v.reason
    if (pair, "ok") in UNKNOWN:
        assert v.verdict == "unknown" and UNKNOWN[pair, "ok"] in v.reason, v.reason
    else:
        assert v.verdict == "equivalent", v.reason


@pytest.mark.parametrize("pair", _cases(sorted(BIG_HOLES), BIG_HOLES))
def test_realistic_bug_twin_is_never_equivalent_by_default(pair: str) -> None:
    v = _verify(pair, "bug", "big")
    assert v.full_size_check is not None and not v.full_size_check.ran, v.full_size_check
    assert v.verdict != "equivalent", v.reason
