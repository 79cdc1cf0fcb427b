"""Run StableHLO modules numerically on XLA's CPU backend (through jaxlib).

The verifier uses this as ground truth: whatever XLA computes for a module is
what the module means in practice.  jax has no public "compile this MLIR text"
API, so every private jax/jaxlib name used for that lives in this file alone;
a jax upgrade that moves them should break nothing else.

jaxlib names used (checked against jax/jaxlib 0.10.2):
  - jax.extend.backend.get_backend / get_compile_options  (semi-public)
  - Client.compile_and_load(mlir_text_or_bytecode, DeviceList, CompileOptions)
  - LoadedExecutable.execute_sharded(...).disassemble_into_single_device_arrays()
  - LoadedExecutable.get_parameter_shardings()
  - jax._src.lib.xla_client.{DeviceList, GSPMDSharding, HloSharding}
  - jax.enable_x64 (context manager; device_put would otherwise narrow
    f64/i64/u64 inputs to 32 bits)
  - jax.make_array_from_single_device_arrays (assembles per-device inputs)
  - jax._src.interpreters.mlir.make_ir_context  (a context that knows
    func/stablehlo/chlo/sdy/mhlo, for reading parameter types)
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from tv_mlir.errors import ParseError, Unsupported
from tv_mlir.frontend.read import asm_text, densify_replica_groups, entry_func, func_name, named_attrs, np_dtype
from tv_mlir.options import MAX_XLA_CHAIN

# How the module maps onto devices:
#   "single":      one device, one partition.
#   "partitioned": a global program (sharding annotations, shard_map bodies)
#                  that XLA's SPMD partitioner splits over N devices.
#   "per_device":  a program that is already per-device (local shapes, explicit
#                  collectives) and must run unchanged on each of N devices.
_Mode = Literal["single", "partitioned", "per_device"]

_SHARDING_ATTRS = ("mhlo.sharding", "sdy.sharding")

# Per output, per device: the block of the global value that device holds, and its buffer.
Blocks = list[list[tuple[tuple[slice, ...], np.ndarray]]]


class XlaRunError(Exception):
    """XLA could not compile or run a module; the message is one line."""


@dataclass(frozen=True)
class _Param:
    shape: tuple[int, ...]
    dtype: np.dtype


@dataclass(frozen=True)
class _Compiled:
    executable: Any
    devices: tuple[Any, ...]
    params: tuple[_Param, ...]
    # One jax Sharding per parameter, describing how the per-device buffers
    # make up the global argument; None in single-device mode.
    arg_shardings: tuple[Any, ...] | None


@dataclass
class XlaRunner:
    """Compiles StableHLO modules on jax's CPU backend and runs them; caches executables per module text."""

    _cache: dict[tuple[str | bytes, _Mode], _Compiled] = field(
        default_factory=dict, init=False, repr=False)
    _ir_context: Any = field(default=None, init=False, repr=False)

    def run(self, module: str | bytes, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Runs `module` on one CPU device.

        Each input is cast to the entry function's parameter element type (so
        float64/int64/bool arrays are fine); outputs keep XLA's dtype.  The
        module's `mhlo.num_partitions` is ignored: a module with sharding
        annotations runs as its global program, while one with a shard_map
        body (manual computation) fails - use `run_spmd` for those.
        """
        compiled = self._compile(module, "single")
        self._check_arity(compiled, len(inputs))
        device = compiled.devices[0]
        jax = _jax()
        # Without x64, device_put would silently narrow f64/i64/u64 inputs.
        with jax.enable_x64(True):
            try:
                args = [jax.device_put(_cast(x, p, i), device)
                        for i, (x, p) in enumerate(zip(inputs, compiled.params))]
            except (ValueError, TypeError) as e:
                raise XlaRunError(_one_line(e)) from e
            outputs = _execute(compiled, args)
        return [per_device[0] for per_device in outputs]

    def run_spmd(
        self,
        module: str | bytes,
        per_device_inputs: Sequence[Sequence[np.ndarray]],
        *,
        per_device_program: bool = False,
    ) -> list[list[np.ndarray]]:
        """Runs `module` SPMD on N = mhlo.num_partitions host CPU devices.

        `per_device_inputs[d][i]` is device d's local value of argument i;
        the result is `outputs[d][j]`, device d's local value of result j.
        Device d is partition d, i.e. global device id d in replica groups.
        A module without `mhlo.num_partitions` runs on len(per_device_inputs)
        devices (XLA's HLO->StableHLO conversion drops the attribute).

        per_device_program=False: the module is a global program (what
        `jax.jit(...).lower(...)` emits for sharded functions and shard_map);
        XLA partitions it, and each input must be the local shard that the
        parameter's sharding assigns to that device.
        per_device_program=True: the module is already per-device (e.g. XLA's
        own output after SPMD partitioning, or hand-written with collectives
        and `partition_id`); every sharding annotation is replaced by manual so
        XLA runs it unchanged on each device.

        Needs N CPU devices: set XLA_FLAGS=--xla_force_host_platform_device_count=N
        before jax is first imported.
        """
        mode: _Mode = "per_device" if per_device_program else "partitioned"
        compiled = self._compile(module, mode, num_devices=len(per_device_inputs))
        for d, inputs in enumerate(per_device_inputs):
            if len(inputs) != len(compiled.params):
                raise XlaRunError(
                    f"device {d} got {len(inputs)} inputs, the entry function "
                    f"takes {len(compiled.params)}")
        jax = _jax()
        assert compiled.arg_shardings is not None
        with jax.enable_x64(True):
            args = []
            for i, (param, sharding) in enumerate(zip(compiled.params, compiled.arg_shardings)):
                try:
                    shards = [jax.device_put(_cast(inputs[i], param, i, local=True), dev)
                              for inputs, dev in zip(per_device_inputs, compiled.devices)]
                    # Checks each local shape against the shard shape the
                    # sharding implies, so a wrong input fails here with a
                    # readable message rather than inside XLA.
                    args.append(jax.make_array_from_single_device_arrays(
                        param.shape, sharding, shards))
                except (ValueError, TypeError, AssertionError) as e:
                    raise XlaRunError(f"argument {i}: {_one_line(e)}") from e
            outputs = _execute(compiled, args)
        return [list(per_output) for per_output in zip(*outputs)] if outputs else [
            [] for _ in compiled.devices]

    def run_global(self, module: str | bytes, inputs: Sequence[np.ndarray], num_devices: int,
                   result_shapes: Sequence[tuple[int, ...]]) -> tuple[list[np.ndarray], Blocks]:
        """Runs a global program with sharding annotations or manual regions (a shard_map
        export) partitioned over `num_devices` CPU devices, from global inputs.

        `result_shapes` are the global result shapes (the entry's result types).
        Returns the global outputs, and per output and device the block of the global
        value that device holds with its local buffer (copies along replicated axes are
        each device's own, so diverging replicas show here)."""
        compiled = self._compile(module, "partitioned", num_devices=num_devices)
        self._check_arity(compiled, len(inputs))
        jax = _jax()
        from jax._src.lib import xla_client as xc

        assert compiled.arg_shardings is not None
        with jax.enable_x64(True):
            try:
                args = [jax.device_put(_cast(x, p, i), sh)
                        for i, (x, p, sh) in enumerate(zip(inputs, compiled.params, compiled.arg_shardings))]
            except (ValueError, TypeError) as e:
                raise XlaRunError(_one_line(e)) from e
            outputs = _execute(compiled, args)
        out_shardings = compiled.executable.get_output_shardings()
        globals_, blocks = [], []
        for j, per_device in enumerate(outputs):
            proto = out_shardings[j] if out_shardings is not None and j < len(out_shardings) else \
                xc.HloSharding.replicate().to_proto()
            sharding = xc.GSPMDSharding(compiled.devices, proto)
            shape = tuple(result_shapes[j])
            index_map = sharding.devices_indices_map(shape)
            full = np.empty(shape, dtype=per_device[0].dtype)
            placed = []
            for dev, arr in zip(compiled.devices, per_device):
                idx = tuple(index_map[dev])
                placed.append((idx, arr))
            for idx, arr in reversed(placed):  # device 0's copy wins, as in jax
                full[idx] = arr
            globals_.append(full)
            blocks.append(placed)
        return globals_, blocks

    # -- compilation ---------------------------------------------------------

    def _compile(self, module: str | bytes, mode: _Mode, num_devices: int = 1) -> _Compiled:
        key = (module, mode)
        cached = self._cache.get(key)
        if cached is not None:
            if len(cached.devices) != num_devices:
                raise XlaRunError(
                    f"module runs on {len(cached.devices)} devices, got inputs for {num_devices}")
            return cached
        compiled = self._compile_uncached(module, mode, num_devices)
        self._cache[key] = compiled
        return compiled

    def _compile_uncached(self, module: str | bytes, mode: _Mode, num_devices: int) -> _Compiled:
        _jax()  # initialise jax before touching its private modules
        import jax.extend as jex
        from jax._src.lib import xla_client as xc
        from jaxlib.mlir import ir

        if self._ir_context is None:
            from jax._src.interpreters import mlir as jax_mlir
            self._ir_context = jax_mlir.make_ir_context()
        try:
            parsed = ir.Module.parse(module, context=self._ir_context)
        except Exception as e:  # MLIRError, or ValueError for undecodable bytes
            raise XlaRunError(f"cannot parse module: {_one_line(e)}") from e

        with self._ir_context, ir.Location.unknown():
            entry = _entry_function(parsed)
            params = _entry_params(entry)
            chain = longest_chain(parsed, entry)
            if chain > MAX_XLA_CHAIN:
                raise XlaRunError(f"not compiled: a chain of {chain} dependent ops, over XLA replay's budget of "
                                  f"{MAX_XLA_CHAIN} (XLA's compile time grows with its square)")
            # XLA's own HLO->StableHLO conversion drops this attribute; then
            # the number of per-device input lists decides.
            num_partitions = _int_attr(parsed.operation, "mhlo.num_partitions", num_devices)
            num_replicas = _int_attr(parsed.operation, "mhlo.num_replicas", 1)
            rewritten = False
            if func_name(entry) != "main":
                _rename_entry_to_main(parsed, entry)
                rewritten = True
            if mode == "per_device":
                _make_shardings_manual(parsed, entry)
                rewritten = True
            # Groups as mesh axes are run as the integer groups the verifier reads them as
            # (see densify_replica_groups: XLA's own reading of that form is not reliable).
            try:
                rewritten = densify_replica_groups(parsed) > 0 or rewritten
            except ParseError as e:
                raise XlaRunError(f"cannot read the replica groups: {e.one_line()}") from e
            if rewritten:
                module = asm_text(parsed)

        if num_replicas != 1:
            raise XlaRunError(f"mhlo.num_replicas = {num_replicas} is not supported (only 1)")
        if mode == "single":
            num_partitions = 1
        elif num_partitions != num_devices:
            raise XlaRunError(
                f"module has mhlo.num_partitions = {num_partitions}, "
                f"got inputs for {num_devices} devices")

        try:
            client = jex.backend.get_backend("cpu")
        except RuntimeError as e:
            raise XlaRunError(f"no CPU backend: {_one_line(e)}") from e
        available = client.local_devices()
        if len(available) < num_partitions:
            raise XlaRunError(
                f"module needs {num_partitions} CPU devices, jax has {len(available)}; set "
                f"XLA_FLAGS=--xla_force_host_platform_device_count={num_partitions} "
                "before jax is imported")
        devices = tuple(available[:num_partitions])

        options = jex.backend.get_compile_options(
            num_replicas=1, num_partitions=num_partitions, backend=client)
        if mode == "per_device":
            # The manual shardings we write are GSPMD attributes; saying so up
            # front avoids XLA's "disabling Shardy" fallback warning.
            options.executable_build_options.use_shardy_partitioner = False
        try:
            executable = client.compile_and_load(module, xc.DeviceList(devices), options)
        except Exception as e:  # JaxRuntimeError, plus anything the binding raises
            raise XlaRunError(f"XLA compilation failed: {_one_line(e)}") from e

        arg_shardings: tuple[Any, ...] | None = None
        if mode == "partitioned":
            op_shardings = executable.get_parameter_shardings()
            if op_shardings is None:
                op_shardings = [xc.HloSharding.replicate().to_proto()] * len(params)
            arg_shardings = tuple(xc.GSPMDSharding(devices, s) for s in op_shardings)
        elif mode == "per_device":
            # jax Arrays cannot carry a manual sharding; "replicated" is only a
            # container here (global shape = local shape) and XLA never checks
            # that the per-device buffers are equal.
            replicated = xc.GSPMDSharding(devices, xc.HloSharding.replicate())
            arg_shardings = (replicated,) * len(params)
        return _Compiled(executable, devices, params, arg_shardings)

    @staticmethod
    def _check_arity(compiled: _Compiled, count: int) -> None:
        if count != len(compiled.params):
            raise XlaRunError(
                f"got {count} inputs, the entry function takes {len(compiled.params)}")


# -- helpers (pure functions; jax imported lazily) ----------------------------

# Host devices asked for when this module is the first to import jax: enough for the
# sharded programs of an 8-device mesh (XLA reads the flag once, at initialisation).
DEFAULT_HOST_DEVICES = 8


def host_device_flags() -> None:
    """XLA_FLAGS asks for DEFAULT_HOST_DEVICES CPU devices unless it names a count. Call
    before anything loads XLA's extension (`jaxlib._jax`): XLA reads the flags once, when
    it first loads, so a chlo legalization (frontend/xla_legalize.py) that loaded it first
    left jax with one device and every 8-device replay failed."""
    import os
    import sys

    if "jax" not in sys.modules:
        flags = os.environ.get("XLA_FLAGS", "")
        if "xla_force_host_platform_device_count" not in flags:
            os.environ["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={DEFAULT_HOST_DEVICES}".strip()
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")  # XLA's per-client INFO lines on stderr


def _jax() -> Any:
    # Imported on first use so that importing tv_mlir stays cheap and does not
    # initialise XLA (which would freeze XLA_FLAGS such as the device count).
    host_device_flags()
    import jax

    # jax's CPU LAPACK kernels (custom_call @lapack_*_ffi) find their LAPACK functions only
    # after this call, which jax makes when it lowers a linalg op itself; a module read from
    # text and run here would otherwise crash the process (SIGSEGV) on its first such call.
    from jax._src.lib import lapack

    lapack._lapack.initialize()
    return jax


def _execute(compiled: _Compiled, args: list[Any]) -> list[list[np.ndarray]]:
    """Returns outputs[j][d]: result j on device d, copied to host."""
    try:
        results = compiled.executable.execute_sharded(args)
        per_output = results.disassemble_into_single_device_arrays()
        # np.array copies, so callers get writable arrays that outlive the buffers.
        return [[np.array(a) for a in arrays] for arrays in per_output]
    except Exception as e:
        raise XlaRunError(f"XLA execution failed: {_one_line(e)}") from e


def _cast(x: Any, param: _Param, index: int, *, local: bool = False) -> np.ndarray:
    arr = np.asarray(x)
    # Local shards are checked against the sharding by jax instead.
    if not local and arr.shape != param.shape:
        raise XlaRunError(
            f"input {index} has shape {arr.shape}, parameter has shape {param.shape}")
    return arr.astype(param.dtype, copy=False)


def _one_line(exc: BaseException, limit: int = 500) -> str:
    text = str(exc)
    # XLA appends the Python caller's location, which is noise here.
    text = text.split("Suspected Python Code Location")[0]
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    message = " | ".join(lines) or type(exc).__name__
    return message if len(message) <= limit else message[: limit - 3] + "..."


def _int_attr(op: Any, name: str, default: int) -> int:
    from jaxlib.mlir import ir

    if name not in op.attributes:
        return default
    return ir.IntegerAttr(op.attributes[name]).value


def _entry_function(module: Any) -> Any:
    """The frontend's entry rule, so XLA runs the function the verifier reads."""
    try:
        return entry_func(module, "module")
    except ParseError as e:
        raise XlaRunError(e.one_line()) from e


def _entry_params(func: Any) -> tuple[_Param, ...]:
    from jaxlib.mlir import ir

    func_type = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    params = []
    for i, t in enumerate(func_type.inputs):
        if not isinstance(t, ir.RankedTensorType):
            raise XlaRunError(f"parameter {i} has type {t}; only ranked tensors are supported")
        if not t.has_static_shape:
            raise XlaRunError(f"parameter {i} has dynamic shape {t}; refine shapes first")
        try:
            dtype = np_dtype(str(t.element_type))
        except Unsupported as e:
            raise XlaRunError(f"parameter {i}: unsupported {e.message}") from e
        params.append(_Param(tuple(t.shape), dtype))
    return tuple(params)


def longest_chain(module: Any, entry: Any) -> int:
    """The longest chain of dependent ops from the entry's arguments, with calls counted as
    the callee's own longest chain (XLA inlines them) and an op with regions as one op (XLA
    compiles a region as a computation of its own)."""
    from jaxlib.mlir import ir

    funcs = {func_name(op.operation): op.operation for op in module.body.operations
             if op.operation.name == "func.func"}
    lengths: dict[str, int] = {}

    def of_func(name: str) -> int:
        if name not in lengths:
            lengths[name] = 0  # a (refused elsewhere) recursive call adds nothing
            lengths[name] = of_block(funcs[name].regions[0].blocks[0]) if name in funcs else 0
        return lengths[name]

    def of_block(block: Any) -> int:
        chain: dict[Any, int] = {}
        longest = 0
        for op in block.operations:
            o = op.operation
            here = max((chain.get(v, 0) for v in o.operands), default=0)
            if o.name == "func.call" and "callee" in o.attributes:
                here += of_func(ir.FlatSymbolRefAttr(o.attributes["callee"]).value)
            else:
                here += 1
            if len(o.results):  # not a terminator
                for r in o.results:
                    chain[r] = here
                longest = max(longest, here)
        return longest

    return of_func(func_name(entry))


def _rename_entry_to_main(module: Any, entry: Any) -> None:
    """XLA compiles the function called main. A private @main (not the entry: see
    `entry_func`) first moves aside to a fresh name, with its callers."""
    from jaxlib.mlir import ir

    table = ir.SymbolTable(module.operation)
    if "main" in table:
        fresh = next(n for n in (f"main_{k}" for k in itertools.count()) if n not in table)
        _rename(module, table["main"], "main", fresh)
    _rename(module, entry, func_name(entry), "main")


def _rename(module: Any, func: Any, old: str, new: str) -> None:
    from jaxlib.mlir import ir

    ir.SymbolTable.set_symbol_name(func, new)
    ir.SymbolTable.replace_all_symbol_uses(old, new, module.operation)


def _make_shardings_manual(module: Any, entry: Any) -> None:
    """Marks the entry's arguments and results manual and drops all other shardings.

    A per-device program still carries the global shardings it was
    partitioned with (on entry arguments, sometimes on ops); left in place,
    XLA would partition it a second time.  Manual means "already local"."""
    from jaxlib.mlir import ir

    def strip(op: Any) -> ir.WalkResult:
        for name in _SHARDING_ATTRS:
            if name in op.attributes:
                del op.attributes[name]
        return ir.WalkResult.ADVANCE

    module.operation.walk(strip)

    manual = ir.StringAttr.get("{manual}")
    func_type = ir.FunctionType(ir.TypeAttr(entry.attributes["function_type"]).value)
    for attr_name, count in (("arg_attrs", len(func_type.inputs)),
                             ("res_attrs", len(func_type.results))):
        old = list(ir.ArrayAttr(entry.attributes[attr_name])) if attr_name in entry.attributes \
            else [ir.DictAttr.get({})] * count
        new = []
        for d in old:
            entries = {a.name: a.attr for a in named_attrs(ir.DictAttr(d)) if a.name not in _SHARDING_ATTRS}
            entries["mhlo.sharding"] = manual
            new.append(ir.DictAttr.get(entries))
        entry.attributes[attr_name] = ir.ArrayAttr.get(new)


__all__ = ["XlaRunError", "XlaRunner"]
