"""Learner programs, restated here in our own words from public PyTorch code people run (the
surveyed programs of docs/python.md): each does what its original does (its model, its training
loop, its sampling) as a function of ``torch``, the module it runs on: PyTorch when
make_program_fixtures.py records what it computes, attograd in test_programs.py
("import attograd as torch"). They are smaller than the originals (a few steps of a tiny model on
corpus.txt, a text written for these tests) so that the suite stays fast on 2 cores.

What torch's generator draws (the initial weights, the batches) comes from the fixtures: the
programs take it as arguments, and take a batch's start positions from ``draw_ix`` where the
original calls torch.randint.

This module holds what several programs share: the text and its character ids, the lecture's
batches, loss estimate, training loop and sampling, GPT-2's initialisation, the head split and
merge and the written-out causal attention of the two GPTs, their top-k cut, and the choice of
the next id that minGPT and makemore share."""

import math
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def corpus():
    with open(os.path.join(HERE, "corpus.txt"), encoding="utf-8") as f:
        return f.read()


def vocabulary(text):
    """Every program's tokenizer: the text's distinct characters in sorted order, a map from a
    character to its id and a map from an id back to its character."""
    alphabet = sorted(set(text))
    return alphabet, {ch: n for n, ch in enumerate(alphabet)}, dict(enumerate(alphabet))


# --- the "build GPT from scratch" lecture (bigram.py and gpt.py share these) -------------------

def lecture_data(torch, draw_ix, block_size, batch_size, device):
    """The text as a long tensor of ids, its first 90% to train on and the rest to validate on,
    and ``batch(part)``: batch_size windows of block_size ids at random starts in that part, with
    the windows one id later as targets. Returns (vocabulary size, decode, batch)."""
    text = corpus()
    alphabet, index_of, char_at = vocabulary(text)
    ids = torch.tensor([index_of[ch] for ch in text], dtype=torch.long)
    cut = int(0.9 * len(ids))
    parts = {"train": ids[:cut], "val": ids[cut:]}

    def batch(part):
        stream = parts[part]
        starts = draw_ix(torch, len(stream) - block_size, batch_size)  # the lecture: torch.randint
        # each start is a 0-d tensor, and slices as a Python int would
        inputs = torch.stack([stream[s:s + block_size] for s in starts])  # (B, T)
        targets = torch.stack([stream[s + 1:s + 1 + block_size] for s in starts])  # (B, T)
        return inputs.to(device), targets.to(device)

    def decode(token_ids):
        return "".join(char_at[t] for t in token_ids)

    return len(alphabet), decode, batch


def lecture_estimate_loss(torch, batch, eval_iters):
    """A function of the model giving the mean loss over eval_iters batches of each part, computed
    in eval mode and without building a graph (the model goes back to train mode after)."""

    @torch.no_grad()
    def mean_losses(model):
        model.eval()
        means = {}
        for part in ("train", "val"):
            per_batch = torch.zeros(eval_iters)
            for n in range(eval_iters):
                _, loss = model(*batch(part))
                per_batch[n] = loss.item()
            means[part] = per_batch.mean()
        model.train()
        return means

    return mean_losses


def lecture_train(torch, model, batch, mean_losses, say, max_iters, eval_interval, learning_rate,
                  eval_last=False):
    """AdamW over all parameters; every eval_interval steps (and at the last one too with
    eval_last, as gpt.py does) the estimate is printed; each step: a training batch, the loss,
    gradients reset to None, backward, an optimizer step. Returns the steps' losses and the
    estimates as [train, val] pairs."""
    opt = torch.optim.AdamW(model.parameters(), lr=learning_rate)
    losses, estimates = [], []
    for step in range(max_iters):
        if step % eval_interval == 0 or (eval_last and step == max_iters - 1):
            means = mean_losses(model)
            estimates.append([means["train"].item(), means["val"].item()])
            # the 0-d tensors go through Tensor.__format__
            say(f"at step {step}: {means['train']:.4f} on train, {means['val']:.4f} on val")
        inputs, targets = batch("train")
        _, loss = model(inputs, targets)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, estimates


def lecture_sample(torch, model, decode, say, sample_tokens, sample_seed, device, window=None):
    """The lecture's ending: from a single id 0, sample_tokens times the model's distribution for
    the last position (seeing the last `window` ids when given) by softmax, an id drawn from it by
    multinomial and appended; the text printed and returned (None when no tokens are asked)."""
    if not sample_tokens:
        return None
    F = torch.nn.functional
    torch.manual_seed(sample_seed)
    ids = torch.zeros((1, 1), dtype=torch.long, device=device)
    for _ in range(sample_tokens):
        seen = ids if window is None else ids[:, -window:]
        scores, _ = model(seen)  # (1, T, vocab)
        probs = F.softmax(scores[:, -1, :], dim=-1)  # (1, vocab)
        ids = torch.cat((ids, torch.multinomial(probs, num_samples=1)), dim=1)  # (1, T + 1)
    text = decode(ids[0].tolist())
    say(text)
    return text


# --- the GPTs (the lecture's gpt.py, nanoGPT, minGPT) ------------------------------------------

def normal_init(torch, module):
    """GPT-2's initialisation, applied module by module through Module.apply: the weights of linear
    layers and embeddings drawn from N(0, 0.02), the biases of linear layers zeroed."""
    nn = torch.nn
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, mean=0.0, std=0.02)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)


def scale_residual_init(torch, model, n_layer, suffix="to_residual.weight"):
    """GPT-2's smaller init of the projections that write into the residual stream (named
    `to_residual` in these programs): N(0, 0.02 / sqrt(2 n_layer)), since 2 n_layer of them add up."""
    for name, p in model.named_parameters():
        if name.endswith(suffix):
            torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layer))


def split_heads(fused, width, n_head):
    """(B, T, 3 width) of a fused projection -> q, k, v as (B, n_head, T, width / n_head): each piece
    of the split is viewed as heads (a view of a strided piece) and the head dim moved forward."""
    b, t, _ = fused.size()
    return [piece.view(b, t, n_head, width // n_head).transpose(1, 2) for piece in fused.split(width, dim=2)]


def merge_heads(y):
    """(B, n_head, T, hs) -> (B, T, n_head hs): the heads side by side again."""
    b, n_head, t, hs = y.size()
    return y.transpose(1, 2).contiguous().view(b, t, n_head * hs)


def masked_attention(torch, q, k, v, mask, dropout):
    """Causal attention written out: scaled scores q·k, the future masked to -inf by a registered
    lower-triangular buffer of shape (1, 1, block, block), softmax, dropout, weights times v."""
    t = q.size(-2)
    scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))  # (B, nh, T, T)
    scores = scores.masked_fill(mask[:, :, :t, :t] == 0, float("-inf"))
    return dropout(torch.nn.functional.softmax(scores, dim=-1)) @ v  # (B, nh, T, hs)


def cut_to_top_k(torch, scores, k):
    """In place: each row's scores below its k-th largest become -inf (the cut nanoGPT and minGPT
    make before sampling)."""
    best, _ = torch.topk(scores, k)  # (B, k), largest first
    scores[scores < best[:, [-1]]] = -float("Inf")  # the list index keeps the dim: (B, 1)


def choose_next(torch, last_scores, temperature=1.0, top_k=None, sample=False):
    """minGPT's and makemore's choice of the next ids from the last position's scores (B, vocab):
    divided by the temperature, cut to the top k when asked, softmax, then one id per row drawn by
    multinomial when sampling, else the likeliest (topk with k=1). Returns (B, 1)."""
    scores = last_scores / temperature
    if top_k is not None:
        cut_to_top_k(torch, scores, top_k)
    probs = torch.nn.functional.softmax(scores, dim=-1)
    if sample:
        return torch.multinomial(probs, num_samples=1)
    _, chosen = torch.topk(probs, k=1, dim=-1)
    return chosen


# --- the fixtures' random draws ----------------------------------------------------------------

class Log(list):
    """What a program prints, one line per call, kept for the comparison."""

    def __call__(self, *args):
        self.append(" ".join(str(a) for a in args))


class Replay:
    """Batch positions drawn once by torch (make_program_fixtures.py), handed out again in order."""

    def __init__(self, draws):
        self.draws = [list(map(int, d)) for d in draws]
        self.at = 0

    def __call__(self, torch, high, size):
        d = self.draws[self.at]
        self.at += 1
        assert len(d) == size and all(0 <= i < high for i in d), "the replayed batch does not fit this program"
        return torch.tensor(d)


class Record:
    """torch.randint as the original calls it, with each draw kept for the fixtures."""

    def __init__(self):
        self.draws = []

    def __call__(self, torch, high, size):
        ix = torch.randint(high, (size,))
        self.draws.append(ix.tolist())
        return ix
