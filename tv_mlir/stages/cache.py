"""On-disk proof cache for stage proofs: one JSON file per key, written atomically, where a bad
entry is a miss (the stage is proved again and the entry overwritten), never an error."""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tv_mlir

# Bumped when the record layout or the meaning of a cached verdict changes: it is part of every
# key, so entries written under an older schema are never looked up again.
SCHEMA = 1

# Keys become file names; anything but hex could escape the cache directory.
_KEY_RE = re.compile(r"[0-9a-f]{2,128}")


def default_cache_dir() -> Path:
    explicit = os.environ.get("TV_MLIR_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    # The XDG spec says a relative XDG_CACHE_HOME is invalid and is to be ignored.
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "tv-mlir"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "tv-mlir"
    return Path.home() / ".cache" / "tv-mlir"


def cache_key(stage_hash: str, options_fingerprint: str) -> str:
    # The version is read at call time (not import time) so a cache shared by two installs
    # never hands one version's verdict to another, whose semantics may have been fixed since.
    # A JSON list keeps the parts apart: ("ab", "c") and ("a", "bc") do not collide.
    parts = [stage_hash, tv_mlir.__version__, options_fingerprint, SCHEMA]
    return hashlib.sha256(json.dumps(parts).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ProofCache:
    root: Path | None  # None: the cache is off

    @classmethod
    def open(cls, directory: str | Path | None, enabled: bool = True) -> ProofCache:
        if not enabled:
            return cls(None)
        # Nothing is created here: a run whose stages all fail to parse leaves no directory.
        return cls(default_cache_dir() if directory is None else Path(directory).expanduser())

    def _path(self, root: Path, key: str) -> Path:
        if not _KEY_RE.fullmatch(key):
            raise ValueError(f"proof cache key is not a lowercase hex digest: {key!r}")
        # Fan out on the first two digits so no single directory holds every entry.
        return root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        if self.root is None:
            return None
        path = self._path(self.root, key)
        try:
            entry = json.loads(path.read_bytes())
        except (OSError, ValueError, RecursionError):
            # Missing, unreadable, not UTF-8 or not JSON: all mean "prove it again".
            return None
        if not isinstance(entry, dict):
            return None
        # Checked although the key covers schema and version: a file copied or renamed by hand
        # (or by a bug) must not pass off another stage's verdict as this one's.
        if entry.get("schema") != SCHEMA or entry.get("version") != tv_mlir.__version__:
            return None
        if entry.get("key") != key:
            return None
        record = entry.get("record")
        return record if isinstance(record, dict) else None

    def put(self, key: str, record: dict[str, Any]) -> None:
        if self.root is None:
            return
        path = self._path(self.root, key)
        entry = {"schema": SCHEMA, "version": tv_mlir.__version__, "key": key, "record": record}
        text = json.dumps(entry, sort_keys=True)
        tmp: str | None = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # A temp file in the same directory, then os.replace: readers and a concurrent
            # writer of the same key see the old file or a whole new one, never a torn one.
            # No fsync: a file torn by a power cut reads as corrupt, which is only a miss.
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{key}.", suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, path)
            tmp = None
        except OSError:
            # A read-only or full cache costs a re-proof next run; it must not fail this one.
            pass
        finally:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
