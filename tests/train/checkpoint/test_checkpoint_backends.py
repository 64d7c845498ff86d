"""One contract, run on every storage: a local folder and S3 (moto's server on loopback)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
import torch

from trainforge.config import CheckpointSpec
from trainforge.errors import CheckpointError
from trainforge.storage.objects import FsspecObjectStore, LocalObjectStore
from trainforge.train.checkpoint import CheckpointManager, CheckpointWarning
from trainforge.train.checkpoint._storage import Storage


@pytest.fixture(params=["local", "s3"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, dict]:
    if request.param == "local":
        return str(tmp_path / "checkpoints"), {}
    return request.getfixturevalue("s3_location")


def manager_at(location: tuple[str, dict], **policy) -> CheckpointManager:
    uri, options = location
    spec = CheckpointSpec(**{"keep_last": None, **policy})
    return CheckpointManager(uri, spec, run_id="r1", storage_options=options)


def test_the_object_store_matches_the_uri(location) -> None:
    expected = FsspecObjectStore if location[0].startswith("s3://") else LocalObjectStore
    assert isinstance(manager_at(location)._storage.objects, expected)


def test_round_trip(location, training_state: dict) -> None:
    manager = manager_at(location)
    assert manager.latest() is None and manager.list() == []
    manager.save(7, training_state, epoch=1, metrics={"val_loss": 0.25})
    info = manager.wait()
    assert manager.latest() == info and info.uri.startswith(location[0].rstrip("/"))
    state, loaded = manager.load()
    assert loaded == info and (loaded.epoch, loaded.run_id) == (1, "r1")
    for name, value in training_state["optimizer"]["state"][0].items():
        assert torch.equal(state["optimizer"]["state"][0][name], value)
    assert state["optimizer"]["param_groups"] == training_state["optimizer"]["param_groups"]
    assert state["rng"]["python"] == training_state["rng"]["python"]


def test_files_without_a_manifest_are_not_listed(location, training_state: dict) -> None:
    manager = manager_at(location)
    manager.save(1, training_state, blocking=True)
    storage: Storage = manager._storage
    storage.write("step-0000000002/tensors.safetensors", [b"partial"])
    with pytest.warns(CheckpointWarning, match="step-0000000002.*no MANIFEST.json"):
        assert [c.step for c in manager.list()] == [1]


def test_a_failed_write_publishes_nothing(location) -> None:
    storage: Storage = manager_at(location)._storage

    def chunks():  # on S3, the first 6 MiB already went up as a part of a multipart upload
        yield b"x" * (6 * 2**20)
        yield b"y" * (6 * 2**20)
        raise OSError("interrupted")

    with pytest.raises(OSError, match="interrupted"):
        storage.write("step-0000000001/tensors.safetensors", chunks())
    assert not any(name.endswith("/tensors.safetensors") for name in storage.list_files())


def test_corruption_falls_back(location, training_state: dict) -> None:
    manager = manager_at(location)
    for step in (1, 2):
        manager.save(step, training_state, blocking=True)
    storage: Storage = manager._storage
    path = "step-0000000002/state.json"
    data = bytearray(storage.read(path))
    data[10] ^= 0x01
    storage.write(path, [bytes(data)])
    with pytest.warns(CheckpointWarning, match="step-0000000002.*checksum mismatch"):
        assert manager.load()[1].step == 1


def test_retention_and_gc(location, training_state: dict) -> None:
    manager = manager_at(location, keep_last=2, keep_best=1, monitor="loss")
    for step, loss in [(1, 0.1), (2, 0.5), (3, 0.4), (4, 0.3)]:
        manager.save(step, training_state, metrics={"loss": loss})
    manager.wait()
    assert [c.step for c in manager.list()] == [1, 3, 4]
    assert [c.step for c in manager.gc(keep_last=1, keep_best=0)] == [1, 3]
    assert set(manager._storage.list_files()) == {
        "step-0000000004/MANIFEST.json",
        "step-0000000004/state.json",
        "step-0000000004/tensors.safetensors",
    }


def test_loading_a_deleted_checkpoint_raises(location, training_state: dict) -> None:
    manager = manager_at(location)
    manager.save(1, training_state, blocking=True)
    info = manager.latest()
    manager._storage.delete_dir(info.name)
    manager._storage.delete_dir(info.name)  # deleting twice is fine
    with pytest.raises(CheckpointError, match="step-0000000001"):
        manager.load(info)


def test_local_checkpoints_are_readable_by_the_team_and_durable(
    tmp_path: Path, training_state: dict, fsynced: list[Path]
) -> None:
    old = os.umask(0o022)
    try:
        manager = CheckpointManager(tmp_path / "checkpoints", CheckpointSpec(), run_id="r1")
        manager.save(1, training_state, blocking=True)
    finally:
        os.umask(old)
    folder = tmp_path / "checkpoints" / "step-0000000001"
    files = ["tensors.safetensors", "state.json", "MANIFEST.json"]
    assert [stat.S_IMODE((folder / name).stat().st_mode) for name in files] == [0o644] * 3
    written = [path.name for path in fsynced if path.parent == folder]  # temporary names
    assert len(written) == 3  # each file before its rename, the manifest last:
    assert all(temporary.startswith(f".{name}.") for temporary, name in zip(written, files))
    assert {folder, folder.parent, tmp_path} <= set(fsynced)  # renames, new folders
    assert manager.latest().uri == str(folder)  # local checkpoints are recorded as plain paths
