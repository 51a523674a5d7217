"""FSDP on N ranks against single-process training of the same small GPT (examples/gpt.py).

    python -m ember.distributed.run --nproc-per-node N fsdp_checks.py save DIR   # checks, then dcp.save to DIR
    python -m ember.distributed.run --nproc-per-node M fsdp_checks.py load DIR...  # dcp.load each DIR at M ranks
    python fsdp_checks.py plain DIR OUT   # one process: DIR into a plain module and optimizer, then saved to OUT

Each check prints ``rank R: ok NAME`` (or raises, which ends the job); the last line per rank is
``rank R: N fsdp checks passed``. The global batch is split evenly over the ranks; each rank's loss is
the mean over its rows, so averaged gradients equal single-process gradients of the global batch.
"""
import functools
import importlib.util
import sys
from pathlib import Path

import numpy as np

import ember
import ember.distributed as dist
import ember.distributed.checkpoint as dcp
from ember.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict, set_state_dict
from ember.distributed.device_mesh import init_device_mesh
from ember.distributed.fsdp import (BackwardPrefetch, CPUOffload, FullStateDictConfig, FullyShardedDataParallel as FSDP,
                                    MixedPrecision, ShardingStrategy, StateDictType, fully_shard)
from ember.distributed.fsdp.wrap import ModuleWrapPolicy
from ember.utils.checkpoint import checkpoint

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "gpt.py"
spec = importlib.util.spec_from_file_location("ember_example_gpt", EXAMPLE)
gpt_example = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = gpt_example
spec.loader.exec_module(gpt_example)
CONFIG = gpt_example.GPTConfig(vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=16)
BATCH, STEPS = 12, 3  # 12 rows split evenly over 1, 2, 3 or 4 ranks
TOLERANCE = {"sgd": 2e-6, "adamw": 1e-4}  # other optimizers: 1e-4

dist.init_process_group("gloo")
RANK, WORLD = dist.get_rank(), dist.get_world_size()
_rng = np.random.default_rng(0)
DATA = [(ember.tensor(_rng.integers(0, 11, (BATCH, 8))), ember.tensor(_rng.integers(0, 11, (BATCH, 8))))
        for _ in range(STEPS + 2)]
ROWS = slice(RANK * BATCH // WORLD, (RANK + 1) * BATCH // WORLD)
passed = []


def ok(name: str) -> None:
    passed.append(name)
    print(f"rank {RANK}: ok {name}", flush=True)


def close(a, b, tol: float, what: str) -> float:
    """The largest difference of ``a`` and ``b``, which must be at most ``tol``."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    error = float(np.max(np.abs(a - b))) if a.size else 0.0
    if a.shape != b.shape or error > tol:
        raise AssertionError(f"rank {RANK}: {what}: shapes {a.shape} {b.shape}, max error {error:.3g} > {tol:g}")
    return error


def gpt(seed: int = 0):
    ember.manual_seed(seed)
    return gpt_example.gpt(ember, CONFIG)


def optimizer(kind: str, params):
    if kind == "sgd":
        return ember.optim.SGD(params, lr=0.5, momentum=0.9)
    if kind == "adamw":
        return ember.optim.AdamW(params, lr=1e-2, weight_decay=0.1)
    return getattr(ember.optim, kind)(params, lr=1e-2)


# ember.optim's optimizers whose step reads more than one element at a time: on a flat shard they see another
# tensor than one process does (a 1-d piece instead of each whole parameter), as PyTorch's do
NOT_ELEMENTWISE = {"Adafactor": "factors the second moment of 2-d parameters", "LBFGS": "takes a closure, and "
                   "its dot products span every parameter", "Muon": "orthogonalizes 2-d parameters",
                   "SparseAdam": "needs sparse gradients"}


def block_policy(model):
    return ModuleWrapPolicy({type(model.h[0])})


def step(model, opt, x, y, local: bool = True, clip: float | None = None):
    opt.zero_grad()
    _, loss = model(x[ROWS], y[ROWS]) if local else model(x, y)
    loss.backward()
    norm = None
    if clip is not None:
        norm = model.clip_grad_norm_(clip) if isinstance(model, FSDP) else \
            ember.nn.utils.clip_grad_norm_(model.parameters(), clip)  # knows FSDP's shards
    opt.step()
    loss = loss.detach().clone()
    if local:
        dist.all_reduce(loss, op=dist.ReduceOp.AVG)
    return loss.item(), norm


@functools.lru_cache(maxsize=None)
def reference(kind: str, steps: int = STEPS, clip: float | None = None):
    """Single-process training on the whole batch: losses, the final state dict, the optimizer's state by name."""
    model = gpt()
    opt = optimizer(kind, model.parameters())
    results = [step(model, opt, x, y, local=False, clip=clip) for x, y in DATA[:steps]]
    names = [name for name, _ in model.named_parameters()]
    saved = opt.state_dict()
    by_name = {names[i]: values for i, values in saved["state"].items()}
    return [r[0] for r in results], [r[1] for r in results], model.state_dict(), by_name


def full_state(model) -> dict:
    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, FullStateDictConfig(rank0_only=False)):
        return model.state_dict()


def check_against_reference(name: str, model, opt, kind: str, steps: int = STEPS, clip=None) -> None:
    losses, norms = zip(*[step(model, opt, x, y, clip=clip) for x, y in DATA[:steps]])
    ref_losses, ref_norms, ref_state, _ = reference(kind, steps, clip)
    loss_error = close(losses, ref_losses, 1e-5, f"{name}: losses")
    if clip is not None:
        close([float(n) for n in norms], [float(n) for n in ref_norms], 1e-5, f"{name}: gradient norms")
    state = full_state(model) if isinstance(model, FSDP) else _gathered(model)
    if list(state) != list(ref_state):
        raise AssertionError(f"{name}: state dict keys {list(state)} != {list(ref_state)}")
    error = max(close(state[key].numpy(), ref_state[key].numpy(), TOLERANCE.get(kind, 1e-4), f"{name}: {key}")
                for key in state)
    ok(f"{name} (largest difference: losses {loss_error:.1e}, parameters {error:.1e})")


def _gathered(model) -> dict:
    options = StateDictOptions(full_state_dict=True)
    return get_state_dict(model, [], options=options)[0]


# -- every strategy, both optimizers, flat and original parameters -----------------------------------------
def strategies():
    mesh = init_device_mesh("cpu", (2, WORLD // 2), mesh_dim_names=("replicate", "shard")) if WORLD == 4 else None
    return [(ShardingStrategy.FULL_SHARD, {}), (ShardingStrategy.SHARD_GRAD_OP, {}),
            (ShardingStrategy.NO_SHARD, {}), (ShardingStrategy.HYBRID_SHARD, {"device_mesh": mesh}),
            (ShardingStrategy._HYBRID_SHARD_ZERO2, {"device_mesh": mesh})]


def check_strategies() -> None:
    for strategy, extra in strategies():
        for kind in ("sgd", "adamw"):
            for orig in (False, True):
                if orig and strategy in (ShardingStrategy.NO_SHARD, ShardingStrategy._HYBRID_SHARD_ZERO2):
                    continue
                model = gpt()
                fsdp = FSDP(model, sharding_strategy=strategy, auto_wrap_policy=block_policy(model),
                            use_orig_params=orig, **extra)
                check_against_reference(f"{strategy.name} {kind} use_orig_params={orig}", fsdp,
                                        optimizer(kind, fsdp.parameters()), kind)


def mlp():
    ember.manual_seed(0)
    return ember.nn.Sequential(ember.nn.Linear(6, 8), ember.nn.Tanh(), ember.nn.Linear(8, 3))


MLP_DATA = (ember.tensor(np.random.default_rng(1).standard_normal((BATCH, 6)), dtype=ember.float32),
            ember.tensor(np.random.default_rng(2).integers(0, 3, BATCH)))


def train_mlp(model, opt, local: bool, device: str = "cpu", steps: int = 2) -> None:
    x, y = MLP_DATA
    x, y = (x[ROWS], y[ROWS]) if local else (x, y)
    for _ in range(steps):
        opt.zero_grad()
        ember.nn.functional.cross_entropy(model(x.to(device)), y.to(device)).backward()
        opt.step()


def check_every_optimizer() -> None:
    """Every elementwise optimizer of ember.optim steps on flat shards as on whole parameters. (On a small
    MLP: the GPT's attention has gradients that are zero up to rounding, whose sign Adagrad's and Rprop's
    first steps follow.)"""
    import inspect
    for name, cls in sorted(vars(ember.optim).items()):
        if not inspect.isclass(cls) or not issubclass(cls, ember.optim.Optimizer) or cls is ember.optim.Optimizer \
                or name in NOT_ELEMENTWISE:
            continue
        expected = mlp()
        train_mlp(expected, optimizer(name, expected.parameters()), local=False)
        fsdp = FSDP(mlp(), auto_wrap_policy=ModuleWrapPolicy({ember.nn.Linear}))
        train_mlp(fsdp, optimizer(name, fsdp.parameters()), local=True)
        for key, value in full_state(fsdp).items():
            close(value.numpy(), expected.state_dict()[key].numpy(), 1e-6, f"{name} on flat shards: {key}")
        ok(f"{name} on flat shards")


def check_options() -> None:
    variants = {"forward_prefetch, BACKWARD_POST, no gather limit":
                dict(forward_prefetch=True, backward_prefetch=BackwardPrefetch.BACKWARD_POST, limit_all_gathers=False),
                "no backward prefetch": dict(backward_prefetch=None),
                "cpu_offload": dict(cpu_offload=CPUOffload(offload_params=True))}
    for name, options in variants.items():
        model = gpt()
        fsdp = FSDP(model, auto_wrap_policy=block_policy(model), **options)
        check_against_reference(name, fsdp, optimizer("sgd", fsdp.parameters()), "sgd")
    model = gpt()
    fsdp = FSDP(model, auto_wrap_policy=block_policy(model))
    check_against_reference("clip_grad_norm_", fsdp, optimizer("sgd", fsdp.parameters()), "sgd", clip=0.05)


def check_activation_checkpointing() -> None:
    model = gpt()
    for block in model.h:
        inner = block.forward
        block.forward = functools.partial(checkpoint, inner, use_reentrant=True)
    fsdp = FSDP(model, auto_wrap_policy=block_policy(model))
    check_against_reference("activation checkpointing inside units", fsdp, optimizer("adamw", fsdp.parameters()),
                            "adamw")


def check_fully_shard() -> None:
    for reshard in (True, False):
        model = gpt()
        for block in model.h:
            fully_shard(block, reshard_after_forward=reshard)
        fully_shard(model, reshard_after_forward=reshard)
        check_against_reference(f"fully_shard reshard_after_forward={reshard}", model,
                                optimizer("adamw", model.parameters()), "adamw")
    model = gpt()
    for block in model.h:
        fully_shard(block)
    fully_shard(model)
    check_against_reference("fully_shard with nn.utils.clip_grad_norm_", model, optimizer("sgd", model.parameters()),
                            "sgd", clip=0.05)


def check_no_sync() -> None:
    model = gpt()
    fsdp = FSDP(model, auto_wrap_policy=block_policy(model))
    opt = optimizer("sgd", fsdp.parameters())
    x, y = DATA[0]
    rows = np.arange(BATCH)[ROWS]
    halves = [slice(rows[0], rows[0] + len(rows) // 2), slice(rows[0] + len(rows) // 2, rows[-1] + 1)] \
        if len(rows) > 1 else [slice(rows[0], rows[0] + 1)]
    with fsdp.no_sync():
        _, loss = fsdp(x[halves[0]], y[halves[0]])
        (loss * (halves[0].stop - halves[0].start) / len(rows)).backward()
    if len(halves) > 1:
        _, loss = fsdp(x[halves[1]], y[halves[1]])
        (loss * (halves[1].stop - halves[1].start) / len(rows)).backward()
    else:  # one row per rank: the synchronized backward is a second, zero-weighted one
        _, loss = fsdp(x[halves[0]], y[halves[0]])
        (loss * 0).backward()
    opt.step()
    _, _, ref_state, _ = reference("sgd", 1)
    for key, value in full_state(fsdp).items():
        close(value.numpy(), ref_state[key].numpy(), TOLERANCE["sgd"], f"no_sync: {key}")
    ok("no_sync accumulation")


def check_summon_and_state_dicts() -> None:
    model = gpt()
    fsdp = FSDP(model, auto_wrap_policy=block_policy(model))
    opt = optimizer("adamw", fsdp.parameters())
    for x, y in DATA[:STEPS]:
        step(fsdp, opt, x, y)
    _, _, ref_state, _ = reference("adamw")
    with FSDP.summon_full_params(fsdp):
        names = dict(fsdp.named_parameters())
        expected = [k for k, _ in gpt().named_parameters()]
        if list(names) != expected:
            raise AssertionError(f"summon_full_params: names {list(names)} != {expected}")
        for key, param in names.items():
            close(param.detach().numpy(), ref_state[key].numpy(), TOLERANCE["adamw"], f"summon: {key}")
        with ember.no_grad():
            names["ln_f.bias"].add_(1.0)
    close(full_state(fsdp)["ln_f.bias"].numpy(), ref_state["ln_f.bias"].numpy() + 1, TOLERANCE["adamw"],
          "summon_full_params writeback")
    with ember.no_grad(), FSDP.summon_full_params(fsdp):
        dict(fsdp.named_parameters())["ln_f.bias"].sub_(1.0)
    ok("summon_full_params")

    osd = FSDP.optim_state_dict(fsdp, opt)
    check_optimizer_state("flat parameters", osd)
    other = gpt(seed=7)
    fsdp2 = FSDP(other, auto_wrap_policy=block_policy(other))
    opt2 = optimizer("adamw", fsdp2.parameters())
    _load_full(fsdp2, full_state(fsdp))
    opt2.load_state_dict(FSDP.optim_state_dict_to_load(fsdp2, opt2, osd))
    a = step(fsdp, opt, *DATA[STEPS + 1])[0]
    b = step(fsdp2, opt2, *DATA[STEPS + 1])[0]
    close(a, b, 1e-6, "a step after loading the optimizer state")
    for key, value in full_state(fsdp2).items():
        close(value.numpy(), full_state(fsdp)[key].numpy(), 1e-6, f"optimizer state round trip: {key}")
    ok("optim_state_dict round trip")

    for kind in (StateDictType.FULL_STATE_DICT, StateDictType.SHARDED_STATE_DICT, StateDictType.LOCAL_STATE_DICT):
        with FSDP.state_dict_type(fsdp, kind):
            saved = {k: (v.to_local() if hasattr(v, "to_local") else v).clone() for k, v in fsdp.state_dict().items()}
            templates = fsdp.state_dict()
        before = full_state(fsdp)
        step(fsdp, opt, *DATA[STEPS])  # moves the parameters away from what was saved
        with FSDP.state_dict_type(fsdp, kind):
            for key, value in templates.items():
                target = value.to_local() if hasattr(value, "to_local") else value
                target.copy_(saved[key])
            fsdp.load_state_dict(templates)
        for key, value in full_state(fsdp).items():
            close(value.numpy(), before[key].numpy(), 0.0, f"{kind.name} round trip: {key}")
        ok(f"{kind.name} round trip")

    plain, whole = gpt(seed=5), full_state(fsdp)
    plain.load_state_dict(whole)
    for key, value in plain.state_dict().items():
        close(value.numpy(), whole[key].numpy(), 0.0, f"full state dict into a plain module: {key}")
    ok("FULL_STATE_DICT loads into a plain module")


def check_optimizer_state(name: str, osd: dict) -> None:
    """``osd`` (FULL, keyed by names) equals the single-process AdamW's state after STEPS steps."""
    ref_optim = reference("adamw")[3]
    if set(osd["state"]) != set(ref_optim):
        raise AssertionError(f"optim_state_dict ({name}): names {sorted(osd['state'])} != {sorted(ref_optim)}")
    for fqn, values in ref_optim.items():
        for key, value in values.items():
            close(_values(osd["state"][fqn][key]), _values(value), 1e-3 if "exp_avg" in key else 0,
                  f"optim_state_dict ({name}) {fqn}.{key}")
    ok(f"optim_state_dict with {name} equals one process's")


def _values(value):
    return value.numpy() if isinstance(value, ember.Tensor) else value


def _load_full(model, state) -> None:
    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT):
        model.load_state_dict(state)


def check_mixed_precision() -> None:
    model = gpt()
    precision = MixedPrecision(param_dtype=ember.bfloat16, reduce_dtype=ember.float32, buffer_dtype=ember.bfloat16)
    fsdp = FSDP(model, auto_wrap_policy=block_policy(model), mixed_precision=precision)
    opt = optimizer("adamw", fsdp.parameters())
    losses = [step(fsdp, opt, x, y)[0] for x, y in DATA[:STEPS]]
    close(losses, reference("adamw")[0], 3e-2, "bfloat16 compute: losses")
    dtypes = {p.dtype for p in fsdp.parameters()} | {p.grad.dtype for p in fsdp.parameters()}
    if dtypes != {ember.float32}:
        raise AssertionError(f"mixed precision: the shards and their gradients should stay float32, got {dtypes}")
    ok("mixed precision (bfloat16 compute, float32 shards)")


def check_sync_and_ignored() -> None:
    model = gpt(seed=RANK)  # every rank starts differently
    fsdp = FSDP(model, auto_wrap_policy=block_policy(model), sync_module_states=True,
                ignored_modules=[model.ln_f])
    state = full_state(fsdp)
    for key, value in gpt(seed=0).state_dict().items():
        close(state[key].numpy(), value.numpy(), 0.0, f"sync_module_states: {key}")
    plain = [p for p in fsdp.parameters() if p is model.ln_f.weight or p is model.ln_f.bias]
    if len(plain) != 2:
        raise AssertionError("ignored_modules: ln_f's parameters should stay whole parameters of the model")
    ok("sync_module_states and ignored_modules")


# -- checkpoints: dcp.save at one world size, dcp.load at another --------------------------------------
def trained_for_checkpoint():
    model = gpt()
    fsdp = FSDP(model, auto_wrap_policy=block_policy(model), use_orig_params=True)
    opt = optimizer("adamw", fsdp.parameters())
    return fsdp, opt


def save(directory: str) -> None:
    fsdp, opt = trained_for_checkpoint()
    for x, y in DATA[:STEPS]:
        step(fsdp, opt, x, y)
    check_optimizer_state("use_orig_params=True", FSDP.optim_state_dict(fsdp, opt))
    model_state, optim_state = get_state_dict(fsdp, opt)
    dcp.save({"model": model_state, "optim": optim_state}, checkpoint_id=directory)
    ok(f"dcp.save at {WORLD} ranks")


def load(directory: str) -> None:
    fsdp, opt = trained_for_checkpoint()
    step(fsdp, opt, *DATA[0])  # creates the optimizer state that the checkpoint overwrites
    model_state, optim_state = get_state_dict(fsdp, opt)
    state = {"model": model_state, "optim": optim_state}
    dcp.load(state, checkpoint_id=directory)
    set_state_dict(fsdp, opt, model_state_dict=state["model"], optim_state_dict=state["optim"])
    check_continues(f"dcp.load at {WORLD} ranks (resharded)", fsdp, opt, full_state(fsdp))


def plain(directory: str, out: str) -> None:
    """A checkpoint written by FSDP loads into a plain module and optimizer (full tensors), and back."""
    model = gpt(seed=3)
    opt = optimizer("adamw", model.parameters())
    step(model, opt, *DATA[0], local=False)
    model_state, optim_state = get_state_dict(model, opt)
    state = {"model": model_state, "optim": optim_state}
    dcp.load(state, checkpoint_id=directory, no_dist=True)
    set_state_dict(model, opt, model_state_dict=state["model"], optim_state_dict=state["optim"])
    model_state, optim_state = get_state_dict(model, opt)
    dcp.save({"model": model_state, "optim": optim_state}, checkpoint_id=out, no_dist=True)
    check_continues("dcp.load into a plain module", model, opt, model.state_dict(), local=False)


def check_continues(name: str, model, opt, state: dict, local: bool = True) -> None:
    """``state`` equals the reference after STEPS steps, and one more step matches the reference's."""
    _, _, ref_state, _ = reference("adamw")
    for key, value in state.items():
        close(value.numpy(), ref_state[key].numpy(), TOLERANCE["adamw"], f"{name}: {key}")
    loss = step(model, opt, *DATA[STEPS], local=local)[0]
    close(loss, reference("adamw", STEPS + 1)[0][-1], 1e-4, f"{name}: the step after loading")
    ok(f"{name}, then trains on")


def check_opencl() -> None:
    """FULL_SHARD with the units on an OpenCL device (PoCL here): the gathers and reductions run through
    the MPI engine's host staging."""
    if ember.backends.available().get("opencl") != "available":
        return
    expected = mlp()
    train_mlp(expected, ember.optim.SGD(expected.parameters(), lr=0.5), local=False)
    fsdp = FSDP(mlp(), device_id="opencl", auto_wrap_policy=ModuleWrapPolicy({ember.nn.Linear}))
    train_mlp(fsdp, ember.optim.SGD(fsdp.parameters(), lr=0.5), local=True, device="opencl")
    for key, value in full_state(fsdp).items():
        close(value.cpu().numpy(), expected.state_dict()[key].numpy(), 1e-5, f"opencl FULL_SHARD: {key}")
    ok("FULL_SHARD on opencl")


if __name__ == "__main__":
    mode, directories = sys.argv[1], sys.argv[2:]
    if mode == "save":
        check_strategies()
        if WORLD == 2:  # the rest once: 4 ranks on this machine's 2 cores cost CI twice the time
            check_options()
            check_activation_checkpointing()
            check_fully_shard()
            check_no_sync()
            check_summon_and_state_dicts()
            check_mixed_precision()
            check_sync_and_ignored()
            check_every_optimizer()
            check_opencl()
        save(directories[0])
    elif mode == "plain":
        plain(*directories)
    else:
        for directory in directories:
            load(directory)
    print(f"rank {RANK}: {len(passed)} fsdp checks passed", flush=True)
    dist.destroy_process_group()
