"""Shared helpers: run one module three ways (XLA, the numeric algebra, the symbolic algebra
evaluated at the same inputs) and compare."""
from __future__ import annotations

import math
import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
# Multi-device replay tests need 8 host devices; the flag only counts before jax is imported.
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
# Stage proofs are cached on disk (tv_mlir/stages/cache.py): one fresh cache per test process,
# never the user's. pytest-xdist workers inherit the controller's environment; each makes its
# own, so a test's cold proof is not warmed by whichever worker ran the same stage first.
if os.environ.get("TV_MLIR_CACHE_DIR") in (None, os.environ.get("TV_MLIR_TEST_CACHE")):
    import tempfile

    os.environ["TV_MLIR_CACHE_DIR"] = os.environ["TV_MLIR_TEST_CACHE"] = tempfile.mkdtemp(
        prefix="tv-mlir-test-cache-")
# Whole verdicts are not kept (stages/verdicts.py): tests verify one pair many ways in one
# process, some with semantics mutated by a monkeypatch that no cache key sees.
os.environ.setdefault("TV_MLIR_KEEP_VERDICTS", "0")

from collections.abc import Callable, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import z3

from tv_mlir.algebra import Kind, NumericAlgebra, SymbolicAlgebra
from tv_mlir.algebra.fast import FF, FastAlgebra
from tv_mlir.algebra.numeric import FUNCS
from tv_mlir.algebra.symbolic import FIN, NAN, NEG, POS, SF
from tv_mlir.algebra.term_z3 import Z3Translator
from tv_mlir.execute.interp import Interpreter
from tv_mlir.frontend.classify import classify
from tv_mlir.frontend.read import load_module
from tv_mlir.passes import load_pipeline, run_pipeline
from tv_mlir.semantics.fixed_width import int_width

ROOT = Path(__file__).resolve().parents[1]
TESTDATA = ROOT / "testdata"


@pytest.fixture(scope="session")
def xla():
    from tv_mlir.execute.xla import XlaRunner

    return XlaRunner()


def symbolic_values(module, inputs: Sequence[np.ndarray], alg: SymbolicAlgebra | FastAlgebra | None = None,
                    nan_sign: int = 1) -> list[np.ndarray]:
    """Run the module on fresh symbols, then evaluate every output element with the
    symbols bound to `inputs` (exact rationals): the symbolic rules' own numbers.
    Uninterpreted functions are evaluated with the numeric algebra's real function
    (`ZEval`), so their IEEE-class rules are checked too. The algebra over the project's
    own terms (`FastAlgebra`) has its outputs translated to z3 first (`term_z3`), so both
    symbolic algebras are held to XLA by the same evaluator."""
    alg = alg or SymbolicAlgebra()
    types = module.global_arg_types()
    syms, env = [], {}
    for i, (t, val) in enumerate(zip(types, inputs)):
        arr, _ = alg.inputs(f"in{i}", t.shape, Kind.of(t), t.is_unsigned, int_width(t) or 64)
        syms.append(arr)
        for idx in np.ndindex(*t.shape):
            label = f"in{i}[{','.join(map(str, idx))}]" if t.shape else f"in{i}"
            v = np.asarray(val)[idx]
            env[label] = (Fraction(float(v)) if Kind.of(t) is Kind.FLOAT else
                          bool(v) if Kind.of(t) is Kind.BOOL else int(v))
    outs = Interpreter(module, alg).run(syms)
    as_z3 = _as_z3(alg)
    ev = ZEval(env, nan_sign)
    result = []
    for arr, t in zip(outs, module.global_result_types()):
        # Integers stay Python ints: exact, also past 2**53 (i64 edge values).
        vals = np.empty(arr.shape, dtype={Kind.FLOAT: np.float64, Kind.BOOL: np.bool_}.get(Kind.of(t), object))
        for idx in np.ndindex(*arr.shape):
            vals[idx] = _concrete(as_z3(arr[idx]), Kind.of(t), ev)
        result.append(vals)
    return result


def fast_symbolic_values(module, inputs: Sequence[np.ndarray], nan_sign: int = 1) -> list[np.ndarray]:
    return symbolic_values(module, inputs, FastAlgebra(), nan_sign)


def _as_z3(alg: SymbolicAlgebra | FastAlgebra) -> Callable[[Any], Any]:
    """An element of the algebra as the z3 form ZEval reads (identity for z3 terms)."""
    if not isinstance(alg, FastAlgebra):
        return lambda x: x
    to_z3 = Z3Translator(alg.store).to_z3

    def convert(x: Any) -> Any:
        if isinstance(x, FF):
            return SF(to_z3(x.v), x.k if isinstance(x.k, int) else to_z3(x.k))
        return x if isinstance(x, (bool, int)) else to_z3(x)
    return convert


def _concrete(x: Any, kind: Kind, ev: ZEval) -> Any:
    if kind is Kind.FLOAT:
        k = ev.value(x.k)
        if k == NAN:
            return np.nan
        if k == POS:
            return np.inf
        if k == NEG:
            return -np.inf
        assert k == FIN, f"IEEE class {k!r} of a float result"
        return float(ev.value(x.v))
    return ev.value(x)


# ---------------------------------------------------------------------------
# Evaluating z3 terms at a point, uninterpreted functions included.


class _Undefined:
    """The value of a term that has none at this point (x/0 over the reals, the value part of
    a non-finite function result). Harmless unless it reaches a result or a condition."""

    def __repr__(self) -> str:
        return "UNDEF"


UNDEF = _Undefined()


def _ieee_class(r: float) -> int:
    if math.isnan(r):
        return NAN
    if math.isinf(r):
        return POS if r > 0 else NEG
    return FIN


def _ieee_value(v: Any, k: int) -> float:
    return float(v) if k == FIN else {POS: math.inf, NEG: -math.inf, NAN: math.nan}[k]


def _call(name: str, xs: Sequence[float]) -> float:
    with np.errstate(all="ignore"):
        return float(np.asarray(FUNCS[name](*[np.float64(x) for x in xs])))


def apply_uf(decl: str, args: Sequence[Any]) -> Any:
    """The symbolic algebra's uninterpreted functions at a point: `f(v..)` is f on finite reals
    (its value; UNDEF where f is not finite), `f.domain_class(v..)` the IEEE class of that
    result, `f.special(v.., k..)` / `f.class(v.., k..)` value and class of f on IEEE inputs
    given as (value, class) pairs."""
    base, _, suffix = decl.partition(".")
    if base not in FUNCS:
        raise AssertionError(f"uninterpreted function {decl} has no numeric counterpart")
    if any(a is UNDEF for a in args):
        return UNDEF
    if suffix in ("special", "class"):
        n = len(args) // 2
        xs = [_ieee_value(v, int(k)) for v, k in zip(args[:n], args[n:])]
    else:
        xs = [float(a) for a in args]
    r = _call(base, xs)
    if suffix in ("", "special"):
        return r if math.isfinite(r) else UNDEF
    if suffix in ("class", "domain_class"):
        return _ieee_class(r)
    raise AssertionError(f"unknown uninterpreted function {decl}")


def _euclid_div(a: int, b: int) -> int:
    r = a % abs(b)
    return (a - r) // b


class ZEval:
    """A recursive evaluator from z3 terms to Python values (Fraction/float/int/bool, or
    UNDEF) under an assignment of the input constants. Conditions short-circuit, so an
    undefined value in an untaken branch does no harm."""

    def __init__(self, env: dict[str, Any], nan_sign: int = 1):
        self.env = env
        self.memo: dict[int, Any] = {}
        # The model leaves a NaN's place in TOTALORDER open (its sign is platform-dependent);
        # the test states which sign the case's NaNs have on XLA's CPU.
        self.nan_sign = nan_sign

    def _totalorder(self, direction: str, args: list[Any]) -> bool:
        ka, va, kb, vb = args

        def rank(k: int, v: Any) -> tuple[int, float]:
            if k == NAN:
                return (self.nan_sign, 0.0)
            return (0, {POS: math.inf, NEG: -math.inf}.get(k, float(v) if v is not UNDEF else 0.0))

        ra, rb = rank(ka, va), rank(kb, vb)
        return {"LT": ra < rb, "LE": ra <= rb, "GT": ra > rb, "GE": ra >= rb, "EQ": ra == rb, "NE": ra != rb}[direction]

    def value(self, t: Any) -> Any:
        if isinstance(t, (bool, int, Fraction, float)):
            return t
        v = self.ev(t)
        if v is UNDEF:
            raise AssertionError(f"symbolic result has no value at this point: {t}")
        return v

    def ev(self, t: z3.ExprRef) -> Any:
        key = t.get_id()
        if key in self.memo:
            return self.memo[key]
        v = self._ev(t)
        self.memo[key] = v
        return v

    def _ev(self, t: z3.ExprRef) -> Any:  # noqa: C901 - one dispatch table
        if z3.is_int_value(t):
            return t.as_long()
        if z3.is_rational_value(t):
            return Fraction(t.numerator_as_long(), t.denominator_as_long())
        if z3.is_true(t):
            return True
        if z3.is_false(t):
            return False
        if z3.is_bv_value(t):
            return t.as_long()
        if z3.is_algebraic_value(t):
            return float(Fraction(t.approx(20).as_fraction()))
        k = t.decl().kind()
        args = [t.arg(i) for i in range(t.num_args())]
        if k == z3.Z3_OP_UNINTERPRETED:
            name = t.decl().name()
            if not args:
                if name not in self.env:
                    raise AssertionError(f"free symbol {name} has no value")
                return self.env[name]
            if name.startswith("totalorder_nan."):
                return self._totalorder(name.split(".", 1)[1], [self.ev(a) for a in args])
            return apply_uf(name, [self.ev(a) for a in args])
        if k == z3.Z3_OP_ITE:
            c = self.ev(args[0])
            if c is UNDEF:
                return UNDEF
            return self.ev(args[1] if c else args[2])
        if k == z3.Z3_OP_AND:
            undef = False
            for a in args:
                v = self.ev(a)
                if v is False:
                    return False
                undef |= v is UNDEF
            return UNDEF if undef else True
        if k == z3.Z3_OP_OR:
            undef = False
            for a in args:
                v = self.ev(a)
                if v is True:
                    return True
                undef |= v is UNDEF
            return UNDEF if undef else False
        if k == z3.Z3_OP_IMPLIES:
            a = self.ev(args[0])
            if a is False:
                return True
            b = self.ev(args[1])
            if b is True:
                return True
            return UNDEF if UNDEF in (a, b) else False
        vs = [self.ev(a) for a in args]
        if any(v is UNDEF for v in vs):
            return UNDEF
        fn = _OPS.get(k)
        if fn is not None:
            return fn(*vs)
        # Anything else (bit-vector logic): no uninterpreted functions below, let z3 fold it.
        subst = [(a, _z3_const(v, a.sort())) for a, v in zip(args, vs)]
        folded = z3.simplify(t.decl()(*[c for _, c in subst])) if subst else z3.simplify(t)
        if folded.eq(t) or not (z3.is_int_value(folded) or z3.is_rational_value(folded) or z3.is_bv_value(folded)
                                or z3.is_true(folded) or z3.is_false(folded)):
            raise AssertionError(f"cannot evaluate {t.decl()} in {t}")
        if z3.is_bv_value(folded):
            return folded.as_long()
        return self._ev(folded)


def _z3_const(v: Any, sort: z3.SortRef) -> z3.ExprRef:
    if sort.kind() == z3.Z3_BOOL_SORT:
        return z3.BoolVal(bool(v))
    if sort.kind() == z3.Z3_INT_SORT:
        return z3.IntVal(int(v))
    if sort.kind() == z3.Z3_BV_SORT:
        return z3.BitVecVal(int(v), sort.size())
    return z3.RealVal(Fraction(v))


def _div(a: Any, b: Any) -> Any:
    if b == 0:
        return UNDEF  # x/0 over the reals: no value (z3 leaves it unspecified)
    if isinstance(a, float) or isinstance(b, float):
        return float(a) / float(b)
    return Fraction(a) / b


def _sub(*xs: Any) -> Any:
    acc = xs[0]
    for x in xs[1:]:
        acc = acc - x
    return acc


def _mul(*xs: Any) -> Any:
    acc = xs[0]
    for x in xs[1:]:
        acc = acc * x
    return acc


_OPS: dict[int, Callable[..., Any]] = {
    z3.Z3_OP_ADD: lambda *xs: sum(xs[1:], xs[0]),
    z3.Z3_OP_SUB: _sub,
    z3.Z3_OP_MUL: _mul,
    z3.Z3_OP_UMINUS: lambda a: -a,
    z3.Z3_OP_DIV: _div,
    z3.Z3_OP_IDIV: lambda a, b: UNDEF if b == 0 else _euclid_div(a, b),
    z3.Z3_OP_MOD: lambda a, b: UNDEF if b == 0 else a % abs(b),
    z3.Z3_OP_POWER: lambda a, b: a ** b,
    z3.Z3_OP_ABS: abs,
    z3.Z3_OP_TO_INT: lambda a: math.floor(a),
    z3.Z3_OP_TO_REAL: lambda a: Fraction(a) if isinstance(a, int) else a,
    z3.Z3_OP_IS_INT: lambda a: a == math.floor(a),
    z3.Z3_OP_NOT: lambda a: not a,
    z3.Z3_OP_XOR: lambda a, b: a != b,
    z3.Z3_OP_EQ: lambda a, b: a == b,
    z3.Z3_OP_DISTINCT: lambda *xs: len(set(xs)) == len(xs),
    z3.Z3_OP_LT: lambda a, b: a < b,
    z3.Z3_OP_LE: lambda a, b: a <= b,
    z3.Z3_OP_GT: lambda a, b: a > b,
    z3.Z3_OP_GE: lambda a, b: a >= b,
}


# ---------------------------------------------------------------------------


def numeric_values(module, inputs) -> list[np.ndarray]:
    return Interpreter(module, NumericAlgebra()).run(inputs)


def prepared(text_or_path, pipeline: str = "default") -> Any:
    module = run_pipeline(load_pipeline(pipeline), load_module(text_or_path))
    classify(module)
    return module


def assert_close(got: np.ndarray, want: np.ndarray, what: str, rtol: float = 2e-5, atol: float = 1e-5) -> None:
    got = np.asarray(got, dtype=np.float64) if np.asarray(want).dtype != np.bool_ else np.asarray(got)
    want = np.asarray(want).astype(np.float64) if np.asarray(want).dtype != np.bool_ else np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} vs {want.shape}"
    if want.dtype == np.bool_:
        assert np.array_equal(got.astype(bool), want), f"{what}: {got} vs {want}"
        return
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)


def check_against_xla(xla, text: str, inputs: Sequence[np.ndarray], rtol: float = 2e-5, atol: float = 1e-5,
                      symbolic: bool = True, pipeline: str = "default", xla_text: str | None = None,
                      nan_sign: int = 1) -> None:
    """The op rule agrees with XLA on these inputs, in both algebras. `pipeline` names the
    normalization run first ("none" keeps calls, composites and no-op custom calls, so that
    their own rules run). `xla_text`: an equivalent module that XLA runs instead, for forms
    XLA cannot compile itself."""
    module = prepared(text, pipeline)
    want = xla.run(xla_text or text, inputs)
    assert len(want) == len(module.main.result_types), "result count"
    got_num = numeric_values(module, inputs)
    for i, (g, w) in enumerate(zip(got_num, want)):
        assert_close(g, w, f"numeric output {i}", rtol, atol)
    if symbolic:
        got_sym = symbolic_values(module, inputs, nan_sign=nan_sign)
        for i, (g, w) in enumerate(zip(got_sym, want)):
            assert_close(g, w, f"symbolic output {i}", rtol, atol)
        got_fast = fast_symbolic_values(module, inputs, nan_sign=nan_sign)
        for i, (g, w) in enumerate(zip(got_fast, want)):
            assert_close(g, w, f"symbolic output {i} (own terms)", rtol, atol)


# ---------------------------------------------------------------------------
# The `slow` marker (registered in pyproject.toml). `make test-fast` runs -m "not slow"
# (about 70 s); `make test` and CI run everything (about 6 minutes). Measured with
# `pytest --durations=0` on two shared cores, the tests below take ~280 s of the ~360 s.
# The op soundness net (test_ops_xla.py, ~25 s) and the CLI tests (~30 s) stay in the
# fast run on purpose. tests/test_packaging.py marks itself (builds and installs the wheel).
SLOW_TESTS = {
    "test_sharded.py::test_sharded_plan": "every sharded plan in three export forms, ~190 s",
    "test_shrink.py::test_realistic_plan_same_verdict": "Llama-sized plans shrunk and verified, ~80 s",
    "test_witness.py::test_first_divergence_names_the_wrong_collective": "~10 s",
    "test_core_differential.py::test_z3_core_same_verdict": "every bundled pair on the z3 core, ~2 min",
    "test_hostile_budgets.py::test_long_chain_with_a_bug": "a 10,000-op chain through every phase, ~15 s",
    "test_gpt2_partitioned.py::test_gpt2_block_partitioned_by_xla_is_equivalent": "~12 s",
    "test_gpt2_partitioned.py::test_the_mlp_all_reduce_over_half_its_group_is_caught": "XLA replay, ~15 s",
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        name = getattr(item, "originalname", item.name)  # without the [parameters]
        if f"{item.path.name}::{name}" in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)


def count_unfoldings(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that grows by one per local proof attempt (`LocalProver._unfold` call)."""
    from tv_mlir.prove.local import LocalProver

    calls: list[int] = []
    real = LocalProver._unfold

    def counted(self: LocalProver, *args: Any) -> Any:
        calls.append(1)
        return real(self, *args)
    monkeypatch.setattr(LocalProver, "_unfold", counted)
    return calls


def blind_first_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first run's random counterexample search and its solver skipped (the solver as if
    out of time), so that what a case split decides is what the verdict shows; the whole
    runs per case (`driver._pinned_split`) keep their own random search."""
    from tv_mlir import driver
    from tv_mlir.prove.solve import Outcome

    search = driver._random_counterexamples

    def pinned_only(p: Any) -> None:
        if p.pins:
            search(p)
    monkeypatch.setattr(driver, "_random_counterexamples", pinned_only)
    monkeypatch.setattr(driver, "solve_all",
                        lambda queries, *a: [Outcome(q.output, "unknown", "timeout") for q in queries])


def capture_stages(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """A list that collects every stage a staged proof proves (`stages.run._prove_stages`)."""
    from tv_mlir.stages import run as stages_run

    seen: list[Any] = []
    real = stages_run._prove_stages

    def spy(stages: Any, *args: Any) -> Any:
        seen.extend(stages)
        return real(stages, *args)

    monkeypatch.setattr(stages_run, "_prove_stages", spy)
    return seen


def count_facts(text: str) -> tuple[Any, set[str]]:
    """A one-program module's shrink facts and its reduce results, the seeds of rule (k)'s
    count analysis (`shrink.counts`): the counts of positives the count tests are built on."""
    from tv_mlir.api import prepare
    from tv_mlir.options import Options
    from tv_mlir.shrink.facts import ProgramFacts
    from tv_mlir.shrink.pair import _raw

    fa = ProgramFacts.of("ref", _raw(text, prepare(text, Options())).module)
    return fa, {op.results[0] for op in fa.ops() if op.name == "stablehlo.reduce"}


def client_generator(name: str) -> Any:
    """A client generator of testdata (`gen_clients`, `gen_clients2`) as a module, for the
    real-client tests' fixtures: without jax, flax or optax the test is skipped (the bundled
    pairs of testdata/clients need neither flax nor optax)."""
    import importlib
    import sys

    for dep in ("jax", "flax", "optax"):
        pytest.importorskip(dep)
    if str(TESTDATA) not in sys.path:
        sys.path.insert(0, str(TESTDATA))
    return importlib.import_module(name)


def check_client(gen: Any, name: str, form: str = "partitioned") -> Any:
    """Program `name` of client generator `gen` through `tv_mlir.jax.check` as a user calls
    it: its shardings, reference and options (`--assume`s), the proof cache off."""
    p = gen.PROGRAMS[name]()
    tj = client_generator("gen_clients").tj
    return tj.check(p.fn, *p.args, in_shardings=p.in_shardings, out_shardings=p.out_shardings,
                    reference=p.reference, form=form, cache=False, **p.options)



def assert_confirmed_at_original_sizes(v: Any) -> None:
    """A bug twin's verdict: not-equivalent, with a counterexample XLA showed at the
    program's own sizes (not only at the shrunk ones)."""
    assert v.verdict == "not-equivalent", v.reason
    c = v.counterexample
    assert c is not None and c.confirmed and c.confirmed_at == "original sizes", c


# A verification on the shrink rules alone: no numeric check at the original sizes and no
# second witness, either of which would catch a hole a rule leaves at these sizes.
RULES_OFF: dict[str, Any] = {"full_size_check": "off", "second_witness": False}


class GeneratedPairs:
    """A red-team batch's pairs as written by gen_shrink_rules.write_manifest (a folder of
    testdata with its manifest.json): their files, their --assume bounds resolved to sizes,
    and the shrink plan of one twin against the reference (the rules alone)."""

    def __init__(self, folder: Path) -> None:
        import json

        self.folder = folder
        self.manifest: dict[str, dict[str, Any]] = {
            e["pair"]: e for e in json.loads((folder / "manifest.json").read_text())}

    def files(self, pair: str, kind: str) -> tuple[str, str]:
        e = self.manifest[pair]
        return str(self.folder / e["files"]["ref"]), str(self.folder / e["files"][kind])

    def assume(self, pair: str) -> dict[str, tuple[int, int]]:
        e = self.manifest[pair]
        return {k: (0, e["sizes"][v]) for k, v in e.get("assume", {}).items()}

    def plan(self, pair: str, kind: str = "bug") -> Any:
        from tv_mlir.api import prepare
        from tv_mlir.assume import resolve
        from tv_mlir.options import Options
        from tv_mlir.shrink.pair import _raw
        from tv_mlir.shrink.plan import plan

        ref, other = self.files(pair, kind)
        r, o = _raw(ref, prepare(ref, Options())).module, _raw(other, prepare(other, Options())).module
        ranges = resolve([(k, lo, hi) for k, (lo, hi) in self.assume(pair).items()], r.input_names(),
                         r.global_arg_types())
        return plan(r, o, ranges=ranges or None)

    def verify(self, pair: str, kind: str, rules_only: bool = False) -> Any:
        """The twin `kind` against the reference with the pair's --assume bounds; rules_only:
        no numeric check at the original sizes and no second witness (RULES_OFF), so a shrunk
        verdict rests on the shrink rules alone."""
        import tv_mlir

        return tv_mlir.verify(*self.files(pair, kind), assume=self.assume(pair), timeout_s=60,
                              **(RULES_OFF if rules_only else {}))

    def size(self, pair: str, where: str, kind: str = "bug") -> int:
        """The verified size of the first class whose place starts with `where`."""
        return next(e.verified for e in self.plan(pair, kind).entries if e.where.startswith(where))
