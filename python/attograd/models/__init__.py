"""``attograd.models``: attograd's character language models from Python. ``load(path)`` reads
a run folder or a model.safetensors written by ``attograd train`` (or ``attograd.training.train``);
``make(...)`` builds a fresh one from the registry (``gpt``, ``modern``, ``mlp``). Either is an
``nn.Module`` whose parameters are the C++ model's own tensors, so it trains from Python with
``attograd.optim`` as any module does, and the study tools (``attograd.study``) read it."""

import errno
import os

from .. import _C
from ..nn.modules.cpp import CppModule

__all__ = ["LanguageModel", "load", "make", "names"]


class LanguageModel(CppModule):
    """A character language model: ``model(idx)`` gives logits (B, T, V) for int64 ids (B, T);
    ``loss(idx, targets)`` the mean next-character cross-entropy; ``generate`` samples text."""

    _copy_shares = ("tokenizer",)  # immutable

    def __init__(self, cpp, tokenizer, path=None):
        super().__init__(cpp)
        object.__setattr__(self, "tokenizer", tokenizer)
        object.__setattr__(self, "path", path)

    def forward(self, idx):
        return self._cpp.forward(idx)

    def loss(self, idx, targets):
        return self._cpp.loss(idx, targets)

    @property
    def config(self):
        """Its hyperparameters: name, n_layer, n_head, n_embd, block_size, ..., vocab_size."""
        return self._cpp.model_config()

    @property
    def block_size(self):
        return self.config["block_size"]

    @property
    def vocab(self):
        """The characters, in id order."""
        return self.tokenizer.chars()

    def encode(self, text):
        """Text to a list of ids (a character outside the vocabulary is an error naming it)."""
        return self.tokenizer.encode(text)

    def decode(self, ids):
        return self.tokenizer.decode([int(i) for i in ids])

    def generate(self, prompt="\n", max_new_tokens=200, temperature=1.0, top_k=0, seed=1337):
        """The text sampled after ``prompt`` (the prompt not included), with the model's KV cache;
        temperature 0 is greedy. ``seed`` seeds this sampling alone."""
        ids = self._cpp.generate(self.encode(prompt), max_new_tokens, temperature, top_k, seed)
        return self.decode(ids[len(self.encode(prompt)):])

    sample = generate

    def _clone_cpp(self):
        dtype = next(iter(self.parameters())).dtype
        return _C._make_model(self.config, dtype, 0)

    def save(self, path):
        """Writes model.safetensors (attograd's format: weights, configuration and vocabulary)."""
        _C._save_model(os.fspath(path), self._cpp, self.tokenizer)

    def summary(self):
        return self._cpp.summary()

    def _get_name(self):
        return self._cpp.name()

    def extra_repr(self):
        return self._cpp.summary()

    def __repr__(self):
        return f"{self._get_name()}({self._cpp.summary()}, {self._cpp.num_parameters():,} parameters)"


def load(path):
    """The model in a run folder or a model.safetensors file, in eval mode."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(errno.ENOENT, "no run folder or model.safetensors there", path)
    cpp, tokenizer, actual = _C._load_model(path)
    return LanguageModel(cpp, tokenizer, actual)


def make(vocab, name="gpt", seed=None, dtype=None, **config):
    """A fresh model of the registry: ``vocab`` is the text whose characters make the vocabulary
    (or a list of the characters); ``config`` the model's settings by their keys (n_layer,
    n_head, n_embd, block_size, dropout, ...); ``seed`` seeds its initialisation (else
    attograd's generator draws it)."""
    tokenizer = (_C._CharTokenizer.from_chars(sorted(set(vocab))) if not isinstance(vocab, str)
                 else _C._CharTokenizer.from_text(vocab))
    settings = dict(config, name=name, vocab_size=tokenizer.vocab_size)
    return LanguageModel(_C._make_model(settings, dtype, seed), tokenizer)


def names():
    """The models the registry can build."""
    return _C._model_names()
