"""Rule (a), sums that overflow at the original sizes (`shrink/overflow.py`, switch
`overflow.SUMS`; docs/shrinking.md, "Red-team batch 3"). A count of 256 tokens kept in
int8, an int32 sum of 2048 squared positions or an int32 dot of 1024 positions with
themselves wraps at the original sizes and never at a shrunk one: the sum's summed dims
must keep their sizes. The pairs are helper-36's red-team batch
(testdata/shrink_rules/gen_redteam3.py); tests/test_redteam.py holds their verdicts."""
from __future__ import annotations

import json

import pytest

from tests.conftest import TESTDATA
from tv_mlir.api import prepare
from tv_mlir.options import Options
from tv_mlir.shrink import overflow
from tv_mlir.shrink.dims import analyse
from tv_mlir.shrink.facts import ProgramFacts
from tv_mlir.shrink.overflow import overflow_sites
from tv_mlir.shrink.pair import _raw
from tv_mlir.shrink.plan import ShrinkPlan, plan

D = TESTDATA / "shrink_rules"
MANIFEST = {(e["pair"], e["variant"]): e for e in json.loads((D / "manifest_redteam3.json").read_text())}
# pair -> (the summing op that wraps in the bug twin, the size its summed dim must keep)
SUMS = {
    "count_i8": ("stablehlo.all_reduce", 256),  # int8 psum of per-shard counts (64 each, 4 shards)
    "int_sum_wrap": ("stablehlo.all_reduce", 2048),  # int32 psum of per-shard sums of pos^2
    "int_reduce_wrap": ("stablehlo.reduce", 2048),  # int32 reduce of pos^2
    "int_dot_wrap": ("stablehlo.dot_general", 4096),  # int32 dot of a shard's positions
    "bincount_i8": ("stablehlo.scatter", 16384),  # int8 scatter-add of ones at the ids
}


def _modules(pair: str, kind: str) -> tuple:
    e = MANIFEST[(pair, "small")]
    ref, other = (str(D / e["files"][k]) for k in ("ref", kind))
    return tuple(_raw(f, prepare(f, Options())).module for f in (ref, other))


def _sites(pair: str, kind: str) -> list[overflow.OverflowSite]:
    r, o = _modules(pair, kind)
    a = analyse(r, o)
    return overflow_sites(ProgramFacts.of("ref", r), a) + overflow_sites(ProgramFacts.of("other", o), a)


def _plan(pair: str, kind: str) -> ShrinkPlan:
    return plan(*_modules(pair, kind))


@pytest.mark.parametrize("pair", sorted(SUMS))
def test_a_sum_that_wraps_at_the_original_sizes_is_a_site(pair: str) -> None:
    op, size = SUMS[pair]
    bug = _sites(pair, "bug")
    assert any(s.where.startswith(op) and s.program == "other" for s in bug), bug
    # The correct twin sums the same terms in a type that holds them: no site of that op.
    assert not any(s.where.startswith(op) for s in _sites(pair, "ok")), _sites(pair, "ok")


@pytest.mark.parametrize("pair", sorted(SUMS))
def test_the_summed_dim_keeps_its_size(pair: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _, size = SUMS[pair]
    p = _plan(pair, "bug")
    entry = next(e for e in p.entries if e.original == size)
    assert entry.verified == size, entry
    # (the class the site names may be the per-shard one, which the global dim then follows)
    assert any("overflows at the original sizes" in e.reason for e in p.entries), p.entries
    # The loosened rule (sums of unknown range, as before): the dim shrinks, and the bug twin
    # is proved `equivalent` at the shrunk sizes (tests/test_redteam.py held that as a hole).
    monkeypatch.setattr(overflow, "SUMS", False)
    loose = next(e for e in _plan(pair, "bug").entries if e.original == size)
    assert loose.verified < size, loose


_COUNT = """func.func @main(%arg0: tensor<256xf32>, %arg1: tensor<256xi8>) -> (tensor<i8>, tensor<i8>) {
  %z = stablehlo.constant dense<0.0> : tensor<256xf32>
  %m = stablehlo.compare GT, %arg0, %z, FLOAT : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xi1>
  %c = stablehlo.convert %m : (tensor<256xi1>) -> tensor<256xi8>
  %0 = stablehlo.constant dense<0> : tensor<i8>
  %n = stablehlo.reduce(%c init: %0) applies stablehlo.add across dimensions = [0] : (tensor<256xi8>, tensor<i8>) -> tensor<i8>
  %s = stablehlo.reduce(%arg1 init: %0) applies stablehlo.add across dimensions = [0] : (tensor<256xi8>, tensor<i8>) -> tensor<i8>
  return %n, %s : tensor<i8>, tensor<i8>
}
"""


def test_a_count_of_booleans_is_a_site_and_a_sum_of_inputs_is_not(tmp_path) -> None:
    # A count of 256 booleans in int8 wraps at 256 and not at 16, whatever the booleans were
    # computed from; the sum of 256 int8 inputs wraps at every size alike (the solver picks
    # the inputs), so it pins nothing.
    f = tmp_path / "count.mlir"
    f.write_text(_COUNT)
    m = _raw(str(f), prepare(str(f), Options())).module
    sites = overflow_sites(ProgramFacts.of("ref", m), analyse(m, m))
    assert len(sites) == 1 and sites[0].where.startswith("stablehlo.reduce") and sites[0].classes, sites
