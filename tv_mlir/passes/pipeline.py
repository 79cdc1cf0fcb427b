"""Pipelines: plain text, one pass per line with key=value options, so a user can read
and write them. The named ones (default, shrink, none) are package data in
tv_mlir/passes/pipelines/NAME.txt; `--pipeline PATH` reads a user's own file."""
from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from tv_mlir.errors import UsageError
from tv_mlir.ir import Module
from tv_mlir.passes import normalize

PassFn = Callable[..., Module]

PASSES: dict[str, PassFn] = {
    "inline": normalize.inline,
    "drop-noop-custom-calls": normalize.drop_noop_custom_calls,
    "dce": normalize.dce,
    "drop-unused-funcs": normalize.drop_unused_funcs,
}

# Passes over the pair of programs (they need both); `verify` runs them on the modules as
# read, before the per-module passes, whatever their place in the file.
PAIR_PASSES = frozenset({"shrink"})


def _named() -> Traversable:
    """The folder of named pipelines. They ship inside the package (package data in
    pyproject.toml), so an installed wheel has them as well as a source checkout."""
    return resources.files("tv_mlir.passes") / "pipelines"


def pipeline_names() -> list[str]:
    """The named pipelines that ship with the package."""
    return sorted(p.name.removesuffix(".txt") for p in _named().iterdir() if p.name.endswith(".txt"))


@dataclass(frozen=True)
class Pipeline:
    name: str
    steps: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...]

    def has(self, pass_name: str) -> bool:
        return any(name == pass_name for name, _ in self.steps)


def _parse_value(text: str) -> Any:
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(text.lower(), text)


def parse_pipeline(text: str, name: str) -> Pipeline:
    steps = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        pass_name, *opts = line.split()
        if pass_name not in PASSES and pass_name not in PAIR_PASSES:
            known = ", ".join(sorted(set(PASSES) | PAIR_PASSES))
            raise UsageError(f"pipeline {name}, line {lineno}: unknown pass '{pass_name}' (known: {known})")
        kv = []
        for opt in opts:
            if "=" not in opt:
                raise UsageError(f"pipeline {name}, line {lineno}: option '{opt}' is not key=value")
            k, v = opt.split("=", 1)
            kv.append((k.replace("-", "_"), _parse_value(v)))
        steps.append((pass_name, tuple(kv)))
    return Pipeline(name, tuple(steps))


def load_pipeline(spec: str) -> Pipeline:
    """A pipeline by file path (an existing file is always read as one), or by name
    (tv_mlir/passes/pipelines/NAME.txt)."""
    path = Path(spec)
    if path.is_file():
        return parse_pipeline(path.read_text(encoding="utf-8"), str(path))
    if "/" not in spec and "\\" not in spec:
        named = _named() / f"{spec}.txt"
        if named.is_file():
            return parse_pipeline(named.read_text(encoding="utf-8"), spec)
    raise UsageError(f"no pipeline '{spec}': not a file and not one of {', '.join(pipeline_names())}")


def run_pipeline(pipeline: Pipeline, module: Module) -> Module:
    for name, opts in pipeline.steps:
        if name in PAIR_PASSES:
            continue
        fn = PASSES[name]
        try:
            inspect.signature(fn).bind(module, **dict(opts))
        except TypeError as exc:
            raise UsageError(f"pass {name}: bad options ({exc})") from None
        module = fn(module, **dict(opts))
    return module
