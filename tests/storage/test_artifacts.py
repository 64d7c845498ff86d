"""The artifact layout (`<root>/<run_id>/<name>`) over a local folder and S3 (moto)."""

import os
import re
import stat

import pytest

from trainforge.errors import ArtifactError
from trainforge.storage.artifacts import ArtifactStore, open_artifact_store
from trainforge.storage.objects import FsspecObjectStore, LocalObjectStore


@pytest.fixture(params=["local", "s3"])
def store(request: pytest.FixtureRequest, tmp_path) -> ArtifactStore:
    if request.param == "local":
        return open_artifact_store(tmp_path / "artifacts")
    return open_artifact_store(f"s3://{request.getfixturevalue('s3_bucket')}/team/artifacts")


def test_files_and_bytes_land_under_the_run_id(store, tmp_path):
    source = tmp_path / "w.bin"
    source.write_bytes(b"weights")
    uri = store.put_file("run1", source, "model/w.bin")
    store.put_bytes("run1", "report.json", b"{}")
    assert uri == f"{store.root_uri}/run1/model/w.bin"
    assert store.get_bytes("run1", "model/w.bin") == b"weights"
    with store.open("run1", "report.json") as file:
        assert file.read() == b"{}"
    assert store.list_names("run1") == ["model/w.bin", "report.json"]
    assert store.list_names("other") == []
    assert store.run_uri("run1") == f"{store.root_uri}/run1"


def test_local_uris_are_file_uris(tmp_path):
    store = open_artifact_store(tmp_path / "artifacts")
    assert store.put_bytes("run1", "a.txt", b"x") == (tmp_path / "artifacts/run1/a.txt").as_uri()
    assert store.run_uri("run1") == (tmp_path / "artifacts/run1").as_uri()


def test_overwrite_is_atomic_and_leaves_no_temp_files(tmp_path):
    store = open_artifact_store(tmp_path)
    store.put_bytes("r", "a.txt", b"one")
    store.put_bytes("r", "a.txt", b"two")
    assert store.get_bytes("r", "a.txt") == b"two"
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == ["a.txt"]


@pytest.mark.parametrize("name", ["../escape", "/abs/path", "a/../../b", "a\\b", "a//b", ".env"])
def test_names_escaping_the_run_folder_are_refused(tmp_path, name):
    store = open_artifact_store(tmp_path)
    expected = re.escape(f"artifact name {name!r}: expected a relative path")
    with pytest.raises(ArtifactError, match=expected):
        store.put_bytes("r", name, b"x")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("run_id", ["", "..", "a/b"])
def test_bad_run_ids_are_refused(tmp_path, run_id):
    with pytest.raises(ArtifactError, match="expected a single path segment"):
        open_artifact_store(tmp_path).put_bytes(run_id, "x", b"")


def test_missing_artifact_and_missing_source_file(store, tmp_path):
    with pytest.raises(ArtifactError, match="r/nope: not found"):
        store.get_bytes("r", "nope")
    with pytest.raises(ArtifactError, match="r/nope: not found"):
        store.open("r", "nope")
    with pytest.raises(ArtifactError, match="not a file"):
        store.put_file("r", tmp_path / "missing.bin")


def test_roots_by_scheme(tmp_path, s3_bucket):
    assert isinstance(open_artifact_store(tmp_path).objects, LocalObjectStore)
    by_uri = open_artifact_store(tmp_path.as_uri())
    assert isinstance(by_uri.objects, LocalObjectStore) and by_uri.root_uri == tmp_path.as_uri()
    assert isinstance(open_artifact_store(f"s3://{s3_bucket}/x").objects, FsspecObjectStore)
    with pytest.raises(ArtifactError, match="artifact root 'nope://b/x': unknown protocol 'nope'"):
        open_artifact_store("nope://b/x")


def test_an_artifact_is_readable_by_the_team_and_its_folder_synced(tmp_path, fsynced):
    old = os.umask(0o022)
    try:
        uri = open_artifact_store(tmp_path / "artifacts").put_bytes("r", "model/w.bin", b"w")
    finally:
        os.umask(old)
    path = tmp_path / "artifacts/r/model/w.bin"
    assert uri == path.as_uri()
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert {path.parent, path.parent.parent, path.parent.parent.parent} <= set(fsynced)
    assert any(p.name.startswith(".w.bin.") for p in fsynced)  # the file itself, before the rename

