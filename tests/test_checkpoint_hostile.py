"""Hostile checkpoint files and interrupted saves: every malformed file is a CheckpointError that names the
file and the problem, loading takes memory bounded by the file's size, and killed saves leave no temporary
files behind for long. The crafted files come from ``hostile_checkpoints`` (also runnable as a script)."""
from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import textwrap
import tracemalloc
from collections import OrderedDict

import pytest

import ember
from ember.serialization import CheckpointError, UnpicklingError, load_safetensors

sys.path.insert(0, os.path.dirname(__file__))
import hostile_checkpoints as hostile  # noqa: E402


def _peak_while(load, *args, **kwargs):
    """(result, peak bytes Python and NumPy allocated) of one call."""
    tracemalloc.start()
    try:
        return load(*args, **kwargs), tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _refused(source, problem: str) -> None:
    with pytest.raises(CheckpointError, match=problem):
        ember.load(source)


def _write(tmp_path, raw: bytes, name: str = "crafted.pt"):
    path = tmp_path / name
    path.write_bytes(raw)
    return path


# -- the attack run ---------------------------------------------------------------------------------------------

def test_every_crafted_file_is_a_checkpoint_error_within_the_memory_bound(tmp_path):
    outcomes = hostile.run_all(str(tmp_path))
    assert len(outcomes) >= 200 and len({o.case.category for o in outcomes}) >= 15
    unclean = [f"[{o.case.category}] {o.case.name}: {o.result}: {o.message[:200]} (peak {o.peak} bytes, file "
               f"{o.size})" for o in outcomes if not o.clean]
    assert not unclean, "\n".join(unclean)
    refused = [o for o in outcomes if o.result == "CheckpointError"]
    assert all(str(tmp_path) in o.message or "stream" in o.message for o in refused)  # each names its file


# -- shapes NumPy cannot hold --------------------------------------------------------------------------------

@pytest.mark.parametrize("shape, problem", [
    ([0, 2 ** 62], "too large to address"), ([0, 10 ** 30], "too large to address"),
    ([1] * 65, "65 dimensions; .* at most 64"), ([1] * 5000, "5000 dimensions"), ([0] * 65, "65 dimensions"),
])
def test_shapes_beyond_numpy_are_refused_in_every_format(tmp_path, shape, problem):
    nbytes = 4 if 0 not in shape else 0
    ember_file = hostile._ember_edit(hostile._shape(shape, nbytes), fix_crc=True)()
    torch_file = hostile._torch_zip({"w": hostile._tensor(hostile._float_storage(), 0, shape, [1] * len(shape))})
    for raw in (ember_file, torch_file):
        path = _write(tmp_path, raw)
        with pytest.raises(CheckpointError, match=f"ember.load: {path}: .*{problem}"):
            ember.load(path)
    path = _write(tmp_path, hostile._safetensors(hostile._entry(shape=shape, offsets=(0, nbytes)), bytes(nbytes)))
    beyond_json = "|not a valid safetensors file: .* expected usize" if 10 ** 30 in shape else ""  # its parser's
    with pytest.raises(CheckpointError, match=f"load_safetensors: {path}: (tensor 'w' .*{problem}{beyond_json})"):
        load_safetensors(path)


def test_largest_addressable_empty_shape_still_loads():
    raw = hostile._ember_edit(hostile._shape([0, 2 ** 61 - 1], 0), fix_crc=True)()
    assert ember.load(io.BytesIO(raw))["w"].shape == (0, 2 ** 61 - 1)


@pytest.mark.parametrize("offset, size, stride", [(0, (4,), (-1,)), (0, (2,), (2 ** 62,)), (5, (0,), (1,)),
                                                  (2 ** 62, (0,), (1,)), (-1, (1,), (1,))])
def test_torch_layouts_outside_their_storage_are_refused(offset, size, stride):
    raw = hostile._torch_zip({"w": hostile._tensor(hostile._float_storage(), offset, size, stride)})
    with pytest.raises(CheckpointError, match="invalid layout|reaches element"):
        ember.load(io.BytesIO(raw))


def test_bool_bytes_other_than_0_and_1_are_damage():
    with pytest.raises(CheckpointError, match=r"bool data of obj\['m'\] holds byte values other than 0 and 1"):
        ember.load(io.BytesIO(hostile._bool_byte(7)()))


# -- memory: alias bombs, zip bombs, pickle bombs, endless streams ---------------------------------------------

def test_records_over_one_blob_share_one_buffer(tmp_path):
    path = _write(tmp_path, hostile._ember_alias_cases()[0].make())
    tensors, peak = _peak_while(ember.load, path)
    assert len(tensors) == 96 and peak < os.path.getsize(path) + hostile.SLACK  # not 96 x 8 MB
    tensors[0][0] = 5.0  # views of one buffer, as tensors over one PyTorch storage are
    assert tensors[95][0].item() == 5.0 and tensors[1].shape == (hostile.BLOB // 4,)


def test_overlapping_records_cannot_exceed_the_file(tmp_path):
    for case in hostile._ember_alias_cases()[2:3] + hostile._ember_alias_cases()[4:]:
        path = _write(tmp_path, case.make())
        _, peak = _peak_while(_refused, path, "overlaps data already read")
        assert peak < os.path.getsize(path) + hostile.SLACK


@pytest.mark.parametrize("make, problem", [
    (hostile._zip_overlap_bomb, "more than the archive has left.*zip bomb"),
    (lambda: hostile._torch_zip({"w": hostile._tensor(hostile._float_storage(2 ** 24), size=(2 ** 24,))},
                                {"0": bytes(2 ** 26)}, compression=hostile.zipfile.ZIP_DEFLATED), "zip bomb"),
])
def test_zip_members_that_overlap_or_inflate_are_refused_before_allocating(tmp_path, make, problem):
    path = _write(tmp_path, make())
    _, peak = _peak_while(_refused, path, problem)
    assert peak < os.path.getsize(path) + hostile.SLACK


def test_pickle_memo_and_bytearray_bombs_allocate_nothing_large():
    memo_bomb = hostile._zip({"archive/data.pkl": hostile._memo_bomb(2 ** 28)})  # 4 GB in the C unpickler
    result, peak = _peak_while(ember.load, io.BytesIO(memo_bomb))
    assert result == [] and peak < hostile.SLACK
    with pytest.raises(UnpicklingError, match="bytearray is allowed only over bytes"):
        ember.load(io.BytesIO(hostile._zip({"archive/data.pkl": hostile._bytearray_bomb(2 ** 30)})))
    assert ember.load(io.BytesIO(hostile._zip({"archive/data.pkl": b"\x80\x02c__builtin__\nbytearray\n"
                                                                  b"X\x02\x00\x00\x00abX\x06\x00\x00\x00latin1"
                                                                  b"\x86R."}))) == bytearray(b"ab")


def test_a_stream_that_is_no_checkpoint_ends_at_its_first_bytes():
    for head, problem in [(hostile.EMBER_MAGIC_ONLY, "checkpoint format version 0"),
                          (b"PK\x03\x04", "zip archive whose first entry has no name"),
                          (b"GIF89a", "not an Ember checkpoint: it starts with b'GIF89a")]:
        stream = hostile.EndlessStream(head)
        _refused(stream, problem)
        assert stream.sent <= 2 ** 20  # one read chunk, not the stream


@pytest.mark.parametrize("head", [hostile.EMBER_HEAD, hostile.ZIP_HEAD], ids=["ember", "torch zip"])
def test_an_endless_stream_stops_at_max_stream_bytes_in_bounded_memory(monkeypatch, head):
    assert ember.serialization.MAX_STREAM_BYTES == 2 ** 30
    limit = 48 * 2 ** 20
    monkeypatch.setattr(ember.serialization, "MAX_STREAM_BYTES", limit)
    stream = hostile.EndlessStream(head)
    _, peak = _peak_while(_refused, stream, rf"<EndlessStream stream>: .* past {limit} bytes "
                                            r"\(ember.serialization.MAX_STREAM_BYTES\)")
    assert stream.sent <= limit + 2 ** 20
    assert peak < ember.serialization.source.SPOOL_MEMORY_BYTES + hostile.SLACK  # the rest went to a temporary file


def test_a_finite_stream_loads():
    class Pipe(io.RawIOBase):  # a finite pipe just under the limit still loads
        def __init__(self, data):
            self.data = io.BytesIO(data)

        def readable(self):
            return True

        def readinto(self, b):
            return self.data.readinto(b)

    for size in (3, 2 ** 22):  # in memory, and past the spool's memory into its temporary file
        buffer = io.BytesIO()
        ember.save({"w": ember.arange(size, dtype=ember.float32)}, buffer)
        assert ember.equal(ember.load(Pipe(buffer.getvalue()))["w"], ember.arange(size, dtype=ember.float32))


# -- loaded containers are plain data ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["items", "keys", "get", "values", "pop"])
def test_attributes_cannot_shadow_dict_methods(name):
    ember_file = hostile._ember_edit(lambda h: h.update(root={"$": "odict", "items": [], "attrs": {name: 1}}))()
    torch_file = hostile._torch_zip({"sd": hostile.Call(hostile.ODICT, state={"_metadata": {}, name: 1})})
    for raw in (ember_file, torch_file):
        with pytest.raises(CheckpointError, match=f"OrderedDict at .* carries attributes \\['{name}'\\], which "
                                                  f"would shadow its own methods"):
            ember.load(io.BytesIO(raw))


def test_metadata_and_other_plain_attributes_are_restored():
    state = OrderedDict(w=ember.ones(2))
    state._metadata = OrderedDict({"": {"version": 1}})
    buffer = io.BytesIO()
    ember.save(state, buffer)
    loaded = ember.load(io.BytesIO(buffer.getvalue()))
    assert loaded._metadata == {"": {"version": 1}} and list(loaded.items())[0][0] == "w"
    torch_file = hostile._torch_zip({"sd": hostile.Call(hostile.ODICT, state={"_metadata": {"": 1}})})
    assert ember.load(io.BytesIO(torch_file))["sd"]._metadata == {"": 1}


# -- interrupted saves ---------------------------------------------------------------------------------------

_SAVE_THEN_DIE = textwrap.dedent("""
    import sys, time
    import ember
    path, step = sys.argv[1], int(sys.argv[2])
    ember.save({"step": step, "w": ember.full((1_000_000,), float(step))}, path)
    real_host, calls = ember.Tensor._host, []
    def slow_host(self):
        calls.append(1)
        if len(calls) == 3:  # two tensors are in the temporary file by now
            print("midway", flush=True)
            time.sleep(120)
        return real_host(self)
    ember.Tensor._host = slow_host
    ember.save({f"w{i}": ember.ones(1_000_000) for i in range(4)}, path)
""")


def _temps(directory) -> list[str]:
    return sorted(name for name in os.listdir(directory) if name.endswith(".tmp"))


def _kill_midway(path, step: int) -> None:
    child = subprocess.Popen([sys.executable, "-c", _SAVE_THEN_DIE, str(path), str(step)], stdout=subprocess.PIPE,
                             text=True)
    try:
        assert child.stdout.readline().strip() == "midway"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()


def test_ten_killed_saves_then_one_clean_save_leave_no_temporary_files(tmp_path):
    path = tmp_path / "ckpt.ember"
    unrelated = tmp_path / ".ckpt.ember.notes.tmp"  # only names a save of ckpt.ember would write are removed
    unrelated.write_text("keep me")
    for step in range(10):
        _kill_midway(path, step)
        loaded = ember.load(path)  # each child's clean save is there, whole; its killed one never replaced it
        assert loaded["step"] == step and loaded["w"][-1].item() == float(step)
        assert len(_temps(tmp_path)) == 2  # the one just killed (and the unrelated file); older ones are gone
    ember.save({"step": 10}, path)
    assert _temps(tmp_path) == [unrelated.name] and ember.load(path) == {"step": 10}


_SAVE_IN_PROGRESS = textwrap.dedent("""
    import sys, time
    import ember
    real_host = ember.Tensor._host
    def slow_host(self):
        print("midway", flush=True)
        time.sleep(120)
    ember.Tensor._host = slow_host
    ember.save({"w": ember.ones(10)}, sys.argv[1])
""")


def test_a_save_in_progress_elsewhere_keeps_its_temporary_file(tmp_path):
    path = tmp_path / "ckpt.ember"
    child = subprocess.Popen([sys.executable, "-c", _SAVE_IN_PROGRESS, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "midway"
        in_progress = _temps(tmp_path)
        ember.save({"step": 1}, path)  # its own save; the other process's lock protects its temporary file
        assert _temps(tmp_path) == in_progress and len(in_progress) == 1
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()
    ember.save({"step": 2}, path)
    assert _temps(tmp_path) == [] and ember.load(path) == {"step": 2}
