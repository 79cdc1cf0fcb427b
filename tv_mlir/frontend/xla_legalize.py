"""XLA's own legalization of one chlo op, as plain IR.

XLA has no chlo: converting StableHLO to HLO rewrites every chlo op into HLO (erfc into
its rational approximation, lgamma into Lanczos' series, ...), so the module after XLA's
SPMD partitioner holds those expansions where the single-device lowering still holds the
chlo op. To compare the two, the verifier expands the other side's chlo op the same way,
through the same route: a one-op module is converted to HLO and back
(`jaxlib._jax.mlir.mlir_module_to_xla_computation`, then `hlo_to_stablehlo`, the pair
`tv_mlir.jax` uses for the partitioned module) and read with the frontend's reader. The
expansion is XLA's, not a copy of it kept here, so it follows the installed jaxlib."""
from __future__ import annotations

from tv_mlir.errors import TvError
from tv_mlir.ir import Module, TensorType


def one_op_module(name: str, operand_types: tuple[TensorType, ...], result_type: TensorType) -> str:
    """A module whose @main applies op `name` (no attributes, no regions) to its arguments,
    in MLIR's generic form (every op prints that way, whatever its custom syntax)."""
    params = ", ".join(f"%arg{i}: {t}" for i, t in enumerate(operand_types))
    args = ", ".join(f"%arg{i}" for i in range(len(operand_types)))
    types = ", ".join(str(t) for t in operand_types)
    return (f"module @legalize {{\n  func.func public @main({params}) -> {result_type} {{\n"
            f"    %0 = \"{name}\"({args}) : ({types}) -> {result_type}\n"
            f"    return %0 : {result_type}\n  }}\n}}\n")


def xla_module(text: str) -> bytes:
    """`text` (StableHLO with chlo) through XLA's HLO and back, as StableHLO bytecode.
    Raises TvError when XLA refuses it (an op or type its converter does not take)."""
    from tv_mlir.execute.xla import host_device_flags

    host_device_flags()  # XLA reads its flags (the host device count) when it first loads
    from jaxlib import _jax  # XLA's extension

    try:
        computation = _jax.mlir.mlir_module_to_xla_computation(text, use_tuple_args=False, return_tuple=False)
        return bytes(_jax.mlir.hlo_to_stablehlo(computation.as_serialized_hlo_module_proto()))
    except Exception as exc:  # XLA raises its own status errors
        raise TvError(f"XLA does not convert this module: {' '.join(str(exc).split())[:300]}") from None


def legalized(name: str, operand_types: tuple[TensorType, ...], result_type: TensorType) -> Module:
    """The one-op module of `name` at these types as XLA rewrites it (its @main takes the
    op's operands and returns its result)."""
    from tv_mlir.frontend.read import load_module

    return load_module(xla_module(one_op_module(name, operand_types, result_type)), f"<XLA's {name}>")
