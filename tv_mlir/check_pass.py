"""`tv-mlir check-pass`: run a real MLIR pass pipeline (jaxlib's pass manager) on a module
and verify the result against the input."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from tv_mlir.errors import UsageError
from tv_mlir.frontend.read import parse_mlir, read_source
from tv_mlir.options import Options
from tv_mlir.verdict import Verdict


def apply_mlir_passes(spec: str | bytes | Path, pipeline: str) -> tuple[str, str]:
    """(input text, output text) of running `pipeline` on the module."""
    from jaxlib.mlir import ir, passmanager

    source = read_source(spec)
    ctx, module = parse_mlir(source)
    with ctx:
        before = str(module)
        try:
            pm = passmanager.PassManager.parse(pipeline)
        except (ValueError, ir.MLIRError) as exc:
            raise UsageError(f"bad --pass-pipeline '{pipeline}': {' '.join(str(exc).split())[:200]}") from None
        try:
            pm.run(module.operation)
        except ir.MLIRError as exc:
            message = " ".join(str(exc).split())[:200]
            raise UsageError(f"pass pipeline '{pipeline}' failed on {source.name}: {message}") from None
        return before, str(module)


def check_pass(spec: str | bytes | Path, pipeline: str, options: Options | None = None, **overrides: Any) -> Verdict:
    from tv_mlir.api import verify

    before, after = apply_mlir_passes(spec, pipeline)
    verdict = verify(before, after, options, **overrides)
    verdict.stats["pass_pipeline"] = pipeline
    return verdict
