"""One attempt of a streaming training, for the kill-and-resume test.

    python stream_train_worker.py DATA_DIR CHECKPOINT_DIR NUM_WORKERS OUT [KILL_AT_STEP]

trains an MLP on the train part of DATA_DIR's streamed rows (checkpoint every 4 steps, resuming
from the newest one in CHECKPOINT_DIR), kills itself with SIGKILL right after optimizer step
KILL_AT_STEP when given, and otherwise writes the final weights to OUT.
"""

from __future__ import annotations

import gc
import os
import signal
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from stream_data import streaming_source  # noqa: E402

from trainforge.config import ModelSpec, TrainingSpec  # noqa: E402
from trainforge.models import build_model  # noqa: E402
from trainforge.train import Callback, Trainer, save_weights  # noqa: E402

gc.freeze()  # what the imports made, out of the collector's sight (as in trainforge's)
data, checkpoints, num_workers, out = sys.argv[1:5]
kill_at = int(sys.argv[5]) if len(sys.argv) > 5 else None
spec = TrainingSpec(epochs=3, batch_size=64, seed=11, deterministic=True, device="cpu",
                    progress="off", num_workers=int(num_workers), optimizer={"lr": 0.01},
                    checkpoint={"every_n_steps": 4, "keep_last": 2})


class KillAt(Callback):
    def on_step_end(self, trainer: Trainer) -> None:
        if trainer.state.global_step == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)


source = streaming_source(Path(data))
with torch.random.fork_rng():
    torch.manual_seed(0)
    model = build_model(ModelSpec(type="mlp", task="binary", hidden=[16]),
                        len(source.pipeline.feature_names), 1)
trainer = Trainer(model, source, None, spec, "binary", callbacks=[KillAt()],
                  checkpoint_dir=checkpoints, resume=True)
result = trainer.fit()
save_weights(result.model, out)
