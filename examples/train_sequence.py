"""An LSTM learns a synthetic sequence task: at each step, the running sum of the tokens so far, mod 5.

    python examples/train_sequence.py [--device cpu] [--steps 400] [--model lstm|transformer]

Inputs are random tokens 0..4; the target at step t is (x_0 + ... + x_t) mod 5. The LSTM must carry
the sum in its state; the transformer variant gets a causal mask and must attend over the prefix.
"""
from __future__ import annotations

import argparse
import time

import ember
from ember import nn

TOKENS = 5


class RecurrentCounter(nn.Module):
    def __init__(self, hidden: int = 64) -> None:
        super().__init__()
        self.embed = nn.Embedding(TOKENS, 16)
        self.lstm = nn.LSTM(16, hidden, batch_first=True)
        self.head = nn.Linear(hidden, TOKENS)

    def forward(self, tokens):
        states, _ = self.lstm(self.embed(tokens))
        return self.head(states)


class AttentiveCounter(nn.Module):
    def __init__(self, length: int, width: int = 64) -> None:
        super().__init__()
        self.embed = nn.Embedding(TOKENS, width)
        self.position = nn.Parameter(ember.randn(length, width) * 0.02)
        layer = nn.TransformerEncoderLayer(width, nhead=4, dim_feedforward=128, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2)
        self.head = nn.Linear(width, TOKENS)
        self.length = length

    def forward(self, tokens):
        causal = ember.triu(ember.ones(self.length, self.length, dtype=ember.bool), diagonal=1)
        hidden = self.encoder(self.embed(tokens) + self.position, mask=causal)
        return self.head(hidden)


def batch(size: int, length: int, device):
    tokens = ember.randint(0, TOKENS, (size, length))
    targets = ember.cumsum(tokens, dim=1) % TOKENS
    return tokens.to(device), targets.to(device)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--length", type=int, default=12)
    parser.add_argument("--model", choices=("lstm", "transformer"), default="lstm")
    args = parser.parse_args()

    ember.manual_seed(0)
    device = ember.device(args.device)
    model = (RecurrentCounter() if args.model == "lstm" else AttentiveCounter(args.length)).to(device)
    optimizer = ember.optim.AdamW(model.parameters(), lr=3e-3)
    loss_fn = nn.CrossEntropyLoss()
    began = time.perf_counter()
    for step in range(1, args.steps + 1):
        tokens, targets = batch(64, args.length, device)
        logits = model(tokens)
        loss = loss_fn(logits.reshape(-1, TOKENS), targets.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        if step % 100 == 0:
            print(f"step {step}: loss {loss.item():.4f}")
    model.eval()
    with ember.no_grad():
        tokens, targets = batch(512, args.length, device)
        accuracy = (model(tokens).argmax(dim=-1) == targets).float().mean().item()
    print(f"{args.model}: per-step accuracy {accuracy:.2%} on fresh sequences after {args.steps} steps "
          f"({time.perf_counter() - began:.1f} s on {device})")


if __name__ == "__main__":
    main()
