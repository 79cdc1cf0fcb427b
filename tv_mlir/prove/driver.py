"""Equivalence of two programs with the same global input signature (single-device or
sharded): symbolic inputs, both programs executed, every output element and every replica
obligation compared."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from tv_mlir.algebra import Kind, Symbolic, SymbolicAlgebra
from tv_mlir.algebra import terms as T
from tv_mlir.algebra.checks import difference_is_zero, trivially_equal
from tv_mlir.errors import Unsupported
from tv_mlir.execute.interp import Interpreter, SharedValues
from tv_mlir.ir import Module, TensorType
from tv_mlir.options import Options
from tv_mlir.progress import progress
from tv_mlir.witness.replay import py_value as _py
from tv_mlir.witness.replay import values_differ
from tv_mlir.prove.solve import Model, Query, solve_all
from tv_mlir.prove.fingerprints import numeric_trace, random_inputs
from tv_mlir.prove.sweep import Sweeper
from tv_mlir.prove.obligations import Obligation, build_obligations
from tv_mlir.verdict import Counterexample, OutputResult, Verdict
from tv_mlir.witness.settle import Witness, environment, exact_values, py_list, settle

# Local proofs of output elements at the cut points: per output, one solver call.
LOCAL_TIMEOUT = 2.0
LOCAL_STEPS = 40
LOCAL_UNFOLD = 4000
LOCAL_DEEP = 20


@dataclass
class _Element:
    output: int
    index: tuple[int, ...]
    ref: Any
    other: Any
    kind: Kind
    eq: Any
    uses_uf: bool = False
    ref_cut: Any = None  # the elements at cut level (before expansion)
    other_cut: Any = None


# Every element becomes a term: past this many elements in one program the encoding
# would exhaust memory, and an honest `unknown` beats being killed.
MAX_ELEMENTS = 4_000_000


def _too_large(ref: Module, other: Module, options: Options) -> str:
    for m in (ref, other):
        devices = m.num_devices if m.per_device else 1
        total, biggest = 0, None
        for f in m.funcs.values():
            for op in f.body.walk():
                for t in op.result_types:
                    total += t.size * devices
                    if biggest is None or t.size > biggest[0].size:
                        biggest = (t, op)
        if total > MAX_ELEMENTS:
            hint = "; shape shrinking is off (--no-shrink)" if not options.shrink else \
                "; the shrink map shows which dimensions kept their size and why"
            t, op = biggest
            return (f"too large to encode: {m.source} has {total} tensor elements (largest: {t} from "
                    f"{op.name} at {op.loc}){hint}")
    return ""


def prove_pair(ref: Module, other: Module, options: Options) -> Verdict:
    stats: dict[str, Any] = {"pipeline": options.pipeline, "ops_ref": sum(1 for _ in ref.main.body.walk()),
                             "ops_other": sum(1 for _ in other.main.body.walk())}
    types = ref.global_arg_types()
    names = list(ref.main.arg_names) or [f"arg{i}" for i in range(len(types))]
    alg = SymbolicAlgebra()
    too_big = _too_large(ref, other, options)
    if too_big:
        return Verdict("unknown", too_big, stats=stats)

    def unsupported(exc: Unsupported) -> Verdict:
        return Verdict("unknown", f"unsupported: {exc.one_line()}", stats=stats,
                       unsupported=[{"op": exc.op or "", "loc": exc.loc or "", "message": exc.message}],
                       approximations=sorted(alg.approximations))

    # Numeric runs on random inputs: fingerprints for sweeping, and a cheap first search
    # for a counterexample.
    t_num = time.perf_counter()
    input_sets = random_inputs(types)
    try:
        ref_trace = numeric_trace(ref, input_sets, options.max_unroll)
        other_trace = numeric_trace(other, input_sets, options.max_unroll)
    except Unsupported as exc:
        return unsupported(exc)
    stats["numeric_s"] = round(time.perf_counter() - t_num, 4)
    progress(options, f"numeric runs on {len(input_sets)} random inputs: {stats['numeric_s']:.2f} s")

    inputs, constraints = [], []
    for name, t in zip(names, types):
        arr, cons = alg.inputs(name, t.shape, Kind.of(t), t.is_unsigned)
        inputs.append(arr)
        constraints += cons
    sweeper = Sweeper(alg, ref_trace, other_trace, timeout_s=min(options.timeout_s, 0.5))
    sweeper.record_inputs(inputs, input_sets, types)
    t_exec = time.perf_counter()
    try:
        shared = SharedValues()
        ref_interp = Interpreter(ref, alg, options.max_unroll, observer=sweeper.record_ref if options.sweep else None,
                                 shared=shared)
        ref_out = ref_interp.run(inputs)
        other_interp = Interpreter(other, alg, options.max_unroll,
                                   observer=sweeper.merge_other if options.sweep else None, shared=shared)
        other_out = other_interp.run(inputs)
        stats["shared_ops"] = shared.hits
    except Unsupported as exc:
        return unsupported(exc)
    stats["symbolic_s"] = round(time.perf_counter() - t_exec, 4)
    stats.update(merged=sweeper.merged, cut_points=sweeper.store.count, failed_merges=sweeper.local.failed)
    progress(options, f"symbolic execution of {stats['ops_ref']} + {stats['ops_other']} ops, "
                       f"{sweeper.merged} values merged: {stats['symbolic_s']:.2f} s")
    approximations = sorted(alg.approximations)

    rtypes, otypes = ref.global_result_types(), other.global_result_types()
    if len(rtypes) != len(otypes):
        return Verdict("not-equivalent", f"{ref.source} has {len(rtypes)} outputs, {other.source} has {len(otypes)}",
                       stats=stats, approximations=approximations)
    precision = []
    for i, (rt, ot) in enumerate(zip(rtypes, otypes)):
        if rt.shape != ot.shape:
            return Verdict("not-equivalent", f"output {i} shapes differ: {rt} vs {ot}", stats=stats,
                           approximations=approximations,
                           outputs=[OutputResult(i, "not-equivalent", detail=f"shape {rt} vs {ot}")])
        if Kind.of(rt) is not Kind.of(ot):
            return Verdict("not-equivalent", f"output {i} element types differ: {rt} vs {ot}", stats=stats,
                           approximations=approximations,
                           outputs=[OutputResult(i, "not-equivalent", detail=f"type {rt} vs {ot}")])
        if rt.dtype != ot.dtype:
            precision.append(f"output {i}: {rt.dtype} in {ref.source}, {ot.dtype} in {other.source}")

    obligations = build_obligations(ref, other, ref_out, other_out, ref_interp.replica_checks, other_interp.replica_checks)
    runs = [build_obligations(ref, other, ro, oo, rc, oc) for ro, oo, rc, oc in
            zip(ref_trace.outputs, other_trace.outputs, ref_trace.checks, other_trace.checks)]
    if any(len(r) != len(obligations) for r in runs):
        return Verdict("unknown", "the numeric and symbolic runs disagree on the replica obligations", stats=stats,
                       approximations=approximations)
    stats["replica_obligations"] = len(obligations) - len(rtypes)

    # Per element: identical terms are done (the sweep makes that the common case).
    results: list[OutputResult] = []
    open_: dict[int, list[tuple[tuple[int, ...], Any, Any]]] = {}
    for i, ob in enumerate(obligations):
        res = OutputResult(i, "equivalent", elements=int(ob.ref.size), what=ob.what)
        for idx in np.ndindex(*ob.ref.shape):
            a, b = ob.ref[idx], ob.other[idx]
            if T.identical(a, b):
                res.syntactic += 1
            else:
                open_.setdefault(i, []).append((idx, a, b))
        results.append(res)

    # The random runs may already show a difference: check it exactly (evaluating the cut
    # point definitions at the run's inputs), no solver needed.
    counterexample: Counterexample | None = None
    unknown_reasons: list[str] = []
    ctx = _Context(ref, other, sweeper, alg, inputs, constraints, types, names, options)
    t_cex = time.perf_counter()
    for i in list(open_):
        numeric = [(r[i].ref, r[i].other) for r in runs]
        found = _random_counterexample(open_[i], obligations[i], numeric, input_sets, ctx)
        if found is not None:
            cex, idx, a0, b0 = found
            del open_[i]
            _settle(cex, results[i], obligations[i], idx, a0, b0, ctx)
            if counterexample is None and results[i].verdict == "not-equivalent":
                counterexample = cex
    stats["counterexample_s"] = round(time.perf_counter() - t_cex, 4)

    # Local proofs at the cut points (unfolding newest first, as during the sweep), before
    # any full expansion: where the programs agree up to a few ops this is small.
    t_local = time.perf_counter()
    local = 0
    for i in list(open_):
        kind = obligations[i].kind
        status = sweeper.local.prove_pairs([(a, b) for _, a, b in open_[i]], kind, min(options.timeout_s, LOCAL_TIMEOUT),
                                     steps=LOCAL_STEPS, max_unfold=LOCAL_UNFOLD, deep=LOCAL_DEEP,
                                     solve_inputs_only=False)
        results[i].syntactic += sum(1 for how in status if how in ("simplified", "lattice"))
        local += sum(1 for how in status if how is not None)
        open_[i] = [e for e, how in zip(open_[i], status) if how is None]
        if not open_[i]:
            del open_[i]
    stats.update(local_proofs=local, local_s=round(time.perf_counter() - t_local, 4))

    # The rest: full expansion to the inputs, polynomial normal form, then the solver.
    pending: dict[int, list[_Element]] = {}
    for i, elems in open_.items():
        kind = obligations[i].kind
        for idx, a0, b0 in elems:
            a, b = sweeper.store.expand_element(a0), sweeper.store.expand_element(b0)
            if T.finite_float(a) and T.finite_float(b) and \
                    difference_is_zero(T.element_terms(a)[0], T.element_terms(b)[0]):
                results[i].syntactic += 1
                continue
            eq = alg.element_equal(a, b, kind)
            if kind is not Kind.FLOAT and trivially_equal(eq):
                results[i].syntactic += 1
                continue
            uses_uf = sweeper.store.uses_uf(a0) or sweeper.store.uses_uf(b0)
            pending.setdefault(i, []).append(_Element(i, idx, a, b, kind, eq, uses_uf, a0, b0))
    stats.update(elements=sum(r.elements for r in results), syntactic=sum(r.syntactic for r in results))

    queries = [Query(i, T.any_of(T.negation(e.eq) for e in elems), constraints)
               for i, elems in pending.items()]
    t_solve = time.perf_counter()
    if queries:
        progress(options, f"solving {len(queries)} quer{'y' if len(queries) == 1 else 'ies'} "
                           f"(timeout {options.timeout_s:g} s each, {options.jobs} job(s))")
    outcomes = solve_all(queries, options.timeout_s, options.jobs)
    stats.update(solver_queries=len(queries), solve_s=round(time.perf_counter() - t_solve, 4))

    for outcome in outcomes:
        res = results[outcome.output]
        if outcome.status == "unsat":
            continue
        if outcome.status == "unknown":
            res.verdict, res.detail = "unknown", f"solver: {outcome.reason or 'unknown'}"
            continue
        ob = obligations[outcome.output]
        cex, chosen = _model_counterexample(outcome.model, pending[outcome.output], inputs, names, types, ob)
        _settle(cex, res, ob, chosen.index, chosen.ref_cut, chosen.other_cut, ctx)
        if counterexample is None and res.verdict == "not-equivalent":
            counterexample = cex

    # One line per distinct reason: an unknown output usually takes its replicas along.
    by_detail: dict[str, list[str]] = {}
    for res in results:
        if res.verdict == "unknown":
            by_detail.setdefault(res.detail, []).append(res.what)
    for detail, whats in by_detail.items():
        more = f" (and {len(whats) - 1} more)" if len(whats) > 1 else ""
        unknown_reasons.append(f"{whats[0]}{more}: {detail}")
    # Values of the other program merged with reference values computed at another float
    # type (a bf16 all-reduce where the reference sums in f32): equal over the reals.
    precision += [f.describe(ref.source, other.source) for f in sweeper.precision.values()]
    common = dict(time_s=0.0, outputs=results, approximations=approximations, precision=precision, stats=stats)
    if counterexample is not None:
        c = counterexample
        if c.devices:
            reason = (f"{c.what} differ at index {c.index}: device {c.devices[0]} holds {c.ref_value}, "
                      f"device {c.devices[1]} holds {c.other_value}")
        else:
            reason = (f"output {c.output} differs at index {c.index}: {ref.source} gives {c.ref_value}, "
                      f"{other.source} gives {c.other_value}")
        return Verdict("not-equivalent", reason, counterexample=c, **common)
    if options.strict_dtypes and precision:
        more = f" (and {len(precision) - 1} more)" if len(precision) > 1 else ""
        return Verdict("not-equivalent", f"--strict-dtypes: {precision[0]}{more}", **common)
    if unknown_reasons:
        return Verdict("unknown", "; ".join(unknown_reasons), **common)
    n = stats["elements"]
    outs = f"all {len(rtypes)} outputs equal" if len(rtypes) != 1 else "the output is equal"
    if stats["replica_obligations"]:
        outs += f" and all {stats['replica_obligations']} replica obligations hold"
    reason = f"{outs} ({n} elements: {stats['syntactic']} by simplification, {n - stats['syntactic']} by the solver)"
    if approximations:
        reason += f"; uninterpreted: {', '.join(approximations)}"
    return Verdict("equivalent", reason, **common)


def _settle(cex: Counterexample, res: OutputResult, obligation: Obligation, index: tuple[int, ...], a0: Any, b0: Any,
            ctx: "_Context") -> None:
    """Minimise, replay and locate the counterexample, and decide the obligation from it."""
    w = Witness(ctx.ref, ctx.other, obligation, index, a0, b0, ctx.sweeper.store, ctx.alg, ctx.inputs, ctx.constraints,
                ctx.types, ctx.names, ctx.options, ctx.runner)
    res.verdict, res.detail = settle(cex, w)
    ctx.runner = w._runner  # compiled modules are reused by the next counterexample


@dataclass
class _Context:
    ref: Module
    other: Module
    sweeper: Sweeper
    alg: Symbolic
    inputs: list[np.ndarray]
    constraints: list[Any]
    types: Sequence[TensorType]
    names: list[str]
    options: Options
    runner: Any = None


# ---------------------------------------------------------------------------
# Counterexamples


def _model_counterexample(model: Model, elems: Sequence[_Element], inputs: list[np.ndarray], names: list[str],
                          types: Sequence[TensorType], obligation: Obligation) -> tuple[Counterexample, _Element]:
    values = {}
    for name, arr, t in zip(names, inputs, types):
        kind = Kind.of(t)
        out = np.empty(arr.shape, dtype=object)
        for idx in np.ndindex(*arr.shape):
            out[idx] = T.element_value(arr[idx], kind, model.value)
        values[name] = out.tolist()
    chosen = elems[0]
    for e in elems:
        if model.holds(T.negation(e.eq)):
            chosen = e
            break
    cex = Counterexample(values, obligation.output, list(obligation.global_index(chosen.index)),
                         T.element_value(chosen.ref, chosen.kind, model.value), T.element_value(chosen.other, chosen.kind, model.value),
                         chosen.uses_uf)
    return cex, chosen


def _random_counterexample(elems: Sequence[tuple[tuple[int, ...], Any, Any]], obligation: Obligation,
                           numeric: list[tuple[np.ndarray, np.ndarray]], input_sets: list[list[np.ndarray]],
                           ctx: _Context) -> tuple[Counterexample, tuple[int, ...], Any, Any] | None:
    """An open element on which a random run already differs, checked exactly by evaluating
    its terms at the run's inputs (when they apply no approximated op)."""
    kind = obligation.kind
    for run, concrete in enumerate(input_sets):
        r_out, o_out = numeric[run]
        env: dict[int, tuple[Any, Any]] | None = None
        for idx, a, b in elems:
            if not values_differ(r_out[idx], o_out[idx]):
                continue
            uses_uf = ctx.sweeper.store.uses_uf(a) or ctx.sweeper.store.uses_uf(b)
            if not uses_uf:
                env = env if env is not None else environment(ctx.inputs, concrete, ctx.types)
                exact = exact_values(ctx.sweeper.store, ctx.alg, a, b, kind, env)
                if exact is None:
                    continue  # float rounding, not a real difference
                ref_v, other_v = exact
            else:
                ref_v, other_v = _py(r_out[idx]), _py(o_out[idx])
            values = {name: py_list(arr) for name, arr in zip(ctx.names, concrete)}
            cex = Counterexample(values, obligation.output, list(obligation.global_index(idx)), ref_v, other_v, uses_uf)
            return cex, idx, a, b
    return None
