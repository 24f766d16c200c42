"""``attograd.nn.utils``: gradient clipping, as torch.nn.utils."""

from .clip_grad import clip_grad_norm_, clip_grad_value_, clip_grad_norm, parameters_to_vector, vector_to_parameters

__all__ = ["clip_grad_norm_", "clip_grad_value_", "clip_grad_norm", "parameters_to_vector", "vector_to_parameters"]
