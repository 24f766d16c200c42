"""A character bigram model, written as a learner writes one with PyTorch: its batches drawn with
torch.randint, its table initialised by nn.Embedding, dropout on its logits, AdamW, and a sample
drawn with torch.multinomial, all from the generator torch.manual_seed seeds. Run with torch or
with attograd it prints the same losses (to float32 round-off) and the same sample:

    python seeded_bigram.py torch
    python seeded_bigram.py attograd

python/tests/make_generator_fixtures.py keeps what torch prints; test_generator.py runs it with
attograd and compares."""

import importlib
import sys

TEXT = (
    "a small model reads a small text and learns which letter tends to follow which. it sees the "
    "text in short windows picked at random, guesses the next letter at every place, and nudges its "
    "table of guesses towards what it saw. after a few hundred such steps the table knows that a "
    "space comes after most words, that an e often follows th, and that q is rare. then it writes: "
    "one letter at a time, each drawn from its guess for what follows the last one it wrote.\n"
)


def main(torch, emit=print):
    nn, F = torch.nn, torch.nn.functional
    torch.manual_seed(1337)
    chars = sorted(set(TEXT))
    stoi = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in TEXT], dtype=torch.long)
    cut = int(0.9 * len(data))
    splits = {"train": data[:cut], "val": data[cut:]}
    block, batch = 8, 16

    def get_batch(split):
        d = splits[split]
        ix = torch.randint(len(d) - block, (batch,))
        at = ix.unsqueeze(1) + torch.arange(block)  # (batch, block) positions
        return d[at], d[at + 1]

    class Bigram(nn.Module):
        def __init__(self, vocab):
            super().__init__()
            self.table = nn.Embedding(vocab, vocab)
            self.drop = nn.Dropout(0.1)

        def forward(self, idx, targets=None):
            logits = self.drop(self.table(idx))
            if targets is None:
                return logits, None
            B, T, C = logits.shape
            return logits, F.cross_entropy(logits.view(B * T, C), targets.view(B * T))

    model = Bigram(len(chars))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)

    def estimate(split):
        model.eval()
        with torch.no_grad():
            losses = torch.zeros(5)
            for k in range(5):
                losses[k] = model(*get_batch(split))[1].item()
        model.train()
        return losses.mean().item()

    for step in range(301):
        if step % 50 == 0:
            emit(f"step {step}: train loss {estimate('train'):.6f}, val loss {estimate('val'):.6f}")
        xb, yb = get_batch("train")
        _, loss = model(xb, yb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    model.eval()
    out = [0]
    with torch.no_grad():
        for _ in range(80):
            logits, _ = model(torch.tensor([[out[-1]]]))
            probs = F.softmax(logits[:, -1, :], dim=-1)
            out.append(torch.multinomial(probs, num_samples=1).item())
    emit("sample: " + "".join(chars[i] for i in out).replace("\n", "|"))


if __name__ == "__main__":
    main(importlib.import_module(sys.argv[1] if len(sys.argv) > 1 else "torch"))
