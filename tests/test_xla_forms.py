"""The attribute forms XLA writes today in its SPMD-partitioned module: replica groups as
`#stablehlo.replica_group_mesh_axes` over an `sdy.mesh` (with device ids, sub-axes).

- testdata/xla_forms/ (from testdata/gen_xla_forms.py): jitted programs with NamedSharding
  in/out shardings and sharding constraints; their partitioned modules verify equivalent
  to the references, and seeded mutations of the mesh axes are caught, XLA confirming.
- Every collective with mesh-axis groups runs on XLA and in our interpreter (both
  algebras), which must agree (the harness of test_collectives.py).
- The groups resolved from mesh axes match StableHLO's own lowering of the form."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conftest import assert_close, fast_symbolic_values, numeric_values, prepared, symbolic_values
from tv_mlir import ir as tir
from tv_mlir.errors import ParseError, Unsupported
from tv_mlir.frontend.read import resolve_mesh_axes

FORMS = Path(__file__).resolve().parents[1] / "testdata" / "xla_forms"
PROGRAMS = ["mlp", "mlp_seq", "reshard", "scatter_sum"]
N = 8


def _verify(ref: str | Path, other: str | Path):
    from tv_mlir.api import verify

    return verify(ref, other)


@pytest.mark.parametrize("name", PROGRAMS)
def test_partitioned_module_is_equivalent(name: str) -> None:
    text = (FORMS / f"{name}.partitioned.mlir").read_text()
    assert "replica_group_mesh_axes" in text, "the module should use the mesh-axes form"
    v = _verify(FORMS / f"{name}.ref.mlir", FORMS / f"{name}.partitioned.mlir")
    assert v.verdict == "equivalent", v.reason


def test_partitioned_module_exported_now_is_equivalent(tmp_path: Path) -> None:
    """Today's jax/XLA, not the committed files: the exporter and the reader agree with the
    jax on this machine (a resharding all_to_all over a mesh with device ids)."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    from tv_mlir.jax import partitioned_text

    mesh = jax.make_mesh((2, 4), ("dp", "tp"), axis_types=(jax.sharding.AxisType.Auto,) * 2)

    def f(x, w):
        h = jax.lax.with_sharding_constraint(x * 3.0, NamedSharding(mesh, P("tp", None)))
        return h @ w

    args = [jax.ShapeDtypeStruct((8, 16), jnp.float32), jax.ShapeDtypeStruct((16, 8), jnp.float32)]
    sharded = jax.jit(f, in_shardings=(NamedSharding(mesh, P(None, "tp")), NamedSharding(mesh, P())),
                      out_shardings=NamedSharding(mesh, P("tp", None)))
    (tmp_path / "p.mlir").write_text(partitioned_text(sharded, args))
    (tmp_path / "r.mlir").write_text(jax.jit(lambda x, w: (x * 3.0) @ w).lower(*args).as_text())
    v = _verify(tmp_path / "r.mlir", tmp_path / "p.mlir")
    assert v.verdict == "equivalent", v.reason


def _mutated(tmp_path: Path, name: str, old: str, new: str) -> Path:
    text = (FORMS / f"{name}.partitioned.mlir").read_text()
    assert text.count(old) == 1, f"{old!r} in {name}"
    out = tmp_path / f"{name}.mutated.mlir"
    out.write_text(text.replace(old, new))
    return out


@pytest.mark.parametrize("name,old,new", [
    # The all-reduce over the wrong mesh axis (dp instead of tp).
    ("scatter_sum", 'axes = [#stablehlo.axis_ref<name = "axis_1">]', 'axes = [#stablehlo.axis_ref<name = "axis_2">]'),
    # The all-to-all over the iota mesh: the device ids the HLO conversion used to drop.
    ("reshard", "mesh = @mesh_device_ids_0,", "mesh = @mesh,"),
    # The all-gather over a sub-axis of the 4-way axis instead of the 2-way axis.
    ("mlp", 'axes = [#stablehlo.axis_ref<name = "axis_0">]',
     'axes = [#stablehlo.axis_ref<name = "axis_2", sub_axis_info = (1)2>]'),
])
def test_mesh_axes_mutation_is_caught(tmp_path: Path, name: str, old: str, new: str) -> None:
    v = _verify(FORMS / f"{name}.ref.mlir", _mutated(tmp_path, name, old, new))
    assert v.verdict == "not-equivalent", v.reason
    assert v.counterexample is not None
    assert any(r.backend.startswith("xla") and r.confirmed for r in v.counterexample.replay), v.counterexample.replay


# -- each collective with mesh-axis groups against XLA ---------------------------------

SPLIT = '{mhlo.sharding = "{devices=[8,1]<=[8]}"}'
CHANNEL = "channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>"
MESHES = {
    "iota_2x4": '<["x"=2, "y"=4]>',
    "ids_4x2": '<["a"=4, "b"=2], device_ids=[0, 4, 1, 5, 2, 6, 3, 7]>',
    "ids_2x2x2": '<["p"=2, "q"=2, "r"=2], device_ids=[3, 1, 0, 2, 7, 5, 4, 6]>',
}


def _ref(name: str, sub: tuple[int, int] | None = None) -> str:
    info = f", sub_axis_info = ({sub[0]}){sub[1]}" if sub else ""
    return f'#stablehlo.axis_ref<name = "{name}"{info}>'


def _groups(mesh: str, *refs: str) -> str:
    return f"#stablehlo.replica_group_mesh_axes<mesh = @{mesh}, axes = [{', '.join(refs)}]>"


def _module(mesh: str, arg: str, result: str, body: str) -> str:
    return f"""
module @coll attributes {{mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32}} {{
  sdy.mesh @{mesh} = {MESHES[mesh]}
  func.func public @main(%a0: tensor<{arg}> {SPLIT}) -> (tensor<{result}> {SPLIT}) {{
{body}
  }}
}}
"""


def _sum() -> str:
    return """({
    ^bb0(%x: tensor<f32>, %y: tensor<f32>):
      %r = stablehlo.add %x, %y : tensor<f32>
      stablehlo.return %r : tensor<f32>
    })"""


def _all_reduce(mesh: str, groups: str) -> str:
    return _module(mesh, "2x3xf32", "2x3xf32", f"""
    %0 = "stablehlo.all_reduce"(%a0) <{{{CHANNEL}, replica_groups = {groups}, use_global_device_ids}}> {_sum()} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    return %0 : tensor<2x3xf32>""")


def _all_gather(mesh: str, groups: str, k: int) -> str:
    return _module(mesh, "1x3xf32", f"{k}x3xf32", f"""
    %0 = "stablehlo.all_gather"(%a0) <{{all_gather_dim = 0 : i64, {CHANNEL}, replica_groups = {groups}, use_global_device_ids}}> : (tensor<1x3xf32>) -> tensor<{k}x3xf32>
    return %0 : tensor<{k}x3xf32>""")


def _reduce_scatter(mesh: str, groups: str, k: int) -> str:
    return _module(mesh, f"{k}x2xf32", "1x2xf32", f"""
    %0 = "stablehlo.reduce_scatter"(%a0) <{{{CHANNEL}, replica_groups = {groups}, scatter_dimension = 0 : i64, use_global_device_ids}}> {_sum()} : (tensor<{k}x2xf32>) -> tensor<1x2xf32>
    return %0 : tensor<1x2xf32>""")


def _all_to_all(mesh: str, groups: str, k: int) -> str:
    return _module(mesh, f"{k}x2xf32", f"1x{2 * k}xf32", f"""
    %0 = "stablehlo.all_to_all"(%a0) <{{{CHANNEL}, concat_dimension = 1 : i64, replica_groups = {groups}, split_count = {k} : i64, split_dimension = 0 : i64}}> : (tensor<{k}x2xf32>) -> tensor<1x{2 * k}xf32>
    return %0 : tensor<1x{2 * k}xf32>""")


CASES: dict[str, tuple[str, str]] = {
    "all_reduce_iota_y": (_all_reduce("iota_2x4", _groups("iota_2x4", _ref("y"))), "2x3xf32"),
    "all_reduce_ids_a": (_all_reduce("ids_4x2", _groups("ids_4x2", _ref("a"))), "2x3xf32"),
    "all_reduce_sub_axis": (_all_reduce("iota_2x4", _groups("iota_2x4", _ref("y", (2, 2)))), "2x3xf32"),
    "all_gather_iota_x": (_all_gather("iota_2x4", _groups("iota_2x4", _ref("x")), 2), "1x3xf32"),
    "all_gather_ids_two_axes_reversed": (
        _all_gather("ids_2x2x2", _groups("ids_2x2x2", _ref("r"), _ref("p")), 4), "1x3xf32"),
    "all_gather_sub_axis_then_axis": (
        _all_gather("iota_2x4", _groups("iota_2x4", _ref("y", (1, 2)), _ref("x")), 4), "1x3xf32"),
    "reduce_scatter_ids_a": (_reduce_scatter("ids_4x2", _groups("ids_4x2", _ref("a")), 4), "4x2xf32"),
    "reduce_scatter_two_axes": (
        _reduce_scatter("ids_2x2x2", _groups("ids_2x2x2", _ref("q"), _ref("r")), 4), "4x2xf32"),
    "all_to_all_ids_a": (_all_to_all("ids_4x2", _groups("ids_4x2", _ref("a")), 4), "4x2xf32"),
    "all_to_all_sub_axis": (_all_to_all("iota_2x4", _groups("iota_2x4", _ref("y", (2, 2))), 2), "2x2xf32"),
}


def _inputs(arg: str, seed: int) -> np.ndarray:
    *dims, _ = arg.split("x")
    rng = np.random.default_rng(seed)
    return np.round(rng.normal(size=(N * int(dims[0]), *map(int, dims[1:]))), 3)


@pytest.fixture
def native_xla(monkeypatch):
    """An XLA runner that compiles the mesh-axes form as it is: XLA's own reading of it,
    not the integer groups XlaRunner otherwise rewrites it to."""
    from tv_mlir.execute import xla as xla_module

    monkeypatch.setattr(xla_module, "densify_replica_groups", lambda module: 0)
    return xla_module.XlaRunner()


@pytest.mark.parametrize("name", sorted(CASES))
def test_mesh_axes_collective_matches_xla(native_xla, name: str) -> None:
    _matches_xla(native_xla, name)


def test_xla_runner_runs_the_groups_the_verifier_reads(xla) -> None:
    """XlaRunner rewrites the mesh form to integer groups before compiling (XLA's reading
    of the form in a multi-mesh train step differed from the sharded jit; see
    densify_replica_groups); the result is still XLA's collective on those groups."""
    for name in sorted(CASES):
        _matches_xla(xla, name)


def _matches_xla(xla, name: str) -> None:
    text, arg = CASES[name]
    module = prepared(text)
    assert module.per_device
    for seed in range(2):
        x = _inputs(arg, seed)
        per_device = [[part] for part in np.split(x, N, axis=0)]
        want_parts = xla.run_spmd(text, per_device, per_device_program=True)
        want = np.concatenate([want_parts[d][0] for d in range(N)], axis=0)
        assert_close(numeric_values(module, [x])[0], want, f"{name}: numeric")
        assert_close(symbolic_values(module, [x])[0], want, f"{name}: symbolic")
        assert_close(fast_symbolic_values(module, [x])[0], want, f"{name}: symbolic (own terms)")


def test_wrong_axis_order_is_caught(native_xla, monkeypatch) -> None:
    """The harness notices a resolver that ignores the order of the named axes."""
    from tv_mlir.frontend import read

    real = read.resolve_mesh_axes
    monkeypatch.setattr(read, "resolve_mesh_axes", lambda mesh, axes, text="": real(mesh, axes[::-1], text))
    with pytest.raises(AssertionError):
        _matches_xla(native_xla, "all_gather_ids_two_axes_reversed")


def test_densify_replica_groups() -> None:
    from jaxlib.mlir import ir

    from tv_mlir.frontend.read import densify_replica_groups, mlir_context

    with mlir_context():
        module = ir.Module.parse(CASES["all_gather_ids_two_axes_reversed"][0])
        assert densify_replica_groups(module) == 1
        text = str(module)
    assert "replica_group_mesh_axes" not in text
    # ids_2x2x2: positions (p, q, r) hold [3, 1, 0, 2, 7, 5, 4, 6]; axes [r, p], r major.
    assert "dense<[[3, 7, 1, 5], [0, 4, 2, 6]]>" in text


# -- the resolution itself, against StableHLO's lowering of the form ----------------------

@pytest.mark.parametrize("axes,mesh,ids,want", [
    # stablehlo/tests: stablehlo_compatibility_expander (target 1.14.0), *_rgv3 and *_subaxis*.
    ((("x", 1, None),), (("x", 2), ("y", 2)), (), [[0, 2], [1, 3]]),
    ((("y", 1, None),), (("x", 2), ("y", 2)), (), [[0, 1], [2, 3]]),
    ((("x", 1, None),), (("x", 2), ("y", 2)), (0, 2, 1, 3), [[0, 1], [2, 3]]),
    ((("y", 1, 2),), (("x", 2), ("y", 4)), (), [[0, 2], [1, 3], [4, 6], [5, 7]]),
    ((("foo", 3, 2), ("bar", 1, None)), (("foo", 6), ("bar", 5)), (),
     [list(range(10)), list(range(10, 20)), list(range(20, 30))]),
    ((("bar", 1, None), ("foo", 3, 2)), (("foo", 6), ("bar", 5)), (),
     [[0, 5, 1, 6, 2, 7, 3, 8, 4, 9], [10, 15, 11, 16, 12, 17, 13, 18, 14, 19],
      [20, 25, 21, 26, 22, 27, 23, 28, 24, 29]]),
    ((("i", 1, None), ("j", 1, None)), (("i", 1), ("j", 2)), (), [[0, 1]]),
    ((), (("x", 2),), (), [[0], [1]]),
])
def test_resolution_matches_stablehlo(axes, mesh, ids, want) -> None:
    assert resolve_mesh_axes(tir.Mesh(mesh, ids), axes).tolist() == want


@pytest.mark.parametrize("axes", [
    (("z", 1, None),),  # not a mesh axis
    (("y", 1, 3),),  # 3 does not divide 4
    (("y", 1, 2), ("y", 1, 2)),  # the same part twice
    (("y", 1, None), ("y", 2, 2)),  # overlapping parts
])
def test_bad_mesh_axes_are_refused(axes) -> None:
    with pytest.raises(ParseError):
        resolve_mesh_axes(tir.Mesh((("x", 2), ("y", 4))), axes)


def test_unknown_mesh_is_refused() -> None:
    text = CASES["all_reduce_iota_y"][0].replace("mesh = @iota_2x4,", "mesh = @nowhere,")
    with pytest.raises(ParseError, match="nowhere"):  # MLIR's verifier or ours
        prepared(text)


def test_unknown_group_form_is_unsupported() -> None:
    """A replica-groups form the reader keeps as text (a future StableHLO attribute) is an
    `unknown` verdict naming it, not a crash on int()."""
    from tv_mlir.execute.spmd import process_groups

    op = tir.Op("stablehlo.all_reduce", ("%0",), ("%1",), (), {
        "replica_groups": "#stablehlo.replica_groups_v4<@mesh, [0]>",
        "channel_handle": "#stablehlo.channel_handle<handle = 1, type = 1>", "use_global_device_ids": True},
        (), "here")
    with pytest.raises(Unsupported, match="replica_groups_v4"):
        process_groups(op, 1, 8)


# ---------------------------------------------------------------------------
# chlo in the partitioned form: XLA has no chlo, so its partitioned module holds XLA's
# expansion of chlo.erfc (plain arithmetic and exp) where the reference holds chlo.erfc.
# The verifier expands the reference's op through the same XLA route
# (tv_mlir/passes/legalize_chlo.py). Pairs from testdata/ops_more/gen_partitioned.py.

OPS_MORE = Path(__file__).resolve().parents[1] / "testdata" / "ops_more"


def test_exact_gelu_in_the_partitioned_form_is_equivalent() -> None:
    ref, part = OPS_MORE / "gelu_mlp.ref.mlir", OPS_MORE / "gelu_mlp.partitioned.mlir"
    assert "chlo.erfc" in ref.read_text()
    assert "chlo." not in part.read_text() and "stablehlo.all_reduce" in part.read_text()
    v = _verify(ref, part)
    assert v.verdict == "equivalent", v.reason
    assert "erfc" not in v.approximations and "exponential" in v.approximations, v.approximations


def test_exact_gelu_with_a_broken_expansion_is_not_equivalent() -> None:
    """The partitioned module's erfc with its sign branch swapped (erfc(x) for x < 0 taken as
    the positive side's value): the expansion is compared, not assumed."""
    v = _verify(OPS_MORE / "gelu_mlp.ref.mlir", OPS_MORE / "gelu_mlp.sign_swapped.partitioned.mlir")
    assert v.verdict == "not-equivalent", v.reason
    c = v.counterexample
    assert c is not None and c.confirmed and c.confirmed_at == "original sizes"
    assert any(r.backend == "xla" and r.confirmed for r in c.replay), c.replay


CHLO_OPS = """
func.func @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %a = chlo.erfc %x : tensor<4xf32> -> tensor<4xf32>
  %b = chlo.lgamma %y : tensor<4xf32> -> tensor<4xf32>
  %e = stablehlo.tanh %x : tensor<4xf32>
  %d = chlo.erf_inv %e : tensor<4xf32> -> tensor<4xf32>
  %n = chlo.next_after %x, %y : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %a, %b, %d, %n : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
"""


def test_xla_expansions_of_chlo_ops_run_as_xla_runs_them(xla, tmp_path: Path) -> None:
    """The expanded ops (log_plus_one, atan2, selects, ...) in our numeric and both
    symbolic algebras against XLA's run of the chlo module: the expansion is what XLA runs."""
    from conftest import check_against_xla

    pipeline = tmp_path / "legalize.txt"
    pipeline.write_text("inline\nlegalize-chlo\n")
    module = prepared(CHLO_OPS, str(pipeline))
    assert not any(op.name.startswith("chlo.") for op in module.main.body.walk())
    # Both branches of erfc's |x| < 1 and of its sign; lgamma below and above 1.
    x = np.array([-1.5, -0.3, 0.9, 2.5], np.float32)
    y = np.array([0.3, 1.5, 3.5, 7.0], np.float32)
    check_against_xla(xla, CHLO_OPS, [x, y], rtol=1e-4, atol=1e-5, pipeline=str(pipeline))


def test_align_pair_expands_only_what_the_other_program_lacks() -> None:
    from tv_mlir.passes.legalize_chlo import align_pair, op_names

    def module(body: str) -> tir.Module:
        return prepared(f"func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {{\n{body}\n"
                        "  return %r : tensor<3xf32>\n}")

    erfc = "  %r = chlo.erfc %x : tensor<3xf32> -> tensor<3xf32>"
    a, b = module(erfc), module(erfc)
    align_pair(a, b)  # both hold chlo.erfc (jax's Shardy lowering): kept, an uninterpreted function
    assert "chlo.erfc" in op_names(a) and "chlo.erfc" in op_names(b)
    c = module("  %r = stablehlo.exponential %x : tensor<3xf32>")
    align_pair(a, c)  # the other program has no erfc: expanded as XLA expands it
    assert "chlo.erfc" not in op_names(a) and "stablehlo.exponential" in op_names(a)
    assert {"stablehlo.select", "stablehlo.divide"} <= op_names(a)
    assert op_names(c) == {"stablehlo.exponential"}
