"""Training throughput and model FLOPs utilisation (MFU) of the example models, on this device.

    .venv/bin/python benchmarks/gpu_throughput.py [--device cuda] [--epochs 3]

Two models, each built from its example's spec (`examples/digits/pipeline.yaml`: the CNN on
scikit-learn's digits, 64 pixels, 10 classes; `examples/fraud/pipeline.yaml`: the MLP on the
fraud demo's features, fitted by its feature pipeline on data `generate.py` writes), trained
by the Trainer with the spec's precision, optimizer and batch size, no validation set.

Prints one JSON object; per model:
- `samples_per_s`: training samples over the wall time of `fit()` for `--epochs` epochs, after
  one warm-up epoch (CUDA context, kernel selection, allocator) that is not counted;
- `flops_per_sample`: forward and backward FLOPs of one sample, counted by
  `torch.utils.flop_counter.FlopCounterMode` on one batch;
- `peak_flops`: FLOP/s of a large square matmul in the model's compute dtype (bfloat16 under
  `bf16-mixed`, else float32 with TF32 as the spec sets it), measured in the same run on the
  same device: the baseline MFU is a ratio against;
- `mfu` = flops_per_sample * samples_per_s / peak_flops.
Small models on a large GPU are bound by kernel launches and the Python loop, not by FLOPs:
expect an MFU far below 1; the figure says how far.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from trainforge.config import load_spec
from trainforge.features import FeaturePipeline
from trainforge.models import build_model
from trainforge.train import Trainer

ROOT = Path(__file__).resolve().parents[1]


def digits_case() -> tuple[Any, np.ndarray, np.ndarray, int]:
    from sklearn.datasets import load_digits

    spec = load_spec(ROOT / "examples" / "digits" / "pipeline.yaml")
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    return spec, x, digits.target.astype(np.int64), 10


def fraud_case(rows: int) -> tuple[Any, np.ndarray, np.ndarray, int]:
    spec = load_spec(ROOT / "examples" / "fraud" / "pipeline.yaml")
    loader = importlib.util.spec_from_file_location("fraud_generate",
                                                    ROOT / "examples" / "fraud" / "generate.py")
    assert loader is not None and loader.loader is not None
    generate = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(generate)
    with tempfile.TemporaryDirectory() as folder:
        paths = generate.generate(Path(folder), days=2, rows=rows, seed=7)
        frame = pd.concat([pd.read_parquet(path) for path in paths], ignore_index=True)
    target = frame.pop(spec.data.target)
    features = FeaturePipeline.from_spec(spec.features).fit(frame)
    x = features.transform(frame).astype(np.float32)
    return spec, x, target.to_numpy(np.float32), 1


def flops_per_sample(model: torch.nn.Module, x: torch.Tensor, precision: str) -> float:
    from torch.utils.flop_counter import FlopCounterMode

    dtype = torch.bfloat16 if precision == "bf16-mixed" else None
    counter = FlopCounterMode(display=False)
    with counter, torch.autocast(x.device.type, dtype=dtype, enabled=dtype is not None):
        model(x).float().sum().backward()
    model.zero_grad(set_to_none=True)
    return counter.get_total_flops() / len(x)


def peak_flops(device: torch.device, precision: str, size: int) -> float:
    """FLOP/s of a `size` x `size` matmul in the compute dtype, the best of a few."""
    dtype = torch.bfloat16 if precision == "bf16-mixed" else torch.float32
    a = torch.randn(size, size, device=device, dtype=dtype)
    b = torch.randn(size, size, device=device, dtype=dtype)
    best = float("inf")
    for _ in range(5):
        synchronize(device)
        started = time.perf_counter()
        a @ b
        synchronize(device)
        best = min(best, time.perf_counter() - started)
    return 2 * size**3 / best


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure(case: tuple[Any, np.ndarray, np.ndarray, int], device: torch.device,
            epochs: int, matmul: int) -> dict[str, Any]:
    spec, x, y, outputs = case
    training = spec.training.model_copy(update={
        "epochs": 1, "device": device.type, "progress": "off", "early_stopping": None})
    torch.manual_seed(0)
    model = build_model(spec.model, x.shape[1], outputs)
    Trainer(model, (x, y), None, training, spec.model.task).fit()  # warm-up, not counted
    timed = training.model_copy(update={"epochs": epochs})
    synchronize(device)
    started = time.perf_counter()
    Trainer(model, (x, y), None, timed, spec.model.task).fit()
    synchronize(device)
    wall = time.perf_counter() - started
    batch = torch.from_numpy(x[: training.batch_size]).to(device)
    per_sample = flops_per_sample(model.to(device), batch, training.precision)
    samples_per_s = len(x) * epochs / wall
    peak = peak_flops(device, training.precision, matmul)
    return {"rows": len(x), "features": int(x.shape[1]), "batch_size": training.batch_size,
            "precision": training.precision, "epochs": epochs, "wall_s": wall,
            "samples_per_s": samples_per_s, "flops_per_sample": per_sample,
            "peak_flops": peak, "mfu": per_sample * samples_per_s / peak}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--fraud-rows", type=int, default=200_000)
    parser.add_argument("--matmul", type=int, default=8192, help="side of the peak matmul")
    args = parser.parse_args()
    device = torch.device(args.device)
    models = {
        "digits": measure(digits_case(), device, args.epochs, args.matmul),
        "fraud": measure(fraud_case(args.fraud_rows), device, args.epochs, args.matmul),
    }
    print(json.dumps({
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "torch": torch.__version__, "load_average": os.getloadavg(), "models": models,
    }, indent=2))


if __name__ == "__main__":
    main()
