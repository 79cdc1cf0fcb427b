"""tv-mlir: translation validation for StableHLO programs.

    >>> import tv_mlir
    >>> v = tv_mlir.verify("ref.mlir", "other.mlir")
    >>> v.verdict, v.exit_code
"""
from __future__ import annotations

from tv_mlir.api import verify
from tv_mlir.errors import ParseError, ShapeError, TvError, Unsupported, UsageError
from tv_mlir.options import Options
from tv_mlir.verdict import Counterexample, OutputResult, Verdict

# The one place the version is written: pyproject.toml reads it (setuptools dynamic version),
# and `tv-mlir --version` reports the installed distribution's metadata, falling back to this.
__version__ = "0.1.0"

__all__ = ["__version__", "verify", "Options", "Verdict", "Counterexample", "OutputResult",
           "TvError", "ParseError", "UsageError", "ShapeError", "Unsupported"]
