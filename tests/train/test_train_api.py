"""The public surface of `trainforge.train` (a change here is a change for every user)."""

import trainforge.train as train


def test_train_exports_exactly_its_public_api():
    assert train.__all__ == [
        "Batch", "BatchSource", "Callback", "EarlyStopping", "LRSchedule", "LoaderBatches",
        "MetricSink", "NanGuard", "NullSink", "Precision", "PreemptionNotice", "ProfilerCallback",
        "StoredModel", "Strategy", "TensorBatches", "TrainResult", "TrainState", "Trainer",
        "build_optimizer", "infer_task", "load_stored_model", "load_weights",
        "logged_metric_names", "lr_factor", "make_batches", "make_clipper", "make_loss",
        "make_precision", "make_progress", "make_strategy", "process_group", "resolve_device",
        "save_weights"]
    assert all(hasattr(train, name) for name in train.__all__)
