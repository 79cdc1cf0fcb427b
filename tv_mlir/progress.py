"""One line per phase of a long run, on stderr so that --json output stays one object."""
from __future__ import annotations

import sys

from tv_mlir.options import Options


def progress(options: Options, message: str) -> None:
    if options.progress:
        print(f"tv-mlir: {message}", file=sys.stderr, flush=True)
