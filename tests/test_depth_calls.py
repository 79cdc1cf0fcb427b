"""Shrinking's rule (s), one copy of a function per call site before the dims analysis
(tv_mlir/shrink/dims.py `split_call_sites`; docs/stages.md, "Call sites"). The decoder
scans slice wq, wk, wv and wo through one jax helper, and sharing its body joined hidden
with heads x head_dim. The adversarial pair is testdata/depth/calls (testdata/gen_calls.py,
XLA-checked): two call sites of one helper whose H the program really shares. As in
tests/test_scan_degrees.py, verdicts are taken with the full-size check and the second
witness off: what keeps the bug visible here is the analysis, not a run at full size."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from tests.conftest import TESTDATA
from tv_mlir.api import prepare, verify
from tv_mlir.options import Options
from tv_mlir.shrink import dim_rules, dims
from tv_mlir.shrink.pair import _raw
from tv_mlir.shrink.plan import ShrinkPlan, plan

CALLS = TESTDATA / "depth" / "calls"
DEPTH = TESTDATA / "depth"
QUICK: dict[str, Any] = {"full_size_check": "off", "second_witness": False, "cache": False}


@dataclass
class _Planned:
    plan: ShrinkPlan
    args: tuple[str, ...]  # the reference entry's argument names, as the analysis reads them

    @property
    def elements(self) -> int:
        return self.plan.elements

    def classes(self, arg: int) -> list[int]:
        return self.plan.analysis.classes_of("ref", self.args[arg])

    def size(self, arg: int, dim: int) -> int:
        return self.plan.new_shape("ref", self.args[arg])[dim]


def _plan(ref: str, other: str) -> _Planned:
    r, o = prepare(ref, Options()), prepare(other, Options())
    lr = _raw(ref, r).module
    return _Planned(plan(lr, _raw(other, o).module), lr.main.body.args)


@pytest.mark.parametrize("on", [True, False])
def test_call_sites_of_one_helper_keep_their_own_classes(monkeypatch: pytest.MonkeyPatch, on: bool) -> None:
    """stack8b_L32_scan: wq [L, hidden, heads x head_dim] and wo [L, heads x head_dim,
    hidden] are sliced by calls of one function. With the split, wq's two inner dims are
    two classes and the plan is smaller; off, they are one class (the shared body joins
    them) and share one size."""
    monkeypatch.setattr(dims, "SPLIT_CALL_SITES", on)
    p = _plan(str(DEPTH / "stack8b_L32_scan.ref.mlir"), str(DEPTH / "stack8b_L32_scan.shardy.mlir"))
    wq = p.classes(2)
    assert (wq[1] != wq[2]) == on, p.plan.analysis.describe()[:8]
    if not on:
        assert p.size(2, 1) == p.size(2, 2)
    else:
        monkeypatch.setattr(dims, "SPLIT_CALL_SITES", False)
        joined = _plan(str(DEPTH / "stack8b_L32_scan.ref.mlir"), str(DEPTH / "stack8b_L32_scan.shardy.mlir"))
        assert p.elements < joined.elements


def test_split_copies_compute_what_the_shared_function_computed() -> None:
    """The copies are the function's body under new names: each call site calls its own,
    and the module is still one program (MLIR verifies it; the pipeline inlines it to the
    same ops)."""
    from tv_mlir.frontend.read import load_module_mlir

    ref = str(CALLS / "shared.ref.mlir")
    before = load_module_mlir(ref).module
    after = _raw(ref, prepare(ref, Options())).module
    calls = [op.attrs["callee"] for f in after.funcs.values() for op in f.body.walk() if op.name == "func.call"]
    assert len(calls) == len(set(calls))  # one function per call site
    assert len(after.funcs) == len(before.funcs) + 1  # dynamic_index_in_dim had two sites
    assert len(prepare(after, Options()).main.body.ops) == len(prepare(before, Options()).main.body.ops)


def test_a_dim_two_call_sites_share_keeps_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """shared: ws1's and ws2's H go through two copies of dynamic_index_in_dim, and the
    body adds the two slices, so the program joins them and the position bound 10 (rule b)
    holds for ws2's H too. The bug twin drops w2 at positions 10 to 15 only (H = 16): the
    plan keeps ws2's H above 10 and the bug is found. Mutation: a split whose call results are
    not joined with the copy's returns separates ws2's H from the bounded class, which
    then shrinks below 11, where the twins agree."""
    ref, bug = str(CALLS / "shared.ref.mlir"), str(CALLS / "shared.bug.mlir")
    p = _plan(ref, bug)
    assert p.classes(1)[1] == p.classes(2)[1]
    assert p.size(2, 1) > 10
    v = verify(ref, bug, **QUICK)
    assert v.verdict == "not-equivalent", v.reason
    good = verify(ref, str(CALLS / "shared.good.mlir"), **QUICK)
    assert good.verdict == "equivalent", good.reason

    def loose_call(w: Any, op: Any, why: str) -> None:
        name = op.attrs.get("callee", "")
        if not name.startswith("dynamic_index_in_dim"):  # the split function and its copy
            return call(w, op, why)
        for a, i in zip(w.module.funcs[name].body.args, op.operands):
            w.same(a, i, why)

    call = dim_rules.RULES["func.call"]
    monkeypatch.setitem(dim_rules.RULES, "func.call", loose_call)
    assert _plan(ref, bug).size(2, 1) <= 10


def test_a_helper_of_every_layer_keeps_one_body(monkeypatch: pytest.MonkeyPatch) -> None:
    """stack8b_L32 (unrolled): `_where`, `tril` and `silu` are called once per layer (32
    sites, over MAX_SPLIT_SITES) and keep one body each; the residual stream joins the
    layers' dims anyway. With the cap raised every site gets its copy."""
    from tv_mlir.frontend.read import load_module_mlir

    path = str(DEPTH / "stack8b_L32.ref.mlir")
    before = load_module_mlir(path).module
    assert dims.split_call_sites(load_module_mlir(path)).module.funcs.keys() == before.funcs.keys()
    monkeypatch.setattr(dims, "MAX_SPLIT_SITES", 64)
    assert len(dims.split_call_sites(load_module_mlir(path)).module.funcs) > len(before.funcs) + 31
