"""The `shrink` pass: a pass over the pair of programs (it needs both to size their
dimensions), run on the modules as read, before the per-module normalization. It plans
the sizes (`shrink.plan`), rewrites both modules' MLIR (`shrink.rewrite`) and
reads them again, so the verifier and XLA replay see the same shrunk programs."""
from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tv_mlir.frontend.read import Loaded, load_module_mlir
from tv_mlir.ir import Module
from tv_mlir.shrink import same_witness, zero_witness
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
                cut_limit: int | None = None, context: ShrinkContext | None = None,
                assume: Sequence[Any] | None = None) -> ShrinkResult | None:
    """None when nothing can shrink. Raises Unsupported when the rewrite fails. Without a
    `context`, the MLIR of a Loaded spec is edited in place (a second plan of the same pair
    must start from the prepared Modules, which are read again from their text); with one,
    the pair is read and analysed once for every shrink of it that passes the same context
    and the same prepared Modules (the specs of later calls are not read), and each rewrite
    edits a copy. `grow`, `budget`, `ranges`, `per_trip`, `fallbacks`, `cut_limit`: see plan.plan.
    `assume`: the user's `--assume` bounds as given (Options.assume), which the witness of
    rule k's zero types draws its inputs inside as the verifier resolves them at the shrunk
    sizes; without them, inputs with `ranges` get no witness (their families counted)."""
    from tv_mlir.shrink.rewrite import rewrite

    t0 = time.perf_counter()
    if context is None:
        lr, lo = _raw(ref_spec, ref), _raw(other_spec, other)
    else:
        lr = context.raw(ref, lambda: _raw(ref_spec, ref))
        lo = context.raw(other, lambda: _raw(other_spec, other))
    unwitnessed: frozenset[int] = frozenset()
    while True:
        p = plan(lr.module, lo.module, grow=grow, budget=budget, ranges=ranges, per_trip=per_trip,
                 fallbacks=fallbacks, cut_limit=cut_limit, memo=context.memo if context is not None else None,
                 unwitnessed=unwitnessed)
        if not p.shrinks:
            return None
        er, eo = (editable(lr), editable(lo)) if context is not None else (lr, lo)
        ref_text, other_text = rewrite(er, "ref", p), rewrite(eo, "other", p)
        if not (zero_witness.WITNESS and p.zero_witness or same_witness.WITNESS):
            break
        # Rule k's zero types and Newton's atoms witnessed at these sizes (zero_witness.py,
        # same_witness.py); a family no run shows at one, or a class along which an atom is
        # not seen varying, is counted and the pair planned again (counts only grow: it ends).
        more = _unwitnessed(p, ref_text, other_text, lr.module, lo.module, ranges, assume,
                            atoms=same_witness.WITNESS) - unwitnessed
        if not more:
            break
        unwitnessed |= more
        if context is None:  # the rewrite edited the MLIR in place: the prepared Modules' texts
            lr, lo = _raw(ref, ref), _raw(other, other)
    lr, lo = er, eo
    return ShrinkResult(ref_text, other_text, p, time.perf_counter() - t0, embedding(p, lr.module))


def _unwitnessed(p: ShrinkPlan, ref_text: bytes, other_text: bytes, ref: Module, other: Module,
                 ranges: Sequence[tuple[int, int] | None] | None, assume: Sequence[Any] | None,
                 atoms: bool = False) -> frozenset[int]:
    """The classes of `p.zero_witness`'s families that no run of the shrunk programs shows
    at a zero type (zero_witness.unwitnessed); with `atoms`, also the summed classes of the
    families along which an atom is not seen varying (same_witness.unwitnessed); all of them
    when the runs cannot be made."""
    zero = zero_witness.WITNESS and bool(p.zero_witness)
    raw = {"ref": ref, "other": other}
    every = frozenset(c for f in p.zero_witness for c in f.classes) if zero else frozenset()
    todo = same_witness.atoms(p, raw) if atoms else []
    every |= {c for t in todo for c in t.summed}
    if not every:
        return every
    if _refused(p):
        # No proof of the pair at these sizes can be `equivalent` (the staged proof refuses
        # it unread, stages/run.over_any_stage), and witnessing only counts classes, which
        # keeps them larger: the runs would cost what they cost (94 s CPU for the 8B fwd+bwd,
        # partitioned, at 4.4e8 elements) for the same refusal. Counted, the safe side.
        return every
    if todo and same_witness.input_elements(p, ref) > zero_witness.WITNESS_ELEMENTS:
        # Inputs too large to draw (a plan far past the encoding budget: the 8B forward without
        # its --assume bounds keeps 16000 words): the atoms are not witnessed, their classes
        # counted; the draws are not made for them (11 GB for the plan snapshot's 8B pairs).
        if not zero:
            return every
        todo = []
    runs = _shrunk_runs(p, ref_text, other_text, ref, other, ranges, assume)
    if runs is None:
        return every
    modules, input_sets = runs
    out = zero_witness.unwitnessed(modules, p.zero_witness, input_sets) if zero else set()
    if todo:
        out |= same_witness.unwitnessed(todo, modules, input_sets)
    elif atoms:
        out |= {c for t in same_witness.atoms(p, raw) for c in t.summed}
    return frozenset(out)


def _refused(p: ShrinkPlan) -> bool:
    """The plan's reference holds a value over the elements a stage may encode and is over
    the staged proof's refusal size in all: the verdict at these sizes is `unknown` (too large
    to encode) before any proof (driver.MAX_ELEMENTS, stages/run.REFUSE_ELEMENTS)."""
    from tv_mlir.driver import MAX_ELEMENTS
    from tv_mlir.stages.run import REFUSE_ELEMENTS

    a, sizes = p.analysis, p.sizes
    values = [math.prod(sizes[c] for c in a.classes_of(prog, v)) for prog, v in a.types if prog == "ref"]
    return max(values, default=0) > MAX_ELEMENTS and sum(values) > REFUSE_ELEMENTS


def _shrunk_runs(p: ShrinkPlan, ref_text: bytes, other_text: bytes, ref: Module, other: Module,
                 ranges: Sequence[tuple[int, int] | None] | None, assume: Sequence[Any] | None
                 ) -> tuple[dict[str, Module], list[list[Any]]] | None:
    """The shrunk programs (read from their texts, classified as `ref` and `other`) and the
    input sets a witness runs them on (fingerprints.random_inputs inside the --assume bounds
    as the verifier resolves them at the shrunk sizes); None when they cannot be made
    (bounded inputs without the user's bounds, a text that does not read)."""
    from tv_mlir.assume import resolve, shrunk_sizes
    from tv_mlir.prove.fingerprints import random_inputs

    try:
        modules = {}
        for name, text, m in (("ref", ref_text, ref), ("other", other_text, other)):
            small = load_module_mlir(text).module
            small.per_device, small.arg_shardings, small.result_shardings = \
                m.per_device, m.arg_shardings, m.result_shardings
            modules[name] = small
        types = modules["ref"].global_arg_types()
        if assume:  # as the verifier reads them at the shrunk sizes (driver: resolve_bounds)
            bounds = resolve(assume, modules["ref"].input_names(), types, shrunk_sizes({"applied": True,
                                                                                       **p.summary()}))
        elif ranges and any(r is not None for r in ranges):
            return None  # bounded inputs, bounds not known at the shrunk sizes: no witness
        else:
            bounds = []
        return modules, random_inputs(types, bounds=bounds)
    except Exception:  # noqa: BLE001 -- no runs: no witness, the safe side
        return None


__all__ = ["ShrinkResult", "shrink_pair"]
