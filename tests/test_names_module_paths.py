"""Every class and function Ember exports in ``ember.nn``, ``ember.optim`` and ``ember.utils.data`` is
importable from the module PyTorch defines it in, with ``torch`` read as ``ember``
(``from ember.nn.modules.batchnorm import BatchNorm2d``, ``from ember.optim.adamw import AdamW``)."""
from __future__ import annotations

import importlib
import inspect

import pytest

import ember  # noqa: F401

torch = pytest.importorskip("torch")

NAMESPACES = ["nn", "nn.utils", "nn.init", "optim", "optim.lr_scheduler", "utils.data"]


def exported_names():
    """(namespace, name, PyTorch's defining module) for each public Ember class or function that PyTorch
    has under the same name in the same namespace."""
    found = []
    for namespace in NAMESPACES:
        ours = importlib.import_module(f"ember.{namespace}")
        theirs = importlib.import_module(f"torch.{namespace}")
        for name in sorted(dir(ours)):
            obj, twin = getattr(ours, name), getattr(theirs, name, None)
            if name.startswith("_") or twin is None or not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            module = getattr(twin, "__module__", "") or ""
            if module.startswith("torch.") and not module.startswith("torch._"):
                found.append((namespace, name, module))
    return found


NAMES = exported_names()


def test_the_check_covers_the_main_classes():
    covered = {(namespace, name) for namespace, name, _ in NAMES}
    for expected in [("nn", "Linear"), ("nn", "BatchNorm2d"), ("nn", "MultiheadAttention"), ("nn", "Module"),
                     ("optim", "AdamW"), ("optim", "Optimizer"), ("utils.data", "DataLoader")]:
        assert expected in covered


@pytest.mark.parametrize("namespace,name,module", NAMES, ids=[f"{n}.{x}" for n, x, _ in NAMES])
def test_importable_from_pytorchs_module_path(namespace, name, module):
    path = "ember" + module[len("torch"):]
    defining = importlib.import_module(path)
    assert getattr(defining, name, None) is getattr(importlib.import_module(f"ember.{namespace}"), name)


@pytest.mark.parametrize("path,name", [
    ("ember.nn.modules.activation", "MultiheadAttention"), ("ember.nn.modules.module", "Module"),
    ("ember.nn.modules.conv", "Conv2d"), ("ember.nn.modules.batchnorm", "BatchNorm2d"),
    ("ember.nn.modules.normalization", "LayerNorm"), ("ember.nn.modules.sparse", "Embedding"),
    ("ember.nn.modules.dropout", "Dropout"), ("ember.nn.modules.pooling", "MaxPool2d"),
    ("ember.nn.modules.container", "Sequential"), ("ember.nn.modules.loss", "CrossEntropyLoss"),
    ("ember.nn.modules.rnn", "LSTM"), ("ember.nn.modules.transformer", "TransformerEncoderLayer"),
    ("ember.nn.parameter", "Parameter"), ("ember.optim.optimizer", "Optimizer"),
    ("ember.optim.lr_scheduler", "LRScheduler"), ("ember.optim.lr_scheduler", "_LRScheduler"),
    ("ember.utils.data.dataloader", "DataLoader"), ("ember.utils.data.dataset", "Dataset"),
    ("ember.utils.data.sampler", "RandomSampler"), ("ember.utils.data._utils.collate", "default_collate"),
])
def test_paths_ported_programs_name(path, name):
    assert getattr(importlib.import_module(path), name) is not None
    torch_path = "torch" + path[len("ember"):]
    assert getattr(importlib.import_module(torch_path), name) is not None


def test_non_dynamically_quantizable_linear_is_a_linear():
    from ember.nn.modules.linear import NonDynamicallyQuantizableLinear
    layer = NonDynamicallyQuantizableLinear(3, 2)
    assert isinstance(layer, ember.nn.Linear)
    assert list(layer.state_dict()) == list(torch.nn.modules.linear.NonDynamicallyQuantizableLinear(3, 2)
                                            .state_dict())
    assert tuple(layer(ember.ones(4, 3)).shape) == (4, 2)
