"""One contract, run on every object store: a local folder and S3 (moto's server on loopback)."""

from __future__ import annotations

import doctest
import hashlib
import io
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import trainforge.storage.objects as objects_package
from trainforge.errors import ObjectNotFound, ObjectStoreError
from trainforge.storage.objects import (
    FsspecObjectStore,
    LocalObjectStore,
    ObjectStore,
    open_object_store,
)

MiB = 2**20


def test_public_api() -> None:
    assert objects_package.__all__ == [
        "FsspecObjectStore", "GuardedObjectStore", "LocalObjectStore", "ObjectBatch",
        "ObjectStore", "check_key", "open_object_store",
    ]
    assert doctest.testmod(objects_package).failed == 0


def test_the_trainer_reaches_the_object_store_without_the_sql_store() -> None:
    script = "import sys, trainforge.train; print('sqlalchemy' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.stdout.strip() == "False", done.stderr


@pytest.fixture(params=["local", "s3", "proxy"])
def objects(request: pytest.FixtureRequest, tmp_path: Path) -> ObjectStore:
    """Each kind in turn; "proxy" is a folder of `trainforge server`'s artifact root (a local
    folder of this test) through its artifact proxy, the token given as a storage option."""
    if request.param == "local":
        return open_object_store(tmp_path / "objects")
    if request.param == "proxy":
        server = request.getfixturevalue("rest_server")
        server.serve(artifacts=tmp_path / "served")
        base, token = server.url.split("@")[1], server.url.split("@")[0].rpartition(":")[2]
        return open_object_store(f"http://{base}/api/v1/objects/team", {"token": token})
    bucket, options = request.getfixturevalue("s3_bucket"), request.getfixturevalue("s3_options")
    return open_object_store(f"s3://{bucket}/team/objects", options)


def test_round_trips_from_bytes_chunks_and_files(objects: ObjectStore) -> None:
    objects.write("a/bytes.bin", b"plain")
    objects.write("a/chunks.bin", [b"one,", memoryview(b"two,"), bytearray(b"three")])
    objects.write("a/file.bin", io.BytesIO(b"from a file"))
    assert objects.read("a/bytes.bin") == b"plain"
    assert objects.read("a/chunks.bin") == b"one,two,three"
    assert objects.read("a/file.bin") == b"from a file"
    objects.write("a/bytes.bin", b"replaced")
    assert objects.read("a/bytes.bin") == b"replaced"
    objects.write("a/empty.bin", [])
    assert objects.read("a/empty.bin") == b"" and objects.size("a/empty.bin") == 0


def test_a_multi_megabyte_object_streams_both_ways(objects: ObjectStore, tmp_path: Path) -> None:
    source = tmp_path / "big.bin"
    source.write_bytes(os.urandom(12 * MiB + 123))
    with open(source, "rb") as file:
        objects.write("big/blob.bin", file)  # more than one 5 MiB part on S3
    digest = hashlib.sha256()
    with objects.open("big/blob.bin") as stream:
        assert stream.read(10) == source.read_bytes()[:10]
        digest.update(source.read_bytes()[:10])
        while chunk := stream.read(MiB):
            digest.update(chunk)
    assert digest.hexdigest() == hashlib.sha256(source.read_bytes()).hexdigest()
    assert objects.size("big/blob.bin") == 12 * MiB + 123


def test_listings_by_prefix_with_sizes(objects: ObjectStore) -> None:
    for key, size in [("a/b/c.bin", 3), ("a/d.bin", 1), ("ab/e.bin", 2), ("f.bin", 4)]:
        objects.write(key, b"x" * size)
    assert objects.list() == {"a/b/c.bin": 3, "a/d.bin": 1, "ab/e.bin": 2, "f.bin": 4}
    assert list(objects.list()) == ["a/b/c.bin", "a/d.bin", "ab/e.bin", "f.bin"]  # sorted
    assert objects.list("a") == {"a/b/c.bin": 3, "a/d.bin": 1}  # not ab/: a prefix is a folder
    assert objects.list("a/b") == {"a/b/c.bin": 3}
    assert objects.list("f.bin") == {} and objects.list("missing") == {}


def test_exists_and_size(objects: ObjectStore) -> None:
    objects.write("a/b.bin", b"12345")
    assert objects.exists("a/b.bin") and objects.size("a/b.bin") == 5
    assert not objects.exists("a/missing.bin") and not objects.exists("a")  # a prefix is no object
    with pytest.raises(ObjectNotFound, match=re.escape(f"{objects.uri_of('a/missing.bin')}: not")):
        objects.size("a/missing.bin")


def test_deleting_is_idempotent(objects: ObjectStore) -> None:
    objects.write("a/b.bin", b"x")
    objects.delete("a/b.bin")
    objects.delete("a/b.bin")
    objects.delete("never/written.bin")
    assert not objects.exists("a/b.bin") and objects.list() == {}
    with pytest.raises(ObjectNotFound, match=re.escape(objects.uri_of("a/b.bin"))):
        objects.read("a/b.bin")
    with pytest.raises(ObjectNotFound, match=re.escape(objects.uri_of("a/b.bin"))):
        objects.open("a/b.bin")


def test_deleting_a_prefix(objects: ObjectStore) -> None:
    for key in ["run/a.bin", "run/deep/b.bin", "run2/c.bin", "run.bin"]:
        objects.write(key, b"x")
    objects.delete_prefix("run")
    objects.delete_prefix("run")
    assert list(objects.list()) == ["run.bin", "run2/c.bin"]
    with pytest.raises(ObjectStoreError, match="object key ''"):
        objects.delete_prefix("")  # never the whole store at once


BAD_KEYS = ["", "/abs", "../x", "a/../b", "a//b", "a/", "./a", "a\\b", ".hidden", "a/.b", "a\0b"]


@pytest.mark.parametrize("key", BAD_KEYS)
def test_bad_keys_are_refused_before_anything_is_written(objects: ObjectStore, key: str) -> None:
    expected = re.escape(f"object key {key!r}: expected a relative path")
    with pytest.raises(ObjectStoreError, match=expected):
        objects.write(key, b"x")
    for call in (objects.read, objects.open, objects.exists, objects.delete):
        with pytest.raises(ObjectStoreError, match="expected a relative path"):
            call(key)
    assert objects.list(include_temporary=True) == {}
    if isinstance(objects, LocalObjectStore):
        assert not objects.root.exists()


def chunks_then_failure() -> Iterator[bytes]:
    """12 MiB of data, then an error: on S3 the first part was already uploaded."""
    yield b"x" * (6 * MiB)
    yield b"y" * (6 * MiB)
    raise OSError("source interrupted")


def test_a_write_that_fails_midway_leaves_no_object(objects: ObjectStore) -> None:
    with pytest.raises(OSError, match="source interrupted") as caught:
        objects.write("a/torn.bin", chunks_then_failure())
    assert not isinstance(caught.value, ObjectStoreError)  # the source's own error
    assert not objects.exists("a/torn.bin")
    assert objects.list(include_temporary=True) == {}
    if isinstance(objects, LocalObjectStore):
        assert [p.name for p in (objects.root / "a").iterdir()] == []


def test_a_failed_overwrite_keeps_the_old_object(objects: ObjectStore) -> None:
    objects.write("a/model.bin", b"old")
    with pytest.raises(OSError, match="source interrupted"):
        objects.write("a/model.bin", chunks_then_failure())
    assert objects.read("a/model.bin") == b"old"


def test_a_batch_stores_each_write_and_a_failure_leaves_nothing_half_written(
        objects: ObjectStore) -> None:
    objects.write("b/kept.bin", b"old")
    with objects.batch() as batch, ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda n: batch.write(f"b/{n}.bin", [b"x"] * n), range(1, 41)))
    assert all(objects.read(f"b/{n}.bin") == b"x" * n for n in range(1, 41))
    with pytest.raises(OSError, match="source interrupted") as caught, objects.batch() as batch:
        batch.write("b/three.bin", b"3")
        batch.write("b/kept.bin", chunks_then_failure())
        batch.write("b/four.bin", b"4")
    assert not isinstance(caught.value, ObjectStoreError)
    assert objects.read("b/kept.bin") == b"old"
    assert not objects.exists("b/four.bin")
    leftovers = set(objects.list(include_temporary=True)) - {f"b/{n}.bin" for n in range(1, 41)}
    assert leftovers <= {"b/kept.bin", "b/three.bin"}  # three: S3 stores each write at once
    if objects.local_path() is not None:
        assert leftovers == {"b/kept.bin"}
    with pytest.raises(ObjectStoreError, match="object key '../escape'"), \
            objects.batch() as batch:
        batch.write("b/five.bin", b"5")
        batch.write("../escape", b"x")
    assert objects.local_path() is None or not objects.exists("b/five.bin")


def unusable(kind: str, tmp_path: Path, options: dict[str, Any]) -> ObjectStore:
    if kind == "local":
        (tmp_path / "a-file").write_bytes(b"")
        return open_object_store(tmp_path / "a-file" / "objects")
    return open_object_store(f"s3://tf-missing-{uuid.uuid4().hex[:12]}/objects", options)


@pytest.mark.parametrize("kind", ["local", "s3"])
def test_storage_failures_name_the_object(kind: str, tmp_path: Path,
                                          request: pytest.FixtureRequest) -> None:
    options = request.getfixturevalue("s3_options") if kind == "s3" else {}
    objects = unusable(kind, tmp_path, options)
    expected = re.escape(f"{objects.uri_of('k.bin')}: cannot write")
    with pytest.raises(ObjectStoreError, match=expected):
        objects.write("k.bin", b"x")


def test_leftover_temporary_files_are_listed_only_on_request(tmp_path: Path) -> None:
    objects = open_object_store(tmp_path)
    objects.write("run/kept.bin", b"k")
    (tmp_path / "run" / ".torn.bin.1a2b3c4d.tmp").write_bytes(b"partial")
    (tmp_path / ".cache").mkdir()
    (tmp_path / ".cache" / "x").write_bytes(b"not ours")
    assert objects.list() == {"run/kept.bin": 1}
    assert objects.list(include_temporary=True) == {"run/.torn.bin.1a2b3c4d.tmp": 7,
                                                    "run/kept.bin": 1}
    objects.delete_prefix("run")
    assert not (tmp_path / "run").exists()


def test_uris_and_local_paths(tmp_path: Path, s3_bucket: str) -> None:
    local = open_object_store(tmp_path / "objects")
    assert local.root_uri == (tmp_path / "objects").as_uri()
    assert local.uri_of("a/b.bin") == (tmp_path / "objects/a/b.bin").as_uri()
    assert local.local_path("a/b.bin") == tmp_path / "objects/a/b.bin"
    assert local.local_path() == tmp_path / "objects"
    remote = open_object_store(f"s3://{s3_bucket}/team/")
    assert remote.root_uri == f"s3://{s3_bucket}/team" and remote.uri_of("") == remote.root_uri
    assert remote.uri_of("a/b.bin") == f"s3://{s3_bucket}/team/a/b.bin"
    assert remote.local_path("a/b.bin") is None


def test_stores_are_chosen_by_scheme(tmp_path: Path, s3_bucket: str) -> None:
    spaced = tmp_path / "with space"
    assert isinstance(open_object_store(str(spaced)), LocalObjectStore)
    by_uri = open_object_store(spaced.as_uri())  # percent-encoded: with%20space
    assert isinstance(by_uri, LocalObjectStore) and by_uri.local_path() == spaced
    assert isinstance(open_object_store(f"s3://{s3_bucket}/p"), FsspecObjectStore)
    with pytest.raises(ObjectStoreError, match=r"unknown protocol 'nope'; expected a local.*s3"):
        open_object_store("nope://bucket/p")
    with pytest.raises(ObjectStoreError, match="expected file:///"):
        open_object_store("file://otherhost/data")
    with pytest.raises(ObjectStoreError, match="expected s3://<bucket>/<prefix>"):
        open_object_store("s3://")


def test_without_s3fs_the_error_says_what_to_install() -> None:
    script = (
        "import sys; sys.modules['s3fs'] = None\n"  # as if s3fs were not installed
        "from trainforge.storage.objects import open_object_store\n"
        "open_object_store('s3://bucket/prefix')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 1
    assert "ObjectStoreError" in done.stderr and "pip install 'trainforge[s3]'" in done.stderr
