"""DDP checks run on every rank of a 2-rank job: ``mpiexec -n 2 python ddp_checks.py OUT_DIR``.

Each check trains or inspects a DDP model and records plain numbers; rank r writes ``OUT_DIR/rank{r}.json``
and tests/test_ddp.py asserts on them. A check that raises is recorded with its error, so one failure
does not hide the others. Written PyTorch-style, with ``import ember as torch`` in place of ``import torch``.
"""
import json
import os
import sys
import traceback

import ember as torch
import ember.distributed as dist
import ember.nn as nn
import ember.nn.functional as F
from ember.nn.parallel import DistributedDataParallel as DDP

STEPS = 20
LOCAL_BATCH = 8


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 32)
        self.fc2 = nn.Linear(32, 32)
        self.out = nn.Linear(32, 3)

    def forward(self, x):
        return self.out(torch.tanh(self.fc2(F.relu(self.fc1(x)))))


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
        self.conv2 = nn.Conv2d(4, 8, 3)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(8 * 2 * 2, 5)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = F.relu(self.conv2(x))
        return self.fc(torch.flatten(x, 1))


class Branchy(nn.Module):
    """``skipped`` is never used; ``odd`` only when the caller asks for it (a rank-dependent graph)."""

    def __init__(self):
        super().__init__()
        self.trunk = nn.Linear(6, 16)
        self.head = nn.Linear(16, 3)
        self.odd = nn.Linear(16, 16)
        self.skipped = nn.Linear(16, 16)

    def forward(self, x, use_odd=False):
        h = F.relu(self.trunk(x))
        if use_odd:
            h = h + torch.tanh(self.odd(h))
        return self.head(h)


class WithNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 4)
        self.norm = nn.BatchNorm1d(4)

    def forward(self, x):
        return self.norm(self.fc(x))


def global_batch(kind, steps, seed=1234):
    """The same global batches on every rank: (inputs, targets) per step, 2 * LOCAL_BATCH rows each."""
    generator = torch.Generator().manual_seed(seed)
    rows = 2 * LOCAL_BATCH
    batches = []
    for _ in range(steps):
        if kind == "cnn":
            x = torch.randn(rows, 1, 8, 8, generator=generator)
            y = torch.randint(0, 5, (rows,), generator=generator)
        else:
            x = torch.randn(rows, 6, generator=generator)
            y = torch.randint(0, 3, (rows,), generator=generator)
        batches.append((x, y))
    return batches


def local(tensor, rank):
    return tensor[rank * LOCAL_BATCH:(rank + 1) * LOCAL_BATCH]


def built_on(rank_seed, make):
    torch.manual_seed(rank_seed)
    return make()


def max_difference(a, b):
    return max(float((p - q).abs().max()) for p, q in zip(a.parameters(), b.parameters()))


def max_value(model):
    return max(float(p.abs().max()) for p in model.parameters())


def train_parity(make, kind, rank, accumulate=1, optimizer="sgd", **ddp_kwargs):
    """Train DDP (rank-seeded init, so construction must broadcast) and a single-process reference on the
    concatenated batch; return how far apart their parameters are after STEPS steps."""
    reference = built_on(0, make)  # what rank 0 builds, built here on every rank
    model = built_on(rank, make)
    ddp = DDP(model, **ddp_kwargs)
    at_start = max_difference(ddp.module, reference)

    def opt(params):
        if optimizer == "adam":
            return torch.optim.Adam(params, lr=1e-2)
        return torch.optim.SGD(params, lr=0.1, momentum=0.9)

    opt_ddp, opt_ref = opt(ddp.parameters()), opt(reference.parameters())
    batches = global_batch(kind, STEPS * accumulate)
    for step in range(STEPS):
        micro = batches[step * accumulate:(step + 1) * accumulate]
        opt_ddp.zero_grad()
        for k, (x, y) in enumerate(micro):
            if k < accumulate - 1:
                with ddp.no_sync():
                    F.cross_entropy(ddp(local(x, rank)), local(y, rank)).backward()
            else:
                F.cross_entropy(ddp(local(x, rank)), local(y, rank)).backward()
        opt_ddp.step()
        opt_ref.zero_grad()
        for x, y in micro:
            F.cross_entropy(reference(x), y).backward()
        opt_ref.step()
    return {"at_start": at_start, "after": max_difference(ddp.module, reference), "scale": max_value(reference),
            "buckets": len(ddp.reducer.buckets)}


def check_mlp(rank):
    return train_parity(MLP, "mlp", rank)


def check_cnn(rank):
    return train_parity(CNN, "cnn", rank, optimizer="adam")


def check_mlp_small_buckets(rank):
    return train_parity(MLP, "mlp", rank, bucket_cap_mb=0.0005)


def check_no_sync(rank):
    return train_parity(MLP, "mlp", rank, accumulate=3)


def check_cnn_no_sync(rank):
    return train_parity(CNN, "cnn", rank, accumulate=2, bucket_cap_mb=0.001)


def check_bucket_view(rank):
    result = train_parity(MLP, "mlp", rank, gradient_as_bucket_view=True, bucket_cap_mb=0.004)
    model = built_on(0, MLP)
    ddp = DDP(model, gradient_as_bucket_view=True)
    F.cross_entropy(ddp(torch.randn(4, 6)), torch.tensor([0, 1, 2, 0])).backward()
    buffers = [bucket.buffer for bucket in ddp.reducer.buckets]
    result["grads_are_views"] = all(any(p.grad._base is buffer for buffer in buffers) for p in model.parameters())
    return result


def _branchy_run(rank, steps, **ddp_kwargs):
    """Rank 1 uses ``odd``, rank 0 does not; nobody uses ``skipped``. Returns the difference to a reference
    that averages the two ranks' losses (what DDP's averaged gradient is the gradient of)."""
    reference = built_on(0, Branchy)
    ddp = DDP(built_on(rank, Branchy), **ddp_kwargs)
    opt_ddp = torch.optim.SGD(ddp.parameters(), lr=0.1)
    opt_ref = torch.optim.SGD(reference.parameters(), lr=0.1)
    for x, y in global_batch("mlp", steps, seed=99):
        opt_ddp.zero_grad()
        F.cross_entropy(ddp(local(x, rank), use_odd=rank == 1), local(y, rank)).backward()
        opt_ddp.step()
        opt_ref.zero_grad()
        losses = [F.cross_entropy(reference(local(x, r), use_odd=r == 1), local(y, r)) for r in range(2)]
        ((losses[0] + losses[1]) / 2).backward()
        opt_ref.step()
    return {"after": max_difference(ddp.module, reference), "scale": max_value(reference),
            "skipped_grad_is_none": ddp.module.skipped.weight.grad is None,
            "odd_grad_nonzero": bool(ddp.module.odd.weight.grad.abs().sum() > 0)}


def check_find_unused(rank):
    return _branchy_run(rank, 5, find_unused_parameters=True)


def check_static_graph(rank):
    model = built_on(0, Branchy)
    ddp = DDP(model, static_graph=True)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    before = model.skipped.weight.clone()
    for x, y in global_batch("mlp", 4, seed=5):
        opt.zero_grad()
        F.cross_entropy(ddp(local(x, rank), use_odd=True), local(y, rank)).backward()
        opt.step()
    return {"skipped_unchanged": bool((model.skipped.weight == before).all()),
            "skipped_grad_is_none": model.skipped.weight.grad is None}


def check_unused_without_detection(rank):
    """find_unused_parameters=False with an unused parameter: the next forward must raise."""
    ddp = DDP(built_on(0, Branchy))
    x, y = global_batch("mlp", 1)[0]
    F.cross_entropy(ddp(local(x, rank)), local(y, rank)).backward()
    try:
        ddp(local(x, rank))
    except RuntimeError as error:
        return {"raised": True, "message": str(error)}
    return {"raised": False, "message": ""}


def check_state_dict(rank):
    model = built_on(0, WithNorm)
    ddp = DDP(model)
    return {"keys": list(ddp.state_dict().keys()), "module_keys": list(model.state_dict().keys()),
            "module_is_model": ddp.module is model}


def check_buffers(rank):
    """Buffers start from rank 0's; after a training forward they differ per rank until the next forward
    re-broadcasts them (broadcast_buffers=True) or stay different (False)."""
    results = {}
    for broadcast in (True, False):
        model = built_on(0, WithNorm)
        with torch.no_grad():
            model.norm.running_mean.fill_(float(rank + 1))
        ddp = DDP(model, broadcast_buffers=broadcast)
        initial = model.norm.running_mean.tolist()
        x = torch.randn(LOCAL_BATCH, 6, generator=torch.Generator().manual_seed(rank))
        ddp(x).sum().backward()
        after_train = model.norm.running_mean.tolist()
        ddp.eval()
        ddp(x)  # eval: no statistics update, so the buffers are exactly what the sync left
        after_sync = model.norm.running_mean.tolist()
        gathered = [None, None]
        dist.all_gather_object(gathered, {"train": after_train, "sync": after_sync})
        results[str(broadcast)] = {"initial": initial, "ranks": gathered}
    return results


def check_different_models(rank):
    """Rank 1 wraps a model with a different layer: both ranks refuse at construction."""
    try:
        DDP(built_on(0, MLP if rank == 0 else CNN))
    except RuntimeError as error:
        return {"raised": True, "message": str(error)}
    return {"raised": False, "message": ""}


def check_device_ids(rank):
    messages = []
    for device_ids in ([0, 1], [0]):  # more than one device; an index on a cpu module (PyTorch refuses both)
        try:
            DDP(built_on(0, MLP), device_ids=device_ids)
            messages.append("")
        except ValueError as error:
            messages.append(str(error))
    return {"messages": messages}


CHECKS = [check_different_models, check_device_ids, check_mlp, check_cnn, check_mlp_small_buckets, check_no_sync,
          check_cnn_no_sync, check_bucket_view,
          check_find_unused, check_static_graph, check_state_dict, check_buffers,
          check_unused_without_detection]  # last: it leaves a reduction unfinished


def main(out_dir):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    results = {"world_size": dist.get_world_size()}
    for check in CHECKS:
        try:
            results[check.__name__] = check(rank)
        except Exception:  # recorded for the test to show
            results[check.__name__] = {"error": traceback.format_exc()}
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
        json.dump(results, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
