"""Where training runs: one device, or one process per device under torchrun (DDP or FSDP).

A strategy owns the device of this process, the process group, how the model is wrapped, and
the few collective operations the trainer needs (each step's loss and gradient norm over all
ranks, means of metrics, the validation outputs of every rank, gradient synchronisation during
accumulation, a barrier).

Rules:
- the process group is the entry point's to join: `process_group(device)` (a torchrun worker,
  the CLI, a user's script) joins it from torchrun's environment (RANK, WORLD_SIZE, LOCAL_RANK,
  MASTER_ADDR, MASTER_PORT), or without that environment makes a group of one process, and
  leaves it when the block ends; NCCL on CUDA, gloo on CPU. `ddp` and `fsdp` strategies use the
  group they find and refuse to start without one;
- on CUDA each process uses device `cuda:LOCAL_RANK` (made current by `process_group`);
- methods that communicate must be called by every rank in the same order; the trainer does,
  since every rank runs the same number of steps;
- `fsdp` shards each direct child of the model that holds parameters, then the model
  (`torch.distributed.fsdp.fully_shard`), after broadcasting rank 0's weights so every rank
  starts from the same ones; `export` gathers the full weights into a plain copy of the model.
"""

from __future__ import annotations

import contextlib
import copy
import math
import os
from collections.abc import Iterator
from typing import Any, ContextManager, Protocol

import torch
import torch.distributed as dist
from torch import nn

from trainforge.errors import TrainingError

STRATEGIES = ("single", "ddp", "fsdp")
_NO_CONTEXT = contextlib.nullcontext()


def resolve_device(name: str) -> torch.device:
    """`auto` is CUDA when available, else CPU; asking for CUDA without one is an error."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise TrainingError("training.device: 'cuda' requested but no CUDA device is available")
    return torch.device(name)


def _norms(grads: list[torch.Tensor]) -> list[torch.Tensor]:
    """Each gradient's 2-norm, from one foreach kernel per device and dtype.

    `torch._foreach_norm` directly: `torch.nn.utils.get_total_norm` spends about twice as long
    in Python, and this runs on every optimizer step.
    """
    return list(torch._foreach_norm(grads)) if grads else []


class Strategy(Protocol):
    """Where training runs: the contract the trainer and checkpointing call (rules above).

    `SingleDevice`, `DDPStrategy` and `FSDPStrategy` satisfy it structurally; `make_strategy`
    picks one. `rank` and `world_size` are fixed once built; `device` is this process's device.
    """

    name: str
    device: torch.device
    rank: int
    world_size: int

    @property
    def is_rank_zero(self) -> bool:
        """Whether this process reports (to the run, the progress, the checkpoint files)."""

    def wrap(self, model: nn.Module) -> nn.Module:
        """The model as the training step calls it (moved to the device, wrapped, sharded)."""

    def export(self, model: nn.Module) -> nn.Module:
        """A plain module holding the full trained weights (every rank calls this)."""

    def sync_gradients(self, enabled: bool) -> ContextManager[Any]:
        """Context of one micro-batch's backward; `enabled=False` defers the gradient sync."""

    def loss_value(self, loss: torch.Tensor) -> float:
        """The step's loss, the mean over ranks (NaN or Inf when any rank's is)."""

    def step_values(self, loss: torch.Tensor, grads: list[torch.Tensor]) -> tuple[float, float]:
        """The step's loss (as `loss_value`) and the 2-norm of all gradients together, read from
        the device in one transfer; the norm is NaN or Inf when any gradient is."""

    def grad_norm(self, grads: list[torch.Tensor]) -> float:
        """The 2-norm of all gradients together (over every rank's shards)."""

    def reduce_sum(self, tensor: torch.Tensor) -> torch.Tensor:
        """The sum of `tensor` over ranks; `tensor` itself is left as it is."""

    def reduce_mean(self, tensor: torch.Tensor) -> torch.Tensor:
        """The mean of `tensor` over ranks; `tensor` itself is left as it is."""

    def gather(self, tensor: torch.Tensor) -> torch.Tensor:
        """Every rank's `tensor` (the same shape on each), stacked in rank order along a new
        first dimension, on every rank."""

    def barrier(self) -> None:
        """Wait until every rank got here."""

    def model_state(self, model: nn.Module) -> dict[str, Any]:
        """The model's full state, as a checkpoint holds it."""

    def load_model_state(self, model: nn.Module, state: dict[str, Any]) -> None:
        """Load a full state from `model_state` into the (wrapped) model."""

    def optimizer_state(self, model: nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
        """The optimizer's full state, as a checkpoint holds it."""

    def load_optimizer_state(
        self, model: nn.Module, optimizer: torch.optim.Optimizer, state: dict[str, Any]
    ) -> None:
        """Load a full state from `optimizer_state` into the optimizer."""


class SingleDevice:
    """One process on one device: nothing to wrap, nothing to communicate."""

    name = "single"

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.rank = 0
        self.world_size = 1

    @property
    def is_rank_zero(self) -> bool:
        return self.rank == 0

    def wrap(self, model: nn.Module) -> nn.Module:
        return model.to(self.device)

    def export(self, model: nn.Module) -> nn.Module:
        return model

    def sync_gradients(self, enabled: bool) -> ContextManager[Any]:
        return _NO_CONTEXT

    def loss_value(self, loss: torch.Tensor) -> float:
        return loss.item()

    def step_values(self, loss: torch.Tensor, grads: list[torch.Tensor]) -> tuple[float, float]:
        values = torch.stack([loss.detach(), *_norms(grads)]).tolist()
        return values[0], math.sqrt(sum(v * v for v in values[1:]))

    def grad_norm(self, grads: list[torch.Tensor]) -> float:
        return math.sqrt(sum(v * v for v in torch.stack(_norms(grads)).tolist())) if grads else 0.0

    def reduce_sum(self, tensor: torch.Tensor) -> torch.Tensor:
        return tensor

    def reduce_mean(self, tensor: torch.Tensor) -> torch.Tensor:
        return tensor

    def gather(self, tensor: torch.Tensor) -> torch.Tensor:
        return tensor.unsqueeze(0)

    def barrier(self) -> None:
        pass

    def model_state(self, model: nn.Module) -> dict[str, Any]:
        return model.state_dict()

    def load_model_state(self, model: nn.Module, state: dict[str, Any]) -> None:
        model.load_state_dict(state)

    def optimizer_state(self, model: nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
        return optimizer.state_dict()

    def load_optimizer_state(
        self, model: nn.Module, optimizer: torch.optim.Optimizer, state: dict[str, Any]
    ) -> None:
        optimizer.load_state_dict(state)


class _ProcessGroup(SingleDevice):
    """A rank of a process group: sums and means are all-reduces."""

    grads_sharded = False  # True when each rank holds a shard of every gradient (FSDP)

    def __init__(self, device: torch.device) -> None:
        if not dist.is_initialized():
            raise TrainingError(
                f"training.strategy: {self.name!r} needs a process group: run it through "
                "`trainforge run SPEC --nproc-per-node N`, or join one in your script with "
                "`with trainforge.train.process_group(): ...` (torchrun's environment, or a "
                "group of one process without it)")
        super().__init__(_rank_device(device))
        self.rank = dist.get_rank()
        self.world_size = dist.get_world_size()

    def loss_value(self, loss: torch.Tensor) -> float:
        return self.reduce_mean(loss.detach().float()).item()

    def step_values(self, loss: torch.Tensor, grads: list[torch.Tensor]) -> tuple[float, float]:
        local = torch.stack([loss.detach().float(), self._squares(grads)])
        loss_sum, squares = self.reduce_sum(local).tolist()
        return loss_sum / self.world_size, self._norm(squares)

    def grad_norm(self, grads: list[torch.Tensor]) -> float:
        return self._norm(self.reduce_sum(self._squares(grads)).item())

    def _squares(self, grads: list[torch.Tensor]) -> torch.Tensor:
        """This rank's sum of squared gradient entries (of its shards, under FSDP)."""
        norms = _norms([_local(g) for g in grads])
        if not norms:
            return torch.zeros((), device=self.device)
        return torch.stack(norms).float().square().sum()

    def _norm(self, squares_over_ranks: float) -> float:
        # Replicated gradients (DDP) were summed world_size times; shards (FSDP) once each.
        return math.sqrt(squares_over_ranks if self.grads_sharded
                         else squares_over_ranks / self.world_size)

    def reduce_sum(self, tensor: torch.Tensor) -> torch.Tensor:
        total = tensor.detach().clone()
        dist.all_reduce(total)
        return total

    def reduce_mean(self, tensor: torch.Tensor) -> torch.Tensor:
        return self.reduce_sum(tensor) / self.world_size

    def gather(self, tensor: torch.Tensor) -> torch.Tensor:
        local = tensor.detach().contiguous()
        parts = [torch.empty_like(local) for _ in range(self.world_size)]
        dist.all_gather(parts, local)
        return torch.stack(parts)

    def barrier(self) -> None:
        dist.barrier()


class DDPStrategy(_ProcessGroup):
    """DistributedDataParallel: full weights on every rank, gradients averaged by all-reduce."""

    name = "ddp"

    def wrap(self, model: nn.Module) -> nn.Module:
        from torch.nn.parallel import DistributedDataParallel

        device_ids = [self.device.index] if self.device.type == "cuda" else None
        self._ddp = DistributedDataParallel(model.to(self.device), device_ids=device_ids)
        return self._ddp

    def sync_gradients(self, enabled: bool) -> ContextManager[Any]:
        return _NO_CONTEXT if enabled else self._ddp.no_sync()


class FSDPStrategy(_ProcessGroup):
    """FSDP2 (`fully_shard`): weights, gradients and optimizer state sharded across ranks."""

    name = "fsdp"
    grads_sharded = True

    def wrap(self, model: nn.Module) -> nn.Module:
        from torch.distributed.device_mesh import init_device_mesh

        fully_shard = fsdp2()

        model.to(self.device)
        for tensor in [*model.parameters(), *model.buffers()]:
            dist.broadcast(tensor.data, src=0)
        self._template = copy.deepcopy(model).to("meta")
        mesh = init_device_mesh(self.device.type, (self.world_size,))
        for child in model.children():
            if any(p.requires_grad for p in child.parameters()):
                fully_shard(child, mesh=mesh)
        self._root = fully_shard(model, mesh=mesh)
        return self._root

    def export(self, model: nn.Module) -> nn.Module:
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

        options = StateDictOptions(full_state_dict=True)
        full = get_model_state_dict(model, options=options)
        plain = copy.deepcopy(self._template).to_empty(device=self.device)
        plain.load_state_dict(full)
        return plain

    def sync_gradients(self, enabled: bool) -> ContextManager[Any]:
        return _NO_CONTEXT if enabled else _deferred_reduce_scatter(self._root)

    def model_state(self, model: nn.Module) -> dict[str, Any]:
        """The full (unsharded) state on rank 0, in CPU memory; {} on other ranks."""
        from torch.distributed.checkpoint.state_dict import get_model_state_dict

        return get_model_state_dict(model, options=_gathered())

    def load_model_state(self, model: nn.Module, state: dict[str, Any]) -> None:
        """Load a full state (every rank holds all of it); each rank keeps its shard."""
        from torch.distributed.checkpoint.state_dict import set_model_state_dict

        set_model_state_dict(model, state, options=_full())

    def optimizer_state(self, model: nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
        """As `model_state`: full, on rank 0, keyed by parameter name."""
        from torch.distributed.checkpoint.state_dict import get_optimizer_state_dict

        return get_optimizer_state_dict(model, optimizer, options=_gathered())

    def load_optimizer_state(
        self, model: nn.Module, optimizer: torch.optim.Optimizer, state: dict[str, Any]
    ) -> None:
        from torch.distributed.checkpoint.state_dict import set_optimizer_state_dict

        set_optimizer_state_dict(model, optimizer, state, options=_full())

    def sharded_state(self, model: nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
        """This rank's shards of the model and optimizer states (DTensors, nothing gathered):
        what a sharded checkpoint (`torch.distributed.checkpoint`) saves, and, from a fresh
        model, the layout a sharded checkpoint loads into at this world size."""
        from torch.distributed.checkpoint.state_dict import get_state_dict

        model_state, optimizer_state = get_state_dict(model, optimizer)
        return {"model": model_state, "optimizer": optimizer_state}

    def load_sharded_state(
        self, model: nn.Module, optimizer: torch.optim.Optimizer, state: dict[str, Any]
    ) -> None:
        """Load `sharded_state`'s layout, filled from a checkpoint, into the model and
        optimizer."""
        from torch.distributed.checkpoint.state_dict import set_state_dict

        set_state_dict(model, optimizer, model_state_dict=state["model"],
                       optim_state_dict=state["optimizer"])


def _gathered() -> Any:
    """State-dict options: full tensors gathered to rank 0's CPU memory (a checkpoint's form)."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions

    return StateDictOptions(full_state_dict=True, cpu_offload=True)


def _full() -> Any:
    """State-dict options: full tensors, held by every rank."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions

    return StateDictOptions(full_state_dict=True)


def fsdp2() -> Any:
    """`torch.distributed.fsdp.fully_shard`, public since torch 2.6."""
    try:
        from torch.distributed.fsdp import fully_shard
    except ImportError:
        raise TrainingError(f"training.strategy: 'fsdp' needs torch >= 2.6 (FSDP2's "
                            f"fully_shard); this is torch {torch.__version__}") from None
    return fully_shard


def make_strategy(name: str, device_name: str) -> Strategy:
    """The strategy of `training.strategy` on the device of `training.device`."""
    device = resolve_device(device_name)
    if name == "single":
        return SingleDevice(device)
    if name == "ddp":
        return DDPStrategy(device)
    if name == "fsdp":
        return FSDPStrategy(device)
    raise TrainingError(f"training.strategy: expected one of {', '.join(STRATEGIES)}, got {name!r}")


@contextlib.contextmanager
def process_group(device_name: str = "auto") -> Iterator[torch.device]:
    """Join the default process group for the block (entry points only); yields this rank's
    device. Inside torchrun it joins the job's group, elsewhere it makes a group of one; a
    group already joined is used as it is and left alone."""
    device = _rank_device(resolve_device(device_name))
    if device.type == "cuda":
        torch.cuda.set_device(device)
    if dist.is_initialized():
        yield device
        return
    backend = "nccl" if device.type == "cuda" else "gloo"
    if "WORLD_SIZE" in os.environ:
        dist.init_process_group(backend, device_id=device if device.type == "cuda" else None)
    else:
        dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1)
    try:
        yield device
        if dist.is_initialized():
            # Every rank's collectives are done before any rank tears down: a gloo worker
            # thread still holding a finished work's tensors at interpreter exit aborts.
            dist.barrier()
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def _rank_device(device: torch.device) -> torch.device:
    """This rank's device: `cuda:LOCAL_RANK` on CUDA."""
    if device.type == "cuda":
        return torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    return device


@contextlib.contextmanager
def _deferred_reduce_scatter(root: Any) -> Any:
    root.set_requires_gradient_sync(False)
    try:
        yield
    finally:
        root.set_requires_gradient_sync(True)


def _local(tensor: torch.Tensor) -> torch.Tensor:
    """A DTensor's shard on this rank (a plain tensor is returned as is)."""
    to_local = getattr(tensor, "to_local", None)
    return to_local() if to_local is not None else tensor
