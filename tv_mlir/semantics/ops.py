"""Op names that the stages other than the semantics table need to know by name: one place,
so that a new op is classified once. Where the semantics table already says it (which ops
are elementwise, which reducers fold in one step) the set is derived from the table rather
than copied; the rest are facts of the StableHLO spec that no rule encodes."""
from __future__ import annotations

from tv_mlir.algebra.base import NON_OP_UNINTERPRETED, UNINTERPRETED
from tv_mlir.ir import Op, TensorType
from tv_mlir.semantics import elementwise, reduction, special


def _hlo(*names: str) -> frozenset[str]:
    return frozenset(f"stablehlo.{n}" for n in names)


# --- SPMD: what the lockstep executor runs itself (the semantics table has no rules for these).
COLLECTIVES = _hlo("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "collective_permute",
                   "collective_broadcast")
DEVICE_IDS = _hlo("partition_id", "replica_id")
SPMD_OPS = COLLECTIVES | DEVICE_IDS | {"sdy.manual_computation"}
SHARD_CALLS = frozenset({"SPMDFullToShardShape", "SPMDShardToFullShape"})
# Collectives with a reducer body: their result combines the devices' values.
REDUCING_COLLECTIVES = _hlo("all_reduce", "reduce_scatter")
# Collectives whose results have their operands' shapes (they move or combine values
# across devices, not along a dimension).
SAME_SHAPE_COLLECTIVES = _hlo("all_reduce", "collective_permute", "collective_broadcast")
# Collectives without `use_global_device_ids`: a channel id makes their process groups
# cross-partition, its absence cross-replica (StableHLO spec).
CHANNEL_PARTITION_COLLECTIVES = _hlo("all_to_all", "collective_broadcast")

# --- Values.
# Elementwise ops whose operands and results share one shape; the chlo.broadcast_* ops are
# elementwise after a rank-aligning broadcast of their operands.
ELEMENTWISE = frozenset(n for n in elementwise.RULES if not n.startswith("chlo.broadcast_"))
BROADCASTING_ELEMENTWISE = frozenset(elementwise.RULES) - ELEMENTWISE
# Applications of the functions the symbolic algebra leaves uninterpreted (an inf there may
# be the function's own limit, not a bug). Includes names no rule reaches (stablehlo.erf).
TRANSCENDENTAL_OPS = _hlo(*(n for n in UNINTERPRETED if n not in NON_OP_UNINTERPRETED)) | {"chlo.erf", "chlo.tan"} \
    | frozenset(special.RULES)
# Layout and sharding hints and the barrier: each result is its operand, unchanged.
VALUE_IDENTITIES = frozenset({"stablehlo.optimization_barrier", "mhlo.copy", "sdy.sharding_constraint",
                              "sdy.reshard"})
# custom_call targets jax emits that do not change values on one device.
# xla.sdy.FuncResultSharding (a function result's sharding), xla.sdy.Sharding (a sharding
# constraint) and xla.sdy.PropagationBarrier are Shardy's HLO round-trip spellings of
# annotations (frontend/read.py reads the rest of that form); InspectSharding is
# jax.debug.inspect_array_sharding, which XLA removes, forwarding its operand.
NOOP_CUSTOM_CALLS = frozenset({"Sharding", "annotate_device_placement", "MoveToHost", "MoveToDevice",
                               "LayoutConstraint", "InspectSharding", "xla.sdy.FuncResultSharding",
                               "xla.sdy.Sharding", "xla.sdy.PropagationBarrier"})


def is_noop_custom_call(op: Op, operand_types: tuple[TensorType | None, ...]) -> bool:
    """A custom_call whose target is in NOOP_CUSTOM_CALLS (the whole name: `Sharding`, not
    `ShardingX`) and whose every result has its operand's type: the value identity XLA
    makes of it. XLA refuses one that changes a type, rather than converting."""
    return (op.name == "stablehlo.custom_call" and op.attrs.get("call_target_name") in NOOP_CUSTOM_CALLS
            and operand_types == op.result_types)


# Shardy's round-trip form of sdy.manual_computation: the reader makes one manual_computation
# of them (frontend/read.py), and drops the value-less ShardingGroup hint.
ROUND_TRIP_CALLS = frozenset({"xla.sdy.GlobalToLocalShape", "xla.sdy.LocalToGlobalShape", "xla.sdy.ShardingGroup"})
# Reducer bodies the semantics folds in one step: commutative and associative, so a reduce
# with one of them does not depend on the order of the positions it combines.
ASSOCIATIVE_REDUCERS = frozenset(reduction.FAST_REDUCERS)
# A max/min reduction picks one of its elements; a product, and or or multiplies them.
SELECTING_REDUCERS = _hlo("maximum", "minimum")
MULTIPLYING_REDUCERS = _hlo("multiply", "and", "or")

# --- Control flow.
CALLS = frozenset({"func.call", "stablehlo.composite"})  # composite calls its `decomposition`
# The attribute each call op names its function by. Only that one: an op may carry any
# other attribute as well, and a composite with a `callee = @g` beside its
# `decomposition = @f` runs @f on XLA (it ran @g under `--pipeline none`).
CALLEE_ATTRS = {"func.call": "callee", "stablehlo.composite": "decomposition"}


def called_function(op: Op) -> object:
    """The function a call op (`CALLS`) runs, as its attribute holds it (None if absent)."""
    return op.attrs.get(CALLEE_ATTRS.get(op.name, ""))
BRANCHES = _hlo("if", "case")
# Ops whose values pass through nested regions or a callee (and the barrier, which keeps
# its operands together): SPMD runs them in lockstep when a region holds a collective.
CONTROL = BRANCHES | CALLS | _hlo("while", "optimization_barrier")

# --- Shapes.
DOTS = _hlo("dot_general", "dot")
DYNAMIC_SLICES = _hlo("dynamic_slice", "dynamic_update_slice")
# A splat stays a splat of the same value through these.
SPLAT_PRESERVING = _hlo("broadcast_in_dim", "convert", "reshape")

# --- Summand degrees (shape shrinking, docs/shrinking.md).
# The result's degree is the largest of its operands': values are moved, copied, combined
# across devices, added, or converted, never multiplied.
DEGREE_PRESERVING = VALUE_IDENTITIES | COLLECTIVES | DYNAMIC_SLICES | _hlo(
    "convert", "negate", "reshape", "transpose", "broadcast_in_dim", "slice", "pad", "concatenate",
    "reduce_precision", "custom_call", "real", "imag", "add", "subtract", "gather",
    # Sums or picks of window elements, like `reduce` (whose degree shrink.degree reads by name).
    "reduce_window", "dynamic_pad", "real_dynamic_slice")
# The result's degree is the sum of its operands'; a convolution's elements are dot products.
DEGREE_ADDING = DOTS | _hlo("multiply", "convolution")

# --- Integer index arithmetic (shape shrinking).
DIVISIONS = _hlo("divide", "remainder")
# The steps of mesh-coordinate arithmetic ((axis_index + 4) % 4, pid / 1 % 4), and what a
# device id flows through to become a coordinate.
MESH_STEPS = DIVISIONS | _hlo("add", "subtract")
MESH_ARITHMETIC = MESH_STEPS | SPLAT_PRESERVING
# Binary arithmetic in which a constant meets a position (window bounds, shifts).
POSITION_ARITH = _hlo("add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum", "clamp",
                      "compare", "and", "or", "xor", "shift_left", "shift_right_logical",
                      "shift_right_arithmetic")
# Ops through which a value computed from an iota still carries positions.
POSITION_FLOW = POSITION_ARITH | _hlo("convert", "broadcast_in_dim", "reshape", "transpose", "negate", "abs",
                                      "select", "not", "sign", "floor", "ceil", "round_nearest_even")

__all__ = ["ASSOCIATIVE_REDUCERS", "BRANCHES", "BROADCASTING_ELEMENTWISE", "CALLEE_ATTRS", "CALLS",
           "CHANNEL_PARTITION_COLLECTIVES", "COLLECTIVES", "CONTROL", "DEGREE_ADDING", "DEGREE_PRESERVING",
           "DEVICE_IDS", "DIVISIONS", "DOTS",
           "DYNAMIC_SLICES", "ELEMENTWISE", "MESH_ARITHMETIC", "MESH_STEPS", "MULTIPLYING_REDUCERS",
           "NOOP_CUSTOM_CALLS", "POSITION_ARITH", "POSITION_FLOW", "REDUCING_COLLECTIVES", "ROUND_TRIP_CALLS",
           "SAME_SHAPE_COLLECTIVES", "SELECTING_REDUCERS", "SHARD_CALLS", "SPLAT_PRESERVING", "SPMD_OPS",
           "TRANSCENDENTAL_OPS", "VALUE_IDENTITIES", "called_function", "is_noop_custom_call"]
