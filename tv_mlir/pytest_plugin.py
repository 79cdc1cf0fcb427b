"""pytest plugin (entry point `pytest11`, loaded when tv-mlir is installed): a regression
test for a sharding plan or a compiler pass in three lines.

    def test_attention_plan(tv_mlir_verify):
        tv_mlir_verify("attn.ref.mlir", "attn.partitioned.mlir")

Fixtures:
- `tv_mlir_verify(ref, other, **options) -> Verdict`: `tv_mlir.testing.assert_equivalent`;
  a relative path that does not exist from the working directory is looked up next to the
  test file (tests run from anywhere).
- `tv_mlir_not_equivalent(ref, other, **options) -> Verdict`: a known bug stays caught
  (`assert_not_equivalent`, an XLA-confirmed counterexample).
- `tv_mlir_options`: the default options of both (a dict, empty here); override the
  fixture in a conftest.py to set them for a directory, e.g. `{"timeout_s": 120}`.

Nothing heavy is imported until a fixture is used: the plugin loads in every pytest
session of an environment where tv-mlir is installed."""
from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

MODULE_SUFFIXES = (".mlir", ".mlirbc")


def _resolve(spec: Any, here: Path) -> Any:
    """A relative module path missing from the working directory, taken next to the test
    file when it is there; anything else unchanged (MLIR text, streams, modules)."""
    if isinstance(spec, str | os.PathLike) and not isinstance(spec, bytes):
        path = Path(os.fspath(spec))
        if path.suffix in MODULE_SUFFIXES and not path.is_absolute() and not path.exists() \
                and (here / path).exists():
            return here / path
    return spec


@pytest.fixture
def tv_mlir_options() -> dict[str, Any]:
    """Default options for `tv_mlir_verify` and `tv_mlir_not_equivalent` (override to set them)."""
    return {}


@pytest.fixture
def tv_mlir_verify(request: pytest.FixtureRequest, tv_mlir_options: dict[str, Any]) -> Callable[..., Any]:
    """`tv_mlir_verify(ref, other, **options)`: assert the pair equivalent; returns the Verdict."""
    from tv_mlir.testing import assert_equivalent

    here = Path(request.path).parent

    def check(ref: Any, other: Any, **options: Any) -> Any:
        __tracebackhide__ = True  # the failure shows the test's line, then the verdict
        return assert_equivalent(_resolve(ref, here), _resolve(other, here), **{**tv_mlir_options, **options})
    return check


@pytest.fixture
def tv_mlir_not_equivalent(request: pytest.FixtureRequest, tv_mlir_options: dict[str, Any]) -> Callable[..., Any]:
    """`tv_mlir_not_equivalent(ref, other, confirmed=True, **options)`: assert the pair differs."""
    from tv_mlir.testing import assert_not_equivalent

    here = Path(request.path).parent

    def check(ref: Any, other: Any, confirmed: bool = True, **options: Any) -> Any:
        __tracebackhide__ = True
        return assert_not_equivalent(_resolve(ref, here), _resolve(other, here), confirmed=confirmed,
                                     **{**tv_mlir_options, **options})
    return check
