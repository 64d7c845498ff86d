"""Orchestration: pipeline definitions as data (`dag`, `steps`) and the runners that execute
them (`runner`), with the value store, cache and step context they use."""

from trainforge.orchestration.context import StepContext
from trainforge.orchestration.dag import Dag, RetryPolicy, Step, StepFn, to_dot
from trainforge.orchestration.runner import (
    InProcessRunner,
    PipelineOutcome,
    Runner,
    RunOptions,
    StepEvent,
    StepListener,
    run_dag,
)
from trainforge.orchestration.steps import Pipeline, StepDefinition, step
from trainforge.orchestration.values import ValueRef, ValueStore

__all__ = [
    "Dag",
    "InProcessRunner",
    "Pipeline",
    "PipelineOutcome",
    "RetryPolicy",
    "RunOptions",
    "Runner",
    "Step",
    "StepContext",
    "StepDefinition",
    "StepEvent",
    "StepFn",
    "StepListener",
    "ValueRef",
    "ValueStore",
    "run_dag",
    "step",
    "to_dot",
]
