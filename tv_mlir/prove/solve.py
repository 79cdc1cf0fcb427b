"""The solver: the one place that creates z3 solvers. Per-output queries (in parallel worker
processes when --jobs > 1), batched local proofs for the sweep, single validity checks,
and reading values out of a model. Checks that need no solver live in `algebra.checks`."""
from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from fractions import Fraction
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Any

import z3

from tv_mlir.algebra.term import INT
from tv_mlir.prove import refine
from tv_mlir.prove.known import Bound

# z3's own Ctrl-C handling (on by default while a check runs) turns SIGINT into an
# `unknown` result with the first reason, `interrupt_solvers` into the second or the third;
# an interrupt, never a verdict. The third is also what some tactics say when the work limit
# ends them (RLIMIT_PER_S): an interrupt only when `interrupt_solvers` asked for one.
_INTERRUPTED = ("interrupted from keyboard", "interrupted", "canceled")


@dataclass
class Query:
    """'Some element differs' for one output: the solver looks for a model of `formula`."""

    output: int
    formula: Any  # z3 BoolRef
    constraints: list[Any] = field(default_factory=list)
    refine: bool = True  # refute models that break an approximated function's laws (Options.refine_models)

    def smt2(self) -> str:
        """SMT-LIB text for a worker process. Every constant and function of the query is
        renamed to a generated name first: input names come from the user's MLIR, and z3
        prints a name with a backslash or a bar in a form its own reader rejects, and a
        name such as `and` or `pi` bare, where it means the built-in. Only the status comes
        back, so no name is mapped back."""
        renamed = _renamed([*self.constraints, self.formula])
        formula = renamed[0] if len(renamed) == 1 else z3.And(*renamed)
        # The printer itself rather than Solver.to_smt2: asserting into a solver first
        # costs seconds on a large query.
        none = (z3.Ast * 0)()
        return str(z3.Z3_benchmark_to_smtlib_string(formula.ctx.ref(), "", "", "unknown", "", 0, none,
                                                    formula.as_ast()))


def _renamed(formulas: list[Any]) -> list[Any]:
    decls = _uninterpreted_decls(formulas)
    consts = [(d(), z3.Const(f"c{i}", d.range())) for i, d in enumerate(decls) if d.arity() == 0]
    funcs = [(d, z3.Function(f"f{i}", *[d.domain(j) for j in range(d.arity())], d.range()))
             for i, d in enumerate(decls) if d.arity() > 0]
    out = [z3.substitute(f, *consts) if consts else f for f in formulas]
    if funcs:
        pairs = [(d, g(*[z3.Var(j, d.domain(j)) for j in range(d.arity())])) for d, g in funcs]
        out = [z3.substitute_funs(f, *pairs) for f in out]
    return out


def _uninterpreted_decls(formulas: list[Any]) -> list[Any]:
    """The user-named constants and functions, each once. An iterative walk over z3's C
    API on raw pointers (kept alive by the formulas): Python wrappers per node made this
    ten times slower than z3 printing the text."""
    if not formulas:
        return []
    ctx = formulas[0].ctx
    c = ctx.ref()
    seen: set[int] = set()
    decls: dict[int, Any] = {}
    stack = [f.as_ast() for f in formulas]
    while stack:
        a = stack.pop()
        key = z3.Z3_get_ast_id(c, a)
        if key in seen:
            continue
        seen.add(key)
        kind = z3.Z3_get_ast_kind(c, a)
        if kind == z3.Z3_QUANTIFIER_AST:
            stack.append(z3.Z3_get_quantifier_body(c, a))
        if kind != z3.Z3_APP_AST:
            continue
        app = z3.Z3_to_app(c, a)
        d = z3.Z3_get_app_decl(c, app)
        if z3.Z3_get_decl_kind(c, d) == z3.Z3_OP_UNINTERPRETED:
            decls.setdefault(z3.Z3_get_ast_id(c, z3.Z3_func_decl_to_ast(c, d)), d)
        stack.extend(z3.Z3_get_app_arg(c, app, i) for i in range(z3.Z3_get_app_num_args(c, app)))
    return [z3.FuncDeclRef(d, ctx) for d in decls.values()]


@dataclass
class Outcome:
    output: int
    status: str  # "unsat" (proved), "sat" (differs), "unknown"
    reason: str = ""
    model: Model | None = None  # only when solved in this process


# z3 takes its timeout in milliseconds, and its resource limit, as unsigned 32-bit ints.
_MAX_TIMEOUT_MS = 2**32 - 1
_MAX_RLIMIT = 2**32 - 1

# A solver call's time is counted in z3's own work units, not in wall time. z3's timeout is
# wall time: at CI's load ~3 a query that proves in 0.1 s alone ran out of its 0.5 s, a
# merge the sweep needed was not made, and a verdict (and a test) changed with the load of
# the machine. z3's resource count is the same on every run of one query, whatever the load.
# A call of timeout T may spend RLIMIT_PER_S * T units: measured on this project's queries
# on a 2-core machine at load ~1, z3 counts 10-15 M units a second for most of them
# (median 10 M); a limit of 15 M a second leaves them at least the time they had.
# Some queries count ~1-2 M a second (their work is in parts z3 does not count): for them
# the backstop is the CPU time of the checking thread, CPU_SLACK times T (`_Watchdog`),
# which the machine's load stretches far less than wall time (stop 49: a ring-buffer twin's
# model was found or not by the same query as the load went from 2 to 7, its calls ended
# at 2x wall with half of that in CPU). Wall time stays as the last resort, WALL_CAP
# times T, so no call runs unbounded. RLIMIT_PER_S None: wall time alone (the behaviour
# before stop 48).
RLIMIT_PER_S: int | None = 15_000_000
CPU_SLACK = 2.0
WALL_CAP = 10.0
# What z3 says when the work limit ends a call; reported as the timeout it stands for.
_RLIMIT_REASON = "max. resource limit exceeded"


def _units(timeout_s: float) -> int | None:
    """The work limit of a call of `timeout_s`; None: wall time alone (off, or past z3's
    32-bit limit: ~286 s of work)."""
    units = None if RLIMIT_PER_S is None else int(RLIMIT_PER_S * timeout_s)
    return units if units is not None and 0 < units <= _MAX_RLIMIT else None


def wall_s(timeout_s: float) -> float:
    """The wall time a call of `timeout_s` may take."""
    return timeout_s * WALL_CAP if _units(timeout_s) is not None else timeout_s


def cpu_s(timeout_s: float) -> float | None:
    """The CPU time of its thread a call of `timeout_s` may take (None: wall time alone)."""
    return timeout_s * CPU_SLACK if _units(timeout_s) is not None else None


class _Limited(z3.Solver):  # type: ignore[misc]  # z3 has no type hints
    """A z3 solver with the CPU budget `_check` holds its checks to, and whether its last
    check ran out of it (z3 then says "interrupted", which is a timeout here)."""

    cpu_s: float | None = None
    ran_out: bool = False


@dataclass
class _Watch:
    generation: int
    fired: bool = False


def _solver(timeout_s: float) -> z3.Solver:
    s = _Limited()
    units = _units(timeout_s)
    if units is not None:
        s.set("rlimit", units)
    s.set("timeout", min(_MAX_TIMEOUT_MS, max(1, int(wall_s(timeout_s) * 1000))))
    s.cpu_s = cpu_s(timeout_s)
    return s


class _Watchdog:
    """Interrupts the z3 check in progress once its thread has used the check's CPU budget:
    one thread per process, started on first use, polling every POLL_S while a check runs.
    Per process, as z3's context it interrupts is; a forked worker starts its own."""

    POLL_S = 0.01

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._watched: tuple[int, float, _Watch] | None = None  # (thread CPU clock, deadline on it, the watch)
        self._generation = 0
        self._thread: threading.Thread | None = None

    @contextmanager
    def watch(self, budget_s: float) -> Iterator[_Watch]:
        clock = time.pthread_getcpuclockid(threading.get_ident())
        with self._cond:
            self._generation += 1
            w = _Watch(self._generation)
            self._watched = (clock, time.clock_gettime(clock) + budget_s, w)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="tv-mlir-solver-cpu", daemon=True)
                self._thread.start()
            self._cond.notify()
        try:
            yield w
        finally:
            with self._cond:
                if self._watched is not None and self._watched[2] is w:
                    self._watched = None

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._watched is None:
                    self._cond.wait()
                clock, deadline, w = self._watched
                left = deadline - time.clock_gettime(clock)
                if left <= 0:
                    # Under the lock: the check cannot have been unregistered, so this
                    # interrupts it (an interrupt between checks is dropped by z3).
                    self._watched = None
                    w.fired = True
                    z3.main_ctx().interrupt()
                    continue
                # A thread's CPU clock runs no faster than the wall clock.
                self._cond.wait(timeout=min(left, self.POLL_S))


_WATCHDOG = _Watchdog()


def _fresh_watchdog() -> None:
    # A fork copies the lock in whatever state the parent's watchdog thread held it, and
    # not the thread: the child gets its own.
    global _WATCHDOG
    _WATCHDOG = _Watchdog()


os.register_at_fork(after_in_child=_fresh_watchdog)


def _reason(s: z3.Solver) -> str:
    if getattr(s, "ran_out", False):
        return "timeout"
    why = s.reason_unknown()
    return "timeout" if why in (_RLIMIT_REASON, _INTERRUPTED[2]) else why


def _check(s: z3.Solver) -> Any:
    """s.check() within its CPU budget (a `_solver`'s), with z3's own Ctrl-C cancellation
    raised as the interrupt it is."""
    budget = getattr(s, "cpu_s", None)
    if budget is None:
        r = s.check()
    else:
        with _WATCHDOG.watch(budget) as w:
            r = s.check()
        s.ran_out = w.fired
    if r == z3.unknown:
        why = s.reason_unknown()
        if getattr(s, "ran_out", False) and not _INTERRUPT.is_set():
            return r  # the CPU budget's interrupt: a timeout (`_reason`)
        # A work limit's "canceled" read as Ctrl-C ended a test worker with
        # KeyboardInterrupt (test_clients6's topk_vocab_bug, in make test).
        if why in _INTERRUPTED[:2] or (why == _INTERRUPTED[2] and _INTERRUPT.is_set()):
            _INTERRUPT.clear()
            raise KeyboardInterrupt
    return r


# Set by `interrupt_solvers` (a signal's thread), read by `_check` in the main thread: one
# flag per process, as the z3 context it cancels is.
_INTERRUPT = threading.Event()


def interrupt_solvers() -> None:
    """Make a running check in this process return at once (thread-safe; for a signal
    handler thread: the check then ends and the pending Python handler raises)."""
    _INTERRUPT.set()
    z3.main_ctx().interrupt()


def solve_local(q: Query, timeout_s: float) -> Outcome:
    """The query's status. A model that breaks a law of the approximated functions the term
    layer folds with (exp 0 = 1, exp > 0) is refuted by that law and the query asked again
    (`_refined`); when the refined query is neither proved nor given a model in its share of
    the time, the first model stands (settled and replayed as before)."""
    start = time.monotonic()
    s, r = _restarted(q, timeout_s)
    if r == z3.unsat:
        return Outcome(q.output, "unsat")
    if r != z3.sat:
        return Outcome(q.output, "unknown", _reason(s))
    first = s.model()
    budget = min(timeout_s, max(refine.MIN_S, refine.FACTOR * (time.monotonic() - start)))
    r, model = _refined(q, first, start + budget)
    if r == z3.unsat:
        return Outcome(q.output, "unsat")
    return Outcome(q.output, "sat", model=Model(model if r == z3.sat else first))


# z3's time on one of these queries is heavy-tailed, and which tail a run lands in follows
# the ids of the terms, that is everything the process built before: tests/test_cases.py's
# n = 4 case was sat in 0.03-0.5 s alone and after most orders of the file's other tests,
# and ran out its 20 s (40 s wall) after one order of them. A run that has not ended in its
# slice of the timeout is started again with another random seed; the last slice has what is
# left, 85% of the timeout: a query that needs all of it may now run out.
RESTART_SLICES = (0.05, 0.1)


def _restarted(q: Query, timeout_s: float) -> tuple[z3.Solver, Any]:
    runs = [timeout_s * share for share in RESTART_SLICES]
    runs.append(timeout_s - sum(runs))
    for seed, run in enumerate(runs):
        s = _solver(run)
        if seed:
            s.set("random_seed", seed)
        s.add(*q.constraints)
        s.add(q.formula)
        r = _check(s)
        if r != z3.unknown or _reason(s) != "timeout":
            break
    return s, r


def _refined(q: Query, model: Any, deadline: float) -> tuple[Any, Any]:
    """(z3.sat, a model keeping the laws `refine` checks), (z3.unsat, None), or (z3.unknown,
    None) when the rounds or the time ran out first."""
    if not refine.REFINE or not q.refine:
        return z3.sat, model
    apps = refine.applications([q.formula, *q.constraints])
    if not apps:
        return z3.sat, model
    lemmas: list[Any] = []
    for _ in range(refine.MAX_ROUNDS):
        new = refine.broken_laws(apps, model)
        if not new:
            return z3.sat, model
        left = deadline - time.monotonic()
        if left <= 0:
            break
        lemmas += new
        # A fresh solver, not s.add: assertions added after a check put z3 in its
        # incremental mode, which leaves the tactics that close these queries unused (and
        # reports its timeout as "canceled", which `_check` reads as an interrupt).
        s = _solver(left)
        s.add(*q.constraints)
        s.add(q.formula)
        s.add(*lemmas)
        r = _check(s)
        if r != z3.sat:
            return (z3.unsat, None) if r == z3.unsat else (z3.unknown, None)
        model = s.model()
    return z3.unknown, None


def solve_all(queries: Sequence[Query], timeout_s: float, jobs: int) -> list[Outcome]:
    """Every query's status. With jobs > 1 the queries run in worker processes as SMT-LIB
    text; a query found sat there is solved again here to get a model we can evaluate, and
    one a worker could not run (it died, or could not read the text) is solved here."""
    if jobs <= 1 or len(queries) <= 1:
        return [solve_local(q, timeout_s) for q in queries]
    workers = min(jobs, len(queries), os.cpu_count() or 1)
    try:
        results = _run_workers([q.smt2() for q in queries], timeout_s, workers)
    except OSError:  # no process or pipe to be had (ulimit -u / -n): solve them all here
        return [solve_local(q, timeout_s) for q in queries]
    outcomes = []
    for q, (status, reason) in zip(queries, results):
        if status in ("sat", "error"):
            outcomes.append(solve_local(q, timeout_s))
        else:
            outcomes.append(Outcome(q.output, status, reason))
    return outcomes


# ---------------------------------------------------------------------------
# Worker processes: one per query, at most `workers` at a time. Plain processes rather
# than a pool, so that every exit path (an exception, SIGINT, SIGTERM) kills and reaps
# them at once: a pool's shutdown waits for running queries (up to the timeout each).

# A worker whose z3 ignores its timeout is killed this long after it.
_GRACE_S = 5.0


def _run_workers(texts: list[str], timeout_s: float, workers: int) -> list[tuple[str, str]]:
    results: list[tuple[str, str] | None] = [None] * len(texts)
    todo = list(range(len(texts)))[::-1]
    with _processes() as running:
        while todo or running:
            while todo and len(running) < workers:
                i = todo.pop()
                _start(running, i, texts[i], timeout_s)
            _collect(running, results)
    return [r or ("error", "no result") for r in results]


Running = dict[int, tuple[BaseProcess, Connection, float]]


@contextmanager
def _processes() -> Iterator[Running]:
    running: Running = {}
    try:
        yield running
    finally:
        for proc, conn, _ in running.values():
            _reap(proc, conn)


def _reap(proc: BaseProcess, conn: Connection) -> None:
    if proc.pid is not None:  # started
        if proc.is_alive():
            proc.kill()
        proc.join()
    conn.close()


def _start(running: Running, i: int, text: str, timeout_s: float) -> None:
    recv, send = multiprocessing.Pipe(duplex=False)
    proc = multiprocessing.get_context().Process(target=_worker, args=(send, text, timeout_s), daemon=True)
    # Listed before it starts: a signal's handler may raise in this thread at any point
    # after the fork (the signal can land on another thread), and `_processes` must know
    # the child then. Signals stay blocked in the child until it has its own handlers.
    running[i] = (proc, recv, time.monotonic() + wall_s(timeout_s) + _GRACE_S)
    with _signals_blocked():
        proc.start()
    send.close()


def _collect(running: Running, results: list[tuple[str, str] | None]) -> None:
    """Wait for the next worker to finish (or the earliest deadline), record its result."""
    deadline = min(d for _, _, d in running.values())
    ready = wait([conn for _, conn, _ in running.values()], timeout=max(0.0, deadline - time.monotonic()))
    now = time.monotonic()
    for i, (proc, conn, d) in list(running.items()):
        if conn in ready:
            try:
                results[i] = conn.recv()
            except (EOFError, OSError):  # died without an answer (a crash, the OOM killer)
                results[i] = ("error", f"solver process ended with code {proc.exitcode}")
        elif d <= now:
            results[i] = ("unknown", "timeout (the solver process did not stop)")
        else:
            continue
        _reap(proc, conn)
        del running[i]


@contextmanager
def _signals_blocked() -> Iterator[None]:
    sigs = {signal.SIGINT, signal.SIGTERM}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _worker(conn: Connection, text: str, timeout_s: float) -> None:
    """One query in a child process: answers (status, reason); ("error", ...) when z3
    cannot read the text, so the parent solves that query itself."""
    _child_signals()
    try:
        result = _solve_text(text, timeout_s)
    except Exception as exc:  # a z3 error here is not a verdict: the parent retries
        result = ("error", " ".join(str(exc).split())[:200])
    try:
        conn.send(result)
    except OSError:  # the parent is gone
        pass


def _child_signals() -> None:
    """Ctrl-C reaches the whole process group: the parent alone handles it and kills the
    workers. SIGTERM kills a worker at once, even inside z3. Forked children inherit the
    parent's wakeup fd; a worker must not write to it."""
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.set_wakeup_fd(-1)
    except ValueError:  # not the main thread (a start method that runs us elsewhere)
        pass
    _die_with_parent()
    signal.pthread_sigmask(signal.SIG_SETMASK, set())


def _die_with_parent() -> None:
    """On Linux, a worker gets SIGKILL when the parent dies (even by SIGKILL), so no
    worker outlives it. Elsewhere the parent's cleanup is all there is."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def _solve_text(text: str, timeout_s: float) -> tuple[str, str]:
    s = _solver(timeout_s)
    s.set("ctrl_c", False)  # SIGINT is ignored here; z3 must not take it over either
    s.from_string(text)
    r = _check(s)
    return str(r), _reason(s) if r == z3.unknown else ""


# ---------------------------------------------------------------------------
# Small proofs for the sweep and the witness search


def assuming(claim: Any, bounds: Sequence[tuple[Any, Bound]]) -> Any:
    """The claim wherever each (z3 constant, its bound) holds: the facts the term store
    keeps of free constants (`known`), as hypotheses of a local proof."""
    facts = []
    for x, b in bounds:
        if b.lo is not None:
            lo = _number(b.lo, b.sort)
            facts.append(x > lo if b.lo_open else x >= lo)
        if b.hi is not None:
            facts.append(x <= _number(b.hi, b.sort))
    return z3.Implies(z3.And(*facts), claim) if facts else claim


def _number(v: int | Fraction, sort: str) -> Any:
    if sort == INT:
        return z3.IntVal(int(v))
    f = Fraction(v)
    return z3.Q(f.numerator, f.denominator)


def valid(claim: Any, timeout_s: float) -> bool:
    """The claim holds for all values of its free constants (False: refuted or unknown)."""
    s = _solver(timeout_s)
    s.add(z3.Not(claim))
    return bool(_check(s) == z3.unsat)


def satisfiable(formulas: Sequence[Any], timeout_s: float) -> bool | None:
    """Whether the formulas hold together for some values (None: the solver gave up)."""
    s = _solver(timeout_s)
    s.add(*formulas)
    r = _check(s)
    return True if r == z3.sat else False if r == z3.unsat else None


def prove_batch(items: list[tuple[int, Any]], timeout_s: float) -> list[int]:
    """The indices whose equality (a formula per index) is valid: one query 'some element
    differs' for all of them; when sat, the model names elements that may differ (not
    proved), and the rest is asked again. Free constants (cut points, inputs) are
    universally quantified, a sound abstraction of the values they stand for."""
    proved: list[int] = []
    rest = items
    timed_out = False
    for _ in range(4):
        if not rest:
            break
        s = _solver(timeout_s)
        s.add(z3.Or(*[z3.Not(e) for _, e in rest]))
        r = _check(s)
        if r == z3.unsat:
            proved += [i for i, _ in rest]
            return proved
        if r != z3.sat:
            timed_out = True
            break
        m = s.model()
        differ = {i for i, e in rest if z3.is_true(m.eval(z3.Not(e), model_completion=True))}
        if not differ:  # should not happen; do not loop on it
            break
        rest = [(i, e) for i, e in rest if i not in differ]
    if timed_out and len(rest) > 1:  # small elements may still go through alone
        for i, e in rest:
            if valid(e, timeout_s / len(rest)):
                proved.append(i)
    return proved


@dataclass
class Model:
    """A satisfying assignment, read term by term (unassigned constants take defaults)."""

    raw: Any  # z3 ModelRef

    def value(self, t: Any) -> Any:
        return self.raw.eval(t, model_completion=True)

    def holds(self, formula: Any) -> bool:
        return bool(z3.is_true(self.raw.eval(formula, model_completion=True)))
