"""ember.distributed with 2 ranks on loopback, started through the launcher (or mpiexec) in subprocesses."""
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("mpi4py", reason="the distributed extra (mpi4py, mpich) is not installed")

SCRIPTS = Path(__file__).parent / "distributed_scripts"
MPIEXEC = Path(sys.executable).parent / "mpiexec"


def launch(*args: str, timeout: float = 120, env: dict | None = None, launcher=True):
    command = [sys.executable, "-m", "ember.distributed.run", "--nproc-per-node", "2"] if launcher \
        else [str(MPIEXEC), "-n", "2", sys.executable]
    start = time.monotonic()
    done = subprocess.run(command + list(args), capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})
    return done, time.monotonic() - start


@pytest.mark.parametrize("device", ["cpu", "opencl"])
def test_every_collective_on_every_dtype_matches_numpy(device):
    if device == "opencl":
        import ember
        if ember.backends.available().get("opencl") != "available":
            pytest.skip("no OpenCL platform here")
    done, _ = launch(str(SCRIPTS / "collectives.py"), device)
    assert done.returncode == 0, done.stdout + done.stderr
    counts = re.findall(r"rank (\d): (\d+) checks passed on " + device, done.stdout)
    assert sorted(r for r, _ in counts) == ["0", "1"], done.stdout
    assert all(int(n) > 150 for _, n in counts)


@pytest.mark.parametrize("backend", ["gloo", "mpi"])
def test_launcher_runs_a_torchrun_style_script_unchanged(backend):
    done, _ = launch(str(SCRIPTS / "torchrun_style.py"), backend)
    assert done.returncode == 0, done.stdout + done.stderr
    for rank in (0, 1):
        assert re.search(rf"rank {rank}/2 local_rank {rank} local_world 2 group_rank 0 master 127.0.0.1:29500 "
                         r"sum \[3.0, 3.0, 3.0\]", done.stdout), done.stdout


def test_launcher_with_one_process_needs_no_mpiexec():
    done = subprocess.run([sys.executable, "-m", "ember.distributed.run", "--nproc_per_node=1",
                           "--master-port", "29611", str(SCRIPTS / "torchrun_style.py")],
                          capture_output=True, text=True, timeout=60, env={**os.environ, "EMBER_MPIEXEC": "/nonexistent"})
    assert done.returncode == 0, done.stderr
    assert "rank 0/1 local_rank 0 local_world 1 group_rank 0 master 127.0.0.1:29611 sum [1.0, 1.0, 1.0]" \
        in done.stdout


def test_launcher_runs_a_module_and_propagates_its_exit_code(tmp_path):
    (tmp_path / "ember_dist_probe.py").write_text(
        "import os, sys\nprint('module rank', os.environ['RANK'], flush=True)\n"
        "sys.exit(5 if os.environ['RANK'] == '1' else 0)\n")
    done, _ = launch("-m", "ember_dist_probe", env={"PYTHONPATH": str(tmp_path)})
    assert done.returncode == 5, done.stdout + done.stderr
    assert "module rank 0" in done.stdout
    assert re.search(r"rank 1 \(local_rank 1, host .*\): exited with code 5", done.stderr), done.stderr


@pytest.mark.parametrize("mode, code, message", [
    ("raise", 1, r"rank 1 \(local_rank 1, .*\): RuntimeError: rank 1 failed on purpose"),
    ("exit3", 3, r"rank 1 \(local_rank 1, .*\): exited with code 3"),
    ("kill", 137, r"a rank was killed by signal 9 \(SIGKILL\)"),
    ("exit0", 1, r"rank 0 .*DistBackendError: all_reduce: rank 0 of 2 .*timed out after the process group's "
                 r"timeout of 4 s"),
])
def test_a_failing_rank_brings_the_job_down_with_a_clear_error(mode, code, message):
    done, seconds = launch(str(SCRIPTS / "failures.py"), mode, env={"EMBER_DIST_TIMEOUT": "4"})
    assert done.returncode == code, done.stdout + done.stderr
    assert re.search(message, done.stderr), done.stderr
    assert "was not stopped" not in done.stdout
    assert seconds < 30


def test_under_plain_mpiexec_a_timed_out_rank_aborts_the_job():
    done, seconds = launch(str(SCRIPTS / "failures.py"), "exit0", env={"EMBER_DIST_TIMEOUT": "3"}, launcher=False)
    assert done.returncode != 0
    assert "[rank 0] uncaught exception; aborting the MPI job" in done.stderr, done.stderr
    assert "all_reduce: rank 0 of 2 (global rank 0, backend 'gloo') timed out" in done.stderr
    assert seconds < 30


def test_mismatched_world_size_is_a_clear_error_on_every_rank():
    done, _ = launch(str(SCRIPTS / "mismatch.py"), env={"WORLD_SIZE": "3"}, launcher=False)
    for rank in (0, 1):
        assert (f"DistNetworkError: init_process_group: the job was described with world_size=3, but this "
                f"process is rank {rank} of an MPI world of 2 process(es)") in done.stdout, done.stdout + done.stderr


def test_nnodes_without_hostfile_and_nonzero_node_rank_explain_the_mpi_model():
    for extra, text in ((["--nnodes", "2"], "needs --hostfile"), (["--node-rank", "1"], "run the launcher once")):
        done = subprocess.run([sys.executable, "-m", "ember.distributed.run", *extra, "x.py"],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode != 0 and text in done.stderr, done.stderr
