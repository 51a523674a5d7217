"""DeviceMesh on 4 ranks (a 2x2 ("replicate", "shard") mesh) or on 2 ranks (1-d meshes).

Each rank prints "rank R/W: N device_mesh checks passed"; a failed check raises, which brings the job down.
"""
import ember
import ember.distributed as dist
from ember.distributed.device_mesh import DeviceMesh, init_device_mesh

dist.init_process_group("gloo", init_method="env://")
rank, world = dist.get_rank(), dist.get_world_size()
checks = 0


def check(name: str, got, want) -> None:
    global checks
    if got != want:
        raise AssertionError(f"rank {rank}: {name}: got {got!r}, want {want!r}")
    checks += 1


def summed_over(group) -> float:
    t = ember.tensor([float(rank)])
    dist.all_reduce(t, group=group)
    return t.item()


def two_by_two() -> None:
    mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("replicate", "shard"))
    row, column = divmod(rank, 2)
    shard_ranks, replicate_ranks = [2 * row, 2 * row + 1], [column, column + 2]
    check("shape", (mesh.ndim, mesh.shape, mesh.size(), mesh.size(0), mesh.size("shard")), (2, (2, 2), 4, 2, 2))
    check("mesh", mesh.mesh.tolist(), [[0, 1], [2, 3]])
    check("names and device", (mesh.mesh_dim_names, mesh.device_type), (("replicate", "shard"), "cpu"))
    check("coordinate", mesh.get_coordinate(), (row, column))
    check("get_rank", mesh.get_rank(), rank)
    check("shard group", dist.get_process_group_ranks(mesh.get_group("shard")), shard_ranks)
    check("replicate group", dist.get_process_group_ranks(mesh.get_group("replicate")), replicate_ranks)
    check("groups by index", mesh.get_all_groups(), [mesh.get_group(0), mesh.get_group(1)])
    check("index -1", mesh.get_group(-1) is mesh.get_group("shard"), True)
    check("local ranks", (mesh.get_local_rank("replicate"), mesh.get_local_rank(1)), (row, column))
    check("all_reduce over shard", summed_over(mesh.get_group("shard")), float(sum(shard_ranks)))
    check("all_reduce over replicate", summed_over(mesh.get_group("replicate")), float(sum(replicate_ranks)))
    check("repr", repr(mesh), "DeviceMesh((replicate=2, shard=2), 'cpu', stride=(2, 1))")

    shard, replicate = mesh["shard"], mesh["replicate"]
    check("sub-mesh ranks", (shard.mesh.tolist(), replicate.mesh.tolist()), (shard_ranks, replicate_ranks))
    check("sub-mesh shares groups", (shard.get_group() is mesh.get_group("shard"),
                                     replicate.get_group("replicate") is mesh.get_group(0)), (True, True))
    check("sub-mesh local ranks", (shard.get_local_rank(), replicate.get_local_rank()), (column, row))
    check("sub-mesh coordinates", (shard.get_coordinate(), replicate.get_coordinate()), ((column,), (row,)))
    check("sub-mesh repr", (repr(shard), repr(replicate)),
          ("DeviceMesh((shard=2), 'cpu', stride=(1,))", "DeviceMesh((replicate=2), 'cpu', stride=(2,))"))
    check("whole slice is the mesh", mesh["replicate", "shard"] is mesh, True)
    check("slice of a slice", shard["shard"] is shard, True)
    check("equal to a second mesh", init_device_mesh("cpu", (2, 2), mesh_dim_names=("replicate", "shard")), mesh)
    # HYBRID_SHARD's gradient reduction: reduce within the shard group, then across replicas: the world's sum
    t = ember.tensor([float(rank)])
    dist.all_reduce(t, group=shard.get_group())
    dist.all_reduce(t, group=replicate.get_group())
    check("shard then replicate", t.item(), 6.0)

    transposed = DeviceMesh("cpu", ember.tensor([[0, 2], [1, 3]]))
    check("explicit mesh coordinate", transposed.get_coordinate(), (column, row))
    check("explicit mesh dim-0 group", dist.get_process_group_ranks(transposed.get_group(0)), shard_ranks)
    check("explicit mesh dim-1 group", dist.get_process_group_ranks(transposed.get_group(1)), replicate_ranks)
    check("explicit mesh differs", transposed == mesh, False)


def one_dimensional() -> None:
    mesh = init_device_mesh("cpu", (world,))
    check("1-d group", dist.get_process_group_ranks(mesh.get_group()), list(range(world)))
    check("1-d local rank and coordinate", (mesh.get_local_rank(), mesh.get_coordinate()), (rank, (rank,)))
    check("1-d all_reduce", summed_over(mesh.get_group()), float(sum(range(world))))
    check("1-d repr", repr(mesh), f"DeviceMesh(({world},), 'cpu', stride=(1,))")
    try:
        mesh["x"]
    except RuntimeError as error:
        check("slicing without names", str(error), "Cannot slice a DeviceMesh without mesh_dim_names!")
    reversed_mesh = DeviceMesh("cpu", list(reversed(range(world))), mesh_dim_names=("dp",))
    check("reversed coordinate", reversed_mesh.get_coordinate(), (world - 1 - rank,))
    # as in PyTorch, a group orders its ranks by global rank, whatever the mesh's order
    check("reversed local rank", reversed_mesh.get_local_rank("dp"), rank)
    check("reversed equality", (reversed_mesh == mesh, reversed_mesh["dp"] is reversed_mesh), (False, True))


if world == 4:
    two_by_two()
one_dimensional()
dist.destroy_process_group()
print(f"rank {rank}/{world}: {checks} device_mesh checks passed", flush=True)
