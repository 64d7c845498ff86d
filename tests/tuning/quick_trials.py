"""Trial overrides as short as the tuning checks allow: one small epoch each, no progress
bars (a module of its own: test modules import it, never a conftest)."""

QUICK = ["training.epochs=1", "training.progress=off", "training.early_stopping=null"]
