"""`tv-mlir verify REF OTHER` and `tv-mlir check-pass`. Exit codes: 0 equivalent,
1 not-equivalent, 2 unknown (also an unsupported form that stops the run, and an internal
error: a bug of ours), 3 input or usage error (bad arguments included, and a report that
cannot be written), 130 interrupted (SIGINT), 143 terminated (SIGTERM). Errors are one line
on stderr; with --json, stdout also gets one JSON error object (`report.error_json`)."""
from __future__ import annotations

import argparse
import math
import multiprocessing
import os
import signal
import socket
import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import Any, NoReturn

from tv_mlir.assume import parse_cli as parse_assume
from tv_mlir.errors import Interrupted, TvError, UsageError
from tv_mlir.options import FULL_SIZE_CHECKS, INPUT_DOMAINS, MIB, Options

EXIT_UNKNOWN = 2  # also an internal error: the question is left undecided
EXIT_USAGE = 3
EXIT_INTERRUPTED = 128 + signal.SIGINT
MAX_INPUT_ENV = "TV_MLIR_MAX_INPUT_MB"


def version() -> str:
    """The installed distribution's version; the package's own when run from a source tree
    that is not installed."""
    from importlib import metadata

    try:
        return metadata.version("tv-mlir")
    except metadata.PackageNotFoundError:
        from tv_mlir import __version__

        return __version__


class _Parser(argparse.ArgumentParser):
    """argparse exits 2 on bad arguments; here 2 means `unknown`, so a usage error is raised
    and reported like every other error (exit 3, one line, JSON with --json)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")


def _positive_number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got '{text}'")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got '{text}'")
    return value


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got '{text}'")
    return value


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="tv-mlir", description="Prove two StableHLO programs equal, or find an input where they differ.",
                epilog="Exit codes: 0 equivalent, 1 not-equivalent, 2 unknown (or an internal error), "
                       "3 usage or input error, 130 SIGINT, 143 SIGTERM.")
    p.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    sub = p.add_subparsers(dest="command", required=True)

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--json", action="store_true",
                        help="print one JSON object on stdout (an error too: {verdict: error, exit_code, kind, error})")
        sp.add_argument("--timeout", type=_positive_number, default=Options.timeout_s,
                        help="seconds per solver query (a finite number > 0), counted in z3's work units "
                             "so a verdict does not change with the machine's load; at most twice that in CPU time, "
                             "ten times in wall time")
        sp.add_argument("--jobs", type=_positive_int, default=Options.jobs, help="parallel solver processes (>= 1)")
        sp.add_argument("--pipeline", default=Options.pipeline,
                        help="pass pipeline: the name of a built-in one (default, shrink, none; see "
                             "tv_mlir/passes/pipelines/), else a pipeline file. A built-in name always means "
                             "the built-in pipeline: write ./default for a file called default")
        sp.add_argument("--max-input-mb", type=_positive_number, default=None,
                        help=f"refuse an input file, stream or stdin larger than this many MiB (default: "
                             f"${MAX_INPUT_ENV}, else {Options.max_input_bytes // MIB})")
        sp.add_argument("--no-shrink", action="store_true", help="verify at the programs' own sizes")
        sp.add_argument("--no-replay", action="store_true",
                        help="do not run a counterexample on our float64 interpreter and on XLA, nor carry a "
                             "shrunk one back to the original sizes (faster; the counterexample is then "
                             "unconfirmed). One that depends on an approximated op is still replayed: only "
                             "the replay can confirm it")
        sp.add_argument("--strict-dtypes", action="store_true",
                        help="values computed at a different float type than the reference's make the verdict "
                             "not-equivalent (default: listed as precision findings)")
        sp.add_argument("--core", choices=("own", "z3"), default=Options.core,
                        help="symbolic core: the project's own hash-consed terms (default) or z3 terms "
                             "(the earlier core, kept for comparison)")
        sp.add_argument("--inputs", choices=tuple(INPUT_DOMAINS), default=Options.inputs,
                        help="the float inputs the verdict is about: finite reals (default) or every IEEE value, "
                             "+-inf and NaN included (then x * 0.0 is not 0.0)")
        sp.add_argument("--assume", action="append", default=[], metavar="NAME=LO:HI",
                        help="assume integer input NAME lies in LO..HI-1 (HI excluded, as in a Python slice; "
                             "HI may be inf), or float input NAME in [LO, HI] (decimals, both ends included, "
                             "e.g. p=0:1, t=0.5:inf, x=-inf:0) (NAME as the module names it, e.g. labels, "
                             "or argN); repeatable")
        sp.add_argument("--full-size-check", choices=FULL_SIZE_CHECKS, default=Options.full_size_check,
                        help="before a pair proved equal at shrunk sizes is reported equivalent, run both original "
                             "programs on XLA on random and boundary inputs: auto (default) when they fit the memory "
                             "and compute budget, on whenever their memory fits, off never")
        sp.add_argument("--no-second-witness", action="store_true",
                        help="prove a pair equal at its shrunk sizes only once (no second proof at grown sizes)")
        sp.add_argument("--no-stages", action="store_true",
                        help="prove the pair as one proof (default: cut into stages at matched values, each "
                             "distinct stage proved once)")
        sp.add_argument("--stage-min-elements", type=_non_negative_int, default=Options.stage_min_elements,
                        metavar="N", help="prove pairs whose larger program has fewer tensor elements than this "
                                          f"whole, unless they loop (default {Options.stage_min_elements}; 0: cut "
                                          "every pair)")
        sp.add_argument("--executor", default=Options.executor, metavar="local|ray|ray:ADDRESS",
                        help="where stage proofs run: local processes (--jobs of them, default) or a Ray cluster "
                             "(pip install 'tv-mlir[ray]'; ray alone starts a local instance)")
        sp.add_argument("--cache", default=None, metavar="DIR",
                        help="the proof cache of stage proofs (default: $TV_MLIR_CACHE_DIR, else the user's cache "
                             "directory, tv-mlir)")
        sp.add_argument("--no-cache", action="store_true", help="neither read nor write the proof cache")
        sp.add_argument("--stage-timeout", type=_positive_number, default=Options.stage_timeout_s,
                        help="seconds one stage proof may take in a worker before it is unknown")
        sp.add_argument("--time-budget", type=_positive_number, default=Options.time_budget_s, metavar="S",
                        help="seconds (wall clock) the whole verification may take: past them the proof "
                             "running stops and later ones do not start, and the verdict is unknown, naming the "
                             "stage and phase where the time ran out (default: %(default)g)")
        sp.add_argument("--progress", action="store_true", default=None,
                        help="phase lines on stderr (default: when stderr is a terminal)")
        sp.add_argument("--debug", action="store_true", help="show tracebacks")

    inputs = ("a file (.mlir text or .mlirbc bytecode; a name that does not exist is an error), or - for stdin")
    v = sub.add_parser("verify", help="verify OTHER against the reference REF")
    v.add_argument("ref", help=f"reference module: {inputs}")
    v.add_argument("other", help=f"module to check: {inputs}")
    common(v)

    c = sub.add_parser("check-pass", help="run an MLIR pass pipeline on IN and verify its output against IN")
    c.add_argument("--pass-pipeline", required=True, help="MLIR pass pipeline, e.g. 'builtin.module(canonicalize)'")
    c.add_argument("input", help=f"module to transform: {inputs}")
    common(c)
    return p


def _options(args: argparse.Namespace) -> Options:
    mb = args.max_input_mb if args.max_input_mb is not None else _env_max_input_mb()
    return Options(timeout_s=args.timeout, jobs=args.jobs, pipeline=args.pipeline,
                   shrink=not args.no_shrink, replay=not args.no_replay, strict_dtypes=args.strict_dtypes,
                   core=args.core, max_input_bytes=max(1, int(mb * MIB)), inputs=args.inputs,
                   full_size_check=args.full_size_check, second_witness=not args.no_second_witness,
                   assume=tuple(parse_assume(a) for a in args.assume),
                   stages=not args.no_stages, stage_min_elements=args.stage_min_elements,
                   executor=args.executor, cache_dir=args.cache,
                   cache=not args.no_cache, stage_timeout_s=args.stage_timeout, time_budget_s=args.time_budget,
                   progress=_stderr_isatty() if args.progress is None else args.progress)


def _env_max_input_mb() -> float:
    text = os.environ.get(MAX_INPUT_ENV)
    if text is None:
        return Options.max_input_bytes / MIB
    try:
        return _positive_number(text)
    except argparse.ArgumentTypeError as exc:
        raise UsageError(f"{MAX_INPUT_ENV} {exc}") from None


def _stderr_isatty() -> bool:
    try:
        return sys.stderr is not None and sys.stderr.isatty()
    except (OSError, ValueError):
        return False


def _run(args: argparse.Namespace) -> tuple[str, int]:
    """(report, exit code) of the command."""
    options = _options(args)
    if args.command == "verify":
        if args.ref == "-" and args.other == "-":
            raise UsageError("only one of REF and OTHER can be read from stdin")
        from tv_mlir.api import verify

        verdict = verify(args.ref, args.other, options)
    else:
        from tv_mlir.check_pass import check_pass

        verdict = check_pass(args.input, args.pass_pipeline, options)
    from tv_mlir.report import to_json, to_text

    return (to_json(verdict) if args.json else to_text(verdict)), verdict.exit_code


# ---------------------------------------------------------------------------
# Output: stdout carries the report (or the JSON error object), stderr one line per error.


@dataclass(frozen=True)
class _Out:
    json: bool
    debug: bool

    def report(self, text: str, code: int) -> int:
        return code if _write_stdout(text) else EXIT_USAGE

    def error(self, kind: str, message: str, code: int) -> int:
        """One line on stderr (and the JSON object with --json); returns `code`."""
        if self.debug and kind != "interrupted":
            _stderr(traceback.format_exc().rstrip())
        label = "internal error" if kind == "internal" else "error"
        _stderr(f"tv-mlir: {message}" if kind == "interrupted" else f"tv-mlir: {label}: {message}")
        if self.json:
            from tv_mlir.report import error_json

            _write_stdout(error_json(kind, message, code), complain=False)
        return code

    def exception(self, exc: BaseException) -> int:
        if isinstance(exc, KeyboardInterrupt):  # z3's own Ctrl-C handling, or a library's
            exc = Interrupted(signal.SIGINT)
        if isinstance(exc, Interrupted):
            return self.error("interrupted", f"interrupted ({signal.Signals(exc.signum).name})", exc.exit_code)
        if isinstance(exc, TvError):  # bad input (exit 3), or an unsupported form that stops the run (exit 2)
            kind = type(exc).__name__.removesuffix("Error").lower()
            return self.error(kind, exc.one_line(), exc.exit_code)
        # A bug of ours: say so in one line, never a bare traceback.
        message = f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
        return self.error("internal", message + ("" if self.debug else " (rerun with --debug for a traceback)"),
                          EXIT_UNKNOWN)


def _stderr(line: str) -> None:
    if sys.stderr is None:  # started with stderr closed
        return
    try:
        print(line, file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


def _write_stdout(text: str | None, complain: bool = True) -> bool:
    """Whether the text (None: what is buffered) reached stdout. A closed pipe
    (`| head -c0`), a full disk (/dev/full) or a closed stdout is one error line, not a
    traceback."""
    try:
        if sys.stdout is None:
            raise OSError("stdout is closed")
        if text is not None:
            sys.stdout.write(text + "\n")
        sys.stdout.flush()
        return True
    except (OSError, ValueError) as exc:
        _discard_stdout()
        if complain:
            _stderr(f"tv-mlir: error: cannot write to stdout: {getattr(exc, 'strerror', None) or exc}")
        return False


def _discard_stdout() -> None:
    """Point fd 1 at /dev/null, so that the interpreter's last flush of what is still
    buffered does not print 'Exception ignored ... BrokenPipeError' at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
    except OSError:
        pass


def _wants_json(argv: Sequence[str]) -> bool:
    """--json (or an abbreviation argparse accepts) before any `--`: errors found while the
    arguments are parsed are reported as JSON too."""
    for a in argv:
        if a == "--":
            return False
        if len(a) >= 4 and "--json".startswith(a):
            return True
    return False


# ---------------------------------------------------------------------------
# Signals: SIGINT -> 130, SIGTERM -> 143, promptly, with no solver process left behind.

# After a signal, the run gets this long to unwind (a z3 check is interrupted at once, worker
# processes are killed as the stack unwinds); then the process reports and exits itself.
GRACE_S = 2.0


class _SignalGuard:
    """While a command runs: SIGINT and SIGTERM raise Interrupted(signum) in the main thread
    at its next Python instruction. A watcher thread, woken through the signal wakeup fd
    even while the main thread is inside C code, interrupts a running z3 check; if the run
    has not ended GRACE_S later (or a second signal comes), it kills and reaps the worker
    processes, reports and ends the process. Inactive outside the main thread (signal
    handlers can only be set there)."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, report: Callable[[BaseException], int]) -> None:
        self._report = report
        self._lock = threading.Lock()
        self._finished = False
        self._raised = False
        self._old: dict[int, Any] = {}
        self._old_fd = -1
        self._sockets: tuple[socket.socket, socket.socket] | None = None

    def __enter__(self) -> _SignalGuard:
        if threading.current_thread() is not threading.main_thread():
            return self
        r, w = socket.socketpair()
        w.setblocking(False)
        self._sockets = (r, w)
        self._old_fd = signal.set_wakeup_fd(w.fileno(), warn_on_full_buffer=False)
        self._old = {s: signal.signal(s, self._raise) for s in self.SIGNALS}
        threading.Thread(target=self._watch, name="tv-mlir-signals", daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.finish()
        if self._sockets is None:
            return
        for s, handler in self._old.items():
            signal.signal(s, handler)
        signal.set_wakeup_fd(self._old_fd)
        r, w = self._sockets
        try:
            w.send(b"\0")  # wakes the watcher: 0 is no signal number
        except OSError:
            pass
        w.close()

    def finish(self) -> bool:
        """Claim the right to end the process; False when the watcher already did."""
        with self._lock:
            claimed, self._finished = not self._finished, True
            return claimed

    def _raise(self, signum: int, frame: FrameType | None) -> None:
        if self._raised:  # a second signal while unwinding: the watcher ends the process
            return
        self._raised = True
        raise Interrupted(signum)

    def _watch(self) -> None:
        assert self._sockets is not None
        with self._sockets[0] as r:
            # The wakeup fd hears every signal with a Python handler: the SIGALRM of an
            # in-process stage's time limit (stages/pool.py) is not an interruption.
            first = _next_byte(r, None)
            while first and first not in self.SIGNALS:
                first = _next_byte(r, None)
            if not first:
                return
            _interrupt_z3()
            if _next_byte(r, GRACE_S) == 0:
                return
        if self.finish():
            _kill_workers()
            code = self._report(Interrupted(first))
            os._exit(code)


def _next_byte(r: socket.socket, timeout: float | None) -> int | None:
    """The next signal number written to the wakeup fd; 0 when the run ended, None on timeout."""
    r.settimeout(timeout)
    try:
        data = r.recv(1)
    except TimeoutError:
        return None
    except OSError:
        return 0
    return data[0] if data else 0


def _interrupt_z3() -> None:
    # Looked up rather than imported: importing z3 from this thread could wait on the import
    # lock the main thread holds; if the solver module is not loaded, no check is running.
    solve = sys.modules.get("tv_mlir.prove.solve")
    if solve is not None:
        solve.interrupt_solvers()


def _kill_workers() -> None:
    for child in multiprocessing.active_children():
        child.kill()
        child.join(timeout=1.0)


# ---------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    # XLA's C++ INFO and WARNING lines (per host device, GSPMD deprecation) are not for users;
    # jaxlib reads this when it is first loaded, which the frontend does.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    argv = list(sys.argv[1:] if argv is None else argv)
    out = _Out(json=_wants_json(argv), debug="--debug" in argv)
    with _SignalGuard(out.exception) as guard:
        try:
            report, code = _run(_parser().parse_args(argv))
        except SystemExit as exc:  # --help, --version: argparse printed them and exits 0
            return 0 if exc.code == 0 and _write_stdout(None) else EXIT_USAGE
        except BaseException as exc:  # noqa: B036 - every end is one line and an exit code of the contract
            return out.exception(exc) if guard.finish() else EXIT_INTERRUPTED
        return out.report(report, code) if guard.finish() else EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
