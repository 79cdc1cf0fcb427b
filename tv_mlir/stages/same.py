"""A stage whose two programs are the same program is proved by that alone
(docs/stages.md, "A stage that is the same program on both sides").

In a Shardy export the sharded program is the global program with sharding annotations,
so many stages hold the very same ops on both sides (the embedding gradient's scatter-add,
27 s of the 8B fwd+bwd's 48 s of stage proofs, builds the same 327 K selects twice).

**The rule.** A stage is proved `equivalent` without running it when
- neither program is per-device (`Module.per_device`: their inputs are global values, as
  the reference's);
- their text, without SSA names and locations (`hashing.module_text`: every op's name,
  operands, attributes, result types and regions in order, the argument types, shardings
  and returns), is the same but for the first line, the module's device count;
- every op at any depth has a semantics rule (`semantics.TABLE`), and none is a
  collective, a device id, a manual computation or a sharding custom call (`SPMD_OPS`,
  `SHARD_CALLS`), a custom call or a call (the callee is another function), or a random
  bit generator; every constant holds its bytes (not `dense_resource<name>`, whose text
  names data the text leaves out); and the entry calls no other function.

**Why it is sound.** The interpreter (execute/interp.py) hands an op to the SPMD machinery
(`spmd.involved`) only for an SPMD op, a sharding custom call, an operand that is a
per-device value, or control flow whose regions hold SPMD ops or read per-device values.
With global inputs and none of those ops, no value is ever per-device, so every op is its
semantics rule (`semantics.TABLE`) applied to global arrays; a rule reads the op (name,
attributes, regions, operand and result types) and its operands, never the module's device
count. The two programs run the same rules on the same inputs in the same order, so every
value, and every output, is the same function of the stage's inputs: the stage's claim
(equal outputs for all inputs that satisfy the input facts) holds, with no approximation
(an uninterpreted function applied to equal arguments in both is one value whatever it
is; `rng_bit_generator` is refused since a real generator need not be a function of its
arguments). There are no replica obligations: they are made only where per-device values
are assembled. Text equality is exact (constants by their bytes, `attr_key`), so any
difference of op, attribute, body, type or order keeps the stage for its proof."""
from __future__ import annotations

import numpy as np

from tv_mlir.ir import Module
from tv_mlir.semantics import TABLE
from tv_mlir.semantics.ops import SHARD_CALLS, SPMD_OPS
from tv_mlir.stages.hashing import _callees, module_text

# The switch the tests flip.
SAME_PROGRAM = True
# Ops that keep a stage for its proof even when both sides hold them alike.
_REFUSED = SPMD_OPS | {"stablehlo.custom_call", "func.call", "stablehlo.composite", "stablehlo.rng_bit_generator",
                       "stablehlo.rng"}


def _plain(m: Module) -> bool:
    if m.per_device or _callees(m):
        return False
    for op in m.main.body.walk():
        if op.name in _REFUSED or op.name not in TABLE or op.attrs.get("call_target_name") in SHARD_CALLS:
            return False
        # A constant held as its text names its data rather than holding it
        # (`dense_resource<blob>`: the bytes are in the module's resources, which the text
        # leaves out), so two such constants read alike whatever they hold.
        if op.name == "stablehlo.constant" and not isinstance(op.attrs.get("value"), np.ndarray):
            return False
    return True


def same_program(ref: Module, other: Module) -> bool:
    """Whether the stage's two programs are one program under the rule above."""
    if not SAME_PROGRAM or not _plain(ref) or not _plain(other):
        return False
    a, b = module_text(ref), module_text(other)
    return a.split("\n", 1)[1:] == b.split("\n", 1)[1:]
