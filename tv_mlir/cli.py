"""`tv-mlir verify REF OTHER` and `tv-mlir check-pass`. Exit codes: 0 equivalent,
1 not-equivalent, 2 unknown (also an unsupported form that stops the run, and an internal
error: a bug of ours), 3 input or usage error (bad arguments included), 130 interrupted.
Errors are one line on stderr."""
from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence
from typing import NoReturn

from tv_mlir.errors import TvError
from tv_mlir.options import Options

EXIT_UNKNOWN = 2  # also an internal error: the question is left undecided
EXIT_USAGE = 3
EXIT_INTERRUPTED = 130


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
    """argparse exits 2 on bad arguments; here 2 means `unknown`, so usage errors exit 3."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="tv-mlir", description="Prove two StableHLO programs equal, or find an input where they differ.")
    p.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    sub = p.add_subparsers(dest="command", required=True)

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--json", action="store_true", help="print one JSON object on stdout")
        sp.add_argument("--timeout", type=float, default=Options.timeout_s, help="seconds per solver query")
        sp.add_argument("--jobs", type=int, default=Options.jobs, help="parallel solver processes")
        sp.add_argument("--pipeline", default=Options.pipeline,
                        help="pass pipeline: a pipeline file, or the name of a built-in one "
                             "(default, shrink, none; see tv_mlir/passes/pipelines/)")
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
        sp.add_argument("--progress", action="store_true", default=None,
                        help="phase lines on stderr (default: when stderr is a terminal)")
        sp.add_argument("--debug", action="store_true", help="show tracebacks")

    v = sub.add_parser("verify", help="verify OTHER against the reference REF")
    v.add_argument("ref", help="reference module (.mlir text or bytecode, - for stdin)")
    v.add_argument("other", help="module to check (.mlir text or bytecode, - for stdin)")
    common(v)

    c = sub.add_parser("check-pass", help="run an MLIR pass pipeline on IN and verify its output against IN")
    c.add_argument("--pass-pipeline", required=True, help="MLIR pass pipeline, e.g. 'builtin.module(canonicalize)'")
    c.add_argument("input", help="module to transform (- for stdin)")
    common(c)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    # XLA's C++ INFO and WARNING lines (per host device, GSPMD deprecation) are not for users;
    # jaxlib reads this when it is first loaded, which the frontend does.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    args = _parser().parse_args(argv)
    options = Options(timeout_s=args.timeout, jobs=args.jobs, pipeline=args.pipeline,
                      shrink=not args.no_shrink, replay=not args.no_replay, strict_dtypes=args.strict_dtypes,
                      core=args.core,
                      progress=sys.stderr.isatty() if args.progress is None else args.progress)
    try:
        if args.command == "verify":
            if args.ref == "-" and args.other == "-":
                raise_usage("only one of REF and OTHER can be read from stdin")
            from tv_mlir.api import verify

            verdict = verify(args.ref, args.other, options)
        else:
            from tv_mlir.check_pass import check_pass

            verdict = check_pass(args.input, args.pass_pipeline, options)
        from tv_mlir.report import to_json, to_text

        report = to_json(verdict) if args.json else to_text(verdict)
    except TvError as exc:  # bad input (exit 3), or an unsupported form that stops the run (exit 2)
        if args.debug:
            traceback.print_exc()
        print(f"tv-mlir: error: {exc.one_line()}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("tv-mlir: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:  # a bug of ours: say so in one line, never a bare traceback
        if args.debug:
            traceback.print_exc()
        else:
            print(f"tv-mlir: internal error: {type(exc).__name__}: {' '.join(str(exc).split())[:300]} "
                  "(rerun with --debug for a traceback)", file=sys.stderr)
        return EXIT_UNKNOWN
    try:
        print(report)
        sys.stdout.flush()
    except BrokenPipeError:  # e.g. piped into `head`
        sys.stderr.close()
    return verdict.exit_code


def raise_usage(msg: str) -> NoReturn:
    from tv_mlir.errors import UsageError

    raise UsageError(msg)


if __name__ == "__main__":
    sys.exit(main())
