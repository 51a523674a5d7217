"""Train a small CNN on the UCI handwritten digits that scikit-learn ships (8×8 images, 10 classes).

    python examples/train_digits.py [--device cpu] [--epochs 20] [--checkpoint digits.ckpt] [--resume]

It holds out 20% of the images for testing, evaluates after every epoch, and saves a checkpoint
(model, optimizer, scheduler, epoch) after every epoch; ``--resume`` continues from the checkpoint.
Shuffling and dropout are reseeded from the epoch number, so a resumed run sees exactly the batches
and masks an uninterrupted run would.
"""
from __future__ import annotations

import argparse
import os
import time

from sklearn.datasets import load_digits
from tqdm import tqdm

import ember
from ember import nn
from ember.utils.data import DataLoader, TensorDataset


def make_model() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(1, 32, kernel_size=3, padding=1), nn.ReLU(), nn.MaxPool2d(2),   # 32 × 4 × 4
        nn.Conv2d(32, 64, kernel_size=3, padding=1), nn.ReLU(), nn.MaxPool2d(2),  # 64 × 2 × 2
        nn.Flatten(), nn.Dropout(0.25), nn.Linear(256, 128), nn.ReLU(), nn.Dropout(0.25), nn.Linear(128, 10),
    )


def load_splits(seed: int = 0):
    """Images scaled to [0, 1] as (N, 1, 8, 8) float32, labels int64; a fixed 80/20 split."""
    digits = load_digits()
    images = ember.tensor(digits.images, dtype=ember.float32).unsqueeze(1) / 16.0
    labels = ember.tensor(digits.target, dtype=ember.int64)
    order = ember.randperm(len(labels), generator=ember.Generator().manual_seed(seed))
    test_count = len(labels) // 5
    test, train = order[:test_count], order[test_count:]
    return TensorDataset(images[train], labels[train]), TensorDataset(images[test], labels[test])


def evaluate(model: nn.Module, loader: DataLoader, device) -> float:
    model.eval()
    correct = total = 0
    with ember.no_grad():
        for images, labels in loader:
            predictions = model(images.to(device)).argmax(dim=1)
            correct += (predictions == labels.to(device)).sum().item()
            total += len(labels)
    model.train()
    return correct / total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="cpu, opencl, cuda or any installed backend")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--checkpoint", default="digits.ckpt", help="where to save after every epoch")
    parser.add_argument("--resume", action="store_true", help="continue from --checkpoint")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    device = ember.device(args.device)
    ember.manual_seed(args.seed)
    train_set, test_set = load_splits(args.seed)
    model = make_model().to(device)
    optimizer = ember.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-2)
    scheduler = ember.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    shuffle = ember.Generator()
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True, generator=shuffle)
    test_loader = DataLoader(test_set, batch_size=256)
    loss_fn = nn.CrossEntropyLoss()

    start_epoch = 0
    if args.resume and os.path.exists(args.checkpoint):
        state = ember.load(args.checkpoint, map_location=device)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        start_epoch = state["epoch"]
        scheduler.T_max = args.epochs  # the cosine schedule spans this run's --epochs
        print(f"resumed from {args.checkpoint} after epoch {start_epoch}")

    began = time.perf_counter()
    accuracy = evaluate(model, test_loader, device) if start_epoch else 0.0
    for epoch in range(start_epoch, args.epochs):
        shuffle.manual_seed(args.seed * 1000 + epoch)
        ember.manual_seed(args.seed * 1000 + epoch)  # dropout masks, so a resumed run matches exactly
        progress = tqdm(train_loader, desc=f"epoch {epoch + 1}/{args.epochs}", leave=False, disable=None)
        for images, labels in progress:
            optimizer.zero_grad()
            loss = loss_fn(model(images.to(device)), labels.to(device))
            loss.backward()
            optimizer.step()
            progress.set_postfix(loss=f"{loss.item():.4f}")
        scheduler.step()
        accuracy = evaluate(model, test_loader, device)
        ember.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "scheduler": scheduler.state_dict(), "epoch": epoch + 1, "accuracy": accuracy}, args.checkpoint)
        print(f"epoch {epoch + 1}: loss {loss.item():.4f}, test accuracy {accuracy:.2%}")
    print(f"test accuracy {accuracy:.2%} on {len(test_set)} held-out digits; "
          f"training took {time.perf_counter() - began:.1f} s on {device}")


if __name__ == "__main__":
    main()
