"""Model registry: promotion gates (pure) and model versions."""

from trainforge.registry._gates import GateResult, check_gates

__all__ = ["GateResult", "check_gates"]
