"""The state format: exact round trips of every kind of value, RNG states and a whole resume."""

from __future__ import annotations

import math
import random
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from checkpoint_helpers import full_state, small_training, train_step
from safetensors.torch import load_file

from trainforge.config import CheckpointSpec
from trainforge.errors import CheckpointError
from trainforge.train.checkpoint import CheckpointManager, capture_rng_state, restore_rng_state
from trainforge.train.checkpoint._checksum import ChunkedHasher, checksum
from trainforge.train.checkpoint._codec import decode, encode
from trainforge.train.checkpoint._snapshot import SnapshotArena, state_nbytes


def roundtrip(tmp_path: Path, state: dict, blocking: bool = True) -> dict:
    manager = CheckpointManager(tmp_path / "ckpt", CheckpointSpec(), run_id="r1")
    manager.save(1, state, blocking=blocking)
    loaded, info = manager.load()
    assert info.step == 1 and info.run_id == "r1"
    return loaded


def assert_identical(actual, expected, path: str = "") -> None:
    """Same types, same keys in the same order, bit-identical tensors and arrays."""
    assert type(actual) is type(expected), path
    if isinstance(expected, torch.Tensor):
        assert actual.dtype == expected.dtype and actual.shape == expected.shape, path
        assert torch.equal(raw_bytes(actual), raw_bytes(expected)), path
    elif isinstance(expected, np.ndarray):
        assert actual.dtype == expected.dtype and actual.shape == expected.shape, path
        assert np.array_equal(actual, expected, equal_nan=expected.dtype.kind == "f"), path
    elif isinstance(expected, dict):
        assert list(actual) == list(expected), path
        for key in expected:
            assert type(next(k for k in actual if k == key)) is type(key), path
            assert_identical(actual[key], expected[key], f"{path}/{key!r}")
        if hasattr(expected, "_metadata"):
            assert actual._metadata == expected._metadata, path
    elif isinstance(expected, (list, tuple)):
        assert len(actual) == len(expected), path
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            assert_identical(a, e, f"{path}/{i}")
    elif isinstance(expected, float) and math.isnan(expected):
        assert math.isnan(actual), path
    else:
        assert actual == expected, path
        if isinstance(expected, float):
            assert math.copysign(1, actual) == math.copysign(1, expected), path


def raw_bytes(tensor: torch.Tensor) -> torch.Tensor:
    """The bytes of a tensor (NaN payloads and -0.0 included), whatever its layout."""
    return tensor.contiguous().reshape(-1).view(torch.uint8)


ODD_VALUES = {
    "tuple": (1, (2.5, "x"), None, [True, False]),
    "int keys": {0: "a", 1: {2: 3}, -5: None},
    "mixed keys": {"0": 1, 0: 2, 1.5: 3, True: 4, None: 5},
    "tag key": {"$t": "tuple", "v": [1]},
    "/ and # and ~ in keys": {"a/b": 1, "#i0": 2, "~0": 3, "a": {"b": 4}},
    "bytes": b"\x00\xffpayload",
    "floats": [0.1, -0.0, 1e308, 5e-324, float("inf"), float("-inf"), float("nan")],
    "big int": 2**100,
    "numpy scalars": [np.float32(1.5), np.int64(-3), np.bool_(True), np.float64("nan")],
    "numpy arrays": [np.arange(6, dtype=np.uint32).reshape(2, 3), np.array(2.5), np.zeros(0)],
    "empty": [{}, [], ()],
    "__metadata__": torch.ones(2),
    "tensors in lists": [torch.zeros(2), (torch.ones(1, dtype=torch.int64),)],
    "text": "snowman ☃ and quotes \" '",
}


def test_every_kind_of_value_round_trips_exactly(tmp_path: Path) -> None:
    assert_identical(roundtrip(tmp_path, ODD_VALUES), ODD_VALUES)


@pytest.mark.parametrize(
    "dtype",
    [torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32,
     torch.int16, torch.int8, torch.uint8, torch.uint16, torch.uint32, torch.uint64, torch.bool,
     torch.float8_e4m3fn, torch.float8_e5m2, torch.complex64],
)  # fmt: skip
@pytest.mark.parametrize("blocking", [True, False], ids=["blocking", "async"])
def test_tensor_dtypes_and_layouts_round_trip_bit_exactly(tmp_path: Path, dtype, blocking) -> None:
    base = torch.randn(3, 5, dtype=torch.float64) * 100
    if dtype == torch.complex64:
        base = torch.complex(base, -base)
    tensors = {
        "matrix": base.to(dtype),
        "transposed": base.to(dtype).t(),
        "scalar": base[0, 0].to(dtype),
        "empty": torch.empty(0, 3, dtype=dtype),
        "slice": base.to(dtype)[1:, 2:],
    }
    assert_identical(roundtrip(tmp_path, tensors, blocking), tensors)


def test_snapshot_arena_copies_into_one_reused_block() -> None:
    arena = SnapshotArena()
    tensors = {"a": torch.randn(5, 3).t(), "b": torch.tensor(True), "c": torch.zeros(0, 2)}
    first = arena.copy(tensors)
    assert_identical(first, tensors)
    tensors["a"].add_(1)
    second = arena.copy(tensors)
    assert second["a"].data_ptr() == first["a"].data_ptr()  # the same memory, reused
    assert_identical(second, tensors)
    bigger = {"d": torch.arange(5_000_000, dtype=torch.float64), "e": torch.ones(3)}  # in pieces
    assert_identical(arena.copy(bigger), bigger)


def test_a_reserved_block_is_the_one_the_first_copy_fills() -> None:
    arena = SnapshotArena()
    tensors = {"w": torch.randn(300, 200), "b": torch.randn(200)}
    arena.reserve(state_nbytes(tensors), pinned=False)  # in the background
    first = arena.copy(tensors)  # waits for the reservation
    assert_identical(first, tensors)
    arena.reserve(state_nbytes(tensors), pinned=False)  # large enough already: kept
    assert arena.copy(tensors)["w"].data_ptr() == first["w"].data_ptr()
    arena.reserve(10, pinned=False)
    bigger = {"w": torch.randn(600, 200)}  # more than reserved: a new block, still right
    assert_identical(arena.copy(bigger), bigger)


def test_prepare_then_an_async_save_stores_the_state_and_blocking_saves_skip_it(
    tmp_path: Path,
) -> None:
    model = torch.nn.Linear(40, 3)
    optimizer = torch.optim.AdamW(model.parameters())
    model(torch.randn(4, 40)).sum().backward()
    optimizer.step()
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict()}
    manager = CheckpointManager(tmp_path / "async", CheckpointSpec(async_save=True), "r1")
    manager.prepare(state, headroom=0.01)
    manager.save(1, state)
    assert manager.wait() is not None
    assert_identical(manager.load()[0], state)
    blocking = CheckpointManager(tmp_path / "blocking", CheckpointSpec(async_save=False), "r1")
    blocking.prepare(state)
    assert blocking._arena._block is None and blocking._arena._reserving is None


@pytest.mark.parametrize("algorithm", ["xxh3_128", "sha256"])
@pytest.mark.parametrize("size", [0, 1, 15, 16, 17, 48, 50])
def test_checksum_is_the_same_however_the_bytes_arrive(algorithm: str, size: int) -> None:
    data = bytes(range(size))
    hasher = ChunkedHasher(algorithm, chunk_bytes=16)
    for start in range(0, size, 7):
        hasher.update(memoryview(data)[start : start + 7])
    assert hasher.size == size
    assert hasher.hexdigest() == checksum(data, algorithm, chunk_bytes=16)
    if size:
        flipped = bytes([data[0] ^ 1]) + data[1:]
        assert checksum(flipped, algorithm, chunk_bytes=16) != hasher.hexdigest()


def test_flat_keys_keep_distinct_paths_apart() -> None:
    state = {"a/b": torch.zeros(1), "a": {"b": torch.zeros(1), 0: torch.zeros(1)}, "a~1b": [0]}
    state["a"]["0"] = torch.zeros(1)
    state["#i0"] = torch.zeros(1)
    _, tensors = encode(state)
    assert sorted(tensors) == ["a/#i0", "a/0", "a/b", "a~1b", "~2i0"]


def test_optimizer_keys_are_readable() -> None:
    _, optimizer, _ = small_training()
    _, tensors = encode({"optimizer": optimizer.state_dict()})
    assert "optimizer/state/#i0/exp_avg" in tensors


@pytest.mark.parametrize(
    ("state", "where"),
    [
        ({"a": {"b": {1, 2}}}, "'a/b'"),
        ({"a": [object()]}, "'a/#0'"),
        ({"a": {(1, 2): 3}}, "'a': key (1, 2) is a tuple"),
        ({"a": np.array(["x"], dtype=object)}, "'a'"),
        ({"a": torch.Size([2])}, "'a'"),
    ],
)
def test_unstorable_values_are_refused_with_their_path(state: dict, where: str) -> None:
    with pytest.raises(CheckpointError, match=re.escape(f"state at {where}")):
        encode(state)


def test_decode_rejects_unknown_tags() -> None:
    with pytest.raises(CheckpointError, match="unknown tag"):
        decode({"x": {"$t": "pickle", "v": "gASV"}}, {})


def test_the_tensor_file_is_plain_safetensors(tmp_path: Path, training_state: dict) -> None:
    manager = CheckpointManager(tmp_path, CheckpointSpec())
    manager.save(3, training_state, blocking=True)
    tensors = load_file(tmp_path / "step-0000000003" / "tensors.safetensors")
    for name, value in training_state["model"].items():
        assert torch.equal(tensors[f"model/{name}"], value)


def test_training_state_round_trips_exactly(tmp_path: Path, training_state: dict) -> None:
    assert_identical(roundtrip(tmp_path, training_state), training_state)


def test_rng_state_restores_the_same_draws(tmp_path: Path) -> None:
    random.seed(1)
    np.random.seed(2)
    torch.manual_seed(3)
    np.random.standard_normal()  # leaves a cached gaussian in NumPy's legacy state
    state = roundtrip(tmp_path, {"rng": capture_rng_state()})["rng"]
    expected = (random.random(), np.random.standard_normal(3), torch.rand(3))
    random.seed(99)
    np.random.seed(99)
    torch.manual_seed(99)
    restore_rng_state(state)
    assert random.random() == expected[0]
    assert np.array_equal(np.random.standard_normal(3), expected[1])
    assert torch.equal(torch.rand(3), expected[2])


def test_resuming_from_a_checkpoint_continues_bit_identically(tmp_path: Path) -> None:
    model, optimizer, scheduler = small_training()
    manager = CheckpointManager(tmp_path, CheckpointSpec())
    manager.save(2, full_state(model, optimizer, scheduler))
    manager.wait()
    expected = [train_step(model, optimizer) for _ in range(3)]

    fresh_model, fresh_optimizer, fresh_scheduler = small_training(seed=42)
    state, _ = manager.load()
    fresh_model.load_state_dict(state["model"])
    fresh_optimizer.load_state_dict(state["optimizer"])
    fresh_scheduler.load_state_dict(state["scheduler"])
    restore_rng_state(state["rng"])
    assert [train_step(fresh_model, fresh_optimizer) for _ in range(3)] == expected
    for name, value in model.state_dict().items():
        assert torch.equal(fresh_model.state_dict()[name], value)
    assert fresh_scheduler.state_dict() == scheduler.state_dict()
