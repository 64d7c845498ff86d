"""Bodies of bytes, both ways: an upload spooled under its limit (in memory up to
`SPOOL_BYTES`, then in a temporary file), so the store receives it whole and writes it
atomically; a download streamed in chunks."""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import BinaryIO, cast

from fastapi import HTTPException, Request
from fastapi.responses import StreamingResponse

SPOOL_BYTES = 8 * 1024**2
CHUNK_BYTES = 1024**2


@asynccontextmanager
async def spooled_upload(request: Request, limit: int,
                         what: str) -> AsyncIterator[tuple[BinaryIO, int]]:
    """The request's body, read from its start, and its size; 413 naming `what` ("an
    artifact") once it passes `limit` bytes."""
    with tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES) as buffer:
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise HTTPException(413, f"{what} is at most {limit} bytes")
            buffer.write(chunk)
        buffer.seek(0)
        yield cast(BinaryIO, buffer), size  # a spooled file reads as one


def streamed(source: BinaryIO) -> StreamingResponse:
    """`source`'s bytes as the answer, closed once sent."""
    return StreamingResponse(_chunks(source), media_type="application/octet-stream")


def _chunks(source: BinaryIO) -> Iterator[bytes]:
    with source:
        while chunk := source.read(CHUNK_BYTES):
            yield chunk
