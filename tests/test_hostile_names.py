"""Strings the user writes that reach the verifier's semantics: symbol names, attribute
names, custom_call targets, mesh axis names, sharding strings. Each was read in a way XLA
does not read it, and each pair below had a wrong verdict before (the test's docstring says
which); tests/test_input_symbols.py holds the input names. docs/architecture.md, "Names the
user controls", lists what was checked."""
from __future__ import annotations

from pathlib import Path

import pytest

from tv_mlir import verify
from tv_mlir.frontend import gspmd
from tv_mlir.frontend.read import load_module
from tv_mlir.ir import Mesh, Sharding
from tv_mlir.passes.normalize import attr_key

CORES = ["own", "z3"]


def _verify(tmp_path: Path, a: str, b: str, **options: object):
    pa, pb = tmp_path / "a.mlir", tmp_path / "b.mlir"
    pa.write_text(a)
    pb.write_text(b)
    return verify(pa, pb, cache=False, **options)


def _confirmed_difference(v) -> None:
    assert v.verdict == "not-equivalent", v.reason
    assert v.counterexample is not None and v.counterexample.confirmed, v.counterexample


ABS = """module @b {
  func.func public @main(%x: tensor<f32>) -> tensor<f32> {
    %0 = stablehlo.abs %x : tensor<f32>
    return %0 : tensor<f32>
  }
}
"""

# Two private functions: `a"b` (|x|) and `a\22b` (x, a backslash and two digits in its
# name); main calls the second. The printed name of the first is "a\22b".
ESCAPED_NAMES = r"""module @a {
  func.func private @"a\22b"(%x: tensor<f32>) -> tensor<f32> {
    %0 = stablehlo.abs %x : tensor<f32>
    return %0 : tensor<f32>
  }
  func.func private @"a\\22b"(%x: tensor<f32>) -> tensor<f32> {
    return %x : tensor<f32>
  }
  func.func public @main(%x: tensor<f32>) -> tensor<f32> {
    %0 = func.call @"a\\22b"(%x) : (tensor<f32>) -> tensor<f32>
    return %0 : tensor<f32>
  }
}
"""


@pytest.mark.parametrize("core", CORES)
def test_a_call_runs_the_function_it_names(tmp_path: Path, core: str) -> None:
    """Functions were stored by their printed name, a call looked its callee up by value:
    the call to `a\\22b` ran `a"b` (|x|), and x against |x| was `equivalent`."""
    _confirmed_difference(_verify(tmp_path, ESCAPED_NAMES, ABS, core=core))


def test_functions_and_meshes_are_stored_by_their_names() -> None:
    m = load_module(ESCAPED_NAMES)
    assert set(m.funcs) == {'a"b', "a\\22b", "main"}
    assert [op.name for op in m.funcs["a\\22b"].body.ops] == []
    meshes = load_module(r"""module @m attributes {mhlo.num_partitions = 4 : i32} {
  sdy.mesh @"m\22x" = <["a"=2]>
  sdy.mesh @"m\\22x" = <["a"=4]>
  func.func public @main(%x: tensor<4xf32> {sdy.sharding = #sdy.sharding<@"m\\22x", [{"a"}]>}) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}
""")
    assert meshes.meshes == {'m"x': Mesh((("a", 2),)), "m\\22x": Mesh((("a", 4),))}
    assert meshes.main.arg_attrs[0]["sdy.sharding"].mesh == Mesh((("a", 4),))


# A composite whose decomposition is @f (x) and which also carries a discardable
# attribute `callee = @g` (|x|). XLA runs the decomposition.
COMPOSITE = """module @c {
  func.func private @f(%x: tensor<f32>) -> tensor<f32> {
    return %x : tensor<f32>
  }
  func.func private @g(%x: tensor<f32>) -> tensor<f32> {
    %0 = stablehlo.abs %x : tensor<f32>
    return %0 : tensor<f32>
  }
  func.func public @main(%x: tensor<f32>) -> tensor<f32> {
    %0 = "stablehlo.composite"(%x) {name = "my.op", decomposition = @f, callee = @g} : (tensor<f32>) -> tensor<f32>
    return %0 : tensor<f32>
  }
}
"""


@pytest.mark.parametrize("pipeline", ["none", "default"])
@pytest.mark.parametrize("core", CORES)
def test_a_composite_runs_its_decomposition(tmp_path: Path, core: str, pipeline: str) -> None:
    """The interpreter ran `callee or decomposition`: with `--pipeline none` (no inlining)
    the composite above ran @g, and it was `equivalent` to |x|."""
    _confirmed_difference(_verify(tmp_path, COMPOSITE, ABS, core=core, pipeline=pipeline))


# custom_call @Sharding from i32 to i8: XLA refuses it ("The shape doesn't match when
# replacing"); forwarding the operand made it the identity on i32.
TYPE_CHANGING_NOOP = """module @s {
  func.func public @main(%x: tensor<i32>) -> tensor<i32> {
    %0 = stablehlo.custom_call @Sharding(%x) {mhlo.sharding = "{replicated}"} : (tensor<i32>) -> tensor<i8>
    %1 = stablehlo.convert %0 : (tensor<i8>) -> tensor<i32>
    return %1 : tensor<i32>
  }
}
"""
IDENTITY_I32 = """module @i {
  func.func public @main(%x: tensor<i32>) -> tensor<i32> {
    return %x : tensor<i32>
  }
}
"""


@pytest.mark.parametrize("pipeline", ["none", "default"])
@pytest.mark.parametrize("core", CORES)
def test_a_noop_custom_call_keeps_its_type(tmp_path: Path, core: str, pipeline: str) -> None:
    """Was `equivalent` to the identity: now unknown, naming the types."""
    v = _verify(tmp_path, TYPE_CHANGING_NOOP, IDENTITY_I32, core=core, pipeline=pipeline)
    assert v.verdict == "unknown", v.reason
    assert "tensor<i8>" in v.reason and "tensor<i32>" in v.reason, v.reason


# A GSPMD manual region whose operand is the argument itself (no @Sharding op before
# it), with a `tv.full_sharding` attribute written in the module: the reader's own note
# of the operand's sharding, here the halves swapped.
FULL_SHARDING_NOTE = """module @f attributes {mhlo.num_partitions = 2 : i32} {
  func.func public @main(%x: tensor<4xf32> {mhlo.sharding = "{devices=[2]<=[2]}"})
      -> (tensor<4xf32> {mhlo.sharding = "{devices=[2]<=[2]}"}) {
    %0 = stablehlo.custom_call @SPMDFullToShardShape(%x) {mhlo.sharding = "{manual}",
        tv.full_sharding = "{devices=[2]1,0}"} : (tensor<4xf32>) -> tensor<2xf32>
    %1 = stablehlo.custom_call @Sharding(%0) {mhlo.sharding = "{manual}"} : (tensor<2xf32>) -> tensor<2xf32>
    %2 = stablehlo.custom_call @SPMDShardToFullShape(%1) {mhlo.sharding = "{devices=[2]<=[2]}"}
        : (tensor<2xf32>) -> tensor<4xf32>
    return %2 : tensor<4xf32>
  }
}
"""
SWAPPED_HALVES = """module @r {
  func.func public @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.slice %x [2:4] : (tensor<4xf32>) -> tensor<2xf32>
    %1 = stablehlo.slice %x [0:2] : (tensor<4xf32>) -> tensor<2xf32>
    %2 = stablehlo.concatenate %0, %1, dim = 0 : (tensor<2xf32>, tensor<2xf32>) -> tensor<4xf32>
    return %2 : tensor<4xf32>
  }
}
"""


@pytest.mark.parametrize("core", CORES)
def test_the_readers_own_attributes_are_not_read_from_the_module(tmp_path: Path, core: str) -> None:
    """Was `equivalent` to the swapped halves (XLA gives x there)."""
    v = _verify(tmp_path, SWAPPED_HALVES, FULL_SHARDING_NOTE, core=core)
    assert v.verdict == "unknown", v.reason
    assert all(not k.startswith("tv.") for op in load_module(FULL_SHARDING_NOTE).main.body.ops for k in op.attrs)


def test_manual_axes_are_read_by_name() -> None:
    """The manual axes were read from the printed attribute with a regex: the axis `a"b`
    came out as `a\\22b`, another axis of the same mesh."""
    m = load_module(r"""module @m attributes {mhlo.num_partitions = 4 : i32} {
  sdy.mesh @mesh = <["a\22b"=2, "a\\22b"=2]>
  func.func public @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = sdy.manual_computation(%x) in_shardings=[<@mesh, [{"a\22b"}]>] out_shardings=[<@mesh, [{"a\22b"}]>]
        manual_axes={"a\22b"} (%y: tensor<2xf32>) {
      sdy.return %y : tensor<2xf32>
    } : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
""")
    op = m.main.body.ops[0]
    assert op.attrs["manual_axes"] == ('a"b',)
    assert op.attrs["in_shardings"][0].dims == (('a"b',),)


def test_sharding_metadata_strings_are_skipped_whole() -> None:
    """jax writes source names into a GSPMD sharding's metadata; a `}` in one ended the
    metadata early and what followed was read as the sharding."""
    hidden = '{maximal device=0 metadata={op_name="}devices=[2]<=[2]"}}'
    assert gspmd.parse(hidden, 1, 2) == gspmd.Maximal(0)
    tiled = gspmd.parse('{devices=[2,1,2]<=[4] last_tile_dim_replicate metadata={{op_name="x"}, {op_name="y}\\""}}}',
                        2, 4)
    assert isinstance(tiled, Sharding) and tiled.dims == (("d0",), ()) and tiled.mesh.axes == (("d0", 2), ("r0", 2))
    assert gspmd.parse_tuple('{{devices=[2]<=[2] metadata={op_name="}{"}}, {replicated}}') == \
        ['{devices=[2]<=[2] metadata={op_name="}{"}}', "{replicated}"]
    for junk in ['{replicated devices=[2]<=[2]}', '{devices=[2]<=[2] shard_like 1}', '{devices=[2]<=[2] "x"}']:
        with pytest.raises(gspmd.ShardingSyntaxError):
            gspmd.parse(junk, 1, 2)


def test_sharding_keys_do_not_mix_axis_names() -> None:
    """A stage's hash and CSE read a sharding through `attr_key`, which used `describe()`:
    axes named `p}, {q` and `q}, {r` made two shardings of one mesh print alike."""
    mesh = Mesh((("p", 2), ("q", 2), ("r", 2), ("p}, {q", 2), ("q}, {r", 2)))
    one = Sharding(mesh, (("p}, {q",), ("r",)))
    two = Sharding(mesh, (("p",), ("q}, {r",)))
    assert one.describe() == two.describe()  # the premise: the text is ambiguous
    assert attr_key(one) != attr_key(two)
    assert attr_key(one) == attr_key(Sharding(Mesh(mesh.axes), (("p}, {q",), ("r",))))


# @f's loop starts at its argument: counted (and unrolled) only once @f is inlined into
# main, whose own loop the first unroll-loops already copied. main returns (4x, -x).
LOOP = """    %r:2 = stablehlo.while(%i = %c0, %acc = %x) : tensor<i32>, tensor<f32>
     cond {
      %k = stablehlo.constant dense<2> : tensor<i32>
      %p = stablehlo.compare LT, %i, %k : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %p : tensor<i1>
    } do {
      %one = stablehlo.constant dense<1> : tensor<i32>
      %ni = stablehlo.add %i, %one : tensor<i32>
      %na = stablehlo.OP %acc, %RHS : tensor<f32>
      stablehlo.return %ni, %na : tensor<i32>, tensor<f32>
    }
"""
TWO_LOOPS = f"""module @u {{
  func.func private @f(%x: tensor<f32>, %c0: tensor<i32>) -> tensor<f32> {{
{LOOP.replace("OP", "subtract").replace("%RHS", "%x")}    return %r#1 : tensor<f32>
  }}
  func.func public @main(%x: tensor<f32>) -> (tensor<f32>, tensor<f32>) {{
    %c0 = stablehlo.constant dense<0> : tensor<i32>
{LOOP.replace("OP", "add").replace("%RHS", "%acc")}    %f = func.call @f(%x, %c0) : (tensor<f32>, tensor<i32>) -> tensor<f32>
    return %r#1, %f : tensor<f32>, tensor<f32>
  }}
}}
"""
FOUR_X = """module @e {
  func.func public @main(%x: tensor<f32>) -> (tensor<f32>, tensor<f32>) {
    %0 = stablehlo.multiply %x, %x : tensor<f32>
    %1 = stablehlo.constant dense<4.0> : tensor<f32>
    %2 = stablehlo.multiply %1, %x : tensor<f32>
    %3 = stablehlo.negate %x : tensor<f32>
    return %REF, %3 : tensor<f32>, tensor<f32>
  }
}
"""


@pytest.mark.parametrize("core", CORES)
def test_a_pass_run_twice_makes_new_names(tmp_path: Path, core: str) -> None:
    """Each run of unroll-loops named its copies %u0, %u1, ... from 0: the second run
    (after inline) defined main's %u names again, so main's first output read @f's loop,
    and (-x, -x) was `equivalent` to (4x, -x)."""
    pipeline = tmp_path / "twice.txt"
    pipeline.write_text("unroll-loops\ninline\nunroll-loops\n")
    minus = FOUR_X.replace("%REF", "%3")
    _confirmed_difference(_verify(tmp_path, TWO_LOOPS, minus, core=core, pipeline=str(pipeline)))
    same = _verify(tmp_path, TWO_LOOPS, FOUR_X.replace("%REF", "%2"), core=core, pipeline=str(pipeline))
    assert same.verdict == "equivalent", same.reason


def test_chlo_expansions_in_two_runs_get_distinct_names() -> None:
    """`verify` expands a pair's one-sided chlo ops, a pipeline's legalize-chlo the rest:
    both named their values %xla_chlo0, ... from 0."""
    from tv_mlir.passes.legalize_chlo import _Legalizer, legalize_chlo

    m = load_module("""module @c {
  func.func public @main(%x: tensor<f32>) -> (tensor<f32>, tensor<f32>) {
    %0 = chlo.erfc %x : tensor<f32> -> tensor<f32>
    %1 = chlo.sinh %x : tensor<f32> -> tensor<f32>
    return %0, %1 : tensor<f32>, tensor<f32>
  }
}
""")
    m.funcs = _Legalizer(frozenset({"chlo.erfc"})).module(m).funcs
    m = legalize_chlo(m)
    assert not any(op.name.startswith("chlo.") for op in m.main.body.walk())
    names = [name for name, _ in m.main.body.defined()]
    assert len(names) == len(set(names))
