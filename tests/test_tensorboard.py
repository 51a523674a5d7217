"""``ember.utils.tensorboard.SummaryWriter``: write event files, read them back with tensorboard's own
readers and check what is stored; compare with what torch.utils.tensorboard writes where torch is here."""
from __future__ import annotations

import glob
import io
import math
import os
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

pytest.importorskip("tensorboard")

from tensorboard.backend.event_processing import event_accumulator  # noqa: E402
from tensorboard.backend.event_processing.event_file_loader import LegacyEventFileLoader  # noqa: E402
from tensorboard.plugins.hparams import metadata as hp_metadata  # noqa: E402
from tensorboard.plugins.hparams.api_pb2 import DataType  # noqa: E402
from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData  # noqa: E402

import ember  # noqa: E402
from ember import nn  # noqa: E402
from ember.dispatch.schema.errors import EmberError, ShapeError  # noqa: E402
from ember.utils.tensorboard import SummaryWriter  # noqa: E402

DEVICES = [name for name, status in ember.backends.available().items() if status == "available"]


# -- reading back ----------------------------------------------------------------------------------
def accumulate(path) -> event_accumulator.EventAccumulator:
    sizes = {kind: 0 for kind in event_accumulator.DEFAULT_SIZE_GUIDANCE}
    acc = event_accumulator.EventAccumulator(str(path), size_guidance=sizes)
    acc.Reload()
    return acc


def raw_events(path) -> list:
    """Every event of every event file directly in ``path``, in file order (no format migration)."""
    events = []
    for name in sorted(glob.glob(os.path.join(str(path), "events.out.tfevents.*"))):
        events.extend(LegacyEventFileLoader(name).Load())
    return events


def summary_values(path) -> list:
    return [(e.step, e.wall_time, v) for e in raw_events(path) if e.HasField("summary") for v in e.summary.value]


def decode_png(data: bytes) -> np.ndarray:
    image = pytest.importorskip("PIL.Image")
    return np.asarray(image.open(io.BytesIO(data)))


# -- scalars ---------------------------------------------------------------------------------------
def test_scalars_values_steps_and_wall_times(tmp_path):
    values = [0.5, np.float32(1.25), ember.tensor(2.0), ember.tensor([3.5]), np.array([[4.0]]), 7]
    with SummaryWriter(tmp_path) as w:
        for step, value in enumerate(values):
            w.add_scalar("loss", value, global_step=step * 10, walltime=1000.0 + step)
        w.add_scalar("no_step", 1.0)
    events = accumulate(tmp_path).Scalars("loss")
    assert [e.step for e in events] == [0, 10, 20, 30, 40, 50]
    assert [e.value for e in events] == [0.5, 1.25, 2.0, 3.5, 4.0, 7.0]
    assert [e.wall_time for e in events] == [1000.0 + i for i in range(6)]
    (no_step,) = accumulate(tmp_path).Scalars("no_step")
    assert no_step.step == 0 and abs(no_step.wall_time - time.time()) < 60


def test_scalar_new_style_and_double_precision(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_scalar("f32", 0.1, 1, new_style=True)
        w.add_scalar("f64", 0.1, 2, new_style=True, double_precision=True)
    stored = {v.tag: (step, v) for step, _, v in summary_values(tmp_path)}
    step, f32 = stored["f32"]
    assert step == 1 and f32.metadata.plugin_data.plugin_name == "scalars"
    assert f32.tensor.dtype == 1 and f32.tensor.float_val[0] == np.float32(0.1)  # DT_FLOAT
    step, f64 = stored["f64"]
    assert step == 2 and f64.tensor.dtype == 2 and f64.tensor.double_val[0] == 0.1  # DT_DOUBLE, exact


def test_scalar_needs_one_value(tmp_path):
    with SummaryWriter(tmp_path) as w:
        with pytest.raises(ValueError, match=r"add_scalar: expected one value, got an array of shape \(2,\)"):
            w.add_scalar("x", ember.tensor([1.0, 2.0]))
        with pytest.raises(TypeError, match="add_scalar: expected an ember Tensor, a NumPy array or a number"):
            w.add_scalar("x", [1.0])


@pytest.mark.parametrize("device", DEVICES)
def test_values_from_every_device(tmp_path, device):
    data = ember.arange(12.0).reshape(3, 4).to(device)
    with SummaryWriter(tmp_path) as w:
        w.add_scalar("s", data.sum(), 0)
        w.add_histogram("h", data, 0)
        w.add_image("i", (data / 11.0).reshape(1, 3, 4), 0)
    acc = accumulate(tmp_path)
    assert acc.Scalars("s")[0].value == 66.0
    assert acc.Histograms("h")[0].histogram_value.sum == 66.0
    pixels = decode_png(acc.Images("i")[0].encoded_image_string)
    expected = (np.arange(12.0, dtype=np.float32).reshape(3, 4) / 11.0 * 255).astype(np.uint8)
    assert (pixels[:, :, 0] == expected).all()


def test_add_scalars_writes_one_sub_run_per_key(tmp_path):
    with SummaryWriter(tmp_path) as w:
        for step in range(3):
            w.add_scalars("loss/all", {"train": 1.0 / (step + 1), "val": 2.0 * step}, step, walltime=50.0)
    runs = sorted(os.path.basename(p) for p in glob.glob(str(tmp_path / "*")) if os.path.isdir(p))
    assert runs == ["loss_all_train", "loss_all_val"]
    train = accumulate(tmp_path / "loss_all_train").Scalars("loss/all")
    val = accumulate(tmp_path / "loss_all_val").Scalars("loss/all")
    assert [e.value for e in train] == pytest.approx([1.0, 0.5, 1 / 3])
    assert [e.value for e in val] == [0.0, 2.0, 4.0]
    assert [e.step for e in val] == [0, 1, 2] and {e.wall_time for e in train + val} == {50.0}


# -- histograms ------------------------------------------------------------------------------------
def test_default_bins_are_tensorflows_exponential_buckets(tmp_path):
    with SummaryWriter(tmp_path) as w:
        bins = w.default_bins
    middle = len(bins) // 2
    assert bins[middle] == 0.0 and bins[middle + 1] == 1e-12 and bins[middle - 1] == -1e-12
    assert bins[-1] < 1e20 <= bins[-1] * 1.1 and bins[0] == -bins[-1]
    assert bins[middle + 2] == pytest.approx(1.1e-12) and all(a < b for a, b in zip(bins, bins[1:]))


def test_histogram_counts_and_limits(tmp_path):
    rng = np.random.default_rng(0)
    values = rng.normal(size=1000)
    with SummaryWriter(tmp_path) as w:
        w.add_histogram("w", ember.tensor(values), 3)
        bins = w.default_bins
    (event,) = accumulate(tmp_path).Histograms("w")
    h = event.histogram_value
    assert event.step == 3 and h.num == 1000 and sum(h.bucket) == 1000
    assert h.min == values.min() and h.max == values.max()
    assert h.sum == pytest.approx(values.sum()) and h.sum_squares == pytest.approx((values ** 2).sum())
    assert set(h.bucket_limit) <= set(bins)
    # the first bucket is the empty one that carries the left edge; bucket i holds [limit[i-1], limit[i])
    limits = np.array(h.bucket_limit)
    assert h.bucket[0] == 0 and h.bucket[1] > 0 and h.bucket[-1] > 0
    assert limits[0] <= values.min() and values.max() < limits[-1]
    for i in range(1, len(limits)):
        assert h.bucket[i] == ((values >= limits[i - 1]) & (values < limits[i])).sum()


def test_histogram_numpy_bins_and_max_bins(tmp_path):
    values = np.arange(100, dtype=np.float64)
    with SummaryWriter(tmp_path) as w:
        w.add_histogram("ten", values, 0, bins=10)
        w.add_histogram("auto", values, 0, bins="auto")
        w.add_histogram("merged", values, 0, bins=10, max_bins=3)
    acc = accumulate(tmp_path)
    ten = acc.Histograms("ten")[0].histogram_value
    assert list(ten.bucket) == [0] + [10] * 10 and ten.bucket_limit == pytest.approx(np.linspace(0, 99, 11))
    auto_counts, auto_edges = np.histogram(values, bins="auto")
    auto = acc.Histograms("auto")[0].histogram_value
    assert list(auto.bucket) == [0] + auto_counts.tolist() and auto.bucket_limit == pytest.approx(auto_edges)
    merged = acc.Histograms("merged")[0].histogram_value  # 10 buckets merged three by three: 4 buckets
    assert list(merged.bucket) == [0, 30, 30, 30, 10] and sum(merged.bucket) == 100
    assert merged.bucket_limit[-1] == 99.0


def test_histogram_errors(tmp_path):
    with SummaryWriter(tmp_path) as w:
        with pytest.raises(ValueError, match="add_histogram: the values for 'h' are empty"):
            w.add_histogram("h", np.zeros(0))
        with pytest.raises(ValueError, match="contain NaN or infinity"):
            w.add_histogram("h", ember.tensor([1.0, float("nan")]))
        with pytest.raises(ValueError, match="add_histogram: cannot bucket 'h' with bins='nope'"):
            w.add_histogram("h", np.ones(3), bins="nope")
        with pytest.raises(ValueError, match="no value for 'h' lies inside the bins"):
            w.add_histogram("h", np.array([1e30]))


# -- images ----------------------------------------------------------------------------------------
def _images(path, tag) -> list:
    return [decode_png(e.encoded_image_string) for e in accumulate(path).Images(tag)]


def test_image_formats_and_pixels(tmp_path):
    rng = np.random.default_rng(1)
    chw = rng.random((3, 5, 7), dtype=np.float32)
    hwc_u8 = rng.integers(0, 256, (5, 7, 3), dtype=np.uint8)
    hw = rng.random((4, 6))
    rgba = rng.integers(0, 256, (2, 3, 4), dtype=np.uint8)
    with SummaryWriter(tmp_path) as w:
        w.add_image("chw", ember.tensor(chw), 0)
        w.add_image("hwc", hwc_u8, 0, dataformats="HWC")
        w.add_image("hw", hw, 0, dataformats="HW")
        w.add_image("wh", hw.T, 0, dataformats="WH")
        w.add_image("rgba", rgba, 0, dataformats="HWC")
        w.add_image("clip", np.array([[[-1.0, 0.5, 2.0]]]), 0)
    stored = accumulate(tmp_path).Images("chw")[0]
    assert (stored.height, stored.width) == (5, 7)
    assert (_images(tmp_path, "chw")[0] == (chw.transpose(1, 2, 0) * 255).astype(np.uint8)).all()
    assert (_images(tmp_path, "hwc")[0] == hwc_u8).all()
    grey = (hw.astype(np.float32) * 255).astype(np.uint8)
    for tag in ("hw", "wh"):
        assert (_images(tmp_path, tag)[0] == np.stack([grey] * 3, axis=2)).all()
    assert (_images(tmp_path, "rgba")[0] == rgba).all()
    assert _images(tmp_path, "clip")[0].reshape(-1).tolist() == [0, 0, 0, 127, 127, 127, 255, 255, 255]


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_add_images_makes_a_grid_of_eight_per_row(tmp_path, layout):
    rng = np.random.default_rng(2)
    batch = rng.integers(0, 256, (10, 3, 4, 5), dtype=np.uint8)  # NCHW
    data = batch if layout == "NCHW" else batch.transpose(0, 2, 3, 1)
    with SummaryWriter(tmp_path) as w:
        w.add_images("batch", ember.tensor(data), 0, dataformats=layout)
        w.add_images("single_channel", batch[:3, :1], 0)
    grid = _images(tmp_path, "batch")[0]
    assert grid.shape == (2 * 4, 8 * 5, 3)  # 10 images: two rows of up to eight
    for i in range(10):
        row, col = divmod(i, 8)
        assert (grid[row * 4:(row + 1) * 4, col * 5:(col + 1) * 5] == batch[i].transpose(1, 2, 0)).all()
    assert (grid[4:, 2 * 5:] == 0).all()  # the unused cells stay black
    mono = _images(tmp_path, "single_channel")[0]
    assert mono.shape == (4, 15, 3) and (mono[:, 5:10, 1] == batch[1, 0]).all()


def test_image_errors(tmp_path):
    with SummaryWriter(tmp_path) as w:
        with pytest.raises(ValueError, match="add_image: dataformats 'CHWX' is not one of the accepted layouts"):
            w.add_image("x", np.zeros((1, 2, 2, 2)), dataformats="CHWX")
        with pytest.raises(ValueError, match="dataformats 'CCH'"):
            w.add_image("x", np.zeros((1, 2, 2)), dataformats="CCH")
        with pytest.raises(ShapeError, match=r"dataformats 'CHW' needs a 3-d image, got shape \(4, 4\)"):
            w.add_image("x", ember.zeros(4, 4))
        with pytest.raises(ShapeError, match="1, 3 or 4 channels.*got 2"):
            w.add_image("x", np.zeros((2, 4, 4)))
        with pytest.raises(ShapeError, match="add_images: .*1, 3 or 4 channels.*got 5"):
            w.add_images("x", np.zeros((2, 5, 4, 4)))
        with pytest.raises(ShapeError, match="is empty"):
            w.add_images("x", np.zeros((0, 3, 4, 4)))
        with pytest.raises(TypeError, match="dataformats must be a string"):
            w.add_image("x", np.zeros((3, 4, 4)), dataformats=None)


# -- text and hparams --------------------------------------------------------------------------------
def test_text(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_text("notes", "**lr** = 0.1 — ünïcode", 4)
        with pytest.raises(TypeError, match="add_text: text_string must be a str"):
            w.add_text("notes", 3)
    ((step, _, value),) = summary_values(tmp_path)
    assert step == 4 and value.tag == "notes/text_summary"
    assert value.metadata.plugin_data.plugin_name == "text"
    assert value.tensor.string_val[0].decode("utf-8") == "**lr** = 0.1 — ünïcode"
    assert accumulate(tmp_path).Tensors("notes/text_summary")[0].step == 4


def _hparams_content(path) -> dict:
    out = {}
    for _, _, value in summary_values(path):
        if value.metadata.plugin_data.plugin_name == hp_metadata.PLUGIN_NAME:
            out[value.tag] = HParamsPluginData.FromString(value.metadata.plugin_data.content)
    return out


def test_hparams_run_in_a_sub_directory(tmp_path):
    hp = {"lr": 0.1, "layers": 3, "optimizer": "adam", "nesterov": True, "unused": None, "wd": ember.tensor(0.5)}
    with SummaryWriter(tmp_path) as w:
        w.add_hparams(hp, {"hparam/accuracy": 0.9, "hparam/loss": ember.tensor(0.25)},
                      hparam_domain_discrete={"optimizer": ["adam", "sgd"]}, run_name="trial1", global_step=7)
    run = tmp_path / "trial1"
    content = _hparams_content(run)
    assert set(content) == {hp_metadata.EXPERIMENT_TAG, hp_metadata.SESSION_START_INFO_TAG,
                            hp_metadata.SESSION_END_INFO_TAG}
    experiment = content[hp_metadata.EXPERIMENT_TAG].experiment
    infos = {i.name: i for i in experiment.hparam_infos}
    assert set(infos) == {"lr", "layers", "optimizer", "nesterov", "wd"}
    assert infos["lr"].type == DataType.DATA_TYPE_FLOAT64 and infos["optimizer"].type == DataType.DATA_TYPE_STRING
    assert infos["nesterov"].type == DataType.DATA_TYPE_BOOL
    assert [v.string_value for v in infos["optimizer"].domain_discrete.values] == ["adam", "sgd"]
    assert [m.name.tag for m in experiment.metric_infos] == ["hparam/accuracy", "hparam/loss"]
    start = content[hp_metadata.SESSION_START_INFO_TAG].session_start_info.hparams
    assert start["lr"].number_value == 0.1 and start["layers"].number_value == 3
    assert start["optimizer"].string_value == "adam" and start["nesterov"].bool_value is True
    assert start["wd"].number_value == 0.5 and "unused" not in start
    assert content[hp_metadata.SESSION_END_INFO_TAG].session_end_info.status == 1  # STATUS_SUCCESS
    acc = accumulate(run)
    assert [(e.step, e.value) for e in acc.Scalars("hparam/accuracy")] == [(7, pytest.approx(0.9))]
    assert [(e.step, e.value) for e in acc.Scalars("hparam/loss")] == [(7, 0.25)]
    assert raw_events(tmp_path)[0].file_version == "brain.Event:2"  # the parent run holds no hparams
    assert not _hparams_content(tmp_path)


def test_hparams_default_run_name_and_errors(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_hparams({"lr": 1}, {"m": 1.0})
        with pytest.raises(TypeError, match="hparam_dict and metric_dict should be dictionaries"):
            w.add_hparams([("lr", 1)], {})
        with pytest.raises(ValueError, match="hparam 'f' is a list; expected a bool, str"):
            w.add_hparams({"f": [1]}, {})
        with pytest.raises(TypeError, match=r"hparam_domain_discrete\['lr'\] should be a list"):
            w.add_hparams({"lr": 1.0}, {}, hparam_domain_discrete={"lr": ["a"]})
    (sub,) = [p for p in glob.glob(str(tmp_path / "*")) if os.path.isdir(p)]
    assert float(os.path.basename(sub)) == pytest.approx(time.time(), abs=60)


# -- graphs ----------------------------------------------------------------------------------------
class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 8)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(8, 2)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class Residual(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.gain = nn.Parameter(ember.ones(4))

    def forward(self, x):
        return self.fc(x).relu() * self.gain + x


class ResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Linear(6, 4)
        self.body = nn.Sequential(Residual(), nn.Dropout(0.5))
        self.head = nn.Linear(4, 2)

    def forward(self, x, labels):
        h = self.body(self.stem(x.flatten(1)))
        return self.head(h), self.head(h * 2)


def _graph(path):
    graph_def = accumulate(path).Graph()
    return {n.name: n for n in graph_def.node}, [n.name for n in graph_def.node]


def _shapes(node) -> list:
    return [[d.size for d in s.dim] for s in node.attr["_output_shapes"].list.shape]


def test_graph_of_an_mlp(tmp_path):
    model = MLP()
    with SummaryWriter(tmp_path) as w:
        w.add_graph(model, ember.randn(5, 3))
    nodes, order = _graph(tmp_path)
    assert order == ["input/x", "MLP/Linear[fc1]", "MLP/ReLU[act]", "MLP/Linear[fc2]", "output/output.1"]
    edges = {name: list(node.input) for name, node in nodes.items()}
    assert edges == {"input/x": [], "MLP/Linear[fc1]": ["input/x"], "MLP/ReLU[act]": ["MLP/Linear[fc1]"],
                     "MLP/Linear[fc2]": ["MLP/ReLU[act]"], "output/output.1": ["MLP/Linear[fc2]"]}
    assert [nodes[n].op for n in order] == ["IO Node", "Linear", "ReLU", "Linear", "IO Node"]
    assert _shapes(nodes["MLP/Linear[fc1]"]) == [[5, 8]] and _shapes(nodes["output/output.1"]) == [[5, 2]]
    assert nodes["MLP/Linear[fc1]"].attr["_output_types"].list.type == [1]  # DT_FLOAT
    assert nodes["MLP/Linear[fc1]"].attr["attr"].s == b"in_features=3, out_features=8, bias=True"


def test_graph_follows_functional_ops_between_modules(tmp_path, capsys):
    model = ResNet()
    model.train()
    with SummaryWriter(tmp_path) as w:
        w.add_graph(model, (ember.randn(2, 2, 3), ember.tensor([0, 1])), verbose=True)
    nodes, order = _graph(tmp_path)
    edges = {name: list(node.input) for name, node in nodes.items()}
    block = "ResNet/Sequential[body]/Residual[0]"
    assert edges["ResNet/view"] == ["input/x"] and nodes["ResNet/view"].op == "view"
    assert edges["ResNet/Linear[stem]"] == ["ResNet/view"]
    assert edges[f"{block}/Linear[fc]"] == ["ResNet/Linear[stem]"]
    assert edges[f"{block}/relu"] == [f"{block}/Linear[fc]"]
    assert nodes[f"{block}/gain"].op == "Parameter" and _shapes(nodes[f"{block}/gain"]) == [[4]]
    assert edges[f"{block}/mul"] == [f"{block}/relu", f"{block}/gain"]
    assert edges[f"{block}/add"] == [f"{block}/mul", "ResNet/Linear[stem]"]  # the residual edge
    assert nodes[f"{block}/add"].op == "add" and _shapes(nodes[f"{block}/add"]) == [[2, 4]]
    assert edges["ResNet/Sequential[body]/Dropout[1]"] == [f"{block}/add"]
    # the head is called twice: the second call gets its own node, fed by the functional mul
    assert edges["ResNet/Linear[head]"] == ["ResNet/Sequential[body]/Dropout[1]"]
    assert edges["ResNet/mul"] == ["ResNet/Sequential[body]/Dropout[1]"]
    assert "1 input(s) that do not require grad" in nodes["ResNet/mul"].attr["attr"].s.decode()
    assert edges["ResNet/Linear[head].1"] == ["ResNet/mul"]
    assert edges["output/output.1"] == ["ResNet/Linear[head]"] and edges["output/output.2"] == ["ResNet/Linear[head].1"]
    assert nodes["input/labels"].op == "IO Node" and nodes["input/labels"].attr["_output_types"].list.type == [9]
    for name, inputs in edges.items():  # every edge ends at a node of the graph, listed before it
        assert all(order.index(i) < order.index(name) for i in inputs)
    # the model is back in training mode, with no hook left behind
    assert all(m.training for m in model.modules())
    assert not any(m._forward_hooks or m._forward_pre_hooks for m in model.modules())
    assert f"{block}/add = add({block}/mul, ResNet/Linear[stem])" in capsys.readouterr().out


def test_graph_marks_tensors_it_cannot_follow(tmp_path):
    class MadeInside(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, 2)

        def forward(self, x):
            return self.fc(ember.ones(3, 2)) + x.sum()

    with SummaryWriter(tmp_path) as w:
        w.add_graph(MadeInside(), ember.randn(4))
    nodes, _ = _graph(tmp_path)
    assert nodes["MadeInside/untraced"].op == "Untraced"
    assert list(nodes["MadeInside/Linear[fc]"].input) == ["MadeInside/untraced"]
    assert list(nodes["MadeInside/add"].input) == ["MadeInside/Linear[fc]", "MadeInside/sum"]
    assert list(nodes["MadeInside/sum"].input) == ["input/x"]


def test_graph_of_a_leaf_model_and_of_no_input(tmp_path):
    class Constant(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(ember.ones(3))
            self.act = nn.Tanh()

        def forward(self):
            return self.act(self.w * 2)

    with SummaryWriter(tmp_path / "leaf") as w:
        w.add_graph(nn.Linear(2, 3), ember.randn(1, 2))
    with SummaryWriter(tmp_path / "none") as w:
        w.add_graph(Constant())
    nodes, order = _graph(tmp_path / "leaf")
    assert order == ["input/input", "Linear", "output/output.1"]  # Linear.forward(self, input)
    nodes, order = _graph(tmp_path / "none")
    assert order == ["Constant/w", "Constant/mul", "Constant/Tanh[act]", "output/output.1"]
    assert nodes["Constant/w"].op == "Parameter" and list(nodes["Constant/mul"].input) == ["Constant/w"]


def test_graph_errors_name_the_model_and_the_reason(tmp_path):
    class Raises(nn.Module):
        def forward(self, x):
            raise RuntimeError("no luck")

    class ReturnsNumber(nn.Module):
        def forward(self, x):
            return x, 3

    with SummaryWriter(tmp_path) as w:
        with pytest.raises(EmberError, match="add_graph: cannot trace MLP: input_to_model must be a Tensor or a "
                                             "tuple of Tensors, but input 0 is a list"):
            w.add_graph(MLP(), [[1.0, 2.0, 3.0]])
        with pytest.raises(EmberError, match="cannot trace MLP: input_to_model .* input 1 is a str"):
            w.add_graph(MLP(), (ember.randn(1, 3), "x"))
        with pytest.raises(EmberError, match="cannot trace Raises: its forward raised RuntimeError: no luck"):
            w.add_graph(Raises(), ember.randn(1))
        with pytest.raises(EmberError, match="cannot trace MLP: its forward raised ShapeError: linear"):
            w.add_graph(MLP(), ember.randn(1, 4))
        with pytest.raises(EmberError, match="cannot trace ReturnsNumber: forward returned a int"):
            w.add_graph(ReturnsNumber(), ember.randn(1))
        with pytest.raises(EmberError, match="model must be an ember.nn.Module, got function"):
            w.add_graph(lambda x: x, ember.randn(1))
    assert accumulate(tmp_path).Tags()["graph"] is False  # nothing half-traced was written


# -- the writer itself -------------------------------------------------------------------------------
def test_flush_makes_events_visible_and_close_ends_the_file(tmp_path):
    w = SummaryWriter(tmp_path, max_queue=1000, flush_secs=10_000)
    w.add_scalar("a", 1.0, 0)
    w.flush()
    assert [e.value for e in accumulate(tmp_path).Scalars("a")] == [1.0]
    w.add_scalar("a", 2.0, 1)
    w.close()
    w.close()  # a second close is harmless
    assert [e.value for e in accumulate(tmp_path).Scalars("a")] == [1.0, 2.0]
    w.add_scalar("a", 3.0, 2)  # a closed writer opens a new event file when used again
    w.close()
    assert len(glob.glob(str(tmp_path / "events.out.tfevents.*"))) == 2
    assert [e.value for e in accumulate(tmp_path).Scalars("a")] == [1.0, 2.0, 3.0]


def test_context_manager_closes(tmp_path):
    with SummaryWriter(tmp_path, flush_secs=10_000) as w:
        w.add_scalar("a", 1.0, 0)
        assert w.get_logdir() == tmp_path
    assert w.all_writers is None and w.file_writer is None
    assert [e.value for e in accumulate(tmp_path).Scalars("a")] == [1.0]


def test_purge_step_hides_the_events_of_a_crashed_run(tmp_path):
    with SummaryWriter(tmp_path) as w:
        for step in range(10):
            w.add_scalar("loss", float(step), step)
    with SummaryWriter(tmp_path, purge_step=5) as w:
        for step in range(5, 8):
            w.add_scalar("loss", 100.0 + step, step)
    restart = [e for e in raw_events(tmp_path) if e.step == 5 and not e.HasField("summary")]
    assert [e.file_version for e in restart[:1]] == ["brain.Event:2"] and restart[1].session_log.status == 1
    events = accumulate(tmp_path).Scalars("loss")
    assert [e.step for e in events] == [0, 1, 2, 3, 4, 5, 6, 7]
    assert [e.value for e in events][-3:] == [105.0, 106.0, 107.0]


def test_default_log_dir_and_filename_suffix(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with SummaryWriter(comment="_lr0.1", filename_suffix=".v2") as w:
        log_dir = w.get_logdir()
    parent, name = os.path.split(log_dir)
    assert parent == "runs" and name.endswith("_" + socket.gethostname() + "_lr0.1")
    (event_file,) = os.listdir(log_dir)
    assert event_file.startswith("events.out.tfevents.") and event_file.endswith(".v2")


def test_import_without_tensorboard_says_what_to_install():
    code = ("import sys; sys.modules['tensorboard'] = None\n"
            "try:\n    import ember.utils.tensorboard\nexcept ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120).stdout
    assert "needs the tensorboard package" in out and "pip install ember[tensorboard]" in out


# -- against torch.utils.tensorboard -----------------------------------------------------------------
def _summaries_by_tag(path) -> dict:
    return {v.tag: (step, wall, v) for step, wall, v in summary_values(path)}


def test_records_match_torch(tmp_path):
    torch = pytest.importorskip("torch")
    torch_tb = pytest.importorskip("torch.utils.tensorboard")
    rng = np.random.default_rng(3)
    values = rng.normal(size=500).astype(np.float32)
    picture = rng.random((3, 6, 5), dtype=np.float32)
    batch = rng.integers(0, 256, (5, 1, 3, 4), dtype=np.uint8)
    hp = {"lr": 0.01, "depth": 4, "opt": "sgd"}

    def log(writer, convert):
        writer.add_scalar("s/plain", convert(np.array(0.75, dtype=np.float32)), 3, walltime=10.0)
        writer.add_scalar("s/new", 0.1, 4, walltime=11.0, new_style=True)
        writer.add_scalar("s/double", 0.1, 4, walltime=11.0, new_style=True, double_precision=True)
        writer.add_histogram("h/tf", convert(values), 5, walltime=12.0)
        writer.add_histogram("h/fd", convert(values), 5, bins="fd", walltime=12.0)
        writer.add_histogram("h/few", convert(values), 5, bins=50, max_bins=7, walltime=12.0)
        writer.add_text("t", "hello *world*", 6, walltime=13.0)
        writer.add_image("i", convert(picture), 7, walltime=14.0)
        writer.add_images("b", convert(batch), 7, walltime=14.0)
        writer.add_scalars("multi", {"a": 1.0, "b": 2.0}, 8, walltime=15.0)
        writer.add_hparams(hp, {"hp/acc": 0.5}, run_name="run", global_step=9)

    with torch_tb.SummaryWriter(tmp_path / "torch") as w:
        log(w, torch.from_numpy)
    with SummaryWriter(tmp_path / "ember") as w:
        log(w, ember.tensor)
    for sub in ("", "multi_a", "multi_b", "run"):
        theirs, ours = _summaries_by_tag(tmp_path / "torch" / sub), _summaries_by_tag(tmp_path / "ember" / sub)
        assert set(ours) == set(theirs) and ours
        for tag, (step, wall, value) in theirs.items():
            our_step, our_wall, our_value = ours[tag]
            assert (our_step, our_wall) == (step, wall) or sub == "run", tag  # hparams: writers' own time
            if value.HasField("image"):  # PNG bytes differ by encoder; the pixels must not
                assert (our_value.image.height, our_value.image.width, our_value.image.colorspace) == \
                    (value.image.height, value.image.width, value.image.colorspace)
                assert (decode_png(our_value.image.encoded_image_string)
                        == decode_png(value.image.encoded_image_string)).all()
            else:
                assert our_value.SerializeToString() == value.SerializeToString(), tag
    assert math.isclose(_summaries_by_tag(tmp_path / "ember")["h/tf"][2].histo.sum, float(values.sum()), rel_tol=1e-6)


def test_writing_needs_neither_torch_nor_tensorflow(tmp_path):
    code = ("import sys, ember\nfrom ember.utils.tensorboard import SummaryWriter\n"
            f"with SummaryWriter({str(tmp_path)!r}) as w:\n"
            "    w.add_scalar('a', 1.0, 0); w.add_histogram('h', ember.randn(10), 0)\n"
            "    w.add_graph(ember.nn.Linear(2, 2), ember.randn(1, 2))\n"
            "print(sorted(m for m in ('torch', 'tensorflow') if m in sys.modules))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.stdout.strip() == "[]", result.stderr
