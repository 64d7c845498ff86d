"""How the registry tests' two fraud versions are trained and gated (a module of its own: test
modules import it, never a conftest)."""

NO_SLICES = ["evaluation.slices=[]", "evaluation.plots=false"]  # the slice-gap gate's "none"
V1 = ["training.epochs=2", *NO_SLICES]
V2 = ["training.epochs=1", "training.seed=5", *NO_SLICES]
MIN_AUC = 0.75
MAX_DROP = 0.001
