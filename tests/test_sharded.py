"""Sharded plans (testdata/sharded, made by testdata/gen_sharded.py on 8 CPU devices): every
correct plan is equivalent to its reference in all three export forms (Shardy, GSPMD custom
calls, XLA's partitioned per-device module), every bug-seeded twin is not-equivalent with a
counterexample that XLA reproduces, and replica divergence names the two devices."""
from __future__ import annotations

import json

import pytest

from conftest import TESTDATA
from tv_mlir import verify
from tv_mlir.errors import UsageError

SHARDED = TESTDATA / "sharded"
MANIFEST = json.loads((SHARDED / "manifest.json").read_text())
FORMS = ("shardy", "gspmd", "partitioned")
CASES = [(e, form) for e in MANIFEST for form in FORMS if e.get(form)]


@pytest.mark.parametrize("entry,form", CASES, ids=[f"{e['name']}-{f}" for e, f in CASES])
def test_sharded_plan(entry: dict, form: str) -> None:
    v = verify(SHARDED / entry["ref"], SHARDED / entry[form], timeout_s=60)
    assert v.verdict == entry["expect"], v.reason
    if v.verdict == "equivalent":
        assert v.counterexample is None
        return
    c = v.counterexample
    assert c is not None
    xla = [r for r in c.replay if r.backend == "xla"]
    assert xla and xla[0].confirmed, f"XLA does not reproduce the witness: {c.replay}"
    # Exit 1 only for what XLA shows at the programs' own sizes (issue 12).
    assert v.exit_code == 1 and c.confirmed_at == "original sizes", (c.confirmed_at, v.reason)
    if entry["kind"] == "replica":
        assert c.devices is not None and c.devices[0] != c.devices[1], v.reason
        # Device 0's copy is right here: the divergence is between replicas only.
        assert all(o.verdict == "equivalent" for o in v.outputs if o.what.startswith("output")), v.reason
    else:
        assert c.output >= 0


def test_every_plan_has_all_forms_and_a_bug_twin() -> None:
    plans = {e["plan"] for e in MANIFEST}
    assert len(plans) >= 9
    for plan in plans:
        twins = [e for e in MANIFEST if e["plan"] == plan and e["expect"] == "not-equivalent"]
        assert twins, f"{plan} has no bug-seeded twin"
    assert all(e.get(f) for e in MANIFEST for f in FORMS)


def test_same_plan_reference_vs_reference() -> None:
    ref = SHARDED / "mlp_tp.ref.mlir"
    assert verify(ref, ref).verdict == "equivalent"


def test_global_signature_mismatch_names_both() -> None:
    with pytest.raises(UsageError, match="mlp_tp.ref.mlir.*attn_tp.shardy.mlir"):
        verify(SHARDED / "mlp_tp.ref.mlir", SHARDED / "attn_tp.shardy.mlir")


def test_partitioned_module_is_read_as_per_device() -> None:
    from tv_mlir.api import prepare
    from tv_mlir.frontend.classify import check_signatures
    from tv_mlir.options import Options

    ref = prepare(SHARDED / "mlp_tp.ref.mlir", Options())
    part = prepare(SHARDED / "mlp_tp.partitioned.mlir", Options())
    check_signatures(ref, part)
    assert part.per_device
    assert part.main.arg_types != part.global_arg_types() == ref.global_arg_types()
