"""Orchestration: pipeline definitions as data (`dag`) and the runners that execute them."""

from trainforge.orchestration.dag import Dag, Step, StepFn
from trainforge.orchestration.runner import StepEvent, StepListener, run_dag

__all__ = ["Dag", "Step", "StepEvent", "StepFn", "StepListener", "run_dag"]
