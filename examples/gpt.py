"""A small GPT learns to write characters: a nanoGPT-style char-level trainer.

    python examples/gpt.py [--text FILE] [--steps 300] [--device cpu] [--compile] [--framework ember|torch]

The model is written once against the API Ember shares with PyTorch: ``gpt(torch, config)`` takes the
library as an argument, so the benchmarks and tests build the very same model on either framework, and
``--framework torch`` runs this script on PyTorch unchanged. ``--compile`` trains with the whole step
(zero_grad, forward, loss, backward, optimizer step) compiled by ``torch.compile``.
"""
from __future__ import annotations

import argparse
import importlib
import math
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

README = Path(__file__).resolve().parent.parent / "README.md"


@dataclass(frozen=True)
class GPTConfig:
    """The benchmark's size by default: 3 layers, 48 dims, 3 heads, 32-token context, 65 characters."""
    vocab_size: int = 65
    block_size: int = 32
    n_layer: int = 3
    n_head: int = 3
    n_embd: int = 48
    dropout: float = 0.0


def gpt(torch: ModuleType, config: GPTConfig = GPTConfig()):
    """A GPT on ``torch`` (Ember or PyTorch): pre-LayerNorm causal attention blocks, lm head tied to the embedding.

    ``model(idx)`` gives logits of shape (batch, time, vocab); ``model(idx, targets)`` also the mean
    cross-entropy over every position, as ``(logits, loss)``.
    """
    nn, F = torch.nn, torch.nn.functional

    class CausalSelfAttention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
            self.c_proj = nn.Linear(config.n_embd, config.n_embd)
            self.resid_dropout = nn.Dropout(config.dropout)

        def forward(self, x):
            batch, time, width = x.shape
            heads = (t.view(batch, time, config.n_head, width // config.n_head).transpose(1, 2)
                     for t in self.c_attn(x).split(width, dim=2))
            dropout = config.dropout if self.training else 0.0
            y = F.scaled_dot_product_attention(*heads, dropout_p=dropout, is_causal=True)
            return self.resid_dropout(self.c_proj(y.transpose(1, 2).contiguous().view(batch, time, width)))

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln_1, self.attn = nn.LayerNorm(config.n_embd), CausalSelfAttention()
            self.ln_2 = nn.LayerNorm(config.n_embd)
            self.mlp = nn.Sequential(nn.Linear(config.n_embd, 4 * config.n_embd), nn.GELU(),
                                     nn.Linear(4 * config.n_embd, config.n_embd), nn.Dropout(config.dropout))

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.wte = nn.Embedding(config.vocab_size, config.n_embd)
            self.wpe = nn.Embedding(config.block_size, config.n_embd)
            self.drop = nn.Dropout(config.dropout)
            self.h = nn.ModuleList(Block() for _ in range(config.n_layer))
            self.ln_f = nn.LayerNorm(config.n_embd)
            self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
            self.lm_head.weight = self.wte.weight  # weight tying, as in GPT-2
            self.apply(self._init_weights)
            for block in self.h:  # residual projections scaled down by depth, as GPT-2 does
                nn.init.normal_(block.attn.c_proj.weight, std=0.02 / math.sqrt(2 * config.n_layer))
                nn.init.normal_(block.mlp[2].weight, std=0.02 / math.sqrt(2 * config.n_layer))

        @staticmethod
        def _init_weights(module) -> None:
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)

        def forward(self, idx, targets=None):
            positions = torch.arange(idx.shape[1], device=idx.device)
            x = self.drop(self.wte(idx) + self.wpe(positions))
            for block in self.h:
                x = block(x)
            logits = self.lm_head(self.ln_f(x))
            if targets is None:
                return logits
            return logits, F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))

    return GPT()


def gpt_optimizer(torch: ModuleType, model, lr: float = 1e-3, weight_decay: float = 0.1, eps: float = 1e-8):
    """AdamW with nanoGPT's two groups: decay on the matrices of the Linear layers; none on biases,
    LayerNorm and the embeddings (the lm head's weight is the token embedding, so it is not decayed)."""
    embeddings = {id(m.weight) for m in model.modules() if isinstance(m, torch.nn.Embedding)}
    decay = [p for p in model.parameters() if p.dim() >= 2 and id(p) not in embeddings]
    rest = [p for p in model.parameters() if p.dim() < 2 or id(p) in embeddings]
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": rest, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.99), eps=eps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--text", type=Path, default=README, help="the text to learn (default: Ember's README)")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--compile", action="store_true", help="compile the whole training step")
    parser.add_argument("--framework", choices=("ember", "torch"), default="ember")
    args = parser.parse_args()
    torch = importlib.import_module(args.framework)  # `import ember as torch` by default

    text = args.text.read_text(encoding="utf-8")
    chars = sorted(set(text))
    data = torch.tensor([chars.index(c) for c in text])
    config = GPTConfig(vocab_size=len(chars), dropout=0.1)
    torch.manual_seed(0)
    model = gpt(torch, config).to(args.device)
    optimizer = gpt_optimizer(torch, model)

    def batch(size: int = 64):
        starts = torch.randint(0, len(data) - config.block_size - 1, (size,)).tolist()
        x = torch.stack([data[s:s + config.block_size] for s in starts])
        y = torch.stack([data[s + 1:s + 1 + config.block_size] for s in starts])
        return x.to(args.device), y.to(args.device)

    def step(x, y):
        optimizer.zero_grad()
        _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        return loss

    if args.compile:
        step = torch.compile(step)
    began = time.perf_counter()
    for i in range(1, args.steps + 1):
        loss = step(*batch())
        if i % 100 == 0 or i == 1:
            print(f"step {i}: loss {loss.item():.4f}")
    model.eval()
    with torch.no_grad():
        print(f"eval loss {model(*batch(256))[1].item():.4f} after {args.steps} steps "
              f"in {time.perf_counter() - began:.1f} s ({len(chars)} characters, uniform: {math.log(len(chars)):.4f})")
        idx = torch.zeros((1, 1), dtype=torch.long, device=args.device)
        for _ in range(120):
            probs = torch.softmax(model(idx[:, -config.block_size:])[:, -1, :], dim=-1)
            idx = torch.cat([idx, torch.multinomial(probs, 1)], dim=1)
    print("sample:", "".join(chars[i] for i in idx[0].tolist()))


if __name__ == "__main__":
    main()
