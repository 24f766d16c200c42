"""The bigram character model of the "build GPT from scratch" lecture (karpathy/ng-video-lecture,
bigram.py), restated in our own words: a square table whose row for a character holds the logits
of the character after it, trained with AdamW on random windows of the text, the train/val loss
estimated every few steps under no_grad, and sampling with multinomial. Smaller than the
lecture's: 20 steps of batch 4 and block 8."""

from . import lecture_data, lecture_estimate_loss, lecture_sample, lecture_train


def program(torch, draw_ix, say, init_state=None, batch_size=4, block_size=8, max_iters=20, eval_interval=10,
            learning_rate=1e-2, eval_iters=4, sample_tokens=0, sample_seed=1337):
    nn, F = torch.nn, torch.nn.functional
    on_gpu = torch.cuda.is_available()  # False on attograd, as on a CPU-only torch
    device = "cuda" if on_gpu else "cpu"

    n_chars, decode, batch = lecture_data(torch, draw_ix, block_size, batch_size, device)
    mean_losses = lecture_estimate_loss(torch, batch, eval_iters)

    class NextCharTable(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.rows = nn.Embedding(n, n)  # row i: the logits of what follows character i

        def forward(self, ids, targets=None):
            scores = self.rows(ids)  # (B, T, n)
            if targets is None:
                return scores, None
            b, t, n = scores.shape
            flat = scores.view(b * t, n)  # cross_entropy takes (N, classes) and (N,)
            return flat, F.cross_entropy(flat, targets.view(b * t))

    model = NextCharTable(n_chars)
    if init_state is not None:
        model.load_state_dict(init_state)
    on_device = model.to(device)
    initial = {k: v.detach().clone() for k, v in model.state_dict().items()}
    losses, _ = lecture_train(torch, model, batch, mean_losses, say, max_iters, eval_interval, learning_rate)
    sample = lecture_sample(torch, on_device, decode, say, sample_tokens, sample_seed, device)
    return {"model": model, "initial": initial, "losses": losses, "sample": sample, "vocab_size": n_chars}
