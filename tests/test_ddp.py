"""DistributedDataParallel on 2 ranks over loopback MPI: training parity with one process, no_sync, unused
parameters, buffers and state_dict. One 2-rank job (tests/ddp_scripts/ddp_checks.py) runs every check and
writes what it saw; each test here asserts on one check."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mpi4py")

SCRIPTS = Path(__file__).parent / "ddp_scripts"
TIMEOUT = 240
TOLERANCE = 2e-5  # relative to the parameters' scale: float32 sums in a different order, 20 steps


def _mpiexec() -> str:
    found = shutil.which("mpiexec", path=os.path.dirname(sys.executable)) or shutil.which("mpiexec")
    if found is None:
        pytest.skip("mpiexec not found (pip install ember[distributed])")
    return found


def run_two_ranks(script: str, *args, timeout: int = TIMEOUT) -> subprocess.CompletedProcess:
    """``mpiexec -n 2 python script args``; a hang is a test failure, not a stuck suite."""
    command = [_mpiexec(), "-n", "2", sys.executable, str(SCRIPTS / script), *map(str, args)]
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as expired:
        pytest.fail(f"{script} on 2 ranks did not finish in {timeout} s:\n{expired.stdout}\n{expired.stderr}")


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    out = tmp_path_factory.mktemp("ddp")
    done = run_two_ranks("ddp_checks.py", out)
    assert done.returncode == 0, done.stdout + done.stderr
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(2)]


def results(ranks, check):
    found = [r[check] for r in ranks]
    for rank, result in enumerate(found):
        assert "error" not in result, f"rank {rank}:\n{result.get('error')}"
    return found


def assert_matches_single_process(ranks, check, min_buckets=1):
    for result in results(ranks, check):
        assert result["at_start"] == 0.0, "construction did not broadcast rank 0's parameters"
        assert result["after"] <= TOLERANCE * max(1.0, result["scale"]), result
        assert result["buckets"] >= min_buckets


def test_two_ranks(ranks):
    assert [r["world_size"] for r in ranks] == [2, 2]


def test_mlp_matches_single_process_on_the_concatenated_batch(ranks):
    assert_matches_single_process(ranks, "check_mlp")


def test_cnn_matches_single_process_on_the_concatenated_batch(ranks):
    assert_matches_single_process(ranks, "check_cnn")


def test_many_small_buckets(ranks):
    assert_matches_single_process(ranks, "check_mlp_small_buckets", min_buckets=3)


def test_no_sync_gradient_accumulation(ranks):
    assert_matches_single_process(ranks, "check_no_sync")


def test_cnn_no_sync_with_small_buckets(ranks):
    assert_matches_single_process(ranks, "check_cnn_no_sync", min_buckets=2)


def test_gradient_as_bucket_view(ranks):
    assert_matches_single_process(ranks, "check_bucket_view", min_buckets=2)
    assert all(r["grads_are_views"] for r in results(ranks, "check_bucket_view"))


def test_find_unused_parameters_with_a_rank_dependent_graph(ranks):
    for result in results(ranks, "check_find_unused"):
        assert result["after"] <= TOLERANCE * max(1.0, result["scale"]), result
        assert result["skipped_grad_is_none"]  # unused on every rank: .grad untouched, as in PyTorch
        assert result["odd_grad_nonzero"]  # used on rank 1 only: rank 0 receives the average too


def test_static_graph_leaves_a_never_used_parameter_alone(ranks):
    for result in results(ranks, "check_static_graph"):
        assert result["skipped_unchanged"] and result["skipped_grad_is_none"]


def test_unused_parameter_without_detection_fails_at_the_next_forward(ranks):
    for result in results(ranks, "check_unused_without_detection"):
        assert result["raised"]
        assert "Expected to have finished reduction in the prior iteration" in result["message"]
        assert "find_unused_parameters=True" in result["message"]
        assert "skipped.weight" in result["message"] and "odd.bias" in result["message"]
        assert "trunk.weight" not in result["message"]


def test_state_dict_keys_are_prefixed_with_module(ranks):
    for result in results(ranks, "check_state_dict"):
        assert result["module_is_model"]
        assert result["keys"] == ["module." + key for key in result["module_keys"]]
        assert "module.norm.running_mean" in result["keys"]


def test_buffers_broadcast_from_rank_0(ranks):
    synced = results(ranks, "check_buffers")
    for result in synced:
        on = result["True"]
        assert on["initial"] == [1.0] * 4  # rank 0's value, at construction
        rank0, rank1 = on["ranks"]
        assert rank0["train"] != rank1["train"]  # each rank's batch moved its statistics differently
        assert rank0["sync"] == rank1["sync"] == rank0["train"]  # the next forward took rank 0's
        off = result["False"]
        assert off["ranks"][0]["sync"] != off["ranks"][1]["sync"]
    assert synced[0]["False"]["initial"] == [1.0] * 4 and synced[1]["False"]["initial"] == [2.0] * 4


def test_different_models_on_the_ranks_are_refused(ranks):
    for result in results(ranks, "check_different_models"):
        assert result["raised"]
        assert "same model on every rank" in result["message"] and "rank 1" in result["message"]


def test_device_ids_rules(ranks):
    for result in results(ranks, "check_device_ids"):
        several, cpu_index = result["messages"]
        assert "device_ids can only be None or contain a single element" in several
        assert "device_ids [0]" in cpu_index


def test_torchrun_style_program_through_the_launcher():
    """env:// rendezvous, a DistributedSampler sized from the process group, DDP: ranks end identical."""
    command = [sys.executable, "-m", "ember.distributed.run", "--nproc-per-node", "2",
               str(SCRIPTS / "torchrun_train.py")]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired as expired:
        pytest.fail(f"the launcher did not finish in {TIMEOUT} s:\n{expired.stdout}\n{expired.stderr}")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "parameter spread 0.0 samples [57, 57]" in done.stdout  # ceil(37 / 2) samples x 3 epochs each
