"""Damaged checkpoints: each is skipped with a warning naming it, and loading falls back."""

from __future__ import annotations

import json
import os
import pickle
import re
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from trainforge.config import CheckpointSpec
from trainforge.errors import CheckpointError
from trainforge.train.checkpoint import CheckpointManager, CheckpointWarning
from trainforge.train.checkpoint._checksum import CHUNK_BYTES, checksum

TENSORS = "tensors.safetensors"
STATE = "state.json"
MANIFEST = "MANIFEST.json"


@pytest.fixture
def saved(tmp_path: Path) -> tuple[CheckpointManager, Path]:
    """Checkpoints of steps 1 and 2 (their tensors hold the step); returns step 2's folder."""
    manager = CheckpointManager(tmp_path, CheckpointSpec(keep_last=None), run_id="r1")
    for step in (1, 2):
        manager.save(step, {"w": torch.full((64,), float(step)), "step": step}, blocking=True)
    return manager, tmp_path / "step-0000000002"


def edit_manifest(folder: Path, change: Callable[[dict], None]) -> None:
    manifest = json.loads((folder / MANIFEST).read_text())
    change(manifest)
    (folder / MANIFEST).write_text(json.dumps(manifest))


def replace_file(folder: Path, name: str, data: bytes, *, fix_manifest: bool) -> None:
    """Swap a file's bytes; with `fix_manifest`, the manifest then vouches for the new bytes."""
    (folder / name).write_bytes(data)
    if fix_manifest:
        entry = {"size": len(data), "checksum": checksum(data, "xxh3_128", CHUNK_BYTES)}
        edit_manifest(folder, lambda m: m["files"].__setitem__(name, entry))


def truncate(folder: Path) -> None:
    with open(folder / TENSORS, "r+b") as file:
        file.truncate(os.path.getsize(folder / TENSORS) - 10)


def flip_byte(name: str, offset: int) -> Callable[[Path], None]:
    def flip(folder: Path) -> None:
        data = bytearray((folder / name).read_bytes())
        data[offset] ^= 0x01
        (folder / name).write_bytes(bytes(data))

    return flip


DAMAGE = {
    "truncated tensors": (truncate, "truncated"),
    "flipped byte in tensor data": (flip_byte(TENSORS, -3), "checksum mismatch"),
    "flipped byte in state.json": (flip_byte(STATE, 5), "checksum mismatch"),
    "missing manifest": (lambda f: (f / MANIFEST).unlink(), "no MANIFEST.json"),
    "missing tensors file": (lambda f: (f / TENSORS).unlink(), "missing"),
    "wrong checksum": (
        lambda f: edit_manifest(f, lambda m: m["files"][TENSORS].update(checksum="0" * 32)),
        "checksum mismatch",
    ),
    "malformed manifest": (lambda f: (f / MANIFEST).write_text('{"format": '), "not valid JSON"),
    "unknown format version": (
        lambda f: edit_manifest(f, lambda m: m.update(format_version=99)),
        "unknown format version 99",
    ),
    "unknown hash": (lambda f: edit_manifest(f, lambda m: m.update(hash="md5")), "malformed"),
    "manifest for another step": (lambda f: edit_manifest(f, lambda m: m.update(step=7)), "step 7"),
    "file outside the checkpoint": (
        lambda f: edit_manifest(f, lambda m: m["files"].update({"../x": m["files"][STATE]})),
        "files outside the checkpoint folder ['../x']",
    ),
}


@pytest.mark.parametrize("damage", DAMAGE.values(), ids=list(DAMAGE))
def test_damaged_newest_checkpoint_falls_back_with_a_warning(saved, damage) -> None:
    manager, folder = saved
    corrupt, reason = damage
    corrupt(folder)
    with pytest.warns(CheckpointWarning, match=re.escape(str(folder))) as caught:
        state, info = manager.load()
    assert info.step == 1 and state["step"] == 1 and torch.equal(state["w"], torch.ones(64))
    assert any(reason in str(w.message) for w in caught), [str(w.message) for w in caught]


@pytest.mark.parametrize("damage", DAMAGE.values(), ids=list(DAMAGE))
def test_loading_a_damaged_checkpoint_by_name_raises(saved, damage) -> None:
    manager, folder = saved
    info = manager.latest()
    damage[0](folder)
    with pytest.raises(CheckpointError, match=re.escape(str(folder))):
        manager.load(info)


def test_a_sha256_manifest_verifies(saved) -> None:
    manager, folder = saved

    def to_sha256(manifest: dict) -> None:
        manifest.update(hash="sha256", hash_chunk_bytes=1000)
        for name, entry in manifest["files"].items():
            entry["checksum"] = checksum((folder / name).read_bytes(), "sha256", 1000)

    edit_manifest(folder, to_sha256)
    assert manager.load()[1].step == 2


def test_sizes_are_checked_when_listing(saved) -> None:
    manager, folder = saved
    truncate(folder)
    with pytest.warns(CheckpointWarning, match="truncated"):
        assert manager.latest().step == 1


def test_no_valid_checkpoint_left_raises(saved) -> None:
    manager, folder = saved
    truncate(folder)
    flip_byte(TENSORS, -1)(folder.parent / "step-0000000001")
    with pytest.warns(CheckpointWarning), pytest.raises(CheckpointError, match="no valid"):
        manager.load()


def test_folders_that_are_not_checkpoints_are_ignored(saved) -> None:
    manager, folder = saved
    root = Path(manager.location)
    for name in ("notes", "step-1", "step-00000000002", "step-+000000002"):
        (root / name).mkdir()
        (root / name / MANIFEST).write_bytes((folder / MANIFEST).read_bytes())
    (root / "README.txt").write_text("hello")
    manager.save(10**10, {"step": 10**10}, blocking=True)
    assert [c.step for c in manager.list()] == [1, 2, 10**10]


class _CreatesMarker:
    """Unpickling this calls `open(path, "w")`: the marker file shows that code ran."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


@pytest.mark.parametrize("target", [TENSORS, STATE])
@pytest.mark.parametrize("fix_manifest", [False, True], ids=["stale manifest", "matching"])
def test_a_planted_pickle_never_runs(saved, tmp_path: Path, target: str, fix_manifest) -> None:
    manager, folder = saved
    newest = manager.latest()
    marker = tmp_path / "pwned"
    payload = pickle.dumps({"w": _CreatesMarker(marker)})
    pickle.loads(payload)  # the payload works: unpickling creates the marker
    assert marker.exists()
    marker.unlink()
    replace_file(folder, target, payload, fix_manifest=fix_manifest)
    expected = "not a readable safetensors" if target == TENSORS else "state.json"
    with pytest.warns(CheckpointWarning, match=re.escape(str(folder))) as caught:
        _, info = manager.load()
    assert info.step == 1
    if fix_manifest:
        assert any(expected in str(w.message) for w in caught)
    with pytest.raises(CheckpointError, match=re.escape(str(folder))):
        manager.load(newest)
    assert not marker.exists()


def test_a_planted_torch_save_file_is_not_read(saved, tmp_path: Path) -> None:
    manager, folder = saved
    marker = tmp_path / "pwned"
    with open(folder / TENSORS, "wb") as file:
        torch.save({"w": _CreatesMarker(marker)}, file)
    data = (folder / TENSORS).read_bytes()
    replace_file(folder, TENSORS, data, fix_manifest=True)
    with pytest.warns(CheckpointWarning, match="not a readable safetensors"):
        assert manager.load()[1].step == 1
    assert not marker.exists()
