"""Seeded inputs of deliberately unequal sizes (B=2, S=7, T=5, D=12, H=3, the sizes of the
package's own tests), so that two swapped axes cannot agree by accident, and the helpers
the exercises' runs share."""

from __future__ import annotations

import torch
from torch import Tensor, nn

B, S, T, D, H = 2, 7, 5, 12, 3
K = D // H  # d_k
F_FF = 20  # d_ff
V = 11  # vocabulary
PAD, BOS, EOS = 0, 1, 2


def generator(seed: int = 1) -> torch.Generator:
    """Inputs come from their own generator: a learner's constructor may draw more or fewer
    random numbers than the package's without changing the inputs."""
    return torch.Generator().manual_seed(seed)


def randn(g: torch.Generator, *shape: int) -> Tensor:
    return torch.randn(*shape, generator=g)


def padded_tokens(g: torch.Generator, batch: int = B, length: int = S, vocab: int = V) -> Tensor:
    """(batch, length) ids in [3, vocab) with the last two positions of row 1 padding."""
    tokens = torch.randint(3, vocab, (batch, length), generator=g)
    tokens[1, -2:] = PAD
    return tokens


def randomise(module: nn.Module, g: torch.Generator) -> nn.Module:
    """Random biases and LayerNorm gains: a zero bias or a unit gain would hide a mistake
    that drops them."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            if name.endswith("bias") or isinstance(_owner(module, name), nn.LayerNorm):
                p.copy_(0.5 * randn(g, *p.shape) + (1.0 if name.endswith("weight") else 0.0))
    return module


def _owner(module: nn.Module, name: str) -> nn.Module:
    return module.get_submodule(name.rpartition(".")[0]) if "." in name else module


def load_weights(mine, reference: nn.Module, parameters_only: bool = False) -> None:
    """Copy the package's weights into the learner's module, by name; a difference of
    names or shapes is said in one line. ``parameters_only``: the buffers (a table of
    rotary frequencies, say) are the learner's to build, persistent or not."""
    if not isinstance(mine, nn.Module):
        raise TypeError(f"expected an nn.Module, got {type(mine).__name__}")
    if parameters_only:
        expected = {k: tuple(v.shape) for k, v in reference.named_parameters()}
        got = {k: tuple(v.shape) for k, v in mine.named_parameters()}
    else:
        expected = {k: tuple(v.shape) for k, v in reference.state_dict().items()}
        got = {k: tuple(v.shape) for k, v in mine.state_dict().items()}
    if expected != got:
        missing = [f"{k} {s}" for k, s in expected.items() if got.get(k) != s]
        extra = [f"{k} {s}" for k, s in got.items() if expected.get(k) != s]
        raise ValueError(
            f"the module's parameters differ from the package's: expected {', '.join(missing) or 'nothing more'}"
            f"; found {', '.join(extra) or 'nothing else'} (name them as the docstring says)"
        )
    if parameters_only:
        mine.load_state_dict(dict(reference.named_parameters()), strict=False)
    else:
        mine.load_state_dict(reference.state_dict())


def python_list_of_modules(obj) -> bool:
    """True when ``obj`` keeps modules in a plain list, tuple or dict attribute, where
    ``.parameters()``, ``.to()`` and ``state_dict`` cannot see them."""
    for name, value in vars(obj).items():
        if name in ("_modules", "_parameters", "_buffers"):  # nn.Module's own registries
            continue
        items = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else ()
        if any(isinstance(item, nn.Module) for item in items):
            return True
    return False



def seeded(seed: int, build):
    """``build()`` with the global random state seeded and then restored: the package's
    modules get the same initial weights in every run, whatever the learner's constructor
    drew before them."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return build()
