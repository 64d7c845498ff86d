"""Artifact paths a request names: one resolver refuses every traversal and encoding trick
(`..`, backslashes, `%2e%2e`, double-encoded `%252e`, `;` parameters, `#`, absolute paths,
`file:` and drive schemes, NUL bytes), fuzzed; sent raw to a live server, to a run's artifacts
and to the artifact proxy, they are 400 or 404 and nothing outside is read, written or
deleted; a real upload reads back."""

from __future__ import annotations

import http.client
import posixpath
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from live_server import live_server
from server_home import editor_session

from trainforge.server import create_server_app
from trainforge.server._paths import BadPath, artifact_name

PIECES = ["..", ".", "/", "\\", "%2e", "%2f", "%25", "%00", "\x00", ";", "#", "?", ":", "a",
          "b.txt", "file:", "C:", "~", " ", "\n", "%252e", "//"]
HOSTILE = ["..", "../secret.txt", "../../secret.txt", "a/../../secret.txt", "..%2fsecret.txt",
           "%2e%2e/secret.txt", "%252e%252e/secret.txt", "..\\secret.txt", "a\\..\\..\\x",
           "/etc/passwd", "//etc/passwd", "file:/etc/passwd", "file:///etc/passwd",
           "C:/secret.txt", "a;b", "a;jsessionid=1", "a#b", "a%00b", "a%0ab", "./a", "a//b",
           ".hidden", "a/./b", "%2fetc%2fpasswd"]


@given(st.lists(st.sampled_from(PIECES), min_size=1, max_size=8).map("".join))
@settings(max_examples=2000, derandomize=True, database=None)
def test_a_name_the_resolver_accepts_stays_inside_its_folder(raw: str) -> None:
    try:
        name = artifact_name(raw)
    except BadPath:
        return
    root = "/artifacts/run"
    assert posixpath.normpath(posixpath.join(root, name)).startswith(root + "/")
    assert not set(name) & set("%\\\x00;#?: \n~")
    assert all(segment not in ("", ".", "..") for segment in name.split("/"))


@pytest.mark.parametrize("raw", HOSTILE)
def test_each_known_trick_is_refused_by_the_resolver(raw: str) -> None:
    with pytest.raises(BadPath):
        artifact_name(raw)


@dataclass
class Live:
    host: str
    port: int
    token: str
    home: Path
    run_id: str

    def send(self, method: str, raw_path: str, body: bytes | None = None,
             media: str = "application/octet-stream") -> tuple[int, bytes]:
        """The request line exactly as given: no client normalises or re-encodes it."""
        connection = http.client.HTTPConnection(self.host, self.port, timeout=30)
        headers = {"Authorization": f"Bearer {self.token}"}
        if body is not None:
            headers["Content-Type"] = media
        try:
            connection.putrequest(method, raw_path, skip_accept_encoding=True)
            for key, value in {**headers, "Content-Length": str(len(body or b""))}.items():
                connection.putheader(key, value)
            connection.endheaders(body)
            answer = connection.getresponse()
            return answer.status, answer.read()
        finally:
            connection.close()


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    home = tmp_path_factory.mktemp("paths-home")
    session, token = editor_session(home, "ann")
    experiment = session.store.get_or_create_experiment("paths").experiment_id
    run = session.store.create_run(experiment, {}, {}, session.artifacts.run_uri("r1"),
                                   run_id="r1")
    with live_server(create_server_app(session)) as client:
        yield Live(client.base_url.host, client.base_url.port or 80, token, home, run.run_id)


def _files(home: Path) -> dict[str, bytes]:
    return {str(p.relative_to(home)): p.read_bytes() for p in home.rglob("*")
            if p.is_file() and p.suffix not in (".db", ".db-wal", ".db-shm")}


def test_a_raw_traversal_is_answered_400_or_404_and_touches_nothing_outside(live: Live) -> None:
    (live.home / "secret.txt").write_bytes(b"do not serve")
    before = _files(live.home)
    answers = {}
    for raw in HOSTILE:
        path = f"/api/v1/runs/{live.run_id}/artifacts/{raw}".replace("\x00", "%00")
        path = path.replace("\\", "%5C").replace(" ", "%20").replace("\n", "%0A")
        got = live.send("GET", path)
        put = live.send("PUT", path, b"overwritten")
        answers[raw] = (got[0], put[0])
        assert b"do not serve" not in got[1]

    assert all(g in (400, 404) and p in (400, 404) for g, p in answers.values()), answers
    assert _files(live.home) == before  # nothing written, nothing replaced


def test_an_upload_reads_back_and_is_listed_and_a_form_post_is_refused(live: Live) -> None:
    payload = bytes(range(256)) * 4096  # 1 MiB, every byte value
    base = f"/api/v1/runs/{live.run_id}/artifacts"

    stored = live.send("PUT", f"{base}/model/weights.bin", payload)
    read = live.send("GET", f"{base}/model/weights.bin")
    listed = live.send("GET", base)
    as_text = live.send("PUT", f"{base}/notes.txt", b"hello", media="text/plain")
    missing = live.send("GET", f"{base}/model/none.bin")

    assert stored[0] == 200 and b'"size":1048576' in stored[1]
    assert read == (200, payload)
    assert listed[0] == 200 and b"model/weights.bin" in listed[1]
    assert as_text[0] == 415 and missing[0] == 404


def test_the_artifact_proxy_refuses_every_trick_and_touches_nothing_outside(live: Live) -> None:
    (live.home / "secret.txt").write_bytes(b"do not serve")
    before = _files(live.home)
    answers = {}
    for raw in HOSTILE:
        key = raw.replace("\x00", "%00").replace("\\", "%5C").replace(" ", "%20") \
            .replace("\n", "%0A")
        answers[raw] = tuple(live.send(method, path, body)[0] for method, path, body in [
            ("GET", f"/api/v1/objects/{key}", None),
            ("PUT", f"/api/v1/objects/{key}", b"overwritten"),
            ("DELETE", f"/api/v1/objects/{key}", None),
            ("GET", f"/api/v1/objects-sizes/{key}", None),
            ("DELETE", f"/api/v1/objects-prefixes/{key}", None),
            ("GET", f"/api/v1/objects?prefix={key.replace('#', '%23').replace('?', '%3F')}",
             None),
        ])
        assert b"do not serve" not in live.send("GET", f"/api/v1/objects/{key}")[1]

    assert all(set(codes) <= {400, 404} for codes in answers.values()), answers
    assert _files(live.home) == before  # nothing written, replaced or deleted


def test_an_object_put_through_the_proxy_reads_back_and_is_listed(live: Live) -> None:
    payload = bytes(range(256)) * 4096
    key = f"{live.run_id}/checkpoints/step-1/model.pt"

    stored = live.send("PUT", f"/api/v1/objects/{key}", payload)
    read = live.send("GET", f"/api/v1/objects/{key}")
    size = live.send("GET", f"/api/v1/objects-sizes/{key}")
    listed = live.send("GET", f"/api/v1/objects?prefix={live.run_id}/checkpoints")
    as_json = live.send("PUT", f"/api/v1/objects/{key}", b"{}", media="application/json")
    removed = live.send("DELETE", f"/api/v1/objects-prefixes/{live.run_id}/checkpoints")

    assert stored[0] == 200 and read == (200, payload)
    assert size == (200, b'{"size":1048576}')
    assert listed[0] == 200 and key.encode() in listed[1]
    assert as_json[0] == 415 and removed[0] == 204
    assert live.send("GET", f"/api/v1/objects/{key}")[0] == 404
