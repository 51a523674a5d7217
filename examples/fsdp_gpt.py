"""The small GPT of examples/gpt.py trained with FSDP: parameters, gradients and optimizer state sharded.

    python -m ember.distributed.run --nproc-per-node 2 examples/fsdp_gpt.py [--steps 200] [--strategy FULL_SHARD]
        [--fully-shard] [--checkpoint DIR] [--device cpu]

Each transformer block is its own FSDP unit (``ModuleWrapPolicy``); every rank trains on its own batches and
the gradients are averaged across ranks, so two ranks train as one process on twice the batch would.
``--fully-shard`` uses FSDP2's ``fully_shard`` instead of the wrapper. With ``--checkpoint DIR`` the run saves
a sharded checkpoint (``ember.distributed.checkpoint``) every 100 steps and at the end, and resumes from DIR
when one is there, at any number of ranks.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import ember
import ember.distributed as dist
import ember.distributed.checkpoint as dcp
from ember.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from ember.distributed.fsdp import FullyShardedDataParallel as FSDP, ShardingStrategy, fully_shard
from ember.distributed.fsdp.wrap import ModuleWrapPolicy

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpt import README, GPTConfig, gpt, gpt_optimizer  # noqa: E402  (the model of examples/gpt.py)


def sharded_gpt(config: GPTConfig, args: argparse.Namespace):
    """The GPT, sharded, and its AdamW. The optimizer's groups (weight decay on matrices only) are chosen by
    the parameters' shapes, so before sharding: sharding keeps each parameter object but makes it hold its
    1-d shard (``use_orig_params=True`` and ``fully_shard``)."""
    ember.manual_seed(0)  # every rank builds the same model; FSDP keeps its own shard of it
    model = gpt(ember, config).to(args.device)
    optimizer = gpt_optimizer(ember, model)
    block = type(model.h[0])
    if args.fully_shard:
        for layer in model.h:
            fully_shard(layer)
        return fully_shard(model), optimizer
    model = FSDP(model, sharding_strategy=ShardingStrategy[args.strategy], auto_wrap_policy=ModuleWrapPolicy({block}),
                 use_orig_params=True)
    return model, optimizer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--strategy", default="FULL_SHARD", choices=[s.name for s in ShardingStrategy])
    parser.add_argument("--fully-shard", action="store_true", help="FSDP2's fully_shard instead of the wrapper")
    parser.add_argument("--checkpoint", type=Path, default=None, help="save to (and resume from) this directory")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--text", type=Path, default=README)
    args = parser.parse_args()

    dist.init_process_group()
    rank, world = dist.get_rank(), dist.get_world_size()
    text = args.text.read_text(encoding="utf-8")
    chars = sorted(set(text))
    data = ember.tensor([chars.index(c) for c in text])
    config = GPTConfig(vocab_size=len(chars))
    model, optimizer = sharded_gpt(config, args)
    start = 0
    if args.checkpoint is not None and (args.checkpoint / ".metadata").exists():
        model_state, optim_state = get_state_dict(model, optimizer)
        state = {"model": model_state, "optim": optim_state, "step": 0}
        dcp.load(state, checkpoint_id=args.checkpoint)
        set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"])
        start = state["step"]
        if rank == 0:
            print(f"resumed from {args.checkpoint} at step {start}", flush=True)

    generator = ember.Generator().manual_seed(1000 * rank + start)  # each rank its own batches

    def batch(size: int = 32):
        starts = ember.randint(0, len(data) - config.block_size - 1, (size,), generator=generator).tolist()
        x = ember.stack([data[s:s + config.block_size] for s in starts])
        y = ember.stack([data[s + 1:s + 1 + config.block_size] for s in starts])
        return x.to(args.device), y.to(args.device)

    def save(step: int) -> None:
        model_state, optim_state = get_state_dict(model, optimizer)
        dcp.save({"model": model_state, "optim": optim_state, "step": step}, checkpoint_id=args.checkpoint)

    began = time.perf_counter()
    for step in range(start + 1, start + args.steps + 1):
        optimizer.zero_grad()
        _, loss = model(*batch())
        loss.backward()
        ember.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # the norm over every rank's shards
        optimizer.step()
        if step % 50 == 0 or step == start + 1:
            mean = loss.detach().clone()
            dist.all_reduce(mean, op=dist.ReduceOp.AVG)
            if rank == 0:
                print(f"step {step}: loss {mean.item():.4f} (mean over {world} ranks)", flush=True)
        if args.checkpoint is not None and step % 100 == 0:
            save(step)
    if args.checkpoint is not None:
        save(start + args.steps)
    if rank == 0:
        print(f"{args.steps} steps on {world} ranks in {time.perf_counter() - began:.1f} s", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
