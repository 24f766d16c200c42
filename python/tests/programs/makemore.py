"""makemore's character models (karpathy/makemore, makemore.py), restated in our own words: a
list of words (made-up names here) turned into fixed-length examples, each starting with the
token 0 and ending with it, the targets after a word's end set to -1 so that the loss skips them
(cross_entropy with ignore_index=-1); the words split into train and test by torch.randperm; the
Bigram model (a table of logits indexed by the previous character) and the MLP model (the
embeddings of the last few characters, a blank token before the word's start, concatenated, a tanh
hidden layer); AdamW with weight decay and betas; model.zero_grad(set_to_none=True); the mean loss
of a split under inference_mode; and generation under no_grad: a temperature, an optional top-k
cut, then multinomial, or the best token (topk with k=1) when not sampling, each row cropped at
its first end token and sorted into "in train", "in test" and "new".

Left out, as attograd has no such thing: the DataLoader and its RandomSampler (batches are picked
by index tensors drawn with torch.randint, through ``draw_ix``), the BoW model's torch.roll (the
MLP shifts its context by slicing a padded tensor instead) and the SummaryWriter."""

from . import choose_next

NAMES = """
amelo brisa caddor delvin esmara fenwick gilda horatio isvel jorun kessa lumir
mabrey nolwen orsic pella quillon rastin selka tobrin ulva vesper wynna xandor
yelka zoran ada bertil corra dune
""".split()


class Words:
    """The examples of a list of words, `width` ids each: x is the token 0 then the word's ids
    (1 upwards), padded with 0; y is the word's ids, then 0 (its end), then -1 to the width."""

    def __init__(self, torch, words, id_of, width):
        self.words, self.id_of, self.width = words, id_of, width
        self.char_of = {n: ch for ch, n in id_of.items()}
        self.x = torch.zeros((len(words), width), dtype=torch.long)
        self.y = torch.zeros((len(words), width), dtype=torch.long)
        for row, word in enumerate(words):
            ids = torch.tensor([id_of[ch] for ch in word], dtype=torch.long)
            self.x[row, 1:1 + len(word)] = ids
            self.y[row, :len(word)] = ids
            self.y[row, len(word) + 1:] = -1  # after the end token: nothing to predict

    def __len__(self):
        return len(self.words)

    def __contains__(self, word):
        return word in self.words

    def vocab_size(self):
        return len(self.id_of) + 1  # the letters and the start/end token

    def decode(self, ids):
        return "".join(self.char_of[i] for i in ids)


def split_words(torch, words, say):
    """A tenth of the words (at most 1000) held out for testing, picked by torch.randperm; both
    parts share the alphabet and the example width (the longest word and one token)."""
    alphabet = sorted(set("".join(words)))
    id_of = {ch: n + 1 for n, ch in enumerate(alphabet)}  # 0 is the start/end token
    longest = max(len(w) for w in words)
    say(f"{len(words)} words, the longest {longest} letters, {len(alphabet)} letters: {''.join(alphabet)}")
    n_test = min(1000, int(0.1 * len(words)))
    order = torch.randperm(len(words)).tolist()
    train = Words(torch, [words[i] for i in order[:-n_test]], id_of, longest + 1)
    test = Words(torch, [words[i] for i in order[-n_test:]], id_of, longest + 1)
    say(f"{len(train)} to train on, {len(test)} to test")
    return train, test


def definitions(torch):
    nn, F = torch.nn, torch.nn.functional

    def next_token_loss(scores, targets):
        # every position's scores against its target; the -1 targets count for nothing
        return F.cross_entropy(scores.view(-1, scores.size(-1)), targets.view(-1), ignore_index=-1)

    class Bigram(nn.Module):
        """The logits of the next token are a row of a table, picked by the current token."""

        def __init__(self, vocab, context):
            super().__init__()
            self.table = nn.Parameter(torch.zeros((vocab, vocab)))

        def context(self):
            return 1

        def forward(self, ids, targets=None):
            scores = self.table[ids]  # (B, T, vocab)
            return scores, None if targets is None else next_token_loss(scores, targets)

    class MLP(nn.Module):
        """At each position, the embeddings of that token and of the `context - 1` before it (a
        blank token, id `vocab`, before the start) side by side, through a tanh hidden layer."""

        def __init__(self, vocab, context, n_embd=8, n_hidden=32):
            super().__init__()
            self.vocab, self.span = vocab, context
            self.embed = nn.Embedding(vocab + 1, n_embd)  # one more row: the blank token
            self.head = nn.Sequential(nn.Linear(context * n_embd, n_hidden), nn.Tanh(), nn.Linear(n_hidden, vocab))

        def context(self):
            return self.span

        def forward(self, ids, targets=None):
            b, t = ids.size()
            blanks = torch.full((b, self.span - 1), self.vocab, dtype=torch.long, device=ids.device)
            padded = torch.cat([blanks, ids], dim=1)  # (B, span - 1 + T)
            # lag k: the token k places back, for every position (the current one first)
            lags = [padded[:, self.span - 1 - k:self.span - 1 - k + t] for k in range(self.span)]
            window = torch.stack(lags, dim=-1)  # (B, T, span)
            features = self.embed(window).view(b, t, -1)  # (B, T, span * n_embd)
            scores = self.head(features)
            return scores, None if targets is None else next_token_loss(scores, targets)

    return {"bigram": Bigram, "mlp": MLP}


def generate(torch, model, ids, steps, temperature=1.0, do_sample=False, top_k=None):
    """`steps` tokens appended to each row of ids (B, T), the model seeing at most its context."""
    with torch.no_grad():
        for _ in range(steps):
            seen = ids if ids.size(1) <= model.context() else ids[:, -model.context():]
            scores, _ = model(seen)
            ids = torch.cat((ids, choose_next(torch, scores[:, -1, :], temperature, top_k, do_sample)), dim=1)
    return ids


def words_from(torch, model, train, test, say, rows, **how):
    """`rows` words generated from the start token, each cut at its first end token, printed by
    where they occur (train, test, nowhere); returned in row order."""
    starts = torch.zeros(rows, 1, dtype=torch.long)
    made = generate(torch, model, starts, train.width - 1, **how).to("cpu")
    words = []
    for row in made[:, 1:].tolist():
        end = row.index(0) if 0 in row else len(row)
        words.append(train.decode(row[:end]))
    seen = {"in train": [w for w in words if w in train],
            "in test": [w for w in words if w not in train and w in test]}
    seen["new"] = [w for w in words if w not in train and w not in test]
    for where, found in seen.items():
        say(f"{len(found)} samples {where}: {' '.join(found)}")
    return words


def program(torch, draw_ix, say, init_state=None, kind="mlp", batch_size=8, max_steps=12, learning_rate=1e-2,
            weight_decay=0.01, log_every=4, eval_at=(6, 12), temperature=1.0, top_k=None, num_samples=0,
            sample_seed=1337, words=None):
    train, test = split_words(torch, NAMES if words is None else words, say)
    vocab = train.vocab_size()
    model = definitions(torch)[kind](vocab, train.width)
    if init_state is not None:
        model.load_state_dict(init_state)
    model.to("cpu")
    initial = {k: v.detach().clone() for k, v in model.state_dict().items()}
    say(f"{kind}: {sum(p.numel() for p in model.parameters())} parameters, vocab {vocab}, context {model.context()}")

    @torch.inference_mode()
    def mean_loss(part):
        model.eval()
        losses = []
        for at in range(0, len(part), batch_size):  # in order: the DataLoader would shuffle
            _, loss = model(part.x[at:at + batch_size], part.y[at:at + batch_size])
            losses.append(loss.item())
        model.train()
        return torch.tensor(losses).mean().item()

    opt = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=weight_decay, betas=(0.9, 0.99),
                            eps=1e-8)
    losses, evaluations, first_grads = [], [], None
    for step in range(max_steps + 1):
        if step in eval_at:
            evaluations.append([mean_loss(train), mean_loss(test)])
            say(f"step {step} train loss: {evaluations[-1][0]} test loss: {evaluations[-1][1]}")
        if step == max_steps:
            break
        pick = draw_ix(torch, len(train), batch_size)  # makemore: a RandomSampler with replacement
        _, loss = model(train.x[pick], train.y[pick])
        model.zero_grad(set_to_none=True)
        loss.backward()
        if first_grads is None:
            first_grads = {n: p.grad.detach().clone() for n, p in model.named_parameters()}
        opt.step()
        losses.append(loss.item())
        if step % log_every == 0:
            say(f"step {step} | loss {loss.item():.4f}")

    out = {"model": model, "initial": initial, "losses": losses, "evaluations": evaluations,
           "first_grads": first_grads, "split": [train.words, test.words]}
    model.eval()
    out["greedy"] = words_from(torch, model, train, test, say, 2, temperature=temperature, top_k=top_k)
    if num_samples:
        torch.manual_seed(sample_seed)
        out["sample"] = words_from(torch, model, train, test, say, num_samples, temperature=temperature,
                                   top_k=top_k, do_sample=True)
    return out
