"""ember.distributed.checkpoint (DCP) and ShardedTensor: single-process here, multi-rank under mpiexec.

The multi-rank parts are three jobs (tests/distributed_scripts/dcp_*.py): a save at 4 ranks, loads at 2 ranks,
and a save whose rank 1 kills itself mid-write. Each prints one summary line per rank.
"""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import ember
import ember.distributed.checkpoint as dcp
from ember.distributed.sharded_tensor import ShardedTensor
from ember.serialization import CheckpointError, UnpicklingError

SCRIPTS = Path(__file__).parent / "distributed_scripts"
sys.path.insert(0, str(SCRIPTS))
import dcp_common as common  # noqa: E402


def data_files(path) -> list[str]:
    return sorted(n for n in os.listdir(path) if n.endswith(".distcp"))


def saved(tmp_path, version=1, **kwargs) -> Path:
    path = tmp_path / f"ckpt{version}"
    dcp.save(common.state_dict(version), checkpoint_id=path, **kwargs)
    return path


# -- ShardedTensor --------------------------------------------------------------------------------------------

def test_sharded_tensor_describes_the_global_tensor_and_lends_its_piece():
    local = ember.arange(5, dtype=ember.float64)
    piece = ShardedTensor(local, (3, 4), 7)
    assert piece.shape == ember.Size([3, 4]) and piece.size() == ember.Size([3, 4]) and piece.size(-1) == 4
    assert (piece.ndim, piece.numel(), piece.offset) == (2, 12, 7)
    assert (piece.dtype, piece.device.type) == (ember.float64, "cpu")
    assert piece.to_local() is local
    assert repr(piece) == "ShardedTensor(shape=[3, 4], offset=7, local_numel=5, dtype=ember.float64, device=cpu)"
    with pytest.raises(IndexError, match="Dimension out of range"):
        piece.size(2)


def test_sharded_tensor_refuses_pieces_that_do_not_fit():
    with pytest.raises(ValueError, match=r"the piece \[8, 13\) \(5 float32 elements on cpu\) does not fit in "
                                         r"global shape \(3, 4\) of 12 elements"):
        ShardedTensor(ember.zeros(5), (3, 4), 8)
    with pytest.raises(ValueError, match=r"local must be 1-d .* got shape \(2, 2\) \(float32 on cpu\)"):
        ShardedTensor(ember.zeros(2, 2), (3, 4), 0)
    with pytest.raises(ValueError, match="offset must be non-negative, got -1"):
        ShardedTensor(ember.zeros(2), (3, 4), -1)
    with pytest.raises(TypeError, match="local must be an ember.Tensor, got list"):
        ShardedTensor([1.0], (1,), 0)


def test_full_tensor_without_a_process_group_needs_the_whole_tensor():
    full = ember.arange(12.0).reshape(3, 4)
    assert ShardedTensor(full.reshape(-1), (3, 4), 0).full_tensor().equal(full)
    with pytest.raises(ValueError, match=r"must cover the whole tensor, but it holds elements \[2, 12\) of 12"):
        ShardedTensor(full.reshape(-1)[2:], (3, 4), 2).full_tensor()


# -- single-process save and load ---------------------------------------------------------------------------

def test_round_trip_of_every_dtype_and_plain_values_loads_in_place(tmp_path):
    path = saved(tmp_path)
    target = common.state_dict(None)
    weight = target["model"]["w"] = ember.nn.Parameter(target["model"]["w"])
    dcp.load(target, checkpoint_id=path)
    assert common.mismatches(target, 1) == []
    assert target["model"]["w"] is weight and weight.requires_grad
    assert {common.SPECS[k][1] for k in common.SPECS} == {"float32", "float64", "bfloat16", "int64", "bool"}
    assert target["optim"]["param_groups"][0]["betas"] == (0.9, 0.999)  # a tuple stays a tuple


def test_a_plain_checkpoint_loads_into_pieces_of_any_split(tmp_path):
    path = saved(tmp_path)
    for rank in range(3):  # as three ranks would, one piece each: empty, uneven and overlapping pieces
        bounds = {"model.w": [(0, 11), (11, 11), (5, 35)], "model.mask": [(0, 15), (3, 9), (14, 15)]}
        target = common.state_dict(None, rank, bounds)
        dcp.load(target, checkpoint_id=path, no_dist=True)
        assert common.mismatches(target, 1, rank, bounds) == []


def test_saving_again_replaces_the_checkpoint_and_removes_the_old_files(tmp_path):
    path = tmp_path / "ckpt"
    first = dcp.save(common.state_dict(1), checkpoint_id=str(path))
    second = dcp.save(common.state_dict(2), checkpoint_id=path)
    assert first.save_id != second.save_id
    assert data_files(path) == sorted(second.files) == [f"__0_{second.save_id}.distcp"]
    target = common.state_dict(None)
    dcp.load(target, checkpoint_id=path)
    assert common.mismatches(target, 2) == []


def test_storage_objects_and_their_options(tmp_path):
    writer = dcp.FileSystemWriter(tmp_path / "a", single_file_per_rank=False)
    metadata = dcp.save(common.state_dict(1), storage_writer=writer)
    assert len(metadata.files) == len(common.leaves(common.state_dict(1)))  # one file per item
    target = common.state_dict(None)
    dcp.load(target, storage_reader=dcp.FileSystemReader(tmp_path / "elsewhere"), checkpoint_id=tmp_path / "a")
    assert common.mismatches(target, 1) == []
    with pytest.raises(RuntimeError, match="Checkpoint already exists at .* and overwrite=False"):
        dcp.save(common.state_dict(1), storage_writer=dcp.FileSystemWriter(tmp_path / "a", overwrite=False))
    with pytest.raises(RuntimeError, match="`checkpoint_id` must be specified if storage_writer is None"):
        dcp.save({})
    with pytest.raises(FileNotFoundError, match="no checkpoint at .*nothing"):
        dcp.load({}, checkpoint_id=tmp_path / "nothing")


def test_non_tensor_values_are_loaded_without_running_code(tmp_path):
    dcp.save({"hook": Unsafe()}, checkpoint_id=tmp_path)
    with pytest.raises(UnpicklingError, match=r"load: the value of hook in checkpoint file .*__0_\w+\.distcp: "
                                              r"ember.load\(weights_only=True\) refused to load the global"):
        dcp.load({"hook": None}, checkpoint_id=tmp_path)


class Unsafe:
    pass


def test_pieces_must_cover_the_tensor(tmp_path):
    with pytest.raises(ValueError, match=r"save: the ranks' pieces of 'w' \(a float32 tensor of shape \(4,\)\) "
                                         r"leave element 0 of 4 uncovered"):
        dcp.save({"w": ShardedTensor(ember.zeros(2), (4,), 2)}, checkpoint_id=tmp_path)
    assert not os.path.exists(tmp_path / ".metadata")


# -- errors: damaged files, mismatched targets ----------------------------------------------------------------

def damaged_load_error(path) -> str:
    target = common.state_dict(None)
    with pytest.raises(CheckpointError) as info:
        dcp.load(target, checkpoint_id=path)
    assert common.mismatches(target, None) == []  # nothing was written into the targets
    return str(info.value)


def test_a_truncated_data_file_is_an_error_naming_it(tmp_path):
    path = saved(tmp_path)
    (name,) = data_files(path)
    size = os.path.getsize(path / name)
    os.truncate(path / name, size - 3)
    assert damaged_load_error(path) == (f"checkpoint file {path / name} is truncated: expected {size} bytes, "
                                        f"found {size - 3}")


def test_a_data_file_from_another_checkpoint_is_an_error_naming_it(tmp_path):
    path, other = saved(tmp_path, 1), saved(tmp_path, 2)
    (name,), (other_name,) = data_files(path), data_files(other)
    shutil.copyfile(other / other_name, path / name)  # same size: same shapes
    message = damaged_load_error(path)
    assert message.startswith(f"checkpoint file {path / name} does not belong to this checkpoint: it was written "
                              f"by save {other_name[4:-7]}")


def test_corrupted_bytes_are_an_error_naming_the_file(tmp_path):
    path = saved(tmp_path)
    (name,) = data_files(path)
    with open(path / name, "r+b") as f:
        f.seek(100)
        byte = f.read(1)
        f.seek(100)
        f.write(bytes([byte[0] ^ 0x40]))
    assert re.fullmatch(rf"checkpoint file {re.escape(str(path / name))} is corrupted: checksum mismatch "
                        r"\(crc32 [0-9a-f]{8}, expected [0-9a-f]{8}\)", damaged_load_error(path))


def test_a_missing_data_file_or_damaged_metadata_is_an_error_naming_it(tmp_path):
    path = saved(tmp_path)
    (name,) = data_files(path)
    os.rename(path / name, tmp_path / name)
    assert damaged_load_error(path) == f"checkpoint file {path / name} is missing"
    (path / ".metadata").write_text('{"format": "ember.distributed.checkpoint", "vers')
    assert damaged_load_error(path).startswith(f"checkpoint metadata {path / '.metadata'} is not valid JSON")


def test_key_shape_and_dtype_mismatches_name_the_key(tmp_path):
    path = saved(tmp_path)
    with pytest.raises(RuntimeError, match=r"Missing key in checkpoint state_dict: model.v\. \(checkpoint "):
        dcp.load({"model": {"v": ember.zeros(1)}}, checkpoint_id=path)
    with pytest.raises(ValueError, match=re.escape("load: Size mismatch between saved ember.Size([5, 7]) and "
                                                   "current: ember.Size([7, 5]) for model.w")):
        dcp.load({"model": {"w": ember.zeros(7, 5)}}, checkpoint_id=path)
    with pytest.raises(ValueError, match=re.escape("Size mismatch between saved ember.Size([9]) and current: "
                                                   "ember.Size([10]) for model.b")):
        dcp.load({"model": {"b": ShardedTensor(ember.zeros(3, dtype=ember.float64), [10], 0)}}, checkpoint_id=path)
    with pytest.raises(TypeError, match="load: dtype mismatch for model.h: saved bfloat16, current float32"):
        dcp.load({"model": {"h": ember.zeros(4, 4)}}, checkpoint_id=path)
    with pytest.raises(ValueError, match=r"'extra.epoch' is a non-tensor value .* holds a Tensor there"):
        dcp.load({"extra": {"epoch": ember.zeros(1)}}, checkpoint_id=path)
    with pytest.raises(ValueError, match=r"'model.i' is a int64 tensor of shape \(6,\) .* holds a NoneType"):
        dcp.load({"model": {"i": None}}, checkpoint_id=path)
    partial = {"model": {"i": ember.zeros(6, dtype=ember.int64), "v": ember.ones(1)}}
    dcp.load(partial, checkpoint_id=path, planner=dcp.DefaultLoadPlanner(allow_partial_load=True))
    assert partial["model"]["i"].equal(common.full("model.i", 1)) and partial["model"]["v"].equal(ember.ones(1))


def test_flattened_keys_match_pytorch():
    torch = pytest.importorskip("torch")
    from torch.distributed.checkpoint._nested_dict import flatten_state_dict as torch_flatten
    from ember.distributed.checkpoint.flatten import flatten_state_dict

    def nested(tensor):
        return {"model": {"layer.weight": tensor(2)}, "optim": {
            "state": {0: {"step": tensor(()), "exp_avg": tensor(2)}},
            "param_groups": [{"lr": 0.1, "betas": (0.9, 0.99), "params": [0]}, {"lr": 0.2, "params": [1, 2]}]},
            "tensors": [tensor(1), [tensor(1), 3]], "ints": [1, [2, 3]], "epoch": 3}
    ours, _ = flatten_state_dict(nested(ember.zeros))
    theirs, _ = torch_flatten(nested(torch.zeros))
    assert list(ours) == list(theirs)


# -- several ranks, under mpiexec -----------------------------------------------------------------------------

def run_ranks(n: int, script: str, *args, timeout: float = 120) -> subprocess.CompletedProcess:
    pytest.importorskip("mpi4py", reason="the distributed extra (mpi4py, mpich) is not installed")
    mpiexec = Path(sys.executable).parent / "mpiexec"
    return subprocess.run([str(mpiexec), "-n", str(n), sys.executable, str(SCRIPTS / script), *map(str, args)],
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "EMBER_DIST_TIMEOUT": "20"})


def assert_every_rank_passed(done: subprocess.CompletedProcess, script: str, ranks: int, checks: int) -> None:
    assert done.returncode == 0, done.stdout + done.stderr
    # Hydra forwards each rank's output on its own, so one rank's line may run into another's.
    lines = re.findall(rf"{script} rank (\d): (\d+) checks passed, failed: (\[[^\]]*\])", done.stdout)
    assert sorted(rank for rank, _, _ in lines) == [str(r) for r in range(ranks)], done.stdout
    assert all(int(n) == checks and failed == "[]" for _, n, failed in lines), done.stdout


@pytest.fixture(scope="module")
def saved_at_4_ranks(tmp_path_factory):
    path = tmp_path_factory.mktemp("dcp") / "at4"
    done = run_ranks(4, "dcp_save.py", path)
    assert_every_rank_passed(done, "dcp_save", 4, 10)
    return path


def test_save_at_4_ranks_writes_each_chunk_once_and_replaces_an_older_checkpoint(saved_at_4_ranks):
    assert len(data_files(saved_at_4_ranks)) == 4


def test_a_checkpoint_saved_at_4_ranks_loads_at_2_ranks_and_in_one_process(saved_at_4_ranks, tmp_path):
    target = common.state_dict(None)
    dcp.load(target, checkpoint_id=saved_at_4_ranks)
    assert common.mismatches(target, 2) == []
    plain = saved(tmp_path, 3)  # full tensors, as an unsharded model's state_dict, to load into pieces
    assert_every_rank_passed(run_ranks(2, "dcp_load.py", saved_at_4_ranks, plain), "dcp_load", 2, 10)


def test_a_rank_killed_mid_save_leaves_the_previous_checkpoint_loadable(tmp_path):
    path = tmp_path / "ckpt"
    done = run_ranks(2, "dcp_kill.py", path)
    assert done.returncode != 0
    assert "dcp_kill rank 0: first save committed" in done.stdout and "must not" not in done.stdout
    assert any(re.fullmatch(r"\.__1_\w+\.distcp\.\w+\.tmp", n) for n in os.listdir(path))  # killed mid-write
    target = common.state_dict(None)
    dcp.load(target, checkpoint_id=path)
    assert common.mismatches(target, 1) == []
    metadata = dcp.save(common.state_dict(3), checkpoint_id=path)  # cleans up what the killed save left
    assert sorted(os.listdir(path)) == [".metadata", *sorted(metadata.files)]
