"""The three summaries of the hparams plugin: the experiment (which hparams and metrics exist), the
session start (this run's values) and the session end."""
from __future__ import annotations

import numbers

import numpy as np
from google.protobuf import struct_pb2
from tensorboard.compat.proto.summary_pb2 import Summary, SummaryMetadata
from tensorboard.plugins.hparams import metadata
from tensorboard.plugins.hparams.api_pb2 import DataType, Experiment, HParamInfo, MetricInfo, MetricName, Status
from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData, SessionEndInfo, SessionStartInfo

from ...tensor import Tensor
from ._convert import to_float

_WHERE = "add_hparams"


def _kind(name: str, value):
    """(DataType, struct field) of one hparam value. Unlike PyTorch, bools are stored as bools
    (PyTorch's int check catches them first and logs 1.0/0.0)."""
    if isinstance(value, (bool, np.bool_)):
        return DataType.DATA_TYPE_BOOL, "bool_value"
    if isinstance(value, str):
        return DataType.DATA_TYPE_STRING, "string_value"
    if isinstance(value, (numbers.Real, np.ndarray, Tensor)):
        return DataType.DATA_TYPE_FLOAT64, "number_value"
    raise ValueError(f"{_WHERE}: hparam {name!r} is a {type(value).__name__}; expected a bool, str, int, float "
                     "or a one-element Tensor")


def _value(field: str, value):
    if field == "number_value":
        return to_float(value, f"{_WHERE}: hparam")
    return bool(value) if field == "bool_value" else value


def _summary(tag: str, **content) -> Summary:
    data = HParamsPluginData(version=metadata.PLUGIN_DATA_VERSION, **content)
    smd = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
        plugin_name=metadata.PLUGIN_NAME, content=data.SerializeToString()))
    return Summary(value=[Summary.Value(tag=tag, metadata=smd)])


def _check(hparam_dict, metric_dict, domains) -> None:
    if not isinstance(hparam_dict, dict) or not isinstance(metric_dict, dict):
        raise TypeError(f"{_WHERE}: hparam_dict and metric_dict should be dictionaries, got "
                        f"{type(hparam_dict).__name__} and {type(metric_dict).__name__}")
    if not isinstance(domains, dict):
        raise TypeError(f"{_WHERE}: hparam_domain_discrete should be a dictionary, got {type(domains).__name__}")
    for name, choices in domains.items():
        if (name not in hparam_dict or not isinstance(choices, list)
                or not all(isinstance(c, type(hparam_dict[name])) for c in choices)):
            raise TypeError(f"{_WHERE}: hparam_domain_discrete[{name!r}] should be a list of values of the "
                            f"type of hparam_dict[{name!r}]")


def hparams(hparam_dict: dict, metric_dict: dict, hparam_domain_discrete: dict | None = None):
    """The experiment, session-start and session-end ``Summary`` protos; ``None`` hparams are left out."""
    domains = hparam_domain_discrete or {}
    _check(hparam_dict, metric_dict, domains)
    start = SessionStartInfo()
    infos = []
    for name, value in hparam_dict.items():
        if value is None:
            continue
        kind, field = _kind(name, value)
        setattr(start.hparams[name], field, _value(field, value))
        domain = None
        if name in domains:
            domain = struct_pb2.ListValue(values=[struct_pb2.Value(**{field: _value(field, c)})
                                                  for c in domains[name]])
        infos.append(HParamInfo(name=name, type=kind, domain_discrete=domain))
    experiment = Experiment(hparam_infos=infos, metric_infos=[MetricInfo(name=MetricName(tag=k))
                                                               for k in metric_dict])
    return (_summary(metadata.EXPERIMENT_TAG, experiment=experiment),
            _summary(metadata.SESSION_START_INFO_TAG, session_start_info=start),
            _summary(metadata.SESSION_END_INFO_TAG,
                     session_end_info=SessionEndInfo(status=Status.STATUS_SUCCESS)))
