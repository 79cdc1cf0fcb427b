"""`verify`: the whole pipeline for one pair of programs. Read both (instantiating symbolic
shapes), run the pass pipeline, check that they take the same global inputs, shrink them,
prove them equal at the shrunk sizes (or find where they differ), and carry a shrunk
counterexample back to the original sizes."""
from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from tv_mlir import regrow
from tv_mlir.driver import prove_pair
from tv_mlir.errors import Unsupported, UsageError
from tv_mlir.execute.xla import XlaRunner
from tv_mlir.frontend import symshape
from tv_mlir.frontend.classify import check_signatures
from tv_mlir.frontend.read import BYTECODE_MAGIC, Loaded, SourceSpec, load_module, load_module_mlir, read_source
from tv_mlir.ir import Module
from tv_mlir.options import Options
from tv_mlir.passes import load_pipeline, run_pipeline
from tv_mlir.progress import progress
from tv_mlir.shrink.embed import LAYOUTS, embed_inputs
from tv_mlir.shrink.pair import shrink_pair
from tv_mlir.verdict import FullSizeCheck, Verdict
from tv_mlir.witness import fullsize
from tv_mlir.witness.replay import xla_replay
from tv_mlir.witness.settle import concrete_inputs, py_list

# A path (str or os.PathLike), MLIR text, bytes, a text or binary stream (frontend.read.read_source
# has the rule), or a module already read.
ModuleLike = SourceSpec | Module
CORES = ("own", "z3")  # Options.core


def prepare(spec: ModuleLike | Loaded, options: Options, name: str | None = None) -> Module:
    if isinstance(spec, Loaded):
        spec = spec.module
    module = spec if isinstance(spec, Module) else load_module(spec, name)
    return run_pipeline(load_pipeline(options.pipeline), module)


def verify(ref: ModuleLike, other: ModuleLike, options: Options | None = None, **overrides: Any) -> Verdict:
    """Prove `ref` and `other` compute the same function, or find an input where they differ.
    Raises ParseError/UsageError for unreadable or incomparable inputs."""
    options = resolve_options(options, overrides)
    if options.core not in CORES:
        raise UsageError(f"unknown symbolic core {options.core!r} (choose one of {', '.join(CORES)})")
    t0 = time.perf_counter()
    try:
        # Each input is read and parsed once: the passes copy rather than edit, so the
        # module as read (with its MLIR) is still there for the shrink pass.
        ref_read, ref_sym = _read(ref, options)
        other_read, other_sym = _read(other, options)
        ref_m = prepare(ref_read, options)
        other_m = prepare(other_read, options)
        check_signatures(ref_m, other_m)
        shrink, embedding, originals = None, None, (ref_m, other_m)
        if options.shrink and load_pipeline(options.pipeline).has("shrink"):
            ref_m, other_m, shrink, embedding = _shrink(ref_read, other_read, ref_m, other_m, options)
    except Unsupported as exc:  # a form or type not modelled, or a budget: before any proof
        return unsupported_verdict(exc, options, t0)
    if ref_sym or other_sym:
        shrink = dict(shrink or {"applied": False, "reason": "off (--no-shrink, or no shrink in the pipeline)"})
        shrink["symbolic"] = {"instantiated_at": SYMBOLIC_SIZE, "ref": ref_sym, "other": other_sym}
    verdict = prove_pair(ref_m, other_m, options)
    verdict.shrink = shrink
    runner = XlaRunner()  # one for every XLA run at the original sizes (it caches compiled modules)
    c = verdict.counterexample
    if embedding is not None and c is not None:
        if options.replay:
            _embed(verdict, embedding, ref_m, *originals, runner=runner, options=options)
            if not c.embedded and not c.devices:
                verdict = regrow.retry(verdict, originals, options, runner, _shrink, _embed)
        else:
            c.shrunk_index = list(c.index)
            c.not_embedded = "replay is off (--no-replay)"
    elif c is not None and c.confirmed and not c.confirmed_at:
        c.confirmed_at = "original sizes"  # nothing was shrunk: these are the programs' own sizes
    shrunk = bool(verdict.shrink and verdict.shrink.get("applied"))
    _full_size_check(verdict, shrunk, originals, options, runner)
    verdict.time_s = round(time.perf_counter() - t0, 4)
    return verdict


def _full_size_check(verdict: Verdict, shrunk: bool, originals: tuple[Module, Module], options: Options,
                     runner: XlaRunner) -> None:
    """Before a verdict proved at shrunk sizes is printed as `equivalent`, both original
    programs run on XLA (witness/fullsize.py): a clear difference is a counterexample at
    the original sizes, a marginal one makes the verdict `unknown`."""
    if verdict.verdict != "equivalent":
        verdict.full_size_check = FullSizeCheck(False, "skipped", f"the verdict is {verdict.verdict}")
        return
    if not shrunk:
        verdict.full_size_check = FullSizeCheck(False, "skipped", "not needed: verified at the original sizes")
        return
    ref, other = originals
    progress(options, "full-size check: both original programs on XLA")
    names = list(ref.main.arg_names) or [f"arg{i}" for i in range(len(ref.global_arg_types()))]
    out = fullsize.check(ref, other, options.full_size_check, runner, names)
    verdict.full_size_check = out.check
    progress(options, f"full-size check: {out.check.outcome}: {out.check.reason}")
    if out.counterexample is not None:
        c = out.counterexample
        verdict.verdict, verdict.counterexample = "not-equivalent", c
        verdict.reason = (f"proved equal at the shrunk sizes, but at the original sizes output {c.output} differs at "
                          f"index {c.index} (full-size check on XLA): {ref.source} gives {c.ref_value}, "
                          f"{other.source} gives {c.other_value}; the shrinking argument does not hold for this pair")
    elif out.unknown:
        verdict.verdict, verdict.reason = "unknown", out.unknown


def unsupported_verdict(exc: Unsupported, options: Options, t0: float) -> Verdict:
    """`unknown`, naming what is not modelled or which budget was passed (exit 2, like the
    same finding during the proof), instead of an error."""
    v = Verdict("unknown", f"unsupported: {exc.one_line()}",
                unsupported=[{"op": exc.op or "", "loc": exc.loc or "", "message": exc.message}], inputs=options.inputs)
    v.time_s = round(time.perf_counter() - t0, 4)
    return v


# Dynamic dims (`?`, jax.export with symbolic shapes) are first instantiated at one size
# with many divisors (every shard count up to 8 divides it); shrinking then takes each
# class down to its smallest admissible size like any other.
SYMBOLIC_SIZE = 840


def resolve_options(options: object, overrides: dict[str, Any]) -> Options:
    """The options with the keyword overrides applied; a wrong type or an unknown name is a
    UsageError like any other bad argument (Options checks the values)."""
    if options is not None and not isinstance(options, Options):
        raise UsageError(f"options must be a tv_mlir.Options, got {type(options).__name__}")
    try:
        return replace(options or Options(), **overrides)
    except TypeError as exc:  # an unknown keyword
        raise UsageError(f"bad option: {exc}") from None


def _read(spec: ModuleLike, options: Options) -> tuple[Loaded | Module, list[list[int]]]:
    """The module as read (stdin is read once), instantiated at SYMBOLIC_SIZE when its
    entry has dynamic dims; and those dims. A Module given by the caller stays as it is."""
    if isinstance(spec, Module):
        return spec, []

    src = read_source(spec, limit=options.max_input_bytes)
    dims = [] if not src.data.startswith(BYTECODE_MAGIC) and b"?" not in src.data else \
        symshape.dynamic_dims(src.data, src.name)
    if not dims:
        return load_module_mlir(src.data, src.name), []
    text = symshape.instantiate(src.data, {d: SYMBOLIC_SIZE for d in dims}, src.name)
    return load_module_mlir(text, src.name), [list(d) for d in dims]


def _embed(verdict: Verdict, e: Any, small_ref: Module, ref: Module, other: Module, runner: XlaRunner | None = None,
           options: Options | None = None) -> None:
    """Place a shrunk witness into the original sizes and replay it there on XLA: when its
    inputs are small (embed.MAX_ELEMENTS), or the programs fit the full-size budget
    (witness/fullsize.py; `--full-size-check on` lifts its compute bound)."""
    c = verdict.counterexample
    assert c is not None  # verify embeds only a verdict that has a counterexample
    c.shrunk_index = list(c.index)
    if c.devices:
        c.not_embedded = "a replica divergence is shown where it was found"
        c.confirmed_at = "shrunk sizes" if c.confirmed else None
        return
    mode = "on" if options is not None and options.full_size_check == "on" else "auto"
    b = fullsize.budget(ref, other, mode)
    if not b.memory_fits or not (e.fits() or b.run):
        c.not_embedded = f"too large to replay at the original sizes ({b.reason})"
        c.confirmed_at = "shrunk sizes" if c.confirmed else None
        return
    small = concrete_inputs(c, small_ref.global_arg_types())
    for layout in LAYOUTS:
        arrays = embed_inputs(e, small, layout)
        index = e.index(c.output, c.index, layout)
        r = xla_replay(ref, other, arrays, c.output, tuple(index), runner=runner)
        if r.confirmed or layout == LAYOUTS[-1]:
            break
    r.backend = "xla, original sizes"
    c.replay.append(r)
    c.embedded = bool(r.confirmed)
    if r.error:
        c.not_embedded = f"the replay at the original sizes failed: {r.error}"
    if c.embedded:
        c.confirmed_at = "original sizes"
        c.inputs = {name: py_list(a) for name, a in zip(c.inputs, arrays)}
        c.index, c.ref_value, c.other_value = index, r.ref_value, r.other_value
        verdict.reason = (f"output {c.output} differs at index {c.index} (a witness found at the shrunk sizes, "
                          f"replayed at the original sizes): {ref.source} gives {c.ref_value}, "
                          f"{other.source} gives {c.other_value}")


def _shrink(ref: Loaded | Module, other: Loaded | Module, ref_m: Module, other_m: Module,
            options: Options, grow: int = 0) -> tuple[Module, Module, dict[str, Any], Any]:
    """Both programs at their shrunk sizes, or as they are when nothing shrinks (or the
    rewrite is refused: then the verdict is still sound, only slower). `grow`: every
    shrunk class that many admissible sizes larger (plan.plan)."""

    try:
        result = shrink_pair(ref, other, ref_m, other_m, grow=grow)
    except Unsupported as exc:
        progress(options, f"shrink: not applied ({exc})")
        return ref_m, other_m, {"applied": False, "reason": str(exc)}, None
    if result is None:
        return ref_m, other_m, {"applied": False, "reason": "no dimension can shrink"}, None
    summary = {"applied": True, **result.summary()}
    progress(options, f"shrink: {len(summary['shrunk'])} dimension classes shrunk, "
                       f"{summary['constants_rewritten']} constants rewritten ({result.time_s:.2f} s)")
    small_ref = prepare(result.ref_text, options, ref_m.source)
    small_other = prepare(result.other_text, options, other_m.source)
    check_signatures(small_ref, small_other)
    return small_ref, small_other, summary, result.embedding


