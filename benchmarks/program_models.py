"""The models and loops of well-known public PyTorch programs, written once against the API Ember shares with PyTorch.

Each function takes the framework module (``ember`` or ``torch``) and builds what the program builds, so both
frameworks run the very same code: PyTorch's word-language-model example (``word_lm``), its time-sequence-prediction
example (``sine_sequence``), makemore's MLP and its ``CharDataset`` (``char_mlp``, ``char_example``), and
minGPT/nanoGPT's sampling loop (``generate``) and addition evaluation (``add_digits``). The models are the
programs' own, at the sizes the benchmark's cases choose; the training loops are in benchmarks/programs.py.
"""
from __future__ import annotations

from types import ModuleType


def word_lm(torch: ModuleType, cell: str, vocabulary: int, width: int, layers: int = 2, dropout: float = 0.2):
    """The word-language-model example's ``RNNModel``: embedding, a stacked LSTM or GRU, decoder tied to the embedding.

    ``model(tokens, hidden)`` gives log-probabilities of shape (time * batch, vocabulary) and the new hidden state.
    """
    nn, F = torch.nn, torch.nn.functional

    class RNNModel(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.drop = nn.Dropout(dropout)
            self.encoder = nn.Embedding(vocabulary, width)
            self.rnn = getattr(nn, cell)(width, width, layers, dropout=dropout)
            self.decoder = nn.Linear(width, vocabulary)
            self.decoder.weight = self.encoder.weight
            nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
            nn.init.zeros_(self.decoder.bias)

        def forward(self, tokens, hidden):
            output, hidden = self.rnn(self.drop(self.encoder(tokens)), hidden)
            decoded = self.decoder(self.drop(output)).view(-1, vocabulary)
            return F.log_softmax(decoded, dim=1), hidden

        def init_hidden(self, batch: int):
            zeros = torch.zeros(layers, batch, width)
            return (zeros, zeros.clone()) if cell == "LSTM" else zeros

    return RNNModel()


def detached(hidden):
    """The example's ``repackage_hidden``: the state kept, its history cut, so backpropagation stops at the batch."""
    return hidden.detach() if not isinstance(hidden, tuple) else tuple(detached(h) for h in hidden)


def sine_sequence(torch: ModuleType, width: int = 51):
    """The time-sequence-prediction example's ``Sequence``: two stacked LSTMCells and a linear read-out, float64."""
    nn = torch.nn

    class Sequence(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lstm1 = nn.LSTMCell(1, width)
            self.lstm2 = nn.LSTMCell(width, width)
            self.linear = nn.Linear(width, 1)

        def forward(self, series):
            batch = series.size(0)
            h_t, c_t, h_t2, c_t2 = (torch.zeros(batch, width, dtype=torch.double) for _ in range(4))
            outputs = []
            for input_t in series.split(1, dim=1):
                h_t, c_t = self.lstm1(input_t, (h_t, c_t))
                h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
                outputs.append(self.linear(h_t2))
            return torch.cat(outputs, dim=1)

    return Sequence().double()


def char_mlp(torch: ModuleType, block: int, embedding: int, hidden: int, vocabulary: int = 27):
    """makemore's MLP language model: embed the ``block`` previous characters, one tanh layer, logits."""
    nn = torch.nn

    class MLP(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.wte = nn.Embedding(vocabulary, embedding)
            self.mlp = nn.Sequential(nn.Linear(block * embedding, hidden), nn.Tanh(), nn.Linear(hidden, vocabulary))

        def forward(self, context):
            return self.mlp(self.wte(context).view(context.shape[0], -1))

    return MLP()


def char_example(torch: ModuleType, word: list[int], length: int):
    """makemore's ``CharDataset.__getitem__``: a word as input and target rows, start token 0, targets masked by -1."""
    ix = torch.tensor(word, dtype=torch.long)
    x = torch.zeros(length + 1, dtype=torch.long)
    y = torch.zeros(length + 1, dtype=torch.long)
    x[1:1 + len(ix)] = ix
    y[:len(ix)] = ix
    y[len(ix) + 1:] = -1
    return x, y


def generate(torch: ModuleType, model, idx, new_tokens: int, block: int, temperature: float = 1.0,
             top_k: int | None = None, sample: bool = True):
    """minGPT's ``generate``: crop to the context, last position's logits, top-k mask, then sample or take the best."""
    F = torch.nn.functional
    for _ in range(new_tokens):
        idx_cond = idx if idx.size(1) <= block else idx[:, -block:]
        logits = model(idx_cond)[:, -1, :] / temperature
        if top_k is not None:
            v, _ = torch.topk(logits, top_k)
            logits[logits < v[:, [-1]]] = -float("Inf")
        probs = F.softmax(logits, dim=-1)
        if sample:
            idx_next = torch.multinomial(probs, num_samples=1)
        else:
            _, idx_next = torch.topk(probs, k=1, dim=-1)
        idx = torch.cat((idx, idx_next), dim=1)
    return idx


def add_digits(torch: ModuleType, model, problems, digits: int, batch: int) -> int:
    """minGPT's adder evaluation: greedy-decode ``a + b`` for each row of ``problems`` in batches; how many are right.

    A row is the ``2 * digits`` digits of a and b followed by the ``digits + 1`` digits of the sum reversed, as the
    adder's dataset writes them.
    """
    factors = torch.tensor([[10 ** i for i in range(digits + 1)][::-1]])
    correct = 0
    for start in range(0, problems.shape[0], batch):
        rows = problems[start:start + batch]
        given = rows[:, :2 * digits]
        answer = generate(torch, model, given, digits + 1, 3 * digits, sample=False)[:, -(digits + 1):].flip(1)
        a = (given[:, :digits] * factors[:, 1:]).sum(1)
        b = (given[:, digits:2 * digits] * factors[:, 1:]).sum(1)
        predicted = (answer * factors).sum(1)
        correct += int((predicted == a + b).sum().item())
    return correct
