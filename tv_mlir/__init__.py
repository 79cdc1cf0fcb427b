"""tv-mlir: translation validation for StableHLO programs.

    >>> import tv_mlir
    >>> v = tv_mlir.verify("ref.mlir", "other.mlir")
    >>> v.verdict, v.exit_code
"""
from __future__ import annotations

from typing import Any

from .errors import ParseError, ShapeError, TvError, Unsupported, UsageError
from .options import Options
from .verdict import Counterexample, OutputResult, Verdict

__all__ = ["verify", "Options", "Verdict", "Counterexample", "OutputResult",
           "TvError", "ParseError", "UsageError", "ShapeError", "Unsupported"]


def verify(ref: Any, other: Any, options: Options | None = None, **overrides: Any) -> Verdict:
    """Verify `other` against the reference `ref` (paths, MLIR text/bytes, or parsed modules)."""
    from .verify import verify as _verify  # z3 and the MLIR bindings load on first use

    return _verify(ref, other, options, **overrides)
