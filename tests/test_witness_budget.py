"""The compute budget of a counterexample's replay at the original sizes (witness/cost.py,
witness/fullsize.py): issue 15's `ring bug` at Llama-3-8B widths (testdata/halo_ring) ended
`unknown` because its replay was held to the full-size check's 4 GFLOP per run, while one
replay of both programs (68.7 GFLOP each) takes a few seconds on XLA. A replay has its own
budget (REPLAY_MAX_FLOPS); the check keeps its own. The estimate follows calls and counted
loops from the entry, so a ring's loop body is counted once per trip and per device."""
from __future__ import annotations

from pathlib import Path

from tv_mlir.api import verify
from tv_mlir.frontend.read import load_module
from tv_mlir.witness import fullsize
from tv_mlir.witness.cost import module_cost

D = Path(__file__).resolve().parent.parent / "testdata" / "halo_ring"
RING_FLOPS = 2 * 2048 * 4096 * 4096  # x[2048, 4096] @ w[4096, 4096]


def _ring(kind: str):  # type: ignore[no-untyped-def]
    m = load_module(D / f"ring.big.{kind}.mlir")
    m.per_device = False  # a manual computation: global program (frontend.classify)
    return m


def test_the_ring_loop_counts_once_per_trip_and_device() -> None:
    # 4 trips of a called body, inside a manual computation on 4 devices: each trip's
    # 512x4096 @ 4096x1024 tile is 1/16 of the reference's matmul.
    ref, bug = _ring("ref"), _ring("bug")
    assert module_cost(ref).flops == RING_FLOPS
    assert module_cost(bug).flops == RING_FLOPS


def test_a_loop_without_a_constant_bound_counts_once() -> None:
    t = "tensor<64x64xf32>"
    text = f"""func.func @main(%x: {t}, %n: tensor<i32>) -> {t} {{
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = stablehlo.while(%i = %c0, %a = %x) : tensor<i32>, {t}
  cond {{
    %p = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  }} do {{
    %one = stablehlo.constant dense<1> : tensor<i32>
    %j = stablehlo.add %i, %one : tensor<i32>
    %d = stablehlo.dot_general %a, %a, contracting_dims = [1] x [0] : ({t}, {t}) -> {t}
    stablehlo.return %j, %d : tensor<i32>, {t}
  }}
  return %r#1 : {t}
}}"""
    one = 2 * 64 * 64 * 64
    assert module_cost(load_module(text)).flops == one
    bounded = text.replace("%p = stablehlo.compare LT, %i, %n,",
                           "%k = stablehlo.constant dense<5> : tensor<i32>\n    %p = stablehlo.compare LT, %i, %k,")
    assert module_cost(load_module(bounded)).flops == 5 * one


def test_replay_and_check_budgets_differ() -> None:
    ref, bug = _ring("ref"), _ring("bug")
    replay = fullsize.budget(ref, bug, "auto")
    check = fullsize.budget(ref, bug, "auto", purpose="check")
    assert replay.run, replay.reason
    assert not check.run and "compute budget" in check.reason
    assert fullsize.FULL_SIZE_MAX_FLOPS < RING_FLOPS <= fullsize.REPLAY_MAX_FLOPS


def test_ring_bug_at_8b_widths_is_confirmed_at_the_original_sizes() -> None:
    # ~6 s and 1.3 GiB idle on this machine: the shrunk witness replayed once on XLA.
    v = verify(D / "ring.big.ref.mlir", D / "ring.big.bug.mlir")
    assert v.verdict == "not-equivalent", v.reason
    c = v.counterexample
    assert c is not None and c.confirmed and c.confirmed_at == "original sizes", (c, v.reason)
    assert any(r.backend == "xla, original sizes" and r.confirmed for r in c.replay)


def test_ring_correct_twin_at_8b_widths_stays_equivalent() -> None:
    v = verify(D / "ring.big.ref.mlir", D / "ring.big.ok.mlir")
    assert v.verdict == "equivalent", v.reason


def test_the_memory_budget_counts_the_inputs_copies(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # A 1 GiB input read by one small op: op results alone are ~4 KB. One run holds the input
    # set, the copy sent to XLA's child and XLA's buffers (3 copies), and on 4 devices up to
    # two more per device: 11 GiB, over half of a 16 GiB MemAvailable. (Counting op results
    # only, a 2.1 GB embedding on 4 devices was OOM-killed at 14.8 GB.)
    from tv_mlir.witness import cost

    big = "tensor<262144x1024xf32>"
    text = f"""module attributes {{mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32}} {{
  func.func @main(%e: {big}) -> tensor<1x1024xf32> {{
    %r = stablehlo.slice %e [0:1, 0:1024] : ({big}) -> tensor<1x1024xf32>
    return %r : tensor<1x1024xf32>
  }}
}}"""
    m = load_module(text)
    c = module_cost(m)
    assert c.args == 1 << 30 and c.bytes < 1 << 20
    assert c.memory == c.bytes + (cost.ARG_COPIES + cost.ARG_COPIES_PER_DEVICE * c.devices) * c.args
    monkeypatch.setattr(fullsize, "mem_available", lambda: 16 << 30)
    b = fullsize.budget(m, m, "auto", purpose="check")
    assert not b.run and not b.memory_fits and "input copies" in b.reason, b
    # The same program with a 4 MiB input fits.
    small = text.replace("262144x1024", "1024x1024")
    assert fullsize.budget(load_module(small), load_module(small), "auto", purpose="check").run
