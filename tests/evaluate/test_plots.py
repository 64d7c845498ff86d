import io

import numpy as np
import pandas as pd
from matplotlib import image

from trainforge.config import EvaluationSpec
from trainforge.evaluate import render_plots, score_report

PNG = b"\x89PNG\r\n\x1a\n"


def loaded(png: bytes) -> np.ndarray:
    assert png.startswith(PNG)
    return image.imread(io.BytesIO(png), format="png")


def test_binary_plots_are_pngs_with_one_per_slice_column():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 300)
    scores = np.clip(0.4 * y + 0.6 * rng.random(300), 0, 1)
    frame = pd.DataFrame({"region": rng.choice(["n", "s"], 300), "device type": "pos"})
    spec = EvaluationSpec(slices=["region", "device type"])
    report = score_report(scores, y, "binary", spec, "test", frame=frame)
    plots = render_plots(scores, y, "binary", report, ("legit", "fraud"))
    assert set(plots) == {"roc.png", "pr.png", "confusion_matrix.png", "calibration.png",
                          "slice_region.png", "slice_device_type.png"}
    for png in plots.values():
        pixels = loaded(png)
        assert pixels.ndim == 3 and pixels.shape[0] > 100 and pixels.shape[1] > 100
        assert pixels.std() > 0  # something was drawn


def test_multiclass_plots_and_curves_left_out_without_both_classes():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 3, 200)
    probs = rng.dirichlet(np.ones(3), 200)
    spec = EvaluationSpec()
    report = score_report(probs, y, "multiclass", spec, "test")
    plots = render_plots(probs, y, "multiclass", report, ("a", "b", "c"))
    assert set(plots) == {"roc.png", "pr.png", "confusion_matrix.png", "calibration.png"}
    for png in plots.values():
        loaded(png)
    one_class = np.zeros(20, dtype=np.int64)
    scores = rng.random(20)
    report = score_report(scores, one_class, "binary", spec, "test")
    assert set(render_plots(scores, one_class, "binary", report)) == {
        "confusion_matrix.png", "calibration.png"}


def test_regression_draws_slices_only():
    y = np.arange(40, dtype=float)
    frame = pd.DataFrame({"site": ["a", "b"] * 20})
    report = score_report(y + 1, y, "regression", EvaluationSpec(slices=["site"]), "test",
                          frame=frame)
    plots = render_plots(y + 1, y, "regression", report)
    assert set(plots) == {"slice_site.png"}
    loaded(plots["slice_site.png"])
