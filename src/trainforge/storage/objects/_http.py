"""`HttpObjectStore`: the objects of `trainforge server`'s artifact root, through its proxy
(`http(s)://[:TOKEN@]host:port/api/v1/objects[/prefix]`), for a machine without access of its
own to that root.

Rules, beyond the contract's:
- the token is the location's password or the `token` storage option (a location recorded
  in a run carries none: `root_uri` and `uri_of` never show it); the server checks every key
  again and keeps its own writes atomic, so a client killed mid-upload leaves nothing;
- an upload declares its length (the server refuses chunked bodies): what `write` is given
  is spooled first (in memory up to `SPOOL_BYTES`, then a temporary file); `open` spools the
  download likewise, so a file object never holds a connection;
- every request is harmless to send twice (whole objects are put, got and deleted), so a
  refused connection, a lost answer and a 502/503/504 are tried again for `RETRY_S`: a
  checkpoint saved while the server restarts waits for it rather than failing the run; then
  the failure is an `OSError`, so `ObjectStoreError` naming the object's URI.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator, Mapping
from typing import IO, Any, BinaryIO, cast
from urllib.parse import quote

import httpx

from trainforge.config import ARTIFACT_PROXY_PATH
from trainforge.storage.http_client import send_retrying, server_address, server_client
from trainforge.storage.objects._base import Chunk, GuardedObjectStore

SPOOL_BYTES = 8 * 1024**2
RETRY_S = 60.0


class HttpObjectStore(GuardedObjectStore):
    """The objects under `location` on the server's artifact root."""

    def __init__(self, location: str, storage_options: Mapping[str, Any] | None = None):
        base, token = server_address(location)
        options = dict(storage_options or {})
        token = options.pop("token", None) or token
        server, _, path = base.partition(ARTIFACT_PROXY_PATH)
        self.root_uri = base
        self._prefix = path.strip("/")
        self._client = server_client(server, _revealed(token))

    def _list(self, prefix: str) -> dict[str, int]:
        answer = self._send("GET", ARTIFACT_PROXY_PATH, params={"prefix": self._key(prefix),
                                                       "include_temporary": "true"})
        found: dict[str, int] = answer.json()["objects"]
        strip = len(self._prefix) + 1 if self._prefix else 0
        return {key[strip:]: size for key, size in found.items()}

    def _write(self, key: str, chunks: Iterator[Chunk]) -> None:
        with tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES) as spool:
            for chunk in chunks:
                spool.write(chunk)
            self._send("PUT", self._path(key), content=_Replayable(spool), headers={
                "Content-Type": "application/octet-stream",
                "Content-Length": str(spool.tell())})

    def _open(self, key: str) -> BinaryIO:
        spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)

        def download() -> httpx.Response:
            spool.seek(0)
            spool.truncate()
            with self._client.stream("GET", self._path(key)) as answer:
                if answer.is_success:
                    for chunk in answer.iter_bytes():
                        spool.write(chunk)
                else:
                    answer.read()
                return answer

        try:
            _check(self._retrying(download), key, read=True)
        except BaseException:
            spool.close()
            raise
        spool.seek(0)
        return cast(BinaryIO, cast(IO[bytes], spool))

    def _read(self, key: str) -> bytes:
        return self._send("GET", self._path(key), key=key).content

    def _size(self, key: str) -> int:
        return int(self._send("GET", ARTIFACT_PROXY_PATH + "-sizes/" + self._quoted(key),
                              key=key).json()["size"])

    def _delete(self, key: str) -> None:
        self._send("DELETE", self._path(key))

    def _delete_prefix(self, prefix: str) -> None:
        self._send("DELETE", ARTIFACT_PROXY_PATH + "-prefixes/" + self._quoted(prefix))

    def _uri(self, key: str) -> str:
        return f"{self.root_uri}/{key}" if key else self.root_uri

    def _key(self, key: str) -> str:
        return "/".join(part for part in (self._prefix, key) if part)

    def _quoted(self, key: str) -> str:
        return quote(self._key(key), safe="/")

    def _path(self, key: str) -> str:
        return f"{ARTIFACT_PROXY_PATH}/{self._quoted(key)}"

    def _send(self, method: str, path: str, key: str | None = None,
              **request: Any) -> httpx.Response:
        answer = self._retrying(lambda: self._client.request(method, path, **request))
        _check(answer, key, read=key is not None)
        return answer

    def _retrying(self, send: Callable[[], httpx.Response]) -> httpx.Response:
        try:
            return send_retrying(send, RETRY_S, idempotent=True)
        except httpx.HTTPError as exc:
            raise OSError(f"{type(exc).__name__}: {exc}") from exc


class _Replayable:
    """An upload's body, read from the start each time the request is sent."""

    def __init__(self, spool: IO[bytes]) -> None:
        self._spool = spool

    def __iter__(self) -> Iterator[bytes]:
        self._spool.seek(0)
        while data := self._spool.read(SPOOL_BYTES):
            yield data


def _check(answer: httpx.Response, key: str | None, read: bool) -> None:
    """`FileNotFoundError` for a missing object read, `OSError` for any other refusal."""
    if answer.is_success:
        return
    if answer.status_code == 404 and read:
        raise FileNotFoundError(f"no object {key!r}")
    answer.read()
    try:
        detail = answer.json().get("detail")
    except ValueError:
        detail = answer.text[:200]
    hint = (" (an editor's API token is needed: TRAINFORGE_TOKEN)"
            if answer.status_code in (401, 403) else "")
    raise OSError(f"the server answered {answer.status_code}: {detail}{hint}")


def _revealed(token: Any) -> str | None:
    """A token given as a spec's storage option is a `SecretStr` there."""
    reveal = getattr(token, "get_secret_value", None)
    return str(reveal()) if callable(reveal) else (str(token) if token else None)
