"""`tv-mlir check-pass`: run a real MLIR pass pipeline (jaxlib's pass manager) on a module
and verify the result against the input."""
from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tv_mlir.errors import Unsupported, UsageError
from tv_mlir.frontend.read import SourceSpec, parse_mlir, read_source
from tv_mlir.options import DEFAULT_MAX_INPUT_BYTES, Options
from tv_mlir.verdict import Verdict


def apply_mlir_passes(spec: SourceSpec, pipeline: str, limit: int = DEFAULT_MAX_INPUT_BYTES) -> tuple[str, str]:
    """(input text, output text) of running `pipeline` on the module. A pipeline MLIR does
    not accept (an unknown pass, an unknown or ill-typed pass option) is a UsageError."""
    from jaxlib.mlir import ir

    if not isinstance(pipeline, str):
        raise UsageError(f"the pass pipeline must be a str, got {type(pipeline).__name__}")
    source = read_source(spec, limit=limit)
    ctx, module = parse_mlir(source)
    with ctx:
        before = str(module)
        pm = _pass_manager(pipeline)
        try:
            pm.run(module.operation)
        except ir.MLIRError as exc:
            message = " ".join(str(exc).split())[:200]
            raise UsageError(f"pass pipeline '{pipeline}' failed on {source.name}: {message}") from None
        return before, str(module)


def _pass_manager(pipeline: str) -> Any:
    from jaxlib.mlir import ir, passmanager

    captured: list[str] = []
    try:
        with _fd2_captured(captured):
            return passmanager.PassManager.parse(pipeline)
    except (ValueError, ir.MLIRError) as exc:
        # LLVM's option parser explains a bad option value on fd 2 only ("'maybe' is
        # invalid value for boolean argument"); that text goes into the one error line.
        detail = " ".join(" ".join(captured).split() + str(exc).split())[:300]
        raise UsageError(f"bad --pass-pipeline '{pipeline}': {detail}") from None


@contextmanager
def _fd2_captured(into: list[str]) -> Iterator[None]:
    """Whatever C++ code writes to file descriptor 2 meanwhile is appended to `into`
    instead of reaching the terminal, so that errors stay one line."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, AttributeError, ValueError):  # no usable stderr: nothing to keep clean
        yield
        return
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            into.append(tmp.read().decode("utf-8", "replace"))


def check_pass(spec: SourceSpec, pipeline: str, options: Options | None = None, **overrides: Any) -> Verdict:
    from tv_mlir.api import resolve_options, unsupported_verdict, verify

    options = resolve_options(options, overrides)
    t0 = time.perf_counter()
    try:
        before, after = apply_mlir_passes(spec, pipeline, options.max_input_bytes)
    except Unsupported as exc:
        return unsupported_verdict(exc, options, t0)
    verdict = verify(before, after, options)
    verdict.stats["pass_pipeline"] = pipeline
    return verdict
