"""Budgets (issue 16): deep nesting, recursion, call bombs, long loops, long chains, huge
splats and narrow types end in exit 2 with one line naming the budget (or in a verdict),
never in a segfault, a RecursionError, a MemoryError or a hang. Every CLI run is bounded
by BUDGET_S: the runs that hung took over 100 s."""
from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hostile import (
    ABS,
    NESTED_REF,
    call_bomb,
    calls,
    chain,
    cli,
    loops,
    nested,
    unknown_reason,
)

import tv_mlir
from tv_mlir.errors import Unsupported
from tv_mlir.execute.xla import XlaRunError
from tv_mlir.frontend.read import check_brackets, load_module, mlir_context
from tv_mlir.ir import Block, Func, Module, Op, TensorType
from tv_mlir.options import MAX_NESTING, MAX_OPS, MAX_XLA_CHAIN
from tv_mlir.passes import load_pipeline, run_pipeline

BUDGET_S = 30


def write(tmp_path: Path, name: str, text: str | bytes) -> str:
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return str(path)


def verdict(p: Any, code: int) -> dict[str, Any]:
    """The --json verdict of a run that ended with `code` and nothing on stderr."""
    assert p.returncode == code, (p.returncode, p.stderr.decode(errors="replace"))
    assert not p.stderr.strip(), p.stderr
    return json.loads(p.stdout)


# ---------------------------------------------------------------------------
# Nesting


@pytest.mark.parametrize(("kind", "depth"), [("case", 1000), ("case", 5000), ("if", 5000)])
def test_deep_text_is_refused_before_the_parser(tmp_path, kind: str, depth: int) -> None:
    # 1,000 nested cases were a RecursionError; 5,000 killed the process in jaxlib's parser.
    ref, deep = write(tmp_path, "ref.mlir", NESTED_REF), write(tmp_path, "deep.mlir", nested(depth, kind))
    p = cli("verify", "--json", ref, deep, timeout=BUDGET_S)
    line = unknown_reason(p)
    assert "brackets nested deeper than 1000 (the nesting budget" in line and f"{deep}:" in line


def test_deep_text_through_check_pass(tmp_path) -> None:
    deep = write(tmp_path, "deep.mlir", nested(5000))
    p = cli("check-pass", "--pass-pipeline", "builtin.module(canonicalize)", deep, timeout=BUDGET_S)
    assert "brackets nested deeper than 1000" in unknown_reason(p)


def test_nesting_at_the_budget_and_past_it() -> None:
    # Under pytest's own deep stack: the interpreter still has room at the budget.
    assert tv_mlir.verify(nested(MAX_NESTING, "if"), NESTED_REF).verdict == "equivalent"
    v = tv_mlir.verify(nested(MAX_NESTING + 1), NESTED_REF)
    assert v.verdict == "unknown" and v.exit_code == 2
    assert v.reason.startswith("unsupported: regions nested deeper than 100 (the nesting budget) at <text>:102:")
    assert v.unsupported[0]["loc"].startswith("<text>:102:")


def _bytecode(text: str) -> bytes:
    """MLIR bytecode of `text`, parsed on a thread with a large stack (the text parser
    recurses per nesting level; the bytecode reader does not)."""
    out: list[bytes] = []

    def parse() -> None:
        import io

        from jaxlib.mlir import ir

        with mlir_context():
            buf = io.BytesIO()
            ir.Module.parse(text).operation.write_bytecode(buf)
            out.append(buf.getvalue())

    old = threading.stack_size(512 << 20)
    try:
        t = threading.Thread(target=parse)
        t.start()
        t.join()
    finally:
        threading.stack_size(old)
    return out[0]


def test_deep_bytecode(tmp_path) -> None:
    # Bytecode reads at any depth; converting it recursed (RecursionError), printing it
    # (check-pass) overflowed the stack.
    ref, deep = write(tmp_path, "ref.mlir", NESTED_REF), write(tmp_path, "deep.mlirbc", _bytecode(nested(3000)))
    p = cli("verify", ref, deep, timeout=BUDGET_S)
    assert "regions nested deeper than 100 (the nesting budget)" in unknown_reason(p)
    p = cli("check-pass", "--pass-pipeline", "builtin.module(canonicalize)", deep, timeout=BUDGET_S)
    assert "regions nested deeper than 100 (the nesting budget)" in unknown_reason(p)


def test_a_hand_built_deep_module() -> None:
    """A Module from the API, nested 5,000 deep: walked without recursion, refused by the
    pipeline before any pass recurses into it."""
    t = TensorType((), "f32")
    block = Block(("%x",), (t,), [Op("stablehlo.abs", ("%x",), ("%y",), (t,))], ("%y",))
    for d in range(5000):
        block = Block((), (), [Op("stablehlo.optimization_barrier", ("%x",), (f"%b{d}",), (t,), regions=(block,))],
                      (f"%b{d}",))
    module = Module({"main": Func("main", Block(("%x",), (t,), block.ops, block.returns), (t,))}, "main")
    assert sum(1 for _ in module.main.body.walk()) == 5001
    assert module.main.body.nesting() == 5000
    with pytest.raises(Unsupported, match="regions nested deeper than 100 in @main"):
        run_pipeline(load_pipeline("default"), module)


def test_brackets_in_strings_and_comments_do_not_nest() -> None:
    deep = "(" * 3000
    text = NESTED_REF.replace("%y = stablehlo.abs %x : tensor<f32>",
                              f'%y = stablehlo.abs %x : tensor<f32> loc("{deep}\\"{deep}")\n  // {deep}')
    assert tv_mlir.verify(text, NESTED_REF).verdict == "equivalent"
    check_brackets("{" * 1000 + " -> " * 5000, "t")  # arrows close nothing
    with pytest.raises(Unsupported) as exc:
        check_brackets("\n" + "<[({" * 251, "t")
    assert exc.value.one_line().startswith("brackets nested deeper than 1000 (the nesting budget")
    assert exc.value.loc == "t:2"


def test_deep_attributes() -> None:
    attr = "[" * 900 + "1" + "]" * 900
    text = NESTED_REF.replace("stablehlo.abs %x :", f"stablehlo.abs %x {{user.a = {attr}}} :")
    with pytest.raises(Unsupported) as exc:
        load_module(text)
    assert exc.value.one_line().startswith("an attribute nested deeper than 100 (the nesting budget) at <text>:2:")


def calls_in_ifs(n: int) -> str:
    """main -> f1 -> ... -> fn, each call inside an if on a data predicate: with calls kept
    (--pipeline none), regions and calls nest 2n deep."""
    funcs = []
    for k in range(n + 1):
        name, vis = ("main", "public") if k == 0 else (f"f{k}", "private")
        leaf = (f"%c = func.call @f{k + 1}(%p, %x) : (tensor<i1>, tensor<f32>) -> tensor<f32>" if k < n
                else "%c = stablehlo.abs %x : tensor<f32>")
        funcs.append(f"""func.func {vis} @{name}(%p: tensor<i1>, %x: tensor<f32>) -> tensor<f32> {{
  %q = "stablehlo.if"(%p) ({{
    {leaf}
    stablehlo.return %c : tensor<f32>
  }}, {{
    stablehlo.return %x : tensor<f32>
  }}) : (tensor<i1>) -> tensor<f32>
  return %q : tensor<f32>
}}""")
    return "\n".join(funcs) + "\n"


def test_regions_and_kept_calls_nest_against_one_budget() -> None:
    text = calls_in_ifs(60)  # 121 blocks deep, 60 calls
    v = tv_mlir.verify(text, text, pipeline="none")
    assert v.verdict == "unknown" and "regions and calls nested deeper than 100 (the nesting budget)" in v.reason
    assert v.unsupported[0]["op"] == "budget.nesting"
    assert tv_mlir.verify(text, text).verdict == "equivalent"  # inlined: 60 regions deep


# ---------------------------------------------------------------------------
# Calls


@pytest.mark.parametrize(("kind", "cycle"), [("direct", "@f -> @f"), ("mutual", "@f -> @g -> @f")])
def test_recursive_calls(tmp_path, kind: str, cycle: str) -> None:
    ref, rec = write(tmp_path, "ref.mlir", ABS), write(tmp_path, "rec.mlir", calls(kind))
    p = cli("verify", ref, rec, timeout=BUDGET_S)
    assert f"recursive call to @f ({cycle}) at {rec}:" in unknown_reason(p)
    d = verdict(cli("verify", "--json", "--pipeline", "none", ref, rec, timeout=BUDGET_S), 2)
    assert d["verdict"] == "unknown" and f"recursive call to @f ({cycle})" in d["reason"]
    assert d["unsupported"][0]["op"] == "budget.recursion"


def test_call_bomb(tmp_path) -> None:
    ref, bomb = write(tmp_path, "ref.mlir", ABS), write(tmp_path, "bomb.mlir", call_bomb(20))
    p = cli("verify", ref, bomb, timeout=BUDGET_S)
    assert f"inlining calls would make 1048576 ops, over the op budget of {MAX_OPS}" in unknown_reason(p)
    # Calls kept: the interpreter runs them, against the same op budget.
    d = verdict(cli("verify", "--json", "--pipeline", "none", ref, bomb, timeout=BUDGET_S), 2)
    assert d["verdict"] == "unknown" and f"the program executes over {MAX_OPS} ops (the op budget" in d["reason"]
    assert d["unsupported"][0]["op"] == "budget.ops"
    assert tv_mlir.verify(ABS, call_bomb(4)).verdict == "equivalent"


# ---------------------------------------------------------------------------
# Loops and ops


@pytest.mark.parametrize(("trips", "levels"), [(99_000, 1), (1000, 3)])
def test_long_loops_end_in_unknown(tmp_path, trips: int, levels: int) -> None:
    ref, loop = write(tmp_path, "ref.mlir", ABS), write(tmp_path, "loop.mlir", loops(trips, levels))
    d = verdict(cli("verify", "--json", ref, loop, timeout=BUDGET_S), 2)
    assert d["verdict"] == "unknown" and f"the program executes over {MAX_OPS} ops (the op budget" in d["reason"]


def test_nested_loops_multiply_against_one_loop_budget() -> None:
    # 20 + 20 x 20 = 420 iterations in all, each loop 20: a budget per loop would allow it.
    # (Loops of up to 16 trips are unrolled by the pipeline, passes/unroll.py, and never
    # reach the interpreter's loop budget: these have 20.)
    v = tv_mlir.verify(ABS, loops(20, 2), max_unroll=400)
    assert v.verdict == "unknown" and "while loops run over 400 iterations in all (the loop budget" in v.reason
    assert v.unsupported[0]["op"] == "budget.unroll"
    assert tv_mlir.verify(ABS, loops(19, 2), max_unroll=400).verdict == "equivalent"  # 19 + 361


def test_a_module_over_the_op_budget(tmp_path) -> None:
    n = MAX_OPS + 1000
    ref, big = write(tmp_path, "ref.mlir", chain(n)), write(tmp_path, "big.mlir", chain(n, bug=True))
    p = cli("verify", ref, big, timeout=BUDGET_S)
    assert f"{ref} has over {MAX_OPS} ops (the op budget) at {ref}:" in unknown_reason(p)


def test_long_chain_with_a_bug(tmp_path) -> None:
    """A chain of dependent ops past XLA replay's budget: a verdict, exact; XLA replay
    declines to compile the chain (its compile time grows with the square; 30,000 ops
    overflowed its stack). 10,000 ops cost 24 s here, MAX_XLA_CHAIN + 1000 about 10 s."""
    n = MAX_XLA_CHAIN + 1000
    ref, bug = write(tmp_path, "ref.mlir", chain(n)), write(tmp_path, "bug.mlir", chain(n, bug=True))
    # The limit only guards against a hang.
    d = verdict(cli("verify", "--json", ref, bug, timeout=240), 1)
    assert d["verdict"] == "not-equivalent"
    xla = [r for r in d["counterexample"]["replay"] if r["backend"] == "xla"]
    assert xla and f"not compiled: a chain of {n} dependent ops, over XLA replay's budget" in xla[0]["error"]


def test_xla_replay_chain_budget(xla) -> None:
    x = np.ones(4, dtype=np.float32)
    with pytest.raises(XlaRunError, match=f"a chain of {MAX_XLA_CHAIN + 1} dependent ops"):
        xla.run(chain(MAX_XLA_CHAIN + 1), [x, x])
    # A call counts as its callee's chain: XLA inlines calls.
    half = chain(MAX_XLA_CHAIN // 2 + 1).replace("@main", "@half").replace("public", "private")
    twice = f"""func.func public @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {{
  %a = func.call @half(%x, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %b = func.call @half(%a, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %b : tensor<4xf32>
}}
{half}"""
    with pytest.raises(XlaRunError, match=f"a chain of {2 * (MAX_XLA_CHAIN // 2 + 1)} dependent ops"):
        xla.run(twice, [x, x])


def chain_in_callee(n: int, bug: bool = False) -> str:
    """A call to a function whose n-op chain ends in a sum: the shrink planner's summand
    degrees follow the chain inside the callee."""
    t = "tensor<4x8xf32>"
    body = "\n".join(f"%v{k} = stablehlo.{'multiply' if bug and k == n // 2 else 'add'} %v{k - 1}, %y : {t}"
                     for k in range(1, n))
    return f"""func.func public @main(%x: {t}, %y: {t}) -> tensor<4xf32> {{
  %r = func.call @f(%x, %y) : ({t}, {t}) -> tensor<4xf32>
  return %r : tensor<4xf32>
}}
func.func private @f(%x: {t}, %y: {t}) -> tensor<4xf32> {{
%v0 = stablehlo.add %x, %y : {t}
{body}
%z = stablehlo.constant dense<0.0> : tensor<f32>
%s = stablehlo.reduce(%v{n - 1} init: %z) applies stablehlo.add across dimensions = [1] : ({t}, tensor<f32>) -> tensor<4xf32>
return %s : tensor<4xf32>
}}
"""


def test_shrink_planner_follows_a_long_chain_in_a_callee() -> None:
    v = tv_mlir.verify(chain_in_callee(3000), chain_in_callee(3000, bug=True), replay=False)
    assert v.verdict == "not-equivalent" and v.shrink and v.shrink["applied"]


# ---------------------------------------------------------------------------
# Elements: a huge splat is one value


BIG = "tensor<8x4000000000xf32>"  # 119 GiB as f32; a device tile 14.9 GiB
GSPMD_BIG = f"""module @big attributes {{mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32}} {{
  func.func public @main(%x: {BIG}) -> {BIG} {{
    %0 = stablehlo.custom_call @Sharding(%x) {{mhlo.sharding = "{{devices=[8,1]<=[8]}}"}} : ({BIG}) -> {BIG}
    %1 = stablehlo.custom_call @SPMDFullToShardShape(%0) {{mhlo.sharding = "{{manual}}"}} : ({BIG}) -> tensor<1x4000000000xf32>
    %c = stablehlo.constant dense<1.0> : tensor<1x4000000000xf32>
    %2 = stablehlo.add %1, %c : tensor<1x4000000000xf32>
    %3 = stablehlo.custom_call @Sharding(%2) {{mhlo.sharding = "{{manual}}"}} : (tensor<1x4000000000xf32>) -> tensor<1x4000000000xf32>
    %4 = stablehlo.custom_call @SPMDShardToFullShape(%3) {{mhlo.sharding = "{{devices=[8,1]<=[8]}}"}} : (tensor<1x4000000000xf32>) -> {BIG}
    return %4 : {BIG}
  }}
}}
"""
BIG_REF = f"""func.func public @main(%x: {BIG}) -> {BIG} {{
  %c = stablehlo.constant dense<1.0> : {BIG}
  %y = stablehlo.add %x, %c : {BIG}
  return %y : {BIG}
}}
"""


def test_huge_splats_allocate_nothing(tmp_path) -> None:
    # Reading the constant made a 59.6 GiB array (MemoryError, an internal error).
    ref, other = write(tmp_path, "ref.mlir", BIG_REF), write(tmp_path, "gspmd.mlir", GSPMD_BIG)
    d = verdict(cli("verify", "--json", ref, other, timeout=BUDGET_S), 0)
    assert d["verdict"] == "equivalent" and d["shrink"]["applied"]
    d = verdict(cli("verify", "--json", "--no-shrink", ref, other, timeout=BUDGET_S), 2)
    assert d["verdict"] == "unknown" and d["reason"].startswith("too large to encode")


# ---------------------------------------------------------------------------
# Element types


def _narrow_pair(dtype: str) -> tuple[str, str]:
    t = f"tensor<4x{dtype}>"
    a = f"""func.func public @main(%x: {t}) -> ({t}, tensor<4xi32>, tensor<4xi1>) {{
  %c = stablehlo.constant dense<[1, 0, 1, 1]> : {t}
  %y = stablehlo.add %x, %c : {t}
  %z = stablehlo.convert %y : ({t}) -> tensor<4xi32>
  %p = stablehlo.compare LT, %x, %c : ({t}, {t}) -> tensor<4xi1>
  return %y, %z, %p : {t}, tensor<4xi32>, tensor<4xi1>
}}
"""
    return a, a.replace("[1, 0, 1, 1]", "[1, 0, 1, 0]")


@pytest.mark.parametrize("dtype", ["i2", "ui2", "i4", "ui4"])
def test_narrow_integers_get_a_verdict(tmp_path, dtype: str) -> None:
    a, b = _narrow_pair(dtype)
    d = verdict(cli("verify", "--json", write(tmp_path, "a.mlir", a), write(tmp_path, "b.mlir", b),
                    timeout=BUDGET_S), 1)
    assert d["counterexample"]["index"] == [3] and d["counterexample"]["confirmed"]


@pytest.mark.parametrize("dtype", ["f8E3M4", "f6E2M3FN", "f4E2M1FN"])
def test_small_floats_are_floats(dtype: str) -> None:
    # These were read as integers: floor(x) was "equivalent" to x. (The witness is a real
    # number; XLA confirms it when the type holds it.)
    t = f"tensor<4x{dtype}>"
    floor = f"func.func public @main(%x: {t}) -> {t} {{\n  %y = stablehlo.floor %x : {t}\n  return %y : {t}\n}}\n"
    same = f"func.func public @main(%x: {t}) -> {t} {{\n  return %x : {t}\n}}\n"
    assert tv_mlir.verify(floor, same).verdict == "not-equivalent"


@pytest.mark.parametrize(("dtype", "why"), [("f8E8M0FNU", "a float without sign and zero"),
                                            ("f8E4M3", "not modelled")])
def test_types_not_modelled_are_named(tmp_path, dtype: str, why: str) -> None:
    t = f"tensor<4x{dtype}>"
    text = f"func.func public @main(%x: {t}, %y: {t}) -> {t} {{\n  %z = stablehlo.add %x, %y : {t}\n  return %z : {t}\n}}\n"
    path = write(tmp_path, "t.mlir", text)
    line = unknown_reason(cli("verify", path, path, timeout=BUDGET_S))
    assert f"element type {dtype} in {t}: {why}" in line


# ---------------------------------------------------------------------------
# Values shared between the programs


def test_constants_that_differ_past_numpy_abbreviation_are_not_shared() -> None:
    """Large constants equal at both ends: the sharing key was their repr, which numpy
    abbreviates past 1,000 elements, so the other program took the reference's constant."""
    def program(middle: float) -> str:
        values = [float(k) for k in range(2000)]
        values[1000] = middle
        t = "tensor<2000xf32>"
        return f"""func.func public @main(%x: {t}) -> {t} {{
  %c = stablehlo.constant dense<[{", ".join(map(str, values))}]> : {t}
  %y = stablehlo.add %x, %c : {t}
  return %y : {t}
}}
"""
    v = tv_mlir.verify(program(1000.0), program(7.0), replay=False)
    assert v.verdict == "not-equivalent" and v.counterexample and v.counterexample.index == [1000]
