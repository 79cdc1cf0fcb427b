"""Equal reference values held by one value of the other program (`lineage.Link.also`,
docs/stages.md "Equal reference values"). XLA folds RMSNorm's `x - 0` (flax subtracts a
zero mean): the partitioned module has one value where the reference has two equal ones,
the embedding lookup (also the residual) and `x - 0`. Linked to only one of them, the other
is held by nothing while it is live, and no cut is admissible until the residual add."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from conftest import capture_stages
from tv_mlir.api import prepare, verify
from tv_mlir.options import Options
from tv_mlir.stages import lineage

QUICK = dict(full_size_check="off", second_witness=False, stage_min_elements=0, cache=False, shrink=False,
             jobs=1)
T = "tensor<4x8xf32>"


def _chain(b: str, use: str) -> str:
    """A block of ops that reads `b` at every step (an attention block reads its normed
    input throughout), then the residual add of `use`."""
    lines = [f"  %s1 = stablehlo.multiply {b}, {b} : {T}", f"  %t1 = stablehlo.tanh %s1 : {T}"]
    for k in range(1, 6):
        lines += [f"  %u{k} = stablehlo.multiply %t{k}, {b} : {T}", f"  %t{k + 1} = stablehlo.tanh %u{k} : {T}"]
    lines += [f"  %r = stablehlo.add {use}, %t6 : {T}", f"  return %r : {T}"]
    return "\n".join(lines)


# The reference: the "lookup" a, its `a - 0` b, the block on b, the residual a + block.
REF = f"""
func.func @main(%x: {T}, %w: {T}) -> {T} {{
  %z = stablehlo.constant dense<0.0> : {T}
  %a = stablehlo.multiply %x, %w : {T}
  %b = stablehlo.subtract %a, %z : {T}
{_chain("%b", "%a")}
}}
"""
# XLA's form: `a - 0` folded; the lookup made from scaled copies (exactly x * w: powers of
# two), which no reference value reads, so the lineage links v by position alone, to the
# nearer `a - 0`, and the lookup's own value is only held as an equal one.
FOLDED = f"""
func.func @main(%x: {T}, %w: {T}) -> {T} {{
  %two = stablehlo.constant dense<2.0> : {T}
  %half = stablehlo.constant dense<0.5> : {T}
  %x2 = stablehlo.multiply %x, %two : {T}
  %w2 = stablehlo.multiply %w, %half : {T}
  %v = stablehlo.multiply %x2, %w2 : {T}
{_chain("%v", "%v")}
}}
"""
# The bug twin: the residual is clamped. On the random runs the clamp changes nothing, so
# the clamped value equals the lookup there and may be linked to it (as its own value or an
# equal one); only the proof sees a large input.
CLAMPED = f"""
func.func @main(%x: {T}, %w: {T}) -> {T} {{
  %two = stablehlo.constant dense<2.0> : {T}
  %half = stablehlo.constant dense<0.5> : {T}
  %lo = stablehlo.constant dense<-1000.0> : {T}
  %hi = stablehlo.constant dense<1000.0> : {T}
  %x2 = stablehlo.multiply %x, %two : {T}
  %w2 = stablehlo.multiply %w, %half : {T}
  %v = stablehlo.multiply %x2, %w2 : {T}
  %c = stablehlo.clamp %lo, %v, %hi : ({T}, {T}, {T}) -> {T}
{_chain("%v", "%c")}
}}
"""


def _seen(monkeypatch: pytest.MonkeyPatch) -> list:
    return capture_stages(monkeypatch)


def test_the_folded_value_holds_both_and_the_block_is_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _seen(monkeypatch)
    shared: list = []
    real = lineage.find

    def find(*args, **kwargs):  # type: ignore[no-untyped-def]
        links = real(*args, **kwargs)
        shared.extend(links[v] for v in links if links[v].also)
        return links

    monkeypatch.setattr(lineage, "find", find)
    v = verify(REF, FOLDED, **QUICK)
    assert v.verdict == "equivalent", v.reason
    assert v.stages["used"] and v.stages.get("failed") is None
    # v's own link is `a - 0` (nearer), and it holds the lookup as an equal value.
    ops: dict[str, str] = {}
    for op in prepare(REF, Options()).main.body.ops:
        ops.setdefault(op.name, op.results[0])
    a, b = ops["stablehlo.multiply"], ops["stablehlo.subtract"]
    assert [(k.ref, k.also) for k in shared] == [(b, (a,))]
    assert len(seen) >= 10 and max(s.ref_ops for s in seen) <= 2  # 15 stages of one reference op
    # Some stage reads the lookup through v's slot: the reference's input is a copy of it.
    assert any(op.name == "stablehlo.reshape" and op.results == (a,) for s in seen for op in s.ref.main.body.ops)


def test_without_the_equal_value_no_cut_before_the_residual(monkeypatch: pytest.MonkeyPatch) -> None:
    """The mutation the test above guards against: one reference value per link. The
    lookup is then held by nothing until the residual add, and the pair is one stage."""
    seen = _seen(monkeypatch)
    monkeypatch.setattr(lineage, "_shared", lambda links, found, last_use: links)
    v = verify(REF, FOLDED, **QUICK)
    assert v.verdict == "equivalent", v.reason
    assert not v.stages.get("used") or max(s.ref_ops for s in seen) > 10


def test_a_clamped_residual_stays_not_equivalent(monkeypatch: pytest.MonkeyPatch) -> None:
    """The clamp is invisible on the random runs, so the lineage may take the clamped value
    for the lookup; the stage that claims so fails its proof, and the verdict is the whole
    proof's: the large input it finds."""
    v = verify(REF, CLAMPED, **QUICK)
    assert v.verdict == "not-equivalent", v.reason
    assert v.counterexample is not None


def _global() -> SimpleNamespace:
    return SimpleNamespace(per_device=False, arg_shardings=(), result_shardings=(), num_devices=1)


def test_which_equal_values_are_shared() -> None:
    """Only float values that vary between the runs, equal exactly, not held by a value of
    their own that lives as long as the holder."""
    rng = np.random.default_rng(3)
    base = [rng.normal(size=(4, 8)) for _ in range(3)]
    ones = [np.ones((4, 8)) for _ in range(3)]
    ints = [rng.integers(0, 50, size=(4, 8)) for _ in range(3)]
    ref = {"a": base, "b": [x.copy() for x in base], "c": [x.copy() for x in base],
           "near": [x + 1e-9 for x in base],
           "m1": ones, "m2": [x.copy() for x in ones], "i1": ints, "i2": [x.copy() for x in ints]}
    other = {"v": [x.copy() for x in base], "w": [x.copy() for x in base], "o": [x.copy() for x in ones],
             "j": [x.copy() for x in ints]}
    rank_r = {"a": 0.1, "b": 0.2, "c": 0.5, "near": 0.15, "m1": 0.6, "m2": 0.7, "i1": 0.8, "i2": 0.9}
    rank_o = {"v": 0.2, "w": 0.5, "o": 0.7, "j": 0.9}
    shareable = set(ref)

    def links(last_use: dict[str, int]) -> dict[str, lineage.Link]:
        return lineage.find(ref, other, _global(), other, ref, rank_r, rank_o,  # type: ignore[arg-type]
                            shareable=shareable, last_use=last_use)

    got = links({"v": 10, "w": 5, "o": 9, "j": 9})
    assert (got["v"].ref, got["w"].ref) == ("b", "c")
    # v outlives c's own holder w: c is shared with v; a has no holder; b is v's own; `near`
    # is not exactly equal.
    assert set(got["v"].also) == {"a", "c"}
    assert set(got["w"].also) == {"a"}  # b's holder v outlives w
    assert got["o"].also == () and got["j"].also == ()  # constant over the runs; integers
    # w outliving v: c stays w's alone.
    assert set(links({"v": 5, "w": 10})["v"].also) == {"a"}
    # Not shareable (an argument, a prologue value): not shared.
    assert lineage.find(ref, other, _global(), other, ref, rank_r, rank_o,  # type: ignore[arg-type]
                        shareable={"b", "c"}, last_use={"v": 10, "w": 5})["v"].also == ("c",)
