"""The communication schemes: what one worker does between its backward pass and the next
step, and how many bytes it hands to ``torch.distributed`` doing it.

Accounting (``Scheme.sent``): the payload bytes of the tensors this worker hands to
collective calls during training steps, i.e. what the scheme asks the network to move,
before the collective algorithm's own factor (gloo's ring all-reduce sends about
2 (W-1)/W times its payload per worker). ``P`` is the bytes of the model's trainable
parameters (float32: 4 per element); gradients are as large. Per step and worker:

* ``allreduce``: P (one all-reduce of the flattened gradients);
* ``pssgd``: 2 P (a reduce of the flattened gradients to rank 0, a broadcast of the
  parameters from rank 0);
* ``mavg``: P per averaging (an all-reduce of the flattened parameters), so P / k per step
  on average, plus one averaging at the end of every epoch;
* ``ddp``: P (DistributedDataParallel all-reduces every gradient once, in buckets; counted,
  not hooked, so that the baseline runs its own C++ path untouched).

Collectives outside training steps are not counted: DDP's broadcast of rank 0's parameters
when it wraps the model, the stop flag rank 0 broadcasts after each evaluation, and the
figures every rank gathers to rank 0 after it.

Time (``Scheme.collective_s``): the seconds a worker's training steps spend inside the
scheme's collective calls, moving bytes and waiting for the slowest peer: the network's share
of a step, with the wait it imposes. None for ``ddp``, whose bucketed all-reduces run
overlapped with its backward pass inside PyTorch (timing them would mean replacing its
communication path with a hook, which the baseline must not).
Gradients are divided by the number of workers before they are summed, as DDP's reducer
does (exact for a power of two workers), so allreduce and DDP compute the same sums.
"""

from __future__ import annotations

from time import perf_counter
from typing import Any

from pinbench.specs.distributed import DistributedSpec


def parameter_bytes(module: Any) -> int:
    """P: the bytes of the module's trainable parameters."""
    return sum(p.numel() * p.element_size() for p in module.parameters() if p.requires_grad)


class Scheme:
    """One worker's side of a scheme. ``forward_module``: what the loop calls forward on;
    ``after_backward(optimizer)``: communicate and step; ``end_epoch()``: anything the
    scheme does once an epoch's steps are done; ``sent``: the payload bytes so far;
    ``collective_s``: the seconds spent in its collectives so far."""

    NAME = ""

    def __init__(self, module: Any, *, rank: int, workers: int) -> None:
        self.module = module
        self.rank = rank
        self.workers = workers
        self.sent = 0
        self.collective_s: float | None = 0.0
        self._params = [p for p in module.parameters() if p.requires_grad]

    def _collective(self, call: Any, tensor: Any, **kwargs: Any) -> None:
        """``call(tensor, **kwargs)`` (a ``torch.distributed`` collective), counted and timed."""
        start = perf_counter()
        call(tensor, **kwargs)
        assert self.collective_s is not None
        self.collective_s += perf_counter() - start
        self.sent += tensor.numel() * tensor.element_size()

    @property
    def forward_module(self) -> Any:
        return self.module

    def after_backward(self, optimizer: Any) -> None:
        raise NotImplementedError

    def end_epoch(self) -> None:
        return None

    def _flat_gradients(self) -> Any:
        import torch

        return torch.cat([_grad(p).reshape(-1) for p in self._params])

    def _set_gradients(self, flat: Any) -> None:
        begin = 0
        for p in self._params:
            grad = _grad(p)
            grad.copy_(flat[begin : begin + grad.numel()].view_as(grad))
            begin += grad.numel()

    def _flat_parameters(self) -> Any:
        import torch

        return torch.cat([p.detach().reshape(-1) for p in self._params])

    def _set_parameters(self, flat: Any) -> None:
        import torch

        begin = 0
        with torch.no_grad():
            for p in self._params:
                p.copy_(flat[begin : begin + p.numel()].view_as(p))
                begin += p.numel()


class AllReduce(Scheme):
    """Deep500's dsgd: the gradients all-reduced (averaged), then every worker steps."""

    NAME = "allreduce"

    def after_backward(self, optimizer: Any) -> None:
        import torch.distributed as dist

        flat = self._flat_gradients().div_(self.workers)
        self._collective(dist.all_reduce, flat)
        self._set_gradients(flat)
        optimizer.step()


class ParameterServer(Scheme):
    """Deep500's consistent parameter server: rank 0 sums the gradients, steps, and
    broadcasts the parameters; the other workers never step."""

    NAME = "pssgd"

    def after_backward(self, optimizer: Any) -> None:
        import torch.distributed as dist

        flat = self._flat_gradients().div_(self.workers)
        self._collective(dist.reduce, flat, dst=0)
        if self.rank == 0:
            self._set_gradients(flat)
            optimizer.step()
        params = self._flat_parameters()
        self._collective(dist.broadcast, params, src=0)
        if self.rank != 0:
            self._set_parameters(params)


class ModelAveraging(Scheme):
    """Deep500's mavg: every worker steps on its own gradients; the parameters are averaged
    every ``every`` steps and at the end of every epoch (the model evaluated and saved is
    the average). Optimizer state stays each worker's own."""

    NAME = "mavg"

    def __init__(self, module: Any, *, rank: int, workers: int, every: int) -> None:
        super().__init__(module, rank=rank, workers=workers)
        self.every = every
        self._since = 0

    def after_backward(self, optimizer: Any) -> None:
        optimizer.step()
        self._since += 1
        if self._since >= self.every:
            self._average()

    def end_epoch(self) -> None:
        if self._since:
            self._average()

    def _average(self) -> None:
        import torch.distributed as dist

        flat = self._flat_parameters().div_(self.workers)
        self._collective(dist.all_reduce, flat)
        self._set_parameters(flat)
        self._since = 0


class Ddp(Scheme):
    """PyTorch's DistributedDataParallel (the native baseline): backward all-reduces the
    gradients in buckets; every worker steps."""

    NAME = "ddp"

    def __init__(self, module: Any, *, rank: int, workers: int) -> None:
        from torch.nn.parallel import DistributedDataParallel

        super().__init__(module, rank=rank, workers=workers)
        self._wrapped = DistributedDataParallel(module)
        self._bytes = parameter_bytes(module)
        self.collective_s = None

    @property
    def forward_module(self) -> Any:
        return self._wrapped

    def after_backward(self, optimizer: Any) -> None:
        self.sent += self._bytes
        optimizer.step()


def scheme_for(spec: DistributedSpec, module: Any, *, rank: int) -> Scheme:
    """The worker's side of ``spec.scheme`` for ``module`` (built, seeded alike on every
    rank)."""
    workers = spec.workers
    if spec.scheme == "allreduce":
        return AllReduce(module, rank=rank, workers=workers)
    if spec.scheme == "pssgd":
        return ParameterServer(module, rank=rank, workers=workers)
    if spec.scheme == "mavg":
        assert spec.average_every is not None  # the spec holds it
        return ModelAveraging(module, rank=rank, workers=workers, every=spec.average_every)
    return Ddp(module, rank=rank, workers=workers)


def _grad(p: Any) -> Any:
    """A parameter's gradient; zeros where backward left none (a parameter unused this step),
    so that every worker hands the same shapes to the collective."""
    import torch

    if p.grad is None:
        p.grad = torch.zeros_like(p)
    return p.grad
