"""The on-disk proof cache: round trips, key derivation, corrupt entries as misses, atomic
writes, and a cache that cannot be written not failing the verification."""
from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

import tv_mlir
from tv_mlir.stages import cache as cache_mod
from tv_mlir.stages.cache import SCHEMA, ProofCache, cache_key, default_cache_dir

RECORD = {"verdict": "equivalent", "time_s": 0.25, "outputs": [0, 1], "note": None}


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def _entry_path(root: Path, key: str) -> Path:
    return root / key[:2] / f"{key}.json"


def test_round_trip(tmp_path: Path) -> None:
    c = ProofCache.open(tmp_path)
    key = cache_key("ab12", "opts")
    assert c.get(key) is None
    c.put(key, RECORD)
    assert c.get(key) == RECORD
    # A second handle on the same directory (another process, a later run) sees it too.
    assert ProofCache.open(tmp_path).get(key) == RECORD


def test_storage_layout(tmp_path: Path) -> None:
    c = ProofCache.open(tmp_path)
    key = cache_key("ab12", "opts")
    c.put(key, RECORD)
    path = _entry_path(tmp_path, key)
    assert _files(tmp_path) == [path]
    entry = {"schema": SCHEMA, "version": tv_mlir.__version__, "key": key, "record": RECORD}
    assert path.read_text(encoding="utf-8") == json.dumps(entry, sort_keys=True)


def test_miss_on_another_key(tmp_path: Path) -> None:
    c = ProofCache.open(tmp_path)
    c.put(cache_key("ab12", "opts"), RECORD)
    assert c.get(cache_key("ab13", "opts")) is None


def test_key_is_a_stable_sha256_hex(tmp_path: Path) -> None:
    k = cache_key("ab12", "opts")
    assert len(k) == 64 and all(ch in "0123456789abcdef" for ch in k)
    assert cache_key("ab12", "opts") == k


def test_key_changes_with_each_part(monkeypatch: pytest.MonkeyPatch) -> None:
    base = cache_key("ab12", "opts")
    assert cache_key("ab13", "opts") != base
    assert cache_key("ab12", "opts2") != base
    # The parts are kept apart: moving a character across a boundary is another key.
    assert cache_key("ab1", "2opts") != base
    monkeypatch.setattr(tv_mlir, "__version__", "1.0")
    shifted = cache_key("ab", "opts")
    monkeypatch.setattr(tv_mlir, "__version__", ".0")
    assert cache_key("ab1", "opts") != shifted
    monkeypatch.setattr(tv_mlir, "__version__", "999.0.0")
    assert cache_key("ab12", "opts") != base


def test_key_changes_with_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    base = cache_key("ab12", "opts")
    monkeypatch.setattr(cache_mod, "SCHEMA", SCHEMA + 1)
    assert cache_key("ab12", "opts") != base


def test_entry_from_another_version_is_a_miss(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    c = ProofCache.open(tmp_path)
    key = cache_key("ab12", "opts")
    c.put(key, RECORD)
    # Same key looked up by another version (the key itself would differ too; this checks the
    # stored field, the second line of defence).
    monkeypatch.setattr(tv_mlir, "__version__", "999.0.0")
    assert c.get(key) is None


def _garbage(path: Path, key: str, other: Path) -> None:
    path.write_bytes(b"\x80\xff\x00not json at all{{")


def _empty(path: Path, key: str, other: Path) -> None:
    path.write_bytes(b"")


def _json_list(path: Path, key: str, other: Path) -> None:
    path.write_text(json.dumps([1, 2, 3]), encoding="utf-8")


def _truncated(path: Path, key: str, other: Path) -> None:
    path.write_bytes(path.read_bytes()[:-5])


def _renamed_from_other_key(path: Path, key: str, other: Path) -> None:
    os.replace(other, path)


def _wrong_schema(path: Path, key: str, other: Path) -> None:
    entry = json.loads(path.read_text(encoding="utf-8"))
    entry["schema"] = SCHEMA + 1
    path.write_text(json.dumps(entry), encoding="utf-8")


def _wrong_version(path: Path, key: str, other: Path) -> None:
    entry = json.loads(path.read_text(encoding="utf-8"))
    entry["version"] = "0.0.0-other"
    path.write_text(json.dumps(entry), encoding="utf-8")


def _record_not_a_dict(path: Path, key: str, other: Path) -> None:
    entry = json.loads(path.read_text(encoding="utf-8"))
    entry["record"] = ["equivalent"]
    path.write_text(json.dumps(entry), encoding="utf-8")


def _missing_fields(path: Path, key: str, other: Path) -> None:
    path.write_text(json.dumps({"record": RECORD}), encoding="utf-8")


@pytest.mark.parametrize("corrupt", [_garbage, _empty, _json_list, _truncated, _renamed_from_other_key,
                                     _wrong_schema, _wrong_version, _record_not_a_dict, _missing_fields])
def test_corrupt_entry_is_a_miss_then_rewritten(tmp_path: Path, corrupt: Callable[[Path, str, Path], None]) -> None:
    c = ProofCache.open(tmp_path)
    key, other_key = cache_key("ab12", "opts"), cache_key("cd34", "opts")
    c.put(key, RECORD)
    c.put(other_key, {"verdict": "not-equivalent"})
    path = _entry_path(tmp_path, key)
    assert c.get(key) == RECORD  # the entry was good before it was spoiled
    corrupt(path, key, _entry_path(tmp_path, other_key))
    assert c.get(key) is None
    new = {"verdict": "equivalent", "time_s": 1.5}
    c.put(key, new)
    assert c.get(key) == new


def test_disabled_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TV_MLIR_CACHE_DIR", str(tmp_path / "default"))
    c = ProofCache.open(None, enabled=False)
    assert c.root is None
    key = cache_key("ab12", "opts")
    c.put(key, RECORD)
    assert c.get(key) is None
    # Disabled even when a directory is named.
    d = ProofCache.open(tmp_path / "named", enabled=False)
    d.put(key, RECORD)
    assert d.root is None and d.get(key) is None
    assert list(tmp_path.iterdir()) == []


def test_open_none_uses_default_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TV_MLIR_CACHE_DIR", str(tmp_path / "tvc"))
    c = ProofCache.open(None)
    assert c.root == tmp_path / "tvc"
    assert not c.root.exists()  # created on demand, not on open
    key = cache_key("ab12", "opts")
    c.put(key, RECORD)
    assert _entry_path(tmp_path / "tvc", key).is_file()


def test_default_dir_honours_tv_mlir_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("TV_MLIR_CACHE_DIR", str(tmp_path / "explicit"))
    assert default_cache_dir() == tmp_path / "explicit"


def test_default_dir_honours_xdg_cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TV_MLIR_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "tv-mlir"


def test_default_dir_falls_back_to_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TV_MLIR_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")  # the XDG spec says: ignore it
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_cache_dir() in (tmp_path / ".cache" / "tv-mlir",
                                   tmp_path / "Library" / "Caches" / "tv-mlir")


def test_bad_key_is_refused(tmp_path: Path) -> None:
    c = ProofCache.open(tmp_path)
    for key in ("../../etc/passwd", "", "AB12", "x"):
        with pytest.raises(ValueError):
            c.put(key, RECORD)
        with pytest.raises(ValueError):
            c.get(key)
    assert _files(tmp_path) == []


def test_no_temp_files_after_put(tmp_path: Path) -> None:
    c = ProofCache.open(tmp_path)
    keys = [cache_key(f"h{i}", "opts") for i in range(5)]
    for k in keys:
        c.put(k, RECORD)
    c.put(keys[0], {"verdict": "again"})  # an overwrite too
    files = _files(tmp_path)
    assert not [p for p in files if ".tmp" in p.name or p.name.startswith(".")]
    assert len(files) == 5


def test_overwrite_replaces_the_file_not_its_contents(tmp_path: Path) -> None:
    # A reader holding the old file keeps reading the whole old entry: the new one is a new
    # file renamed over it, never the old one truncated and rewritten in place.
    c = ProofCache.open(tmp_path)
    key = cache_key("ab12", "opts")
    c.put(key, RECORD)
    path = _entry_path(tmp_path, key)
    with open(path, encoding="utf-8") as held:
        c.put(key, {"verdict": "new"})
        assert json.loads(held.read())["record"] == RECORD
    assert c.get(key) == {"verdict": "new"}


def test_failed_replace_leaves_no_temp_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    c = ProofCache.open(tmp_path)
    key = cache_key("ab12", "opts")
    monkeypatch.setattr(cache_mod.os, "replace", fail)
    c.put(key, RECORD)  # does not raise
    monkeypatch.undo()
    assert _files(tmp_path) == []
    assert c.get(key) is None


@pytest.mark.parametrize("level", ["root", "fan-out dir"])
def test_read_only_directory(tmp_path: Path, level: str, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "cache"
    key = cache_key("ab12", "opts")
    ro = root if level == "root" else root / key[:2]
    ro.mkdir(parents=True)
    ro.chmod(0o500)
    if not hasattr(os, "geteuid") or os.geteuid() == 0:
        # root writes through the mode bits (CI runs as root): refuse writes under ro as
        # the kernel does for everyone else
        real_mkstemp, real_mkdir = cache_mod.tempfile.mkstemp, Path.mkdir

        def mkstemp(*args: object, dir: str | Path | None = None, **kw: object) -> tuple[int, str]:
            if dir is not None and Path(dir).resolve().is_relative_to(ro.resolve()):
                raise PermissionError(13, "Permission denied", str(dir))
            return real_mkstemp(*args, dir=dir, **kw)  # type: ignore[call-overload]

        def mkdir(self: Path, *args: object, **kw: object) -> None:
            if self.resolve().is_relative_to(ro.resolve()) and not self.exists():
                raise PermissionError(13, "Permission denied", str(self))
            real_mkdir(self, *args, **kw)  # type: ignore[arg-type]

        monkeypatch.setattr(cache_mod.tempfile, "mkstemp", mkstemp)
        monkeypatch.setattr(Path, "mkdir", mkdir)
    try:
        c = ProofCache.open(root)
        c.put(key, RECORD)  # does not raise
        assert c.get(key) is None
        assert _files(root) == []
    finally:
        ro.chmod(0o700)
