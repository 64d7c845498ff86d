"""Copies of a state's tensors in CPU memory, so training can go on while they are written."""

from __future__ import annotations

import mmap
import os
import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

# torch and NumPy only where tensors are copied: a manager that lists checkpoints imports none
if TYPE_CHECKING:
    import numpy as np
    import torch

_ALIGN = 64  # bytes; keeps every view aligned for any dtype and for vectorised copies
_HUGE_PAGE = 2 << 20
_PIECE = 32 << 20  # bytes copied by one task
_COPY_THREADS = 4  # memory bandwidth is shared: more threads stop helping soon


class SnapshotArena:
    """One block of CPU memory, reused from save to save, that holds copies of the tensors.

    Fresh memory costs a page fault per 4 KiB on first touch, more than the copy itself, so
    the block is kept between saves and, on Linux, backed by transparent huge pages. CPU tensors
    are copied on a few threads; with CUDA tensors the block is pinned and their copies are
    asynchronous, then synchronized once.

    `reserve` takes and touches the block on a background thread ahead of the first copy, so
    that copy costs what the later ones cost.

    Not thread-safe: the owner must not call `copy` while a previous copy is still being read.
    """

    def __init__(self) -> None:
        self._block: torch.Tensor | None = None
        self._pinned = False
        self._reserving: threading.Thread | None = None

    def reserve(self, nbytes: int, pinned: bool) -> None:
        """Start taking a block of at least `nbytes` (page-locked when `pinned`, for CUDA
        tensors) and writing every page of it, on a background thread; `copy` waits for it.
        Nothing happens when the block held is already large enough."""
        self._wait_reserved()
        if self._fits(nbytes, pinned):
            return
        self._reserving = threading.Thread(target=self._take, args=(nbytes, pinned, True),
                                           name="trainforge-snapshot-reserve", daemon=True)
        self._reserving.start()

    def copy(self, tensors: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Contiguous CPU copies of `tensors`, complete when this returns (views of the block)."""
        import torch

        offsets, total = _layout(tensors)
        pinned = any(t.device.type == "cuda" for t in tensors.values())
        self._wait_reserved()
        if not self._fits(total, pinned):
            self._take(total, pinned, touch=False)
        assert self._block is not None
        copies, plain = {}, []
        for key, tensor in tensors.items():
            start = offsets[key]
            size = tensor.numel() * tensor.element_size()
            copies[key] = self._block[start : start + size].view(tensor.dtype).view(tensor.shape)
            if _is_plain(tensor):
                plain.append((_bytes_of(copies[key]), _bytes_of(tensor)))
            else:
                copies[key].copy_(tensor, non_blocking=pinned)
        _copy_in_parallel(plain)
        for device in {t.device for t in tensors.values() if t.device.type == "cuda"}:
            torch.cuda.synchronize(device)
        return copies

    def _fits(self, nbytes: int, pinned: bool) -> bool:
        return self._block is not None and self._block.numel() >= nbytes \
            and self._pinned == pinned

    def _take(self, nbytes: int, pinned: bool, touch: bool) -> None:
        self._block = None  # release the old block before taking a new one
        block = _allocate(nbytes, pinned)
        if touch and not pinned:  # page-locked memory is resident once allocated
            block.fill_(0)  # a page fault per page, here rather than in the first copy
        self._block, self._pinned = block, pinned

    def _wait_reserved(self) -> None:
        if self._reserving is not None:
            self._reserving.join()
            self._reserving = None


def state_nbytes(tensors: Mapping[str, torch.Tensor]) -> int:
    """The bytes `SnapshotArena.copy` lays `tensors` out in."""
    return _layout(tensors)[1]


def in_place(tensors: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The tensors as contiguous CPU tensors, copying only what is elsewhere or strided.

    For a blocking save: the caller does not touch them until the write returns.
    """
    return {key: t.to("cpu").contiguous() for key, t in tensors.items()}


def _is_plain(tensor: torch.Tensor) -> bool:
    """Whether the tensor's bytes are its values: dense, on the CPU, no lazy conj/neg bit."""
    return (
        tensor.device.type == "cpu"
        and tensor.is_contiguous()
        and not tensor.is_conj()
        and not tensor.is_neg()
        and tensor.numel() > 0
    )


def _bytes_of(tensor: torch.Tensor) -> np.ndarray:
    import torch

    return tensor.reshape(-1).view(torch.uint8).numpy()


def _copy_in_parallel(pairs: list[tuple[np.ndarray, np.ndarray]]) -> None:
    """Copy (destination, source) byte arrays in pieces on a few threads (NumPy drops the GIL).

    Pieces go to whichever thread is free, so one thread slowed by other work on the machine
    does not hold the rest back (torch's own parallel copy waits for its slowest thread).
    """
    import numpy as np

    pieces = [
        (dst[i : i + _PIECE], src[i : i + _PIECE])
        for dst, src in pairs
        for i in range(0, dst.size, _PIECE)
    ]
    pieces.sort(key=lambda piece: -piece[0].size)
    workers = min(_COPY_THREADS, os.cpu_count() or 1, len(pieces))
    if workers <= 1:
        for dst, src in pieces:
            np.copyto(dst, src)
        return
    with ThreadPoolExecutor(workers, thread_name_prefix="trainforge-snapshot") as pool:
        list(pool.map(lambda piece: np.copyto(*piece), pieces))


def _layout(tensors: Mapping[str, torch.Tensor]) -> tuple[dict[str, int], int]:
    offsets, total = {}, 0
    for key, tensor in tensors.items():
        offsets[key] = total
        size = tensor.numel() * tensor.element_size()
        total += -(-size // _ALIGN) * _ALIGN
    return offsets, total


def _allocate(size: int, pinned: bool) -> torch.Tensor:
    import torch

    size = max(-(-size // _HUGE_PAGE) * _HUGE_PAGE, _HUGE_PAGE)
    if pinned:
        return torch.empty(size, dtype=torch.uint8, pin_memory=True)
    block = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    if hasattr(mmap, "MADV_HUGEPAGE"):
        block.madvise(mmap.MADV_HUGEPAGE)
    return torch.frombuffer(block, dtype=torch.uint8)
