"""Pipelines: plain text, one pass per line with key=value options, so a user can read
and write them. The named ones (default, shrink, none) are package data in
tv_mlir/passes/pipelines/NAME.txt; `--pipeline PATH` reads a user's own file (a
built-in name always means the built-in pipeline)."""
from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from tv_mlir.errors import Unsupported, UsageError
from tv_mlir.ir import Module
from tv_mlir.options import MAX_NESTING
from tv_mlir.passes import normalize
from tv_mlir.passes.complex import has_complex, legalize_complex
from tv_mlir.passes.legalize_chlo import legalize_chlo
from tv_mlir.passes.unroll import unroll_loops

PassFn = Callable[..., Module]

PASSES: dict[str, PassFn] = {
    "inline": normalize.inline,
    "drop-noop-custom-calls": normalize.drop_noop_custom_calls,
    "dce": normalize.dce,
    "drop-unused-funcs": normalize.drop_unused_funcs,
    "cse": normalize.cse,
    "unroll-loops": unroll_loops,
    "legalize-chlo": legalize_chlo,  # not in the named pipelines: verify expands per pair
    "legalize-complex": legalize_complex,
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
        where = f"pipeline {name}, line {lineno}"
        if pass_name not in PASSES and pass_name not in PAIR_PASSES:
            known = ", ".join(sorted(set(PASSES) | PAIR_PASSES))
            raise UsageError(f"{where}: unknown pass '{pass_name}' (known: {known})")
        kv = []
        for opt in opts:
            if "=" not in opt:
                raise UsageError(f"{where}: option '{opt}' is not key=value")
            k, v = opt.split("=", 1)
            kv.append((k.replace("-", "_"), _parse_value(v)))
        _check_options(pass_name, dict(kv), where)
        steps.append((pass_name, tuple(kv)))
    return Pipeline(name, tuple(steps))


def _check_options(pass_name: str, opts: dict[str, Any], where: str) -> None:
    """Options a pass does not take are refused when the pipeline is read, not silently
    dropped (pair passes take none) nor found only once a module reaches the pass."""
    if pass_name in PAIR_PASSES:
        if opts:
            raise UsageError(f"{where}: pass {pass_name} takes no options, got {', '.join(opts)}")
        return
    try:
        inspect.signature(PASSES[pass_name]).bind(None, **opts)
    except TypeError as exc:
        raise UsageError(f"{where}: pass {pass_name}: bad options ({exc})") from None


# A pipeline file is a few lines; anything this large is not one (a device, a wrong file).
MAX_PIPELINE_BYTES = 2**20


def load_pipeline(spec: str) -> Pipeline:
    """A built-in pipeline by name (tv_mlir/passes/pipelines/NAME.txt), else a pipeline file.
    The built-in names always win, so a file called `default` in the current folder does
    not change what `--pipeline default` means; write `./default` to read that file."""
    if spec in pipeline_names():
        return parse_pipeline((_named() / f"{spec}.txt").read_text(encoding="utf-8"), spec)
    path = Path(spec)
    if not _exists(path):
        raise UsageError(f"no pipeline '{spec}': not a file and not one of {', '.join(pipeline_names())}")
    return parse_pipeline(_read_text(path), str(path))


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except (OSError, ValueError):  # a NUL character, a name longer than the system takes
        return False


def _read_text(path: Path) -> str:
    """The file as text; anything that is not a readable small UTF-8 text file is the
    user's mistake (a usage error), never ours."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_PIPELINE_BYTES + 1)
    except OSError as exc:
        raise UsageError(f"cannot read pipeline {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_PIPELINE_BYTES:
        raise UsageError(f"pipeline {path}: larger than {MAX_PIPELINE_BYTES} bytes, not a pipeline file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"pipeline {path}: not UTF-8 text") from None
    if "\x00" in text:
        raise UsageError(f"pipeline {path}: binary data, not a pipeline file")
    return text


def run_pipeline(pipeline: Pipeline, module: Module) -> Module:
    """The module after the pipeline's passes. A module nested deeper than the budget is
    refused first: the reader refuses such input, but a `Module` may come from the API."""
    for func in module.funcs.values():
        if func.body.nesting() > MAX_NESTING:
            raise Unsupported(f"regions nested deeper than {MAX_NESTING} in @{func.name} (the nesting budget)",
                              func.loc, "budget.nesting")
    for name, opts in pipeline.steps:
        if name in PAIR_PASSES:
            continue
        fn = PASSES[name]
        try:
            inspect.signature(fn).bind(module, **dict(opts))
        except TypeError as exc:
            raise UsageError(f"pass {name}: bad options ({exc})") from None
        module = fn(module, **dict(opts))
    # The semantics know no complex numbers: a pipeline without legalize-complex (a user's
    # file) gets it last, so that a real rule never runs on a complex value.
    if has_complex(module):
        module = legalize_complex(module)
    return module
