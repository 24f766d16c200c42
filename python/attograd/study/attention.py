"""A language model's attention on a text, as arrays: the weights of every layer and head,
dLoss/dWeights, and the signed dLoss/dScores that drives learning (``attograd attend``'s data)."""

import contextlib

from .. import _C

__all__ = ["AttentionMaps", "attention"]


class AttentionMaps:
    """``weights[layer]``: float32 (H, T, T), row q the weights of query q over the keys (zero for
    the keys it may not see); with grads, ``grads[layer]`` (dLoss/dWeights) and
    ``score_grads[layer]`` (dLoss/dScores) of the next-character loss ``loss`` on the text."""

    def __init__(self, model, text, grads):
        self._model, self.text = model, text
        self.grads = self.score_grads = self.loss = None
        with _eval_mode(model):
            if grads:
                self.chars, self.weights, self.grads, self.score_grads, self.loss = _C._capture_attention_grads(
                    model._cpp, model.tokenizer, text)
            else:
                self.chars, self.weights = _C._capture_attention(model._cpp, model.tokenizer, text)

    @property
    def n_layer(self):
        return len(self.weights)

    @property
    def n_head(self):
        return self.weights[0].shape[0] if self.weights else 0

    def png(self):
        """Every head of every layer as a heatmap (weights beside signed dLoss/dScores with grads),
        the characters on both axes: PNG bytes (of the model as it is now)."""
        with _eval_mode(self._model):
            return _C._attention_png(self._model._cpp, self._model.tokenizer, self.text, self.grads is not None)

    def _repr_png_(self):
        return self.png()

    def __repr__(self):
        what = "weights, dLoss/dWeights and dLoss/dScores" if self.grads is not None else "weights"
        return f"AttentionMaps({self.n_layer} layers × {self.n_head} heads over {len(self.chars)} characters: {what})"


@contextlib.contextmanager
def _eval_mode(model):
    """The maps are of the model as it predicts (dropout off), whatever mode it trains in."""
    was = model.training
    model.eval()
    try:
        yield
    finally:
        model.train(was)


def attention(model, text, grads=True):
    """The attention of ``model`` (from attograd.models) on ``text`` (at most block_size
    characters; with grads at least 2)."""
    return AttentionMaps(model, text, grads)
