"""Root mean square layer normalisation (Zhang & Sennrich, 2019, "Root Mean Square Layer
Normalization", Section 3), a change made after Vaswani et al., 2017.

    RMSNorm(x) = x / RMS(x) * g,    RMS(x) = sqrt(mean_i(x_i^2) + eps)

LayerNorm (Ba et al., 2016; the paper's Section 3.1) re-centres and re-scales:
(x - mean(x)) / sqrt(var(x) + eps) * g + b. RMSNorm keeps only the re-scaling: no mean is
subtracted and there is no bias, so it costs one reduction instead of two; Zhang &
Sennrich argue the re-centring is not what makes LayerNorm work. For an input whose
features already have mean zero the two are equal (with b = 0).

The paper's layers build ``nn.LayerNorm`` themselves (``layers.py`` has no part for the
normalisation), so :func:`use_rms_norm` swaps every LayerNorm of a built model for an
RMSNorm of the same size and epsilon.

Shapes: any leading dimensions (...), D d_model.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from . import checks


class RMSNorm(nn.Module):
    """RMSNorm (Zhang & Sennrich, 2019, Section 3) over the last dimension: (..., D) -> (..., D).

    ``weight`` is the gain g (D,), initialised to ones; ``eps`` is added to the mean square
    inside the square root, as ``torch.nn.RMSNorm`` does (equal to it given the same
    weight and eps). Half-precision inputs are normalised in float32.
    """

    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        self.d_model = checks.positive_int("d_model", d_model)
        self.eps = checks.positive_number("eps", eps)
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x: Tensor) -> Tensor:
        checks.tensor("x", x)
        if x.dim() < 1 or x.size(-1) != self.d_model:
            raise ValueError(f"x must have last dimension d_model={self.d_model}, got {tuple(x.shape)}")
        h = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
        rms_inverse = torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + self.eps)  # (..., 1): 1 / RMS(x)
        return (h * rms_inverse).to(x.dtype) * self.weight  # (..., D)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, eps={self.eps}"


def use_rms_norm(model: nn.Module) -> nn.Module:
    """Replace every ``nn.LayerNorm`` inside ``model`` (the layers' norm1..norm3 and a
    pre-LN stack's final norm) by an :class:`RMSNorm` of the same width and epsilon, in
    place, and return ``model``. Attribute names (``norm1``) stay, so state-dict keys read
    ``...norm1.weight`` (no ``...norm1.bias``: RMSNorm has none). Call it right after
    building the model, before its optimiser is created."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    replaced = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, nn.LayerNorm):
                if len(child.normalized_shape) != 1:
                    raise ValueError(f"{name} normalises over {tuple(child.normalized_shape)}; RMSNorm here "
                                     f"normalises over the last dimension only")
                norm = RMSNorm(child.normalized_shape[0], child.eps)
                if child.weight is not None:
                    norm.to(device=child.weight.device, dtype=child.weight.dtype)
                setattr(parent, name, norm)
                replaced += 1
    if not replaced:
        raise ValueError(f"model must contain an nn.LayerNorm to replace, got {type(model).__name__} without one")
    return model
