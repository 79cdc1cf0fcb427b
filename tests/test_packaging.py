"""The package as a user installs it: `pip install .` (not editable) into a fresh venv, run
from a folder outside the source tree, so only what the wheel ships is there (the named
pipelines, py.typed, the console script).

The new venv gets no copies of the dependencies: after the install, a .pth file puts the
dev venv's site-packages on its path. A .pth line only adds a folder to sys.path; the
.pth files inside that folder (the dev venv's editable-install finder among them) are not
run, so the only tv_mlir importable is the installed copy, which the test checks."""
from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, TESTDATA

pytestmark = pytest.mark.slow

SHARDED = TESTDATA / "sharded"

PROBE = """
import sys
from importlib import metadata, resources
import tv_mlir
print(tv_mlir.__file__)
print(metadata.version("tv-mlir") == tv_mlir.__version__)
print(sorted(p.name for p in (resources.files("tv_mlir.passes") / "pipelines").iterdir()))
print(resources.files("tv_mlir").joinpath("py.typed").is_file())
print(any("editable" in (getattr(f, "__module__", None) or "") for f in sys.meta_path))
"""


def _run(args: list[str | Path], cwd: Path, env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def test_installed_wheel_works_outside_the_source_tree(tmp_path: Path) -> None:
    # The source tree as `pip install .` sees it, minus what a clean clone does not have;
    # a copy, so the build's own build/ and egg-info stay out of the repository.
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".*_cache"))
    venv = tmp_path / "venv"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.update(JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="2", PYTHONNOUSERSITE="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    p = _run([sys.executable, "-m", "venv", "--without-pip", venv], tmp_path, env)
    assert p.returncode == 0, p.stderr
    py, script = venv / "bin" / "python", venv / "bin" / "tv-mlir"

    # pip of the dev venv, run by the new venv's interpreter; with --no-deps it needs nothing
    # but the build backend, which build isolation fetches like any user's install does.
    p = _run([sys.executable, "-m", "pip", "--python", py, "install", "--quiet", "--no-deps", src], tmp_path, env)
    assert p.returncode == 0, p.stdout + p.stderr
    purelib = _run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], tmp_path, env)
    new_site = Path(purelib.stdout.strip())
    dev_site = [d for d in dict.fromkeys(site.getsitepackages()) if Path(d).is_dir()]
    (new_site / "_tv_mlir_dev_deps.pth").write_text("".join(f"{d}\n" for d in dev_site))

    work = tmp_path / "elsewhere"  # not the source tree, not its copy
    work.mkdir()
    p = _run([py, "-c", PROBE], work, env)
    assert p.returncode == 0, p.stderr
    file, same_version, pipelines, typed, editable = p.stdout.splitlines()
    assert Path(file).is_relative_to(new_site), file
    assert same_version == "True" and typed == "True" and editable == "False"
    assert pipelines == str(sorted(p.name for p in (ROOT / "tv_mlir/passes/pipelines").glob("*.txt")))

    p = _run([script, "--version"], work, env)
    assert p.returncode == 0 and p.stdout.split() == ["tv-mlir", _version()], p.stdout + p.stderr

    ref = SHARDED / "attn_tp.ref.mlir"
    p = _run([script, "verify", "--pipeline", "shrink", ref, SHARDED / "attn_tp.shardy.mlir"], work, env)
    assert p.returncode == 0 and "verdict: equivalent" in p.stdout, p.stdout + p.stderr
    # A user's own pipeline file, by a path relative to where they are.
    (work / "mine.txt").write_text("# shrink, then inline calls\nshrink\ninline\n")
    p = _run([script, "verify", "--pipeline", "mine.txt", "--no-replay", ref, SHARDED / "attn_tp_bug_wrong_axis.shardy.mlir"],
             work, env)
    assert p.returncode == 1 and "verdict: not-equivalent" in p.stdout, p.stdout + p.stderr


def _version() -> str:
    import tv_mlir

    return tv_mlir.__version__
