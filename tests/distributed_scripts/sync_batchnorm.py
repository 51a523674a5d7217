"""SyncBatchNorm on 2 ranks, each with half of one global batch, against BatchNorm2d on the whole batch."""
import numpy as np

import ember
import ember.distributed as dist
from ember import nn

dist.init_process_group("gloo", init_method="env://")
rank, world = dist.get_rank(), dist.get_world_size()
values = np.random.default_rng(0).standard_normal((4 * world, 3, 2, 2))
grads = np.random.default_rng(1).standard_normal(values.shape)
rows = slice(4 * rank, 4 * rank + 4)

whole = nn.BatchNorm2d(3, momentum=0.3).double()
x = ember.tensor(values, requires_grad=True)
expected = whole(x)
(expected * ember.tensor(grads)).sum().backward()

synced = nn.SyncBatchNorm.convert_sync_batchnorm(nn.Sequential(nn.BatchNorm2d(3, momentum=0.3))).double()[0]
local = ember.tensor(values[rows], requires_grad=True)
out = synced(local)
(out * ember.tensor(grads[rows])).sum().backward()
weight_grad = synced.weight.grad.clone()
dist.all_reduce(weight_grad)  # what DistributedDataParallel would do with the local weight gradients

checks = [np.allclose(out.detach().numpy(), expected.detach().numpy()[rows]),
          np.allclose(local.grad.numpy(), x.grad.numpy()[rows]),
          np.allclose(weight_grad.numpy(), whole.weight.grad.numpy()),
          np.allclose(synced.running_mean.numpy(), whole.running_mean.numpy()),
          np.allclose(synced.running_var.numpy(), whole.running_var.numpy())]
print(f"rank {rank}: sync batchnorm checks {sum(checks)}/{len(checks)} {checks}", flush=True)
dist.destroy_process_group()
