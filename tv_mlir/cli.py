"""`tv-mlir verify REF OTHER` and `tv-mlir check-pass`: exit codes 0 equivalent,
1 not-equivalent, 2 unknown, 3 input or usage error. Errors are one line on stderr."""
from __future__ import annotations

import argparse
import os
import sys
import traceback
from typing import Sequence

from tv_mlir.errors import TvError
from tv_mlir.options import Options


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tv-mlir", description="Prove two StableHLO programs equal, or find an input where they differ.")
    sub = p.add_subparsers(dest="command", required=True)

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--json", action="store_true", help="print one JSON object on stdout")
        sp.add_argument("--timeout", type=float, default=Options.timeout_s, help="seconds per solver query")
        sp.add_argument("--jobs", type=int, default=Options.jobs, help="parallel solver processes")
        sp.add_argument("--pipeline", default=Options.pipeline, help="pass pipeline: a name under passes/ or a file")
        sp.add_argument("--no-shrink", action="store_true", help="verify at the programs' own sizes")
        sp.add_argument("--no-replay", action="store_true", help="do not replay counterexamples numerically")
        sp.add_argument("--strict-dtypes", action="store_true",
                        help="values computed at a different float type than the reference's make the verdict "
                             "not-equivalent (default: listed as precision findings)")
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
    except TvError as exc:
        if args.debug:
            traceback.print_exc()
        print(f"tv-mlir: error: {exc.one_line()}", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        print("tv-mlir: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug of ours: say so in one line, never a bare traceback
        if args.debug:
            traceback.print_exc()
        else:
            print(f"tv-mlir: internal error: {type(exc).__name__}: {' '.join(str(exc).split())[:300]} "
                  "(rerun with --debug for a traceback)", file=sys.stderr)
        return 2
    from tv_mlir.report import to_json, to_text

    try:
        print(to_json(verdict) if args.json else to_text(verdict))
        sys.stdout.flush()
    except BrokenPipeError:  # e.g. piped into `head`
        sys.stderr.close()
    return verdict.exit_code


def raise_usage(msg: str) -> None:
    from tv_mlir.errors import UsageError

    raise UsageError(msg)


if __name__ == "__main__":
    sys.exit(main())
