"""ember.distributed.device_mesh: errors and a world of one in this process; 4 and 2 ranks in subprocesses."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

import ember
import ember.distributed as dist
from ember.distributed.device_mesh import DeviceMesh, init_device_mesh

needs_mpi = pytest.mark.skipif(not dist.is_mpi_available(), reason="the distributed extra (mpi4py) is not installed")
SCRIPT = Path(__file__).parent / "distributed_scripts" / "device_mesh_checks.py"


def test_a_mesh_needs_the_default_process_group():
    with pytest.raises(ValueError, match="init_device_mesh: Default process group has not been initialized"):
        init_device_mesh("cpu", (1,))
    with pytest.raises(ValueError, match="DeviceMesh: Default process group has not been initialized"):
        DeviceMesh("cpu", [0])


def test_names_are_checked_before_the_process_group():
    with pytest.raises(RuntimeError, match=r"Found repeated mesh_dim_name in mesh_dim_names \('a', 'a'\)"):
        init_device_mesh("cpu", (1, 1), mesh_dim_names=("a", "a"))
    with pytest.raises(RuntimeError, match=r"Found len\(mesh_dim_names\): 1 and len\(mesh_shape\):2"):
        init_device_mesh("cpu", (1, 1), mesh_dim_names=("a",))


@needs_mpi
def test_a_world_of_one(world):
    mesh = init_device_mesh("cpu", (1, 1), mesh_dim_names=("dp", "tp"))
    assert (mesh.ndim, mesh.shape, mesh.size(), mesh.size("tp"), mesh.device_type) == (2, (1, 1), 1, 1, "cpu")
    assert mesh.mesh.tolist() == [[0]] and mesh.mesh.dtype == ember.int32
    assert mesh.get_coordinate() == (0, 0) and mesh.get_rank() == 0 and mesh.get_local_rank("dp") == 0
    assert [dist.get_process_group_ranks(g) for g in mesh.get_all_groups()] == [[0], [0]]
    assert mesh["tp"].get_group() is mesh.get_group("tp") is mesh.get_group(1)
    assert repr(mesh) == "DeviceMesh((dp=1, tp=1), 'cpu', stride=(1, 1))"
    assert repr(mesh["dp"]) == "DeviceMesh((dp=1), 'cpu', stride=(1,))"
    same = DeviceMesh("cpu", [[0]], mesh_dim_names=("dp", "tp"))
    assert same == mesh and hash(same) == hash(mesh) and same.get_group(0) is not mesh.get_group(0)
    assert DeviceMesh("cpu", [[0]]) != mesh and init_device_mesh("cpu", (1,)) != mesh["dp"]
    assert len({mesh, same}) == 1


@needs_mpi
@pytest.mark.parametrize("make, error, message", [
    (lambda: init_device_mesh("cpu", (2, 2)), RuntimeError,
     r"init_device_mesh: mesh_shape \(2, 2\) holds 4 ranks, but the world size of the default process group is 1"),
    (lambda: init_device_mesh("cpu", (1, 0)), ValueError, r"mesh_shape must be a non-empty tuple of positive ints"),
    (lambda: init_device_mesh("cuda:0", (1,)), RuntimeError, r"Device type with index is not supported but got cuda:0"),
    (lambda: DeviceMesh(ember.device("cpu"), [0]), TypeError, r"device_type must be a str"),
    (lambda: DeviceMesh("cpu", [0, 1]), RuntimeError, r"holds 2 ranks, but the world size .* is 1"),
    (lambda: DeviceMesh("cpu", [3]), RuntimeError, r"the mesh \[3\] must hold the global ranks 0..0"),
    (lambda: DeviceMesh("cpu", [[0], [0, 1]]), ValueError, r"DeviceMesh: mesh must be a rectangular nested list"),
    (lambda: DeviceMesh("cpu", ember.tensor([0.0])), TypeError,
     r"DeviceMesh: mesh must hold integer ranks, got a tensor of dtype ember.float32 on cpu"),
    (lambda: DeviceMesh("cpu", ember.tensor(0)), ValueError, r"at least one dimension"),
])
def test_bad_meshes_are_clear_errors(world, make, error, message):
    with pytest.raises(error, match=message):
        make()


@needs_mpi
def test_bad_dimensions_are_clear_errors(world):
    mesh = init_device_mesh("cpu", (1, 1), mesh_dim_names=("dp", "tp"))
    with pytest.raises(RuntimeError, match="Optional kwarg `mesh_dim` needs to be specified .*get_all_groups"):
        mesh.get_group()
    with pytest.raises(RuntimeError, match="Found the DeviceMesh have 2 dimensions"):
        mesh.get_local_rank()
    with pytest.raises(KeyError, match=r"Mesh dimension 'pp' does not exist"):
        mesh.get_group("pp")
    with pytest.raises(IndexError, match=r"get_group: mesh_dim 2 is out of range for a DeviceMesh of shape \(1, 1\)"):
        mesh.get_group(2)
    with pytest.raises(TypeError, match="size: mesh_dim must be an int or a dimension name, got float"):
        mesh.size(0.0)
    with pytest.raises(KeyError, match=r"Invalid mesh_dim_names \('pp',\) specified"):
        mesh["pp"]
    with pytest.raises(KeyError, match="Mesh dim indices should be in ascending order"):
        mesh["tp", "dp"]
    with pytest.raises(RuntimeError, match="Slicing overlapping dim_names"):
        mesh["dp", "dp"]
    unnamed = init_device_mesh("cpu", (1,))
    with pytest.raises(RuntimeError, match="Cannot slice a DeviceMesh without mesh_dim_names!"):
        unnamed["dp"]
    with pytest.raises(KeyError, match="get_group: No `mesh_dim_names` found"):
        unnamed.get_group("dp")


@needs_mpi
@pytest.mark.parametrize("ranks", [4, 2])
def test_meshes_across_ranks(ranks):
    command = [sys.executable, "-m", "ember.distributed.run", "--nproc-per-node", str(ranks), str(SCRIPT)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=180)
    except subprocess.TimeoutExpired as expired:
        pytest.fail(f"device_mesh_checks.py on {ranks} ranks did not finish:\n{expired.stdout}\n{expired.stderr}")
    assert done.returncode == 0, done.stdout + done.stderr
    passed = dict(re.findall(rf"rank (\d+)/{ranks}: (\d+) device_mesh checks passed", done.stdout))
    assert sorted(passed) == [str(r) for r in range(ranks)], done.stdout
    assert set(passed.values()) == {"34" if ranks == 4 else "8"}, done.stdout
