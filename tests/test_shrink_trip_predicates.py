"""Shrinking's trip predicates (tv_mlir/shrink/trips.py `TRIP_PREDICATES`,
docs/shrinking.md "Trip predicates"): a loop counter compared with an integer literal,
the answer used anywhere (a scan's seeded `where(i == 96, ...)`, issue 13), keeps the
counter's group, with the literal in it. Pairs: testdata/trip_predicates
(testdata/shrink_rules/gen_trip_predicates.py, XLA-checked; H = 12 positions, L = 10
layers, so the trip count 10 is also H - 2). Verdicts are taken with the full-size check
and the second witness off: what keeps a bug visible here is the rule."""
from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import TESTDATA
from tv_mlir.api import prepare, verify
from tv_mlir.frontend.classify import check_signatures
from tv_mlir.options import Options
from tv_mlir.shrink import trips
from tv_mlir.shrink.pair import _raw
from tv_mlir.shrink.plan import plan

D = TESTDATA / "trip_predicates"
QUICK: dict[str, Any] = {"full_size_check": "off", "second_witness": False, "cache": False}


def _h(pair: str, twin: str) -> tuple[int, str]:
    """H's verified size and the reason it kept its size."""
    ref, other = str(D / f"{pair}.ref.mlir"), str(D / f"{pair}.{twin}.mlir")
    r, o = prepare(ref, Options()), prepare(other, Options())
    check_signatures(r, o)
    p = plan(_raw(ref, r).module, _raw(other, o).module)
    e = next(e for e in p.entries if e.where == "arg0 dim 0")
    return e.verified, e.reason or ""


@pytest.mark.parametrize("on", [True, False])
def test_a_counter_tested_against_a_literal_keeps_its_group(monkeypatch: pytest.MonkeyPatch, on: bool) -> None:
    """pick: the twins carry i and ask where(i == 7, ...). With the rule, 10 names the
    layers only and H shrinks; off, the compare drops the group and 10 (H - 2) pins H."""
    monkeypatch.setattr(trips, "TRIP_PREDICATES", on)
    for twin in ("good", "bug"):
        size, why = _h("pick", twin)
        assert (size < 12) == on, (twin, size, why)
        assert ("constant 10" in why) != on, why


def test_the_seeded_layer_bug_is_found_at_the_shrunk_sizes() -> None:
    """pick.bug skips layer 7's weight: found (at H' < 12, confirmed at the original
    sizes); pick.good (the same layer written w * h) is proved."""
    assert _h("pick", "bug")[0] < 12
    bug = verify(D / "pick.ref.mlir", D / "pick.bug.mlir", **QUICK)
    assert bug.verdict == "not-equivalent", bug.reason
    good = verify(D / "pick.ref.mlir", D / "pick.good.mlir", **QUICK)
    assert good.verdict == "equivalent", good.reason


def test_a_counter_tested_against_data_still_drops_its_group(monkeypatch: pytest.MonkeyPatch) -> None:
    """count: the counter is compared with k = sum over H of ones, minus 3 (layer 9 at
    H = 12), a value that depends on H's size. Such a compare is no literal test, so the
    group drops and 10 keeps pinning H. Mutation: any scalar compare kept (not only one
    with a literal) lets H shrink below 7, where k - 3 < 4 and count.bug (which also asks
    i < 4) equals the reference: the bug would be invisible at the shrunk sizes."""
    size, why = _h("count", "bug")
    assert size == 12 and "constant 10" in why, why
    monkeypatch.setattr(trips, "_tests_a_literal", lambda f, used: True)
    # k is made by a reduce: MEMBER_DEFS (red-team batch 5) drops its group on its own.
    assert _h("count", "bug")[0] == 12
    monkeypatch.setattr(trips, "MEMBER_DEFS", False)
    loose, _ = _h("count", "bug")
    assert loose < 7, loose  # the hazard: at H' < 7 layer H' - 3 < 4 is kept by both


def test_a_literal_in_the_group_is_a_trip_constant() -> None:
    """The compared literal joins the counter's group, so it names the layer dim only
    (rule (a) orders it with the layers' sizes, not with H's)."""
    from tv_mlir.frontend.read import load_module_mlir
    from tv_mlir.shrink.facts import ProgramFacts

    m = load_module_mlir(str(D / "pick.bug.mlir")).module
    f = ProgramFacts.of("other", m)
    groups = trips.index_groups(f)
    sevens = [v for v, (op, _) in f.defs.items() if op.name == "stablehlo.constant" and trips._int_constant(f, v) == 7]
    assert sevens and all(v in groups and {d for _, d in groups[v]} == {0} for v in sevens), (sevens, groups)
