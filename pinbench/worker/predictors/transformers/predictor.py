"""transformers (PyTorch backend): a Hugging Face folder, any architecture transformers ships.

Inputs bind by name to the model's ``forward`` arguments (``input_ids``, ``attention_mask``,
``pixel_values``...): every declared input must be one, and ``forward``'s arguments without a
default must all be declared. Outputs are the fields of the model's output by name
(``logits``, ``last_hidden_state``, ``pooler_output``); with none declared, every tensor field.
A text-generation run uses ``generation.TokenGenerator`` on the same loading instead.
"""

from __future__ import annotations

import inspect
from typing import Any, ClassVar

from pinbench.worker.predictors.base import (
    Batch,
    DeviceUnavailable,
    Outputs,
    Port,
    Predictor,
    SignatureMismatch,
)
from pinbench.worker.predictors.config import ModelFiles, PredictorOptions
from pinbench.worker.predictors.feeds import Feeds

FORMATS = ("hf-folder",)


class TransformersPredictor(Predictor):
    NAME: ClassVar[str] = "transformers"
    TITLE: ClassVar[str] = "transformers"
    FORMATS: ClassVar[tuple[str, ...]] = FORMATS

    def __init__(self) -> None:
        self._model: Any = None
        self._feeds = Feeds((), ())
        self._keys: list[str] = []
        self._declared: list[str] = []
        self._threads: int | None = None

    @classmethod
    def framework_version(cls) -> str:
        from importlib.metadata import version

        return version("transformers")

    def open(self, model: ModelFiles, options: PredictorOptions) -> None:
        import torch

        from pinbench.worker.predictors.transformers.loading import load_model

        self.check_format(model)
        if options.device == "cuda" and not torch.cuda.is_available():
            raise DeviceUnavailable(framework=self.NAME, device="cuda", available=["cpu"])
        if options.threads is not None:
            self._threads = torch.get_num_threads()
            torch.set_num_threads(options.threads)
        loaded, _ = load_model(model)
        params = inspect.signature(loaded.forward).parameters
        declared = [d.name for d in model.inputs]
        for name in declared:
            if not isinstance(name, str) or name not in params:
                raise SignatureMismatch(
                    side="input",
                    name=repr(name),
                    declared=f"input {name!r}",
                    model=f"forward arguments {list(params)}",
                )
        required = [
            n
            for n, p in params.items()
            if p.default is inspect.Parameter.empty
            and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
        ]
        missing = [n for n in required if n not in declared]
        if missing:
            raise SignatureMismatch(
                side="input",
                name=repr(missing[0]),
                declared="no such input",
                model=f"it as an argument forward needs: {missing[0]!r}",
            )
        ports = [Port(str(n)) for n in declared]
        self._feeds = Feeds.bind(model.inputs, ports)
        self._keys = [str(n) for n in declared]
        self._declared = [str(d.name) for d in model.outputs]
        self._model = loaded.to(options.device)

    def input_ports(self) -> tuple[Port, ...]:
        return self._feeds.ports

    def check_input(self, batch: Batch) -> None:
        self._feeds.check(batch)

    def predict(self, batch: Batch) -> Outputs:
        import torch

        arrays = self._feeds.arrays(batch)
        with torch.inference_mode():
            kwargs = {
                k: torch.from_numpy(a).to(self._model.device)
                for k, a in zip(self._keys, arrays, strict=True)
            }
            out = self._model(**kwargs, return_dict=True)
        fields = {k: v for k, v in out.items() if isinstance(v, torch.Tensor)}
        if not self._declared:
            return {k: v.detach().cpu().numpy() for k, v in fields.items()}
        missing = [k for k in self._declared if k not in fields]
        if missing:
            raise SignatureMismatch(
                side="output",
                name=repr(missing[0]),
                declared=f"output {missing[0]!r}",
                model=f"outputs {sorted(fields)}",
            )
        return {k: fields[k].detach().cpu().numpy() for k in self._declared}

    def close(self) -> None:
        self._model = None
        if self._threads is not None:
            import torch

            torch.set_num_threads(self._threads)
