"""The project's own plain-data IR: what the frontend makes of an MLIR module, and all that
the passes, the interpreter and the prover read. Small, typed, picklable dataclasses, so
that a module (or a region of one) can be handed to another process as it is."""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# Floats are exact reals whatever their width (a narrower type is a precision finding).
FLOAT_DTYPES = frozenset({"f16", "bf16", "f32", "f64",
                          "f8E4M3FN", "f8E5M2", "f8E4M3FNUZ", "f8E5M2FNUZ", "f8E4M3B11FNUZ",
                          "f8E3M4", "f6E2M3FN", "f6E3M2FN", "f4E2M1FN"})


@dataclass(frozen=True)
class TensorType:
    shape: tuple[int, ...]
    dtype: str  # MLIR element type spelling: f32, bf16, i32, ui8, i1, ...

    @property
    def is_float(self) -> bool:
        return self.dtype in FLOAT_DTYPES

    @property
    def is_bool(self) -> bool:
        return self.dtype == "i1"

    @property
    def is_int(self) -> bool:
        return not self.is_float and not self.is_bool

    @property
    def is_unsigned(self) -> bool:
        return self.dtype.startswith("ui")

    @property
    def bit_width(self) -> int:
        digits = "".join(ch for ch in self.dtype if ch.isdigit())
        return int(digits) if digits else 1

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def __str__(self) -> str:
        dims = "".join(f"{d}x" for d in self.shape)
        return f"tensor<{dims}{self.dtype}>"


@dataclass
class Op:
    name: str  # e.g. "stablehlo.add"
    operands: tuple[str, ...]
    results: tuple[str, ...]
    result_types: tuple[TensorType, ...]
    attrs: dict[str, Any] = field(default_factory=dict)
    regions: tuple[Block, ...] = ()
    loc: str = ""


@dataclass
class Block:
    """A single-block region: arguments, ops, and the values its terminator returns."""

    args: tuple[str, ...]
    arg_types: tuple[TensorType, ...]
    ops: list[Op]
    returns: tuple[str, ...]

    def walk(self) -> Iterator[Op]:
        """Every op, nested ones included, in program order (an op, then the ops of its
        regions). An explicit stack, not recursion: nesting depth costs no Python frames."""
        stack: list[Iterator[Op]] = [iter(self.ops)]
        while stack:
            op = next(stack[-1], None)
            if op is None:
                stack.pop()
                continue
            yield op
            stack.extend(iter(region.ops) for region in reversed(op.regions))

    def defined(self) -> Iterator[tuple[str, TensorType]]:
        """Every value the block defines, with its type: its arguments, then each op's
        results and its regions' arguments (nested ones too), in `walk`'s order."""
        yield from zip(self.args, self.arg_types)
        for op in self.walk():
            yield from zip(op.results, op.result_types)
            for region in op.regions:
                yield from zip(region.args, region.arg_types)

    def nesting(self) -> int:
        """How deep regions nest inside this block (0: no op has a region)."""
        deepest = 0
        stack = [(self, 0)]
        while stack:
            block, depth = stack.pop()
            deepest = max(deepest, depth)
            stack.extend((region, depth + 1) for op in block.ops for region in op.regions)
        return deepest


@dataclass
class Func:
    name: str
    body: Block
    result_types: tuple[TensorType, ...]
    public: bool = True
    arg_attrs: tuple[dict[str, Any], ...] = ()
    result_attrs: tuple[dict[str, Any], ...] = ()
    loc: str = ""
    arg_names: tuple[str, ...] = ()  # from loc("x") debug info, else arg0, arg1, ...

    @property
    def arg_types(self) -> tuple[TensorType, ...]:
        return self.body.arg_types


@dataclass
class Module:
    funcs: dict[str, Func]
    entry: str
    attrs: dict[str, Any] = field(default_factory=dict)
    source: str = ""  # file name, for messages
    text: bytes = b""  # the module as read (text or bytecode), for replay on XLA
    meshes: dict[str, Mesh] = field(default_factory=dict)  # sdy.mesh symbols
    # True when the entry function is one device's program (XLA's SPMD partitioner
    # output): its arguments are local shards of the global inputs named by
    # `arg_shardings`. False for global programs, with or without manual regions.
    per_device: bool = False
    arg_shardings: tuple[Sharding | None, ...] = ()
    result_shardings: tuple[Sharding | None, ...] = ()

    @property
    def main(self) -> Func:
        return self.funcs[self.entry]

    @property
    def num_partitions(self) -> int:
        return int(self.attrs.get("mhlo.num_partitions", 1) or 1)

    @property
    def num_replicas(self) -> int:
        return int(self.attrs.get("mhlo.num_replicas", 1) or 1)

    @property
    def num_devices(self) -> int:
        return self.num_partitions * self.num_replicas

    def global_arg_types(self) -> tuple[TensorType, ...]:
        """The entry's signature as a function of global arrays."""
        if not self.per_device:
            return self.main.arg_types
        return tuple(s.global_type(t) if s is not None else t
                     for t, s in zip(self.main.arg_types, self.arg_shardings))

    def input_names(self) -> list[str]:
        """The names the pair's inputs go by (`--assume`, reports): the entry's argument
        names, or arg0, arg1, ... where it has none."""
        return list(self.main.arg_names) or [f"arg{i}" for i in range(len(self.main.arg_types))]

    def global_result_types(self) -> tuple[TensorType, ...]:
        if not self.per_device:
            return self.main.result_types
        return tuple(s.global_type(t) if s is not None else t
                     for t, s in zip(self.main.result_types, self.result_shardings))

    def signature(self) -> str:
        args = ", ".join(str(t) for t in self.global_arg_types())
        return f"({args})"


# Meshes and shardings: one model for Shardy attributes, GSPMD sharding strings and the
# argument shardings of a partitioned per-device module.

@dataclass(frozen=True)
class Mesh:
    """Named axes (major to minor) over device ids; `device_ids[k]` is the device at
    mesh position k in row-major order (default: the identity)."""

    axes: tuple[tuple[str, int], ...]
    device_ids: tuple[int, ...] = ()

    @property
    def size(self) -> int:
        n = 1
        for _, k in self.axes:
            n *= k
        return n

    def axis_size(self, name: str) -> int:
        for a, k in self.axes:
            if a == name:
                return k
        raise KeyError(name)

    def ids(self) -> np.ndarray:
        """Device ids laid out on the mesh, one array dimension per axis."""
        flat = np.array(self.device_ids or range(self.size), dtype=np.int64)
        return flat.reshape(tuple(k for _, k in self.axes)) if self.axes else flat.reshape(())

    def coords(self) -> dict[int, dict[str, int]]:
        """device id -> its index along every axis."""
        ids = self.ids()
        names = [a for a, _ in self.axes]
        return {int(ids[pos]): dict(zip(names, pos)) for pos in np.ndindex(*ids.shape)}


@dataclass(frozen=True)
class Sharding:
    """How a global tensor lies on a mesh: `dims[i]` are the axes splitting dimension i
    (major to minor); axes in `unreduced` hold partial sums; every other axis holds
    replicas that must agree."""

    mesh: Mesh
    dims: tuple[tuple[str, ...], ...]
    unreduced: tuple[str, ...] = ()

    @property
    def replicated(self) -> tuple[str, ...]:
        used = {a for d in self.dims for a in d} | set(self.unreduced)
        return tuple(a for a, _ in self.mesh.axes if a not in used)

    def shards(self, dim: int) -> int:
        n = 1
        for a in self.dims[dim]:
            n *= self.mesh.axis_size(a)
        return n

    def local_type(self, t: TensorType) -> TensorType:
        return TensorType(tuple(d // self.shards(i) for i, d in enumerate(t.shape)), t.dtype)

    def global_type(self, t: TensorType) -> TensorType:
        return TensorType(tuple(d * self.shards(i) for i, d in enumerate(t.shape)), t.dtype)

    def shard_index(self, coords: dict[str, int], dim: int) -> int:
        """Which of the dimension's shards a device at these mesh coordinates holds."""
        k = 0
        for a in self.dims[dim]:
            k = k * self.mesh.axis_size(a) + coords[a]
        return k

    def describe(self) -> str:
        dims = ", ".join("{" + ", ".join(d) + "}" for d in self.dims)
        axes = ", ".join(f"{a}={k}" for a, k in self.mesh.axes)
        extra = f" unreduced={{{', '.join(self.unreduced)}}}" if self.unreduced else ""
        return f"[{dims}] on mesh [{axes}]{extra}"


# Attribute payloads that are dialect structs in MLIR.

@dataclass(frozen=True)
class DotDims:
    lhs_batch: tuple[int, ...]
    rhs_batch: tuple[int, ...]
    lhs_contracting: tuple[int, ...]
    rhs_contracting: tuple[int, ...]


@dataclass(frozen=True)
class ConvDims:
    """stablehlo.convolution's dimension numbers (`#stablehlo.conv<...>`)."""

    input_batch: int
    input_feature: int
    input_spatial: tuple[int, ...]
    kernel_input_feature: int
    kernel_output_feature: int
    kernel_spatial: tuple[int, ...]
    output_batch: int
    output_feature: int
    output_spatial: tuple[int, ...]


@dataclass(frozen=True)
class GatherDims:
    offset_dims: tuple[int, ...]
    collapsed_slice_dims: tuple[int, ...]
    operand_batching_dims: tuple[int, ...]
    start_indices_batching_dims: tuple[int, ...]
    start_index_map: tuple[int, ...]
    index_vector_dim: int


@dataclass(frozen=True)
class ScatterDims:
    update_window_dims: tuple[int, ...]
    inserted_window_dims: tuple[int, ...]
    input_batching_dims: tuple[int, ...]
    scatter_indices_batching_dims: tuple[int, ...]
    scatter_dims_to_operand_dims: tuple[int, ...]
    index_vector_dim: int
