"""FullyShardedDataParallel, fully_shard and their checkpoints: multi-rank under mpiexec, API errors here.

The multi-rank part is four jobs of tests/distributed_scripts/fsdp_checks.py, which trains the small GPT of
examples/gpt.py against single-process training:
- 4 ranks: every strategy, then a sharded ``dcp.save``;
- 2 ranks: every strategy, option, state-dict type and elementwise optimizer, opencl where PoCL runs, then a
  sharded ``dcp.save``;
- one process: the 2-rank checkpoint into a plain module, which saves it again;
- 3 ranks: the 4-rank and the plain checkpoints, resharded.
"""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import ember
from ember import nn

pytest.importorskip("mpi4py", reason="the distributed extra (mpi4py, mpich) is not installed")

from ember.distributed.fsdp import FullyShardedDataParallel as FSDP, fully_shard  # noqa: E402

SCRIPT = Path(__file__).parent / "distributed_scripts" / "fsdp_checks.py"


def run_checks(ranks: int, *args: str, timeout: float = 300) -> str:
    command = [sys.executable, "-m", "ember.distributed.run", "--nproc-per-node", str(ranks)] if ranks > 1 \
        else [sys.executable]
    done = subprocess.run(command + [str(SCRIPT), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "EMBER_DIST_TIMEOUT": "120"})
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-6000:]
    counts = re.findall(r"rank (\d+): (\d+) fsdp checks passed", done.stdout)
    assert sorted(int(r) for r, _ in counts) == list(range(ranks)), done.stdout
    return done.stdout


def test_fsdp_trains_as_one_process_does_and_its_checkpoints_reshard(tmp_path):
    strategies = ("FULL_SHARD adamw use_orig_params=True", "HYBRID_SHARD sgd use_orig_params=False",
                  "_HYBRID_SHARD_ZERO2 adamw", "NO_SHARD sgd", "SHARD_GRAD_OP adamw use_orig_params=True")
    out = run_checks(4, "save", tmp_path / "at4")
    for name in strategies + ("optim_state_dict with use_orig_params=True equals one process", "dcp.save at 4 ranks"):
        assert len(re.findall(rf"rank \d: ok {re.escape(name)}", out)) == 4, (name, out)
    out = run_checks(2, "save", tmp_path / "at2")
    for name in strategies + (
            "activation checkpointing inside units", "fully_shard reshard_after_forward=True", "clip_grad_norm_",
            "fully_shard with nn.utils.clip_grad_norm_", "no_sync accumulation", "summon_full_params",
            "SHARDED_STATE_DICT round trip", "LOCAL_STATE_DICT round trip", "optim_state_dict round trip",
            "mixed precision", "optim_state_dict with flat parameters", "sync_module_states and ignored_modules",
            "cpu_offload", "dcp.save at 2 ranks"):
        assert len(re.findall(rf"rank \d: ok {re.escape(name)}", out)) == 2, (name, out)
    stepped = set(re.findall(r"rank \d: ok (\w+) on flat shards", out))
    assert {"Adam", "Adagrad", "RMSprop", "Rprop", "NAdam", "RAdam", "Adamax", "Adadelta", "ASGD"} <= stepped, out
    if ember.backends.available().get("opencl") == "available":
        assert len(re.findall(r"rank \d: ok FULL_SHARD on opencl", out)) == 2, out
    out = run_checks(1, "plain", tmp_path / "at2", tmp_path / "plain")
    assert "ok dcp.load into a plain module, then trains on" in out
    out = run_checks(3, "load", tmp_path / "at4", tmp_path / "plain")
    assert len(re.findall(r"rank \d: ok dcp.load at 3 ranks \(resharded\), then trains on", out)) == 6, out


def test_the_readme_example_trains_saves_and_resumes_at_another_world_size(tmp_path):
    example = Path(__file__).resolve().parent.parent / "examples" / "fsdp_gpt.py"
    checkpoint = tmp_path / "ckpt"
    launch = [sys.executable, "-m", "ember.distributed.run"]
    first = subprocess.run(launch + ["--nproc-per-node", "2", str(example), "--steps", "2", "--checkpoint",
                                     str(checkpoint)], capture_output=True, text=True, timeout=180)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "step 1: loss" in first.stdout and "2 steps on 2 ranks" in first.stdout
    again = subprocess.run(launch + ["--nproc-per-node", "1", str(example), "--steps", "1", "--checkpoint",
                                     str(checkpoint), "--fully-shard"], capture_output=True, text=True, timeout=180)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "resumed from" in again.stdout and "at step 2" in again.stdout and "step 3: loss" in again.stdout


def test_the_gpu_scripts_fsdp_checks_pass_on_the_cpu():
    """scripts/check_fsdp_cuda.py runs on the GPU machine only when one is lent: its logic runs here."""
    script = Path(__file__).resolve().parent.parent / "scripts" / "check_fsdp_cuda.py"
    done = subprocess.run([sys.executable, str(script), "--device", "cpu"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "fsdp on cpu: 5 checks passed" in done.stdout


# -- in one process: a world of one (the ``world`` fixture of conftest.py) ------------------------------
def test_fsdp_needs_an_initialized_process_group():
    with pytest.raises(ValueError, match="init_process_group"):
        FSDP(nn.Linear(2, 2))


def test_a_unit_of_mixed_dtypes_is_refused_naming_them(world):
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2).double())
    with pytest.raises(ember.DtypeError, match=r"float32.*float64|float64.*float32"):
        FSDP(model)


def test_mixed_requires_grad_needs_use_orig_params(world):
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    model[0].weight.requires_grad_(False)
    with pytest.raises(ValueError, match="uniform requires_grad when use_orig_params=False"):
        FSDP(model)
    FSDP(nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2)), use_orig_params=True)


def test_names_and_attributes_are_the_wrapped_models(world):
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    model.config = "kept"
    expected = [name for name, _ in nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)).named_parameters()]
    wrapped = FSDP(model)
    assert wrapped.config == "kept" and isinstance(wrapped[1], nn.ReLU)
    assert [name for name, _ in wrapped.named_parameters()] == ["_flat_param"]
    with FSDP.summon_full_params(wrapped):
        assert [name for name, _ in wrapped.named_parameters()] == expected
    plain = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    assert list(wrapped.state_dict()) == list(plain.state_dict())


def test_fully_shard_keeps_the_class_and_refuses_twice(world):
    layer = nn.Linear(3, 2)
    sharded = fully_shard(layer)
    assert sharded is layer and isinstance(layer, nn.Linear) and type(layer).__name__ == "FSDPLinear"
    out = layer(ember.ones(1, 3))
    assert tuple(out.shape) == (1, 2)
    with pytest.raises(ValueError, match="already sharded"):
        fully_shard(layer)


def test_summon_full_params_refuses_writeback_with_rank0_only(world):
    wrapped = FSDP(nn.Linear(2, 2))
    with pytest.raises(ValueError, match="writeback=True and rank0_only=True"):
        with FSDP.summon_full_params(wrapped, rank0_only=True):
            pass


def test_a_sharded_piece_that_does_not_match_this_rank_names_the_key(world):
    from ember.distributed.fsdp import StateDictType
    from ember.distributed.sharded_tensor import ShardedTensor
    wrapped = FSDP(nn.Linear(2, 2))
    with FSDP.state_dict_type(wrapped, StateDictType.SHARDED_STATE_DICT):
        state = wrapped.state_dict()
        state["weight"] = ShardedTensor(ember.zeros(2), (2, 2), 1)
        with pytest.raises(ValueError, match="'weight'.*\\[1, 3\\).*\\[0, 4\\)"):
            wrapped.load_state_dict(state)


def _blocks(width: int = 256, count: int = 4):
    ember.manual_seed(0)
    return nn.Sequential(*[nn.Sequential(nn.Linear(width, width), nn.ReLU()) for _ in range(count)])


def _held_after_forward(strategy) -> int:
    """Bytes held between forward and backward (traced by NumPy's allocator hooks)."""
    import gc
    import tracemalloc
    from ember.distributed.fsdp import ShardingStrategy
    from ember.distributed.fsdp.wrap import ModuleWrapPolicy
    model = FSDP(_blocks(), sharding_strategy=getattr(ShardingStrategy, strategy),
                 auto_wrap_policy=ModuleWrapPolicy({nn.Linear}))
    x = ember.randn(2, 256)
    model(x).sum().backward()  # the order of units is known from here on
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    out = model(x)
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    out.sum().backward()
    return held


def test_full_shard_frees_the_gathered_parameters_between_forward_and_backward(world):
    """A world of one still gathers into new storage; FULL_SHARD frees it after each unit's forward (its
    saved parameter views wait as tokens), SHARD_GRAD_OP keeps it until backward."""
    block_bytes = (256 * 256 + 256) * 4
    kept = _held_after_forward("SHARD_GRAD_OP")
    freed = _held_after_forward("FULL_SHARD")
    assert kept - freed >= 3 * block_bytes, (kept, freed)


def test_a_dropped_fsdp_model_leaves_nothing_behind(world):
    import gc
    import weakref
    from ember.distributed.fsdp import ShardingStrategy
    for strategy in ShardingStrategy:
        if strategy.name.startswith(("HYBRID", "_HYBRID")):
            continue
        model = FSDP(_blocks(16, 2), sharding_strategy=strategy)
        model(ember.randn(2, 16)).sum().backward()
        handle = weakref.ref(model._fsdp_state.handle)
        del model
        gc.collect()
        assert handle() is None, strategy
