"""A torchrun-style training program, as PyTorch users write it, with ``import torch`` swapped for Ember:
env:// rendezvous, DistributedSampler from the process group, DDP, set_epoch per epoch. Rank 0 prints
how far apart the ranks' parameters ended (they must be equal) and how many samples each rank saw."""
import os

import ember as torch
import ember.distributed as dist
import ember.nn as nn
from ember.nn.parallel import DistributedDataParallel as DDP
from ember.utils.data import DataLoader, TensorDataset
from ember.utils.data.distributed import DistributedSampler


def main():
    dist.init_process_group(backend="gloo", init_method="env://")
    rank, world = dist.get_rank(), dist.get_world_size()
    assert int(os.environ["RANK"]) == rank and int(os.environ["WORLD_SIZE"]) == world
    torch.manual_seed(rank)  # different initial weights: DDP must broadcast rank 0's
    model = DDP(nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1)))
    generator = torch.Generator().manual_seed(0)
    data = TensorDataset(torch.randn(37, 4, generator=generator), torch.randn(37, 1, generator=generator))
    sampler = DistributedSampler(data)  # num_replicas and rank from the process group
    loader = DataLoader(data, batch_size=5, sampler=sampler)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    seen = 0
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for x, y in loader:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
            seen += len(x)
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    everyone = [None] * world
    dist.all_gather_object(everyone, {"params": flat.tolist(), "seen": seen})
    if rank == 0:
        spread = max(abs(a - b) for other in everyone for a, b in zip(everyone[0]["params"], other["params"]))
        print(f"parameter spread {spread} samples {[e['seen'] for e in everyone]}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
