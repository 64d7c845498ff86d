"""Orchestration: pipeline definitions as data (`dag`, `steps`) and the runners that execute
them (`runner`), with the value store, cache and step context they use."""

from trainforge.orchestration.context import StepContext
from trainforge.orchestration.dag import Dag, RetryPolicy, Step, StepFn, to_dot
from trainforge.orchestration.driver import drive
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
from trainforge.orchestration.value_types import DecodeContext
from trainforge.orchestration.values import ValueRef, ValueStore, value_store

__all__ = [
    "Dag",
    "DecodeContext",
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
    "drive",
    "run_dag",
    "step",
    "to_dot",
    "value_store",
]
