"""Exports of jax functions for the verifier: the module XLA's SPMD partitioner produces
(the per-device program the devices run) and the global lowerings.

Importing this module imports jax; set XLA_FLAGS/JAX_PLATFORMS before that if you want
several CPU devices (`--xla_force_host_platform_device_count=8`)."""
from __future__ import annotations

import glob
import os
import re
import tempfile
from collections.abc import Collection
from pathlib import Path
from typing import Any

import jax
import numpy as np

from tv_mlir.errors import UsageError

# Source locations name the user's code, not this module: jax gives an op the innermost frame
# outside its own files, which for what it traces at the jit call (hoisted constants, the
# jit's own ops) was the `jax.jit(...).lower(...)` line here, an absolute path into the
# verifier's checkout.
try:
    from jax._src import source_info_util as _source_info_util

    _source_info_util.register_exclusion(__file__)
except (ImportError, AttributeError):  # jax's private module moved: locations stay as they are
    pass

# Which compiler pass's output is "the partitioned module": the last dump of this pass.
_PASS = "spmd-partitioning"
# The executable compiled to reach that pass is thrown away (only its dump and its in/out
# shardings are read), so its backend code generation need not be optimised: these halve
# the export of the flax train step (7-10 s -> 4-5 s on 2 shared cores). XLA:CPU's fusion
# emitters (one LLVM kernel module per fusion, 132 for the 1-layer step, each compiled and
# dumped next to the HLO) cost most of what is left: without them the compile of the
# 1-layer step takes 0.4 s of CPU instead of 1.7 s. They act after the HLO passes; the
# partitioned module is the same (tests/test_jax_api.py checks it, and the flax steps'
# modules were compared byte for byte).
_FAST_BACKEND = {"xla_backend_optimization_level": 0, "xla_llvm_disable_expensive_passes": True,
                 "xla_cpu_use_fusion_emitters": False}


def _jitted(fn: Any, in_shardings: Any = None, out_shardings: Any = None) -> Any:
    """`fn` jitted with these shardings; a jit object as it is when none are given (with
    its static arguments when it is jitted again)."""
    if _is_jit(fn) and in_shardings is None and out_shardings is None:
        return fn
    kwargs = _statics(fn)
    if _is_nnx_jit(fn):
        return _nnx_jit(fn, in_shardings=in_shardings, out_shardings=out_shardings)
    if in_shardings is not None:
        kwargs["in_shardings"] = in_shardings
    if out_shardings is not None:
        kwargs["out_shardings"] = out_shardings
    return jax.jit(_unjitted(fn), **kwargs)


def _statics(fn: Any) -> dict[str, Any]:
    """A jit object's `static_argnums` / `static_argnames`: a train step jitted with
    `static_argnums` (a config, a `train` flag) must be traced with them on both sides, or
    the reference traces the flag and fails (`TracerBoolConversionError`). jax keeps them in
    the jit object's `_jit_info` only; without it (jax changed), none."""
    info = getattr(fn, "_jit_info", None) if _is_jit(fn) else None
    return {key: tuple(value) for key in ("static_argnums", "static_argnames")
            if (value := getattr(info, key, None))}


def _is_jit(fn: Any) -> bool:
    return hasattr(fn, "lower") and hasattr(fn, "__wrapped__")


def _is_nnx_jit(fn: Any) -> bool:
    """flax.nnx.jit's wrapper: it lowers a pure function of the modules' states (their
    updates are outputs), so both sides must be nnx.jit's, not jax.jit's of its body."""
    return _is_jit(fn) and hasattr(fn, "jitted_fn") and type(fn).__module__.startswith("flax.nnx")


def _nnx_jit(fn: Any, **kwargs: Any) -> Any:
    from flax import nnx

    return nnx.jit(fn.fun, **kwargs)


def _lower(jitted: Any, args: Any) -> Any:
    """jax's Lowered (nnx.jit's own Lowered wraps it)."""
    lowered = jitted.lower(*args)
    return getattr(lowered, "lowered", lowered)


def _unjitted(fn: Any) -> Any:
    """The function inside a jit object (only a jit's: shard_map's wrapper also has a
    `__wrapped__`, its body, and unwrapping that would drop the shard_map)."""
    return fn.__wrapped__ if _is_jit(fn) else fn


def _hlo_after_partitioning(lowered: Any) -> tuple[str, Any]:
    """The HLO text of the module right after the partitioner, and the compiled executable
    (for the output shardings, which the dump does not carry)."""
    with tempfile.TemporaryDirectory() as d:
        compiled = lowered.compile(compiler_options={
            "xla_dump_to": d,
            "xla_dump_hlo_pass_re": _PASS,
            "xla_dump_hlo_as_text": True,
            # Without it the dump elides constants past a few elements as {...}.
            "xla_dump_large_constants": True,
            **_FAST_BACKEND,
        })
        dumps = sorted(glob.glob(os.path.join(d, f"*after_{_PASS}*.txt")))
        devices = {d for s in jax.tree.leaves(compiled.input_shardings) + jax.tree.leaves(compiled.output_shardings)
                   for d in s.device_set}
        if not dumps and len(devices) <= 1:
            raise UsageError("nothing to partition: the jit runs on one device (give in_shardings / "
                             "out_shardings, ShapeDtypeStructs with a sharding, or arrays placed on a mesh)")
        if not dumps:
            raise RuntimeError(f"XLA wrote no '{_PASS}' dump (was the function compiled before? "
                               "pass a fresh function object)")
        return Path(dumps[-1]).read_text(), compiled


def partitioned_text(fn: Any, args: list[Any] | tuple[Any, ...], in_shardings: Any = None,
                     out_shardings: Any = None) -> str:
    """XLA's per-device module after SPMD partitioning, as StableHLO text with locations.
    `mhlo.num_partitions`, `mhlo.num_replicas` and the results' `mhlo.sharding` are added:
    the HLO dump has none of them."""
    from jax._src.interpreters import mlir
    from jax._src.lib import _jax
    from jaxlib import _hlo  # type: ignore[attr-defined]

    lowered = _lower(_jitted(fn, in_shardings, out_shardings), args)
    hlo_text, compiled = _hlo_after_partitioning(lowered)
    hlo = _hlo.hlo_module_from_text(hlo_text)
    bytecode = _jax.mlir.hlo_to_stablehlo(hlo.as_serialized_hlo_module_proto())
    out_shardings_flat = jax.tree.leaves(compiled.output_shardings)
    out_ndims = [len(s.shape) for s in jax.tree.leaves(lowered.out_info)]
    shardings = jax.tree.leaves(compiled.input_shardings) + out_shardings_flat
    num_partitions = len(shardings[0].device_set) if shardings else 1
    with mlir.make_ir_context():
        module = mlir.ir.Module.parse(bytecode)
        attrs = module.operation.attributes
        i32 = mlir.ir.IntegerType.get_signless(32)
        if "mhlo.num_partitions" not in attrs:
            attrs["mhlo.num_partitions"] = mlir.ir.IntegerAttr.get(i32, num_partitions)
        if "mhlo.num_replicas" not in attrs:
            attrs["mhlo.num_replicas"] = mlir.ir.IntegerAttr.get(i32, 1)
        main = [op for op in module.body.operations if op.operation.name == "func.func"
                and mlir.ir.StringAttr(op.attributes["sym_name"]).value == "main"]
        if len(main) != 1:
            raise RuntimeError("the partitioned module has no unique @main")
        if "res_attrs" not in main[0].attributes:
            res = [mlir.ir.DictAttr.get({"mhlo.sharding": mlir.ir.StringAttr.get(
                str(s._to_xla_hlo_sharding(nd)))}) for s, nd in zip(out_shardings_flat, out_ndims)]
            main[0].attributes["res_attrs"] = mlir.ir.ArrayAttr.get(res)
        text = module.operation.get_asm(enable_debug_info=True)
    assert isinstance(text, str)
    text = restore_mesh_device_ids(text, hlo_text)
    with mlir.make_ir_context():
        if not mlir.ir.Module.parse(text).operation.verify():
            raise RuntimeError("the partitioned module does not verify after restoring its meshes' device ids")
    return text


# An HLO collective's replica groups over a mesh, as XLA prints them:
#   replica_groups=mesh['axis_0'=4,'axis_1'=2], device_ids=([2,4]T(1,0)) {'axis_0'}
_HLO_MESH_GROUPS = re.compile(r"replica_groups=mesh\[([^\]]*)\](?:, device_ids=\((.*?)\))? \{")
_HLO_CHANNEL = re.compile(r"channel_id=(\d+)")
_HLO_IOTA = re.compile(r"\[([\d,]+)\](?:T\(([\d,]+)\))?$")


def _hlo_device_ids(spec: str) -> list[int]:
    """`[2,4]T(1,0)` (an iota reshaped and transposed) or `0,4,1,5` as the id list."""
    m = _HLO_IOTA.fullmatch(spec.strip())
    if m:
        dims = [int(d) for d in m.group(1).split(",")]
        ids = np.arange(int(np.prod(dims))).reshape(dims)
        if m.group(2):
            ids = ids.transpose([int(p) for p in m.group(2).split(",")])
        return [int(i) for i in ids.ravel()]
    try:
        return [int(i) for i in spec.strip("{}[] ").split(",")]
    except ValueError:
        raise RuntimeError(f"unknown device_ids form in the partitioned HLO: {spec}") from None


def restore_mesh_device_ids(text: str, hlo_text: str) -> str:
    """XLA's HLO -> StableHLO conversion drops the `device_ids` of a collective's mesh
    (`replica_groups=mesh[...], device_ids=([2,4]T(1,0)) {'axis_0'}` becomes groups over
    `sdy.mesh @mesh = <[...]>`, an iota): the converted module then names other groups
    than the HLO it came from. Put them back: every such collective (matched by its
    channel id) gets an `sdy.mesh` of its own that carries its device ids."""
    meshes: dict[tuple[str, tuple[int, ...]], str] = {}
    by_channel: dict[int, str] = {}
    for line in hlo_text.splitlines():
        m = _HLO_MESH_GROUPS.search(line)
        if not m or not m.group(2):
            continue
        ids = _hlo_device_ids(m.group(2))
        if ids == list(range(len(ids))):
            continue
        channel = _HLO_CHANNEL.search(line)
        if channel is None:
            raise RuntimeError(f"a collective without a channel id over a mesh with device ids: {line.strip()[:200]}")
        axes = ", ".join(f'"{name}"={size}' for name, size in re.findall(r"'([^']*)'=(\d+)", m.group(1)))
        key = (axes, tuple(ids))
        meshes.setdefault(key, f"mesh_device_ids_{len(meshes)}")
        by_channel[int(channel.group(1))] = meshes[key]
    if not by_channel:
        return text
    lines = text.splitlines()
    done: set[int] = set()
    for k, line in enumerate(lines):
        ch = re.search(r"channel_handle = #stablehlo.channel_handle<handle = (\d+)", line)
        if ch and int(ch.group(1)) in by_channel and "replica_group_mesh_axes<mesh = @" in line:
            lines[k] = re.sub(r"replica_group_mesh_axes<mesh = @[\w.$-]+,",
                              f"replica_group_mesh_axes<mesh = @{by_channel[int(ch.group(1))]},", line)
            done.add(int(ch.group(1)))
    missing = sorted(set(by_channel) - done)
    if missing:
        raise RuntimeError(f"collectives with channel ids {missing} not found in the converted module")
    decls = [f"  sdy.mesh @{name} = <[{axes}], device_ids=[{', '.join(map(str, ids))}]>"
             for (axes, ids), name in meshes.items()]
    at = next(k for k, line in enumerate(lines) if line.startswith("module"))
    return "\n".join(lines[:at + 1] + decls + lines[at + 1:]) + "\n"


# ---------------------------------------------------------------------------
# The check from Python

FORMS = ("partitioned", "shardy", "gspmd")


def _static_positions(fn: Any, n: int) -> set[int]:
    """The positions of `fn`'s static arguments among n positional ones."""
    statics = _statics(fn)
    positions = {i % n for i in statics.get("static_argnums", ()) if -n <= i < n}
    names = statics.get("static_argnames", ())
    if names:
        import inspect

        try:
            params = list(inspect.signature(_unjitted(fn)).parameters)
        except (TypeError, ValueError):
            params = []
        positions |= {params.index(a) for a in names if a in params and params.index(a) < n}
    return positions


def _specs(args: tuple[Any, ...], static: Collection[int] = (), sharded: bool = False) -> tuple[Any, ...]:
    """Arrays (and pytrees of them) as ShapeDtypeStructs: nothing runs, nothing is placed.
    Static arguments stay as they are (a numpy scalar flag is a value, not a shape). On the
    `sharded` side a ShapeDtypeStruct keeps its sharding and a jax array spread over devices
    its own (jit reads them when no in_shardings are given); the reference has none."""
    def spec(x: Any) -> Any:
        if isinstance(x, jax.ShapeDtypeStruct):
            return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=x.sharding if sharded else None)
        if hasattr(x, "shape") and hasattr(x, "dtype"):
            own = getattr(x, "sharding", None) if sharded and isinstance(x, jax.Array) else None
            if own is not None and len(own.device_set) <= 1:
                own = None
            return jax.ShapeDtypeStruct(np.shape(x), x.dtype, sharding=own)
        return x
    return tuple(a if i in static else jax.tree.map(spec, a) for i, a in enumerate(args))


def _sharded_text(fn: Any, args: tuple[Any, ...], in_shardings: Any, out_shardings: Any, form: str) -> str:
    if form == "partitioned":
        return partitioned_text(fn, list(args), in_shardings, out_shardings)
    jitted = _jitted(fn, in_shardings, out_shardings)
    if form == "shardy":
        text = _lower(jitted, args).as_text(debug_info=True)
    elif form == "gspmd":
        config: Any = jax.config  # its stubs do not list the flags
        previous = bool(config.jax_use_shardy_partitioner)
        jax.config.update("jax_use_shardy_partitioner", False)
        try:
            text = _lower(jitted, args).as_text(debug_info=True)
        finally:
            jax.config.update("jax_use_shardy_partitioner", previous)
    else:
        raise ValueError(f"form={form!r}: choose one of {', '.join(FORMS)}")
    assert isinstance(text, str)
    return text


def _reference_text(fn: Any, reference: Any, args: tuple[Any, ...]) -> str:
    """`reference` (or `fn` itself) jitted with no in/out shardings: a global program.
    Sharding constraints inside it stay as `sdy.sharding_constraint`, which the verifier
    reads as the identity they are."""
    source = reference if reference is not None else fn
    if _is_nnx_jit(source):  # nnx's pure function of the states, without shardings
        text = _lower(_nnx_jit(source), args).as_text(debug_info=True)
        assert isinstance(text, str)
        return text
    target = _unjitted(source)  # without a jit's shardings
    # The reference takes the same arguments: fn's static ones are static there too, by
    # position (a reference's parameters may have other names).
    positions = _static_positions(reference if _is_jit(reference) else fn, len(args))
    text = jax.jit(target, static_argnums=tuple(sorted(positions))).lower(*args).as_text(debug_info=True)
    assert isinstance(text, str)
    return text


def _named(text: str, name: str) -> Any:
    """Module text as a stream that carries a file-like name for the verdict's messages."""
    import io

    stream = io.StringIO(text)
    stream.name = name
    return stream


def _pair(fn: Any, args: tuple[Any, ...], in_shardings: Any, out_shardings: Any, reference: Any,
          form: str) -> tuple[str, str]:
    if form not in FORMS:
        raise ValueError(f"form={form!r}: choose one of {', '.join(FORMS)}")
    if _is_nnx_jit(fn):  # modules as arguments: nnx.jit reads their states' shapes itself
        return (_reference_text(fn, reference, args), _sharded_text(fn, args, in_shardings, out_shardings, form))
    static = _static_positions(fn, len(args))
    sharded_args = _typed(_specs(args, static, sharded=True), in_shardings, static)
    return (_reference_text(fn, reference, _specs(args, static)),
            _sharded_text(fn, sharded_args, in_shardings, out_shardings, form))


def _explicit(sharding: Any) -> bool:
    mesh = getattr(sharding, "mesh", None)
    return any(t == jax.sharding.AxisType.Explicit for t in getattr(mesh, "axis_types", ()))


def _typed(specs: tuple[Any, ...], in_shardings: Any, static: Collection[int]) -> tuple[Any, ...]:
    """Over a mesh with Explicit axes the trace reads each argument's sharding from its type
    (the ShapeDtypeStruct's), not from jit's in_shardings: a `jnp.dot(...,
    out_sharding=P(..., unreduced={"tp"}))` over a contraction sharded by in_shardings alone
    fails to trace (its contracting spec is unsharded). Give the ShapeDtypeStructs without a
    sharding the one in_shardings names for them; Auto meshes are left as they were."""
    is_sharding = lambda x: isinstance(x, jax.sharding.Sharding)  # noqa: E731
    if in_shardings is None or not any(_explicit(s) for s in jax.tree.leaves(in_shardings, is_leaf=is_sharding)):
        return specs
    per_arg = in_shardings if isinstance(in_shardings, (tuple, list)) else (in_shardings,) * len(specs)
    dynamic = [i for i in range(len(specs)) if i not in static]
    if len(per_arg) != len(dynamic):
        return specs  # jit reports the mismatch itself

    def attach(sharding: Any, tree: Any) -> Any:
        def one(x: Any) -> Any:
            if isinstance(x, jax.ShapeDtypeStruct) and x.sharding is None and is_sharding(sharding):
                return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sharding)
            return x
        return jax.tree.map(one, tree)

    out = list(specs)
    for i, sh in zip(dynamic, per_arg):
        out[i] = jax.tree.map(attach, sh, specs[i], is_leaf=lambda x: x is None or is_sharding(x))
    return tuple(out)


def _name(fn: Any) -> str:
    return getattr(_unjitted(fn), "__name__", "fn").strip("<>") or "fn"


def check(fn: Any, *args: Any, in_shardings: Any = None, out_shardings: Any = None, reference: Any = None,
          form: str = "partitioned", **verify_options: Any) -> Any:
    """Verify the sharded `jax.jit(fn, in_shardings=, out_shardings=)` against a reference.

    `args`: arrays or `jax.ShapeDtypeStruct`s (pytrees, as jit takes them); only their
    shapes and dtypes are used. `fn` may be a jit object already (its shardings are kept
    unless others are given). form="partitioned" checks XLA's module after SPMD
    partitioning (what the devices run); "shardy"/"gspmd" check the lowering instead.
    The reference is `reference` if given (a function of the same arguments), else `fn`
    jitted with no in/out shardings. `verify_options` are `tv_mlir.api.verify`'s options.
    Returns the Verdict."""
    from tv_mlir.api import verify

    ref_text, sharded_text = _pair(fn, args, in_shardings, out_shardings, reference, form)
    name = _name(fn)
    return verify(_named(ref_text, f"{name}.ref.mlir"), _named(sharded_text, f"{name}.{form}.mlir"),
                  **verify_options)


def export_pair(fn: Any, *args: Any, in_shardings: Any = None, out_shardings: Any = None, reference: Any = None,
                form: str = "partitioned", directory: str | os.PathLike[str] = ".", name: str | None = None
                ) -> tuple[Path, Path]:
    """Write `<name>.ref.mlir` and `<name>.<form>.mlir` (what `check` compares) into
    `directory`, for `tv-mlir verify REF SHARDED` later (a CI job can keep them).
    Returns the two paths."""
    ref_text, sharded_text = _pair(fn, args, in_shardings, out_shardings, reference, form)
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    name = name or _name(fn)
    ref_path, sharded_path = out / f"{name}.ref.mlir", out / f"{name}.{form}.mlir"
    ref_path.write_text(ref_text)
    sharded_path.write_text(sharded_text)
    return ref_path, sharded_path
