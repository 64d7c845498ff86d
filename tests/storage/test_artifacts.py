import pytest

from trainforge.errors import ArtifactError
from trainforge.storage.artifacts import LocalArtifactStore, open_artifact_store


def test_files_and_bytes_land_under_the_run_id(tmp_path):
    store = open_artifact_store(tmp_path / "artifacts")
    source = tmp_path / "w.bin"
    source.write_bytes(b"weights")
    uri = store.put_file("run1", source, "model/w.bin")
    store.put_bytes("run1", "report.json", b"{}")
    assert uri == (tmp_path / "artifacts/run1/model/w.bin").as_uri()
    assert store.get_bytes("run1", "model/w.bin") == b"weights"
    assert store.list_names("run1") == ["model/w.bin", "report.json"]
    assert store.list_names("other") == []
    assert store.run_uri("run1") == (tmp_path / "artifacts/run1").as_uri()


def test_overwrite_is_atomic_and_leaves_no_temp_files(tmp_path):
    store = LocalArtifactStore(tmp_path)
    store.put_bytes("r", "a.txt", b"one")
    store.put_bytes("r", "a.txt", b"two")
    assert store.get_bytes("r", "a.txt") == b"two"
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == ["a.txt"]


@pytest.mark.parametrize("name", ["../escape", "/abs/path", "a/../../b", "a\\b"])
def test_names_escaping_the_run_folder_are_refused(tmp_path, name):
    store = LocalArtifactStore(tmp_path)
    with pytest.raises(ArtifactError, match="expected a relative path"):
        store.put_bytes("r", name, b"x")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("run_id", ["", "..", "a/b"])
def test_bad_run_ids_are_refused(tmp_path, run_id):
    with pytest.raises(ArtifactError, match="expected a single path segment"):
        LocalArtifactStore(tmp_path).put_bytes(run_id, "x", b"")


def test_missing_artifact_and_missing_source_file(tmp_path):
    store = LocalArtifactStore(tmp_path)
    with pytest.raises(ArtifactError, match="not found"):
        store.get_bytes("r", "nope")
    with pytest.raises(ArtifactError, match="not a file"):
        store.put_file("r", tmp_path / "missing.bin")


def test_unsupported_scheme_is_named(tmp_path):
    with pytest.raises(ArtifactError, match="unsupported scheme 'gs'"):
        open_artifact_store("gs://bucket/x")
    assert isinstance(open_artifact_store(tmp_path.as_uri()), LocalArtifactStore)
