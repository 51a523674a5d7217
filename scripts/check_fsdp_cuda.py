"""FSDP's NCCL path on one GPU: a world of one rank, whose shard group still gathers and reduce-scatters
through NCCL. Run by scripts/check_cuda.sh (``python -m ember.distributed.run --nproc-per-node 1``).

Trains a small MLP on cuda with FULL_SHARD, SHARD_GRAD_OP, bfloat16 mixed precision and fully_shard against
the same MLP trained plainly on cuda, then saves and loads its sharded state with ember.distributed.checkpoint.
Prints one line per check and exits non-zero on the first failure; says "skipped" where mpi4py, NCCL or CUDA
is missing. ``--device cpu`` runs the same checks on the cpu (MPI), which CI does.
"""
import sys
import tempfile

import numpy as np

import ember

try:
    import ember.distributed as dist
    from ember.distributed import checkpoint as dcp
    from ember.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
    from ember.distributed.fsdp import (FullyShardedDataParallel as FSDP, FullStateDictConfig, MixedPrecision,
                                        ShardingStrategy, StateDictType, fully_shard)
    from ember.distributed.fsdp.wrap import ModuleWrapPolicy
except ImportError as error:  # the distributed extra (mpi4py) is not installed on this machine
    print(f"fsdp: skipped ({error})")
    sys.exit(0)

DEVICE = sys.argv[sys.argv.index("--device") + 1] if "--device" in sys.argv else "cuda"
if DEVICE == "cuda" and (not ember.cuda.is_available() or not dist.is_nccl_available()):
    print("fsdp on cuda: skipped (no CUDA device or NCCL here)")
    sys.exit(0)

dist.init_process_group("nccl" if DEVICE == "cuda" else "gloo")
rng = np.random.default_rng(0)
X = ember.tensor(rng.standard_normal((16, 12)), dtype=ember.float32).to(DEVICE)
Y = ember.tensor(rng.integers(0, 4, 16)).to(DEVICE)


def mlp():
    ember.manual_seed(0)
    return ember.nn.Sequential(ember.nn.Linear(12, 32), ember.nn.GELU(), ember.nn.Linear(32, 32), ember.nn.GELU(),
                               ember.nn.Linear(32, 4)).to(DEVICE)


def train(model, steps: int = 3) -> list[float]:
    opt = ember.optim.AdamW(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = ember.nn.functional.cross_entropy(model(X), Y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def whole(model) -> dict:
    if isinstance(model, FSDP):
        with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, FullStateDictConfig()):
            return model.state_dict()
    return get_state_dict(model, [], options=dist.checkpoint.StateDictOptions(full_state_dict=True))[0]


def compare(name: str, model, losses, tol: float) -> None:
    reference = mlp()
    expected = train(reference)
    error = max(abs(a - b) for a, b in zip(losses, expected))
    state = whole(model)
    for key, value in reference.state_dict().items():
        error = max(error, (state[key].float() - value.float()).abs().max().item())
    print(f"fsdp on {DEVICE}: {name}: max error {error:.2e}", flush=True)
    if error > tol:
        raise SystemExit(f"fsdp on {DEVICE}: {name}: error {error:.2e} > {tol:g}")


policy = ModuleWrapPolicy({ember.nn.Linear})
for strategy in (ShardingStrategy.FULL_SHARD, ShardingStrategy.SHARD_GRAD_OP):
    model = FSDP(mlp(), sharding_strategy=strategy, auto_wrap_policy=policy)
    compare(strategy.name, model, train(model), 1e-5)
model = FSDP(mlp(), auto_wrap_policy=policy, mixed_precision=MixedPrecision(param_dtype=ember.bfloat16))
compare("bfloat16 compute", model, train(model), 5e-2)
model = mlp()
for layer in model:
    if isinstance(layer, ember.nn.Linear):
        fully_shard(layer)
fully_shard(model)
compare("fully_shard", model, train(model), 1e-5)

with tempfile.TemporaryDirectory() as directory:
    model = FSDP(mlp(), auto_wrap_policy=policy)
    opt = ember.optim.AdamW(model.parameters(), lr=1e-2)
    train(model)
    saved = whole(model)
    model_state, optim_state = get_state_dict(model, opt)
    dcp.save({"model": model_state, "optim": optim_state}, checkpoint_id=directory)
    again = FSDP(mlp(), auto_wrap_policy=policy)
    opt2 = ember.optim.AdamW(again.parameters(), lr=1e-2)
    model_state, optim_state = get_state_dict(again, opt2)
    state = {"model": model_state, "optim": optim_state}
    dcp.load(state, checkpoint_id=directory)
    set_state_dict(again, opt2, model_state_dict=state["model"], optim_state_dict=state["optim"])
    error = max((whole(again)[k] - v).abs().max().item() for k, v in saved.items())
    print(f"fsdp on {DEVICE}: dcp save/load round trip: max error {error:.2e}", flush=True)
    if error != 0:
        raise SystemExit(f"fsdp on {DEVICE}: the loaded model differs from the saved one")
print(f"fsdp on {DEVICE}: 5 checks passed")
dist.destroy_process_group()
