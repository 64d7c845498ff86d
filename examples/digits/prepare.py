"""Write scikit-learn's bundled digits images as one Parquet file for the digits pipeline.

    python examples/digits/prepare.py [--out examples/digits/data]

1,797 grey 8x8 images of the digits 0-9 (pixel values 0-16), one row each: `image_id`, the 64
pixels `px_0` ... `px_63` in row-major order, and `label`. Nothing is downloaded: the images ship
with scikit-learn. The file is the same bytes on every run; it is written to a temporary file
and renamed into place, and left alone when it already exists.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

import pandas as pd

FILE_NAME = "digits.parquet"
PIXELS = [f"px_{i}" for i in range(64)]


def digits_frame() -> pd.DataFrame:
    from sklearn.datasets import load_digits

    digits = load_digits()
    frame = pd.DataFrame(digits.data.astype("int64"), columns=PIXELS)
    frame.insert(0, "image_id", [f"digit-{i:04d}" for i in range(len(frame))])
    frame["label"] = digits.target.astype("int64")
    return frame


def prepare(out: str | Path) -> Path:
    """The Parquet file under `out`, written unless it is already there."""
    out = Path(out)
    path = out / FILE_NAME
    if path.exists():
        return path
    out.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=out, prefix=".digits-", suffix=".parquet")
    os.close(handle)
    try:
        digits_frame().to_parquet(temporary, index=False)
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "data"))
    print(prepare(parser.parse_args().out))


if __name__ == "__main__":
    main()
