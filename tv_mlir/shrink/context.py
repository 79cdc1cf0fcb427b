"""One verification's shrink context (api.verify makes one per pair): what every shrink of
the pair shares. A verification shrinks its pair more than once: the first plan, the
second witness's grown plan, a re-plan with composed loop degrees (rule l), the retries
at grown sizes (regrow.retry). Each used to read the original modules again from their
text and redo the planner's analysis; neither depends on how far the plan grows:

- the modules as read, classified and split per call site (`pair._raw`): a function of
  the prepared modules alone, kept with their MLIR unedited; each rewrite edits a copy
  (`editable`), so every shrink starts from the same MLIR;
- the planner's base (`plan.PlanBase`, in `plan.PlanMemo`): the classes, the rules'
  bounds and the first fixpoint, made from the modules, `ranges`, the per-trip switch and
  `lookups`, never from `grow`, `budget`, `fallbacks` or `cut_limit` (the key holds the
  former, so a plan with other values of them gets a base of its own).

Nothing is kept across verifications: the context lives as long as `api.verify`'s call."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tv_mlir.errors import Unsupported
from tv_mlir.frontend.read import Loaded
from tv_mlir.ir import Module
from tv_mlir.shrink.plan import PlanMemo


@dataclass
class ShrinkContext:
    memo: PlanMemo = field(default_factory=PlanMemo)
    # (prepared module, its module as read and split): looked up by identity, since the
    # raw module is read from that very object (its text and its classification).
    raws: list[tuple[Module, Loaded]] = field(default_factory=list)
    reads: int = 0  # raw modules made (each program once per verification)

    def raw(self, prepared: Module, read: Callable[[], Loaded]) -> Loaded:
        """The module `read` makes for `prepared`, made once; its MLIR is never edited."""
        for m, loaded in self.raws:
            if m is prepared:
                return loaded
        loaded = read()
        self.reads += 1
        self.raws.append((prepared, loaded))
        return loaded


def editable(loaded: Loaded) -> Loaded:
    """A copy of `loaded` whose MLIR a rewrite may edit, with the same plain module: the
    MLIR module cloned, and every SSA name mapped to the clone's value. A clone has its
    original's structure op for op, so walking both in step pairs each value with its copy."""
    with loaded.context:
        clone = loaded.mlir.operation.clone()
        pairs: dict[Any, Any] = {}
        _pair_values(loaded.mlir.operation, clone.operation, pairs)
        try:
            values = {name: pairs[v] for name, v in loaded.values.items()}
        except KeyError:  # not a clone op for op: refuse to shrink rather than guess
            raise Unsupported("shrink: the module's copy does not match it", None, "shrink") from None
    return Loaded(loaded.module, loaded.context, clone, values)


def _pair_values(a: Any, b: Any, out: dict[Any, Any]) -> None:
    for x, y in zip(a.results, b.results):
        out[x] = y
    for ra, rb in zip(a.regions, b.regions):
        for ba, bb in zip(ra.blocks, rb.blocks):
            for x, y in zip(ba.arguments, bb.arguments):
                out[x] = y
            for oa, ob in zip(ba.operations, bb.operations):
                _pair_values(oa.operation, ob.operation, out)


__all__ = ["ShrinkContext", "editable"]
