"""Equivalence of two single-device programs with the same input signature: symbolic
inputs, both programs executed, every output element compared."""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import z3

from .algebra import Kind, NumericAlgebra, SymbolicAlgebra
from .algebra.symbolic import FIN, NAN, NEG, POS, lift_any
from .errors import Unsupported, UsageError
from .frontend import load_module
from .interp import Interpreter, SharedValues
from . import spmd
from .ir import Module, TensorType
from .options import Options
from .passes import load_pipeline, run_pipeline
from .solve import Query, difference_is_zero, solve_all, trivially_equal
from .sweep import Sweeper, element_terms, identical, numeric_trace, random_inputs, with_terms
from .replay import py_value as _py
from .replay import values_differ, xla_replay
from .verdict import Counterexample, OutputResult, Replay, Verdict

ModuleLike = str | bytes | Path | Module

# Local proofs of output elements at the cut points: per output, one solver call.
LOCAL_TIMEOUT = 2.0
LOCAL_STEPS = 40
LOCAL_UNFOLD = 4000
LOCAL_DEEP = 20


def prepare(spec: ModuleLike, options: Options, name: str | None = None) -> Module:
    module = spec if isinstance(spec, Module) else load_module(spec, name)
    return run_pipeline(load_pipeline(options.pipeline), module)


def check_signatures(ref: Module, other: Module) -> None:
    """Both as functions of global arrays (a per-device program's arguments are shards)."""
    spmd.classify(ref)
    spmd.classify(other, ref.global_arg_types())
    if not ref.per_device and other.per_device is False:
        spmd.classify(ref, other.global_arg_types())
    if ref.global_arg_types() != other.global_arg_types():
        raise UsageError(f"input signatures differ: {ref.source} takes {ref.signature()}, "
                         f"{other.source} takes {other.signature()}")


@dataclass
class _Target:
    """A pair of arrays that must be equal element by element: an output of both programs,
    or two copies of a value one program declares replicated."""

    what: str  # "output 0", "replicas of output 0 in other.mlir: devices 0 and 3"
    kind: Kind
    lhs: np.ndarray
    rhs: np.ndarray
    output: int = 0  # the program output it is about (replicas: -1 when not an output)
    offset: tuple[int, ...] = ()  # where the arrays sit in the global value
    devices: tuple[int, int] | None = None
    side: str = ""  # for replicas: "ref" or "other"
    check: int = -1  # position in that side's replica check list
    position: int = 0  # in the list of targets

    def global_index(self, idx: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(i + o for i, o in zip(idx, self.offset)) if self.offset else idx


def _targets(ref: Module, other: Module, ref_out: list[np.ndarray], other_out: list[np.ndarray],
             ref_checks: list, other_checks: list) -> list[_Target]:
    """Outputs first (in order), then every replica obligation of either program."""
    out = [_Target(f"output {i}", Kind.of(t), a, b, i) for i, (t, a, b) in
           enumerate(zip(ref.global_result_types(), ref_out, other_out))]
    for side, module, checks in (("other", other, other_checks), ("ref", ref, ref_checks)):
        returns = list(module.main.body.returns)
        for j, c in enumerate(checks):
            output = int(c.value.split()[1]) if c.value.startswith("output ") else \
                (returns.index(c.value) if c.value in returns else -1)
            label = f"output {output}" if output >= 0 else f"{c.what} ({c.loc})"
            axes = ", ".join(c.axes)
            kind = Kind.of(c.type)
            out.append(_Target(f"replicas of {label} in {module.source} over {{{axes}}}: devices {c.device_a} "
                               f"and {c.device_b}", kind, c.a, c.b, output, c.offset,
                               (c.device_a, c.device_b), side, j))
    for k, t in enumerate(out):
        t.position = k
    return out


@dataclass
class _Element:
    output: int
    index: tuple[int, ...]
    ref: Any
    other: Any
    kind: Kind
    eq: Any
    uses_uf: bool = False


def verify(ref: ModuleLike, other: ModuleLike, options: Options | None = None, **overrides: Any) -> Verdict:
    """Prove `ref` and `other` compute the same function, or find an input where they differ.
    Raises ParseError/UsageError for unreadable or incomparable inputs."""
    options = replace(options or Options(), **overrides)
    t0 = time.perf_counter()
    ref_m = prepare(ref, options)
    other_m = prepare(other, options)
    check_signatures(ref_m, other_m)
    verdict = _verify_modules(ref_m, other_m, options)
    verdict.time_s = round(time.perf_counter() - t0, 4)
    return verdict


def _progress(options: Options, message: str) -> None:
    # Long runs say where they are; stderr, so that --json output stays one object.
    if options.progress:
        print(f"tv-mlir: {message}", file=sys.stderr, flush=True)


def _verify_modules(ref: Module, other: Module, options: Options) -> Verdict:
    stats: dict[str, Any] = {"pipeline": options.pipeline, "ops_ref": sum(1 for _ in ref.main.body.walk()),
                             "ops_other": sum(1 for _ in other.main.body.walk())}
    types = ref.global_arg_types()
    names = list(ref.main.arg_names) or [f"arg{i}" for i in range(len(types))]
    alg = SymbolicAlgebra()

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
    _progress(options, f"numeric runs on {len(input_sets)} random inputs: {stats['numeric_s']:.2f} s")

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
    stats.update(merged=sweeper.merged, cut_points=sweeper.cuts, failed_merges=sweeper.failed)
    _progress(options, f"symbolic execution of {stats['ops_ref']} + {stats['ops_other']} ops, "
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

    targets = _targets(ref, other, ref_out, other_out, ref_interp.replica_checks, other_interp.replica_checks)
    runs = [_targets(ref, other, ro, oo, rc, oc) for ro, oo, rc, oc in
            zip(ref_trace.outputs, other_trace.outputs, ref_trace.checks, other_trace.checks)]
    if any(len(r) != len(targets) for r in runs):
        return Verdict("unknown", "the numeric and symbolic runs disagree on the replica obligations", stats=stats,
                       approximations=approximations)
    stats["replica_obligations"] = len(targets) - len(rtypes)

    # Per element: identical terms are done (the sweep makes that the common case).
    results: list[OutputResult] = []
    open_: dict[int, list[tuple[tuple[int, ...], Any, Any]]] = {}
    for i, tg in enumerate(targets):
        res = OutputResult(i, "equivalent", elements=int(tg.lhs.size), what=tg.what)
        for idx in np.ndindex(*tg.lhs.shape):
            a, b = tg.lhs[idx], tg.rhs[idx]
            if identical(a, b):
                res.syntactic += 1
            else:
                open_.setdefault(i, []).append((idx, a, b))
        results.append(res)

    # The random runs may already show a difference: check it exactly (evaluating the cut
    # point definitions at the run's inputs), no solver needed.
    counterexample: Counterexample | None = None
    unknown_reasons: list[str] = []
    for i in list(open_):
        numeric = [(r[i].lhs, r[i].rhs) for r in runs]
        cex = _random_counterexample(i, open_[i], targets[i], numeric, input_sets, inputs, names, types, alg,
                                     sweeper)
        if cex is not None:
            del open_[i]
            _record(cex, results[i], ref, other, types, options, targets[i])
            if counterexample is None and results[i].verdict == "not-equivalent":
                counterexample = cex

    # Local proofs at the cut points (unfolding newest first, as during the sweep), before
    # any full expansion: where the programs agree up to a few ops this is small.
    t_local = time.perf_counter()
    local = 0
    for i in list(open_):
        kind = targets[i].kind
        status = sweeper.prove_pairs([(a, b) for _, a, b in open_[i]], kind, min(options.timeout_s, LOCAL_TIMEOUT),
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
        kind = targets[i].kind
        for idx, a0, b0 in elems:
            a, b = sweeper.expand_element(a0), sweeper.expand_element(b0)
            if kind is Kind.FLOAT and a.k == FIN and b.k == FIN and difference_is_zero(a.v, b.v):
                results[i].syntactic += 1
                continue
            eq = alg.element_equal(a, b, kind)
            if kind is not Kind.FLOAT and trivially_equal(eq):
                results[i].syntactic += 1
                continue
            uses_uf = sweeper.uses_uf(a0) or sweeper.uses_uf(b0)
            pending.setdefault(i, []).append(_Element(i, idx, a, b, kind, eq, uses_uf))
    stats.update(elements=sum(r.elements for r in results), syntactic=sum(r.syntactic for r in results))

    queries = [Query(i, z3.Or(*[z3.Not(lift_any(e.eq)) for e in elems]), constraints)
               for i, elems in pending.items()]
    t_solve = time.perf_counter()
    if queries:
        _progress(options, f"solving {len(queries)} quer{'y' if len(queries) == 1 else 'ies'} "
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
        tg = targets[outcome.output]
        cex = _model_counterexample(outcome.model, pending[outcome.output], inputs, names, types, tg)
        _record(cex, res, ref, other, types, options, tg)
        if counterexample is None and res.verdict == "not-equivalent":
            counterexample = cex

    for res in results:
        if res.verdict == "unknown":
            unknown_reasons.append(f"{res.what}: {res.detail}")
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


def _record(cex: Counterexample, res: OutputResult, ref: Module, other: Module, types: Sequence[TensorType],
            options: Options, target: _Target) -> None:
    """Decide a target from its counterexample: a difference that goes through an
    approximated op counts only when the numeric replay reproduces it."""
    cex.what = target.what
    if target.devices is not None:
        cex.devices, cex.side = list(target.devices), target.side
    if options.replay or cex.uses_approximation:
        cex.replay = _replay(ref, other, cex, types, options, target)
    if cex.uses_approximation and not cex.confirmed:
        res.verdict = "unknown"
        res.detail = "counterexample depends on approximated ops and the numeric replay does not reproduce it"
    else:
        res.verdict, res.detail = "not-equivalent", f"differs at {list(cex.index)}"


# ---------------------------------------------------------------------------
# Counterexamples


def _z3_number(v: Any) -> Any:
    if z3.is_true(v) or z3.is_false(v):
        return bool(z3.is_true(v))
    if z3.is_int_value(v):
        return v.as_long()
    if z3.is_rational_value(v):
        f = Fraction(v.numerator_as_long(), v.denominator_as_long())
        return int(f) if f.denominator == 1 else float(f)
    if z3.is_algebraic_value(v):
        return float(Fraction(v.approx(30).as_fraction()))
    raise ValueError(f"not a value: {v}")


def _eval_element(model: z3.ModelRef, x: Any, kind: Kind) -> Any:
    return _element_value(x, kind, lambda t: model.eval(t, model_completion=True))


def _element_value(x: Any, kind: Kind, value_of: Any = lambda t: t) -> Any:
    """An element as a report value: a number, a bool, or "nan"/"inf"/"-inf" for a float
    whose IEEE class is not finite. value_of turns a z3 term into a literal (a model's
    evaluation, or the identity for terms that are literals already)."""
    if kind is Kind.FLOAT:
        k = x.k if isinstance(x.k, int) else _z3_number(value_of(x.k))
        if k != FIN:
            return {NAN: "nan", POS: "inf", NEG: "-inf"}.get(k, "non-finite")
        return _z3_number(value_of(x.v))
    return x if isinstance(x, (bool, int)) else _z3_number(value_of(lift_any(x)))


def _model_counterexample(model: z3.ModelRef, elems: Sequence[_Element], inputs: list[np.ndarray], names: list[str],
                          types: Sequence[TensorType], target: _Target) -> Counterexample:
    values = {}
    for name, arr, t in zip(names, inputs, types):
        kind = Kind.of(t)
        out = np.empty(arr.shape, dtype=object)
        for idx in np.ndindex(*arr.shape):
            out[idx] = _eval_element(model, arr[idx], kind)
        values[name] = out.tolist()
    chosen = elems[0]
    for e in elems:
        if z3.is_true(model.eval(z3.Not(lift_any(e.eq)), model_completion=True)):
            chosen = e
            break
    uses_uf = chosen.uses_uf
    return Counterexample(values, target.output, list(target.global_index(chosen.index)),
                          _eval_element(model, chosen.ref, chosen.kind),
                          _eval_element(model, chosen.other, chosen.kind), uses_uf)


def _random_counterexample(position: int, elems: Sequence[tuple[tuple[int, ...], Any, Any]], target: _Target,
                           numeric: list[tuple[np.ndarray, np.ndarray]], input_sets: list[list[np.ndarray]],
                           inputs: list[np.ndarray], names: list[str], types: Sequence[TensorType],
                           alg: SymbolicAlgebra, sweeper: Sweeper) -> Counterexample | None:
    """An open element on which a random run already differs, checked exactly by evaluating
    its terms at the run's inputs (when they apply no approximated op)."""
    kind = target.kind
    for run, concrete in enumerate(input_sets):
        r_out, o_out = numeric[run]
        env: dict[int, tuple[Any, Any]] | None = None
        for idx, a, b in elems:
            if not values_differ(r_out[idx], o_out[idx]):
                continue
            uses_uf = sweeper.uses_uf(a) or sweeper.uses_uf(b)
            if not uses_uf:
                env = env if env is not None else _environment(inputs, concrete, types)
                exact = _exact_values(sweeper, alg, a, b, kind, env)
                if exact is None:
                    continue  # float rounding, not a real difference
                ref_v, other_v = exact
            else:
                ref_v, other_v = _py(r_out[idx]), _py(o_out[idx])
            values = {name: _py_list(arr) for name, arr in zip(names, concrete)}
            return Counterexample(values, target.output, list(target.global_index(idx)), ref_v, other_v, uses_uf)
    return None


def _environment(inputs: list[np.ndarray], concrete: list[np.ndarray],
                 types: Sequence[TensorType]) -> dict[int, tuple[Any, Any]]:
    """Input constant id -> (constant, exact value of the run)."""
    env = {}
    for sym, val, t in zip(inputs, concrete, types):
        kind = Kind.of(t)
        for idx in np.ndindex(*sym.shape):
            s = sym[idx]
            if kind is Kind.FLOAT:
                pair = (s.v, z3.RealVal(Fraction(float(val[idx]))))
            elif kind is Kind.BOOL:
                pair = (s, z3.BoolVal(bool(val[idx])))
            else:
                pair = (s, z3.IntVal(int(val[idx])))
            env[pair[0].get_id()] = pair
    return env


def _exact_values(sweeper: Sweeper, alg: SymbolicAlgebra, a: Any, b: Any, kind: Kind,
                  env: dict[int, tuple[Any, Any]]) -> tuple[Any, Any] | None:
    """The two elements' exact values at env when they differ there, else None."""
    ta, tb = element_terms(a), element_terms(b)
    vals = sweeper.evaluate(ta + tb, env)
    if vals is None:
        return None
    ea, eb = with_terms(a, [_literal(v) for v in vals[:len(ta)]]), with_terms(b, [_literal(v) for v in vals[len(ta):]])
    eq = alg.element_equal(ea, eb, kind)
    if not (eq is False or (not isinstance(eq, bool) and z3.is_false(z3.simplify(lift_any(eq))))):
        return None
    try:
        return _element_value(ea, kind), _element_value(eb, kind)
    except ValueError:
        return None


def _literal(v: Any) -> Any:
    """z3 Int and Bool literals as Python values, the form the symbolic algebra folds."""
    if z3.is_int_value(v):
        return v.as_long()
    if z3.is_true(v) or z3.is_false(v):
        return bool(z3.is_true(v))
    return v


def _py_list(arr: np.ndarray) -> Any:
    return np.vectorize(_py, otypes=[object])(arr).tolist() if arr.shape else _py(arr)


def concrete_inputs(cex: Counterexample, types: Sequence[TensorType]) -> list[np.ndarray]:
    arrays = []
    for vals, t in zip(cex.inputs.values(), types):
        dtype = {Kind.FLOAT: np.float64, Kind.INT: np.int64, Kind.BOOL: np.bool_}[Kind.of(t)]
        arrays.append(np.array(vals, dtype=dtype).reshape(t.shape))
    return arrays


def _replay(ref: Module, other: Module, cex: Counterexample, types: Sequence[TensorType], options: Options,
            target: _Target) -> list[Replay]:
    arrays = concrete_inputs(cex, types)
    local = tuple(i - o for i, o in zip(cex.index, target.offset)) if target.offset else tuple(cex.index)
    replays = []
    try:
        ri, oi = Interpreter(ref, NumericAlgebra(), options.max_unroll), Interpreter(other, NumericAlgebra(),
                                                                                     options.max_unroll)
        ro, oo = ri.run(arrays), oi.run(arrays)
        t = _targets(ref, other, ro, oo, ri.replica_checks, oi.replica_checks)[target.position]
        r, o = t.lhs[local], t.rhs[local]
        replays.append(Replay("numeric", _py(r), _py(o), bool(values_differ(r, o))))
    except (Unsupported, IndexError) as exc:
        replays.append(Replay("numeric", None, None, False, str(exc)))
    if ref.text and other.text:
        replays.append(xla_replay(ref, other, arrays, target.output, tuple(cex.index), target.side,
                                  target.devices))
    return replays
