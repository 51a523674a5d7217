"""ember.profiler: the table of a known training step, grouping, schedules, the Chrome trace, device time."""
import gzip
import json
import os

import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.dispatch.execution import modes
from ember.profiler import ProfilerAction, ProfilerActivity, profile, record_function, schedule
from ember.profiler.recorder import Recorder

OPENCL = ember.backends.available().get("opencl", "unavailable: not registered")
CPU_ONLY = [ProfilerActivity.CPU]


def _mlp_step(device: str = "cpu"):
    """One SGD step of Linear(8, 16) -> ReLU -> Linear(16, 4) with cross-entropy, in a record_function."""
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).to(device)
    optimizer = ember.optim.SGD(model.parameters(), lr=0.1)
    x = ember.randn(5, 8).to(device)
    y = ember.tensor([0, 1, 2, 3, 0]).to(device)

    def step():
        with record_function("train_step"):
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return step


def _rows(prof, **grouping) -> dict:
    return {row.key: row for row in prof.key_averages(**grouping)}


@pytest.fixture(scope="module")
def mlp_profile():
    step = _mlp_step()
    step()  # the first call makes the call plans; profile a warm step
    with profile(activities=CPU_ONLY, record_shapes=True, profile_memory=True) as prof:
        step()
    return prof


# -- the table ---------------------------------------------------------------------------------

def test_mlp_step_rows_and_counts(mlp_profile):
    rows = _rows(mlp_profile)
    assert rows["train_step"].count == 1
    assert rows["ember::linear"].count == 2
    assert rows["ember::cross_entropy_indices"].count == 1
    # backward: each layer's LinearBackward, ReLU's, the loss's; weight gradients of both layers and the
    # first layer's input gradient are matrix products (the input x needs none)
    assert rows["LinearBackward"].count == 2
    assert rows["ReluBackward"].count == 1
    assert rows["CrossEntropyIndicesBackward"].count == 1
    assert rows["ember::matmul"].count == 3
    assert not any(key.startswith("ProfilerStep#") for key in rows)  # no schedule, no step spans


def test_mlp_step_times_add_up(mlp_profile):
    rows = _rows(mlp_profile)
    for row in rows.values():
        assert 0 <= row.self_cpu_time_total <= row.cpu_time_total + 1e-6, row
    step = rows["train_step"]
    assert step.cpu_time_total == pytest.approx(sum(r.self_cpu_time_total for r in rows.values()))
    # the step's span holds everything else: every top-level event is a child of it
    top = [e for e in mlp_profile.events() if e.cpu_parent is None]
    assert [e.name for e in top] == ["train_step"]
    backward = rows["LinearBackward"]
    assert backward.cpu_time_total > backward.self_cpu_time_total  # its matmuls ran inside it


def test_mlp_step_table_text(mlp_profile):
    table = mlp_profile.key_averages().table(sort_by="self_cpu_time_total", row_limit=100)
    header = table.splitlines()[1]
    for column in ("Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "CPU Mem",
                   "Self CPU Mem", "# of Calls"):
        assert column in header
    assert "Input Shapes" not in header and "OPENCL" not in header
    lines = {line.split()[0]: line.split() for line in table.splitlines()[3:-2]}
    assert lines["ember::linear"][-1] == "2"
    assert lines["train_step"][-1] == "1"
    assert table.rstrip().splitlines()[-1].startswith("Self CPU time total:")
    selfs = [row.self_cpu_time_total for row in _rows(mlp_profile).values()]
    order = [line.split()[0] for line in table.splitlines()[3:-2]]
    assert [_rows(mlp_profile)[name].self_cpu_time_total for name in order] == sorted(selfs, reverse=True)
    assert len(mlp_profile.key_averages().table(row_limit=3).splitlines()) == 3 + 3 + 2  # rules, header, footer
    with pytest.raises(ValueError, match="cannot sort by 'nonsense'"):
        mlp_profile.key_averages().table(sort_by="nonsense")


def test_memory_of_outputs(mlp_profile):
    rows = _rows(mlp_profile, group_by_input_shape=True)
    by_shape = {(r.key, str(r.input_shapes)): r for r in mlp_profile.key_averages(group_by_input_shape=True)}
    first = by_shape[("ember::linear", str([[5, 8], [16, 8], [16]]))]
    assert first.self_cpu_memory_usage == 5 * 16 * 4  # one float32 (5, 16) output
    second = by_shape[("ember::linear", str([[5, 16], [4, 16], [4]]))]
    assert second.self_cpu_memory_usage == 5 * 4 * 4
    assert rows["ember::_fused_sgd_"].self_cpu_memory_usage == 0  # the optimizer writes in place: nothing new
    assert rows["LinearBackward"].self_cpu_memory_usage == 0
    assert rows["LinearBackward"].cpu_memory_usage > 0  # its ops' outputs


def test_group_by_input_shape_splits_rows():
    a, b = ember.ones(2, 3), ember.ones(3, 4)
    c, d = ember.ones(5, 3), ember.ones(3, 2)
    with profile(activities=CPU_ONLY, record_shapes=True) as prof:
        ember.matmul(a, b)
        ember.matmul(a, b)
        ember.matmul(c, d)
    assert _rows(prof)["ember::matmul"].count == 3
    grouped = [r for r in prof.key_averages(group_by_input_shape=True) if r.key == "ember::matmul"]
    assert sorted((r.input_shapes, r.count) for r in grouped) == [([[2, 3], [3, 4]], 2), ([[5, 3], [3, 2]], 1)]
    table = prof.key_averages(group_by_input_shape=True).table()
    assert "Input Shapes" in table.splitlines()[1]
    assert "[[2, 3], [3, 4]]" in table and "[[5, 3], [3, 2]]" in table


def test_composite_is_parent_of_its_inner_ops():
    x = ember.ones(3, 4)
    with profile(activities=CPU_ONLY) as prof:
        ember.transpose(x, 0, 1)
    (outer,) = [e for e in prof.events() if e.name == "ember::transpose"]
    assert [child.name for child in outer.cpu_children] == ["ember::permute"]
    assert outer.cpu_time_total >= outer.cpu_children[0].cpu_time_total
    assert outer.self_cpu_time_total == pytest.approx(outer.cpu_time_total - outer.cpu_children[0].cpu_time_total)


def test_record_function_as_decorator_is_a_parent_span():
    @record_function("my_block")
    def block(t):
        return ember.matmul(t, t)

    with profile(activities=CPU_ONLY) as prof:
        block(ember.ones(2, 2))
        block(ember.ones(2, 2))
    spans = [e for e in prof.events() if e.name == "my_block"]
    assert len(spans) == 2 and all(e.is_user_annotation for e in spans)
    assert [c.name for c in spans[0].cpu_children] == ["ember::matmul"]
    assert _rows(prof)["my_block"].count == 2


def test_nothing_is_recorded_without_an_active_profiler():
    prof = profile(activities=CPU_ONLY)
    x = ember.ones(2, 2)
    with record_function("outside"):  # no profile running: a no-op
        ember.matmul(x, x)
    assert not any(isinstance(m, Recorder) for m in modes.active)
    with pytest.raises(RuntimeError, match="nothing recorded yet"):
        prof.key_averages()
    with prof:
        ember.matmul(x, x)
    assert modes.active == []
    recorded = len(prof.events())
    with record_function("after"):
        ember.matmul(x, x)
        ember.sum(x)
    assert len(prof.events()) == recorded == 1


def test_backends_without_a_timer_report_host_time_only():
    assert ember.dispatch.Backend().device_timer(0) is None  # the contract's default
    x = ember.ones(4, 4)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1, ProfilerActivity.CUDA]) as prof:
        ember.matmul(x, x)
    (row,) = [r for r in prof.key_averages() if r.key == "ember::matmul"]
    assert row.device_time_total == 0 and row.cpu_time_total > 0
    assert "Self CPU" in prof.key_averages().table() and "total %" in prof.key_averages().table()
    assert "DEVICE" not in prof.key_averages().table() and "CUDA" not in prof.key_averages().table()


def test_with_flops_matches_pytorch():
    torch = pytest.importorskip("torch")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], with_flops=True) as tprof:
        torch.mm(torch.ones(2, 3), torch.ones(3, 4))
    expected = {r.key: r.flops for r in tprof.key_averages()}["aten::mm"]
    with profile(activities=CPU_ONLY, with_flops=True) as prof:
        ember.mm(ember.ones(2, 3), ember.ones(3, 4))
    flops = sum(r.flops for r in prof.key_averages())  # mm, or the matmul it decomposes into: counted once
    assert flops == expected == 48
    assert "Total FLOPs" in prof.key_averages().table()


def test_with_stack_names_the_caller():
    with profile(activities=CPU_ONLY, with_stack=True) as prof:
        ember.matmul(ember.ones(2, 2), ember.ones(2, 2))
    (event,) = [e for e in prof.events() if e.name == "ember::matmul"]
    assert "test_profiler.py" in event.stack[0] and "test_with_stack_names_the_caller" in event.stack[0]
    row = [r for r in prof.key_averages(group_by_stack_n=1) if r.key == "ember::matmul"][0]
    assert row.stack == event.stack[:1]
    assert "Source Location" in prof.key_averages(group_by_stack_n=1).table()


def test_autograd_profiler_alias():
    with ember.autograd.profiler.profile(record_shapes=True) as prof:
        with ember.autograd.profiler.record_function("block"):
            ember.matmul(ember.ones(2, 3), ember.ones(3, 4))
    rows = {r.key: r for r in prof.key_averages()}
    assert rows["block"].count == 1 and rows["ember::matmul"].count == 1
    assert ember.autograd.profiler.record_function is record_function
    assert "ember::matmul" in prof.table()


# -- schedules ---------------------------------------------------------------------------------

def test_schedule_matches_pytorch():
    torch = pytest.importorskip("torch")
    for args in [dict(wait=1, warmup=1, active=2), dict(wait=2, warmup=1, active=3, repeat=2, skip_first=3),
                 dict(wait=3, warmup=2, active=1, repeat=1, skip_first_wait=1), dict(wait=0, warmup=1, active=1)]:
        ours, theirs = schedule(**args), torch.profiler.schedule(**args)
        assert [ours(i).name for i in range(30)] == [theirs(i).name for i in range(30)], args
    with pytest.raises(ValueError, match="active must be an int >= 1"):
        schedule(wait=1, warmup=1, active=0)


def test_schedule_records_only_active_steps():
    ready = []

    def on_ready(prof):
        ready.append((prof.step_num, {(r.key, str(r.input_shapes)) for r in
                                      prof.key_averages(group_by_input_shape=True)}))

    b = ember.ones(3, 3)
    with profile(activities=CPU_ONLY, schedule=schedule(wait=1, warmup=1, active=2), on_trace_ready=on_ready,
                 record_shapes=True) as prof:
        for step in range(6):
            ember.matmul(ember.ones(step + 1, 3), b)  # the step number is in the shape
            prof.step()
    # steps 0 (wait), 1 (warmup), 2 and 3 (active) make one cycle, handed over when step 4 begins; the sixth
    # step() begins step 6, active again, which stop() ends and hands over (as PyTorch does)
    assert [step_num for step_num, _ in ready] == [4, 6]
    assert {key for key, _ in ready[1][1]} == {"ProfilerStep#6"}
    step_num, rows = ready[0]
    matmuls = {shapes for key, shapes in rows if key == "ember::matmul"}
    assert matmuls == {str([[3, 3], [3, 3]]), str([[4, 3], [3, 3]])}
    assert {key for key, _ in rows if key.startswith("ProfilerStep#")} == {"ProfilerStep#2", "ProfilerStep#3"}
    assert ProfilerAction.RECORD_AND_SAVE == schedule(wait=1, warmup=1, active=2)(3)


def test_tensorboard_trace_handler_writes_a_trace_per_cycle(tmp_path):
    handler = ember.profiler.tensorboard_trace_handler(str(tmp_path / "log"), worker_name="w")
    x = ember.ones(2, 2)
    with profile(activities=CPU_ONLY, schedule=schedule(wait=1, warmup=1, active=1, repeat=2),
                 on_trace_ready=handler) as prof:
        for _ in range(8):
            ember.matmul(x, x)
            prof.step()
    files = sorted(os.listdir(tmp_path / "log"))
    assert len(files) == 2 and all(f.startswith("w.") and f.endswith(".pt.trace.json") for f in files)
    for name in files:
        names = {e["name"] for e in json.loads((tmp_path / "log" / name).read_text())["traceEvents"]}
        assert "ember::matmul" in names


def test_acc_events_keeps_every_cycle():
    x = ember.ones(2, 2)
    counts = {}
    for accumulate in (False, True):
        with profile(activities=CPU_ONLY, schedule=schedule(wait=0, warmup=1, active=1, repeat=3),
                     acc_events=accumulate) as prof:
            for _ in range(6):
                ember.matmul(x, x)
                prof.step()
        counts[accumulate] = _rows(prof)["ember::matmul"].count
    assert counts == {False: 1, True: 3}


# -- the Chrome trace --------------------------------------------------------------------------

def _check_trace(trace: dict) -> list:
    events = trace["traceEvents"]
    assert isinstance(events, list) and events
    spans = [e for e in events if e["ph"] == "X"]
    for e in spans:
        assert isinstance(e["ts"], (int, float)) and isinstance(e["dur"], (int, float)) and e["dur"] >= 0
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int) and isinstance(e["name"], str)
    starts = {(e["cat"], e["id"]): e for e in events if e["ph"] == "s"}
    ends = {(e["cat"], e["id"]): e for e in events if e["ph"] == "f"}
    assert starts.keys() == ends.keys()
    return events


def test_chrome_trace_structure(mlp_profile, tmp_path):
    path = tmp_path / "step.json"
    mlp_profile.export_chrome_trace(str(path))
    events = _check_trace(json.loads(path.read_text()))
    names = {(e["pid"], e["args"]["name"]) for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    assert {name for _, name in names} == {"python", "cpu"}  # the host, and the one device used
    host = next(pid for pid, name in names if name == "python")
    threads = [e for e in events if e["ph"] == "M" and e["name"] == "thread_name"]
    assert {e["pid"] for e in threads} == {pid for pid, _ in names}  # a named thread row on each
    spans = [e for e in events if e["ph"] == "X"]
    linear = next(e for e in spans if e["name"] == "ember::linear" and e["pid"] == host)
    assert linear["args"]["Input Dims"] == [[5, 8], [16, 8], [16]] and linear["args"]["Input type"][0] == "float32"
    # one fwdbwd arrow per backward node, from the forward op that recorded it to the node
    backward = [e for e in spans if e["cat"] == "backward"]
    flows = {e["id"]: e for e in events if e["ph"] == "s" and e["cat"] == "fwdbwd"}
    arrows = {e["id"]: e for e in events if e["ph"] == "f" and e["cat"] == "fwdbwd"}
    assert len(backward) == len(arrows) == 4
    by_start = {(e["tid"], e["ts"]): e for e in spans if e["pid"] == host}
    linked = set()
    for flow_id, start in flows.items():
        forward, node = by_start[(start["tid"], start["ts"])], by_start[(arrows[flow_id]["tid"], arrows[flow_id]["ts"])]
        assert forward["cat"] == "cpu_op" and node["cat"] == "backward"
        assert node["args"]["Forward op id"] == forward["args"]["External id"]
        assert node["ts"] > forward["ts"]
        linked.add((forward["name"], node["name"]))
    assert linked == {("ember::linear", "LinearBackward"), ("ember::relu", "ReluBackward"),
                      ("ember::cross_entropy_indices", "CrossEntropyIndicesBackward")}

    gz = tmp_path / "step.json.gz"
    mlp_profile.export_chrome_trace(str(gz))
    with gzip.open(gz, "rt") as f:
        assert json.load(f)["traceEvents"] == json.loads(path.read_text())["traceEvents"]


# -- device time -------------------------------------------------------------------------------

@pytest.mark.skipif(OPENCL != "available", reason=f"opencl {OPENCL}")
def test_opencl_device_time(tmp_path):
    step = _mlp_step("opencl")
    step()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1], profile_memory=True) as prof:
        step()
    rows = _rows(prof)
    for name in ("ember::matmul", "ember::linear", "ember::sum"):
        assert rows[name].device_time_total > 0, name
        assert rows[name].self_device_time_total <= rows[name].device_time_total + 1e-6
    assert rows["train_step"].device_time_total == 0  # spans are host-side: no device time of their own
    # the outputs (5, 16) and (5, 4), and what linear's inner ops made on the way; nothing on the host
    assert rows["ember::linear"].device_memory_usage >= (5 * 16 + 5 * 4) * 4
    assert rows["ember::linear"].cpu_memory_usage == 0
    header = prof.key_averages().table(sort_by="self_device_time_total").splitlines()[1]
    assert "Self OPENCL" in header and "OPENCL total" in header and "OPENCL Mem" in header
    path = tmp_path / "opencl.json"
    prof.export_chrome_trace(str(path))
    events = _check_trace(json.loads(path.read_text()))
    (device_pid,) = [e["pid"] for e in events if e["ph"] == "M" and e["name"] == "process_name"
                     and e["args"]["name"] == "opencl:0"]
    kernels = [e for e in events if e["ph"] == "X" and e["pid"] == device_pid]
    assert kernels and all(e["cat"] == "kernel" for e in kernels)
    assert {e["name"] for e in kernels} >= {"ember::matmul", "ember::linear"}

    with profile(activities=CPU_ONLY) as host_only:  # no device activity: no device time, no device columns
        step()
    assert all(r.device_time_total == 0 for r in host_only.key_averages())
    assert "OPENCL" not in host_only.key_averages().table()
