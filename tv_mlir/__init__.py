"""tv-mlir: translation validation for StableHLO programs.

    >>> import tv_mlir
    >>> v = tv_mlir.verify("ref.mlir", "other.mlir")
    >>> v.verdict, v.exit_code
"""
from __future__ import annotations

from .errors import ParseError, ShapeError, TvError, Unsupported, UsageError
from .options import Options
from .verdict import Counterexample, OutputResult, Verdict
from .engine import verify

__all__ = ["verify", "Options", "Verdict", "Counterexample", "OutputResult",
           "TvError", "ParseError", "UsageError", "ShapeError", "Unsupported"]
