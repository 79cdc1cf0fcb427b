"""The other program cut in the reference's order (`plan.scheduled`, docs/stages.md "The
other program in the reference's order"). XLA's partitioned Llama layer makes V's
projection and its GQA broadcast before Q and K; a cut pairs a prefix of each program, so
in XLA's order no cut inside the block is admissible."""
from __future__ import annotations

import random

import pytest

from conftest import capture_stages
from tv_mlir.api import verify
from tv_mlir.stages import run as stages_run
from tv_mlir.stages.lineage import Link
from tv_mlir.stages.plan import Side, region_uses, scheduled

QUICK = dict(full_size_check="off", second_witness=False, stage_min_elements=0, cache=False, shrink=False,
             jobs=1)
T = "tensor<4x8xf32>"
HEAD = f"func.func @main(%x: {T}, %wq: {T}, %wk: {T}, %wv: {T}) -> {T} {{"
Q = f"""  %q = stablehlo.multiply %x, %wq : {T}
  %q1 = stablehlo.tanh %q : {T}
  %q2 = stablehlo.multiply %q1, %q : {T}
  %q3 = stablehlo.tanh %q2 : {T}"""
K = f"""  %k = stablehlo.multiply %x, %wk : {T}
  %k1 = stablehlo.tanh %k : {T}
  %k2 = stablehlo.multiply %k1, %k : {T}
  %k3 = stablehlo.tanh %k2 : {T}"""
TAIL = f"""  %s = stablehlo.multiply %q3, %k3 : {T}
  %o = stablehlo.add %s, %v1 : {T}
  return %o : {T}
}}"""
REF = "\n".join([HEAD, Q, K, f"  %v = stablehlo.multiply %x, %wv : {T}", f"  %v1 = stablehlo.multiply %v, %v : {T}",
                 TAIL])
# V and its square first, as XLA orders the partitioned layer.
V_FIRST = "\n".join([HEAD, f"  %v = stablehlo.multiply %x, %wv : {T}", f"  %v1 = stablehlo.multiply %v, %v : {T}",
                     Q, K, TAIL])
# The bug twin: V squared from the wrong weight's projection.
V_FIRST_BUG = "\n".join([HEAD, f"  %v = stablehlo.multiply %x, %wk : {T}",
                         f"  %v1 = stablehlo.multiply %v, %v : {T}", Q, K, TAIL])


def _seen(monkeypatch: pytest.MonkeyPatch) -> list:
    return capture_stages(monkeypatch)


def test_v_first_is_cut_in_the_reference_order(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _seen(monkeypatch)
    monkeypatch.setattr(stages_run, "SCHEDULE", True)
    v = verify(REF, V_FIRST, **QUICK)
    assert v.verdict == "equivalent", v.reason
    assert v.stages["used"] and v.stages.get("failed") is None
    assert len(seen) >= 8 and max(s.ref_ops for s in seen) <= 2


def test_in_the_programs_order_it_is_one_stage(monkeypatch: pytest.MonkeyPatch) -> None:
    """The mutation the test above guards against: Q and K in one stage."""
    seen = _seen(monkeypatch)
    monkeypatch.setattr(stages_run, "SCHEDULE", False)
    v = verify(REF, V_FIRST, **QUICK)
    assert v.verdict == "equivalent", v.reason
    assert not v.stages.get("used") or max(s.ref_ops for s in seen) >= 10


def test_a_wrong_v_stays_not_equivalent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stages_run, "SCHEDULE", True)
    v = verify(REF, V_FIRST_BUG, **QUICK)
    assert v.verdict == "not-equivalent", v.reason
    assert v.counterexample is not None


@pytest.mark.parametrize("seed", range(30))
def test_the_schedule_is_a_topological_order_of_the_same_ops(seed: int) -> None:
    """On random dataflow graphs with random links: every op once, after the ops it reads,
    positions and last uses those of the new order."""
    rng = random.Random(seed)
    n = rng.randint(1, 40)
    other = Side(module=None)  # type: ignore[arg-type]
    ops = []
    for c in range(n):
        reads = tuple(f"o{p}" for p in rng.sample(range(c), min(c, rng.randint(0, 3))))
        ops.append(_Op((f"o{c}",), reads))
        other.kind[f"o{c}"] = "flow"
    other.flow = ops  # type: ignore[assignment]
    ref = Side(module=None)  # type: ignore[arg-type]
    for c in range(rng.randint(1, 30)):
        ref.position[f"r{c}"] = c
        ref.kind[f"r{c}"] = "flow"
    links = {f"o{c}": Link(rng.choice(list(ref.position))) for c in range(n) if rng.random() < 0.7}
    other.module = _Module(())  # type: ignore[assignment]
    out = scheduled(ref, other, links)
    assert sorted(id(op) for op in out.flow) == sorted(id(op) for op in ops)
    at = {op.results[0]: c for c, op in enumerate(out.flow)}
    for c, op in enumerate(out.flow):
        assert all(at[u] < c for u in op.operands)
        assert out.position[op.results[0]] == c
    for v in at:
        users = [c for c, op in enumerate(out.flow) if v in region_uses(op)]  # type: ignore[arg-type]
        assert out.last_use.get(v) == (max(users) if users else None)


class _Op:
    def __init__(self, results: tuple[str, ...], operands: tuple[str, ...]) -> None:
        self.results, self.operands, self.regions, self.name = results, operands, (), "stablehlo.add"


class _Module:
    def __init__(self, returns: tuple[str, ...]) -> None:
        self.main = type("F", (), {"body": type("B", (), {"returns": returns})()})()
