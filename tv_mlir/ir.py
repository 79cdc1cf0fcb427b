"""The project's own plain-data IR. Nothing downstream of the frontend touches MLIR
objects: these dataclasses are small, typed and picklable so that whole regions can
travel to worker processes."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

FLOAT_DTYPES = frozenset({"f16", "bf16", "f32", "f64", "f8E4M3FN", "f8E5M2", "f8E4M3FNUZ", "f8E5M2FNUZ", "f8E4M3B11FNUZ"})


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
    regions: tuple["Block", ...] = ()
    loc: str = ""


@dataclass
class Block:
    """A single-block region: arguments, ops, and the values its terminator returns."""

    args: tuple[str, ...]
    arg_types: tuple[TensorType, ...]
    ops: list[Op]
    returns: tuple[str, ...]

    def walk(self) -> Iterator[Op]:
        for op in self.ops:
            yield op
            for region in op.regions:
                yield from region.walk()


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

    @property
    def main(self) -> Func:
        return self.funcs[self.entry]

    def signature(self) -> str:
        args = ", ".join(str(t) for t in self.main.arg_types)
        return f"({args})"


# Attribute payloads that are dialect structs in MLIR.

@dataclass(frozen=True)
class DotDims:
    lhs_batch: tuple[int, ...]
    rhs_batch: tuple[int, ...]
    lhs_contracting: tuple[int, ...]
    rhs_contracting: tuple[int, ...]


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
