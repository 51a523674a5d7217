"""``ember.nn.utils``: gradient clipping, flat-vector views of parameters, parametrizations, weight and spectral
normalization, pruning and packed sequences."""
from .clip_grad import clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm
from .convert_parameters import parameters_to_vector, vector_to_parameters
from . import parametrizations, parametrize, prune, rnn  # noqa: F401
from .spectral_norm import remove_spectral_norm, spectral_norm
from .weight_norm import remove_weight_norm, weight_norm

__all__ = ["clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm", "parameters_to_vector",
           "vector_to_parameters", "parametrizations", "parametrize", "prune", "rnn", "weight_norm", "remove_weight_norm",
           "spectral_norm", "remove_spectral_norm"]
