"""The `shrink` pass: a pass over the pair of programs (it needs both to size their
dimensions), run on the modules as read, before the per-module normalization. It plans
the sizes (`shrink.plan`), rewrites both modules' MLIR (`shrink.rewrite`) and
reads them again, so the verifier and XLA replay see the same shrunk programs."""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tv_mlir.frontend.read import Loaded, load_module_mlir
from tv_mlir.ir import Module
from tv_mlir.shrink.context import ShrinkContext, editable
from tv_mlir.shrink.dims import split_call_sites
from tv_mlir.shrink.embed import Embedding, embedding
from tv_mlir.shrink.plan import ShrinkPlan, plan


@dataclass
class ShrinkResult:
    ref_text: bytes
    other_text: bytes
    plan: ShrinkPlan
    time_s: float
    embedding: Embedding  # shrunk counterexamples back into the original sizes

    def summary(self) -> dict[str, Any]:
        s = self.plan.summary()
        s["constants_rewritten"] = len(self.plan.constants)
        s["time_s"] = round(self.time_s, 3)
        return s


def _raw(spec: Any, prepared: Module) -> Loaded:
    """The module as read, with its MLIR, classified like its prepared form, each call site
    calling its own copy of its function (dims.split_call_sites). `spec`: the
    Loaded module verify already read, a Module (read again from its text), or anything
    `load_module_mlir` reads."""
    if isinstance(spec, Loaded):
        loaded = spec
    elif isinstance(spec, Module):
        loaded = load_module_mlir(spec.text, spec.source)
    else:
        loaded = load_module_mlir(spec)
    m = loaded.module
    m.per_device, m.arg_shardings, m.result_shardings = \
        prepared.per_device, prepared.arg_shardings, prepared.result_shardings
    return split_call_sites(loaded)  # rule s: one function per call site


def shrink_pair(ref_spec: Any, other_spec: Any, ref: Module, other: Module, grow: int = 0,
                budget: int | None = None, ranges: Sequence[tuple[int, int] | None] | None = None,
                per_trip: bool | None = None, fallbacks: Sequence[int] = (),
                cut_limit: int | None = None, context: ShrinkContext | None = None) -> ShrinkResult | None:
    """None when nothing can shrink. Raises Unsupported when the rewrite fails. Without a
    `context`, the MLIR of a Loaded spec is edited in place (a second plan of the same pair
    must start from the prepared Modules, which are read again from their text); with one,
    the pair is read and analysed once for every shrink of it that passes the same context
    and the same prepared Modules (the specs of later calls are not read), and each rewrite
    edits a copy. `grow`, `budget`, `ranges`, `per_trip`, `fallbacks`, `cut_limit`: see plan.plan."""
    from tv_mlir.shrink.rewrite import rewrite

    t0 = time.perf_counter()
    if context is None:
        lr, lo = _raw(ref_spec, ref), _raw(other_spec, other)
    else:
        lr = context.raw(ref, lambda: _raw(ref_spec, ref))
        lo = context.raw(other, lambda: _raw(other_spec, other))
    p = plan(lr.module, lo.module, grow=grow, budget=budget, ranges=ranges, per_trip=per_trip,
             fallbacks=fallbacks, cut_limit=cut_limit, memo=context.memo if context is not None else None)
    if not p.shrinks:
        return None
    if context is not None:
        lr, lo = editable(lr), editable(lo)
    ref_text, other_text = rewrite(lr, "ref", p), rewrite(lo, "other", p)
    return ShrinkResult(ref_text, other_text, p, time.perf_counter() - t0, embedding(p, lr.module))


__all__ = ["ShrinkResult", "shrink_pair"]
