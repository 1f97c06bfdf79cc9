"""Helpers for the parity tests against PyTorch's own modules (imported by test files;
a module of its own because two conftest.py files cannot both be imported as ``conftest``)."""


def torch_attn_mask(mask):
    """Our masks say True = may attend; nn.MultiheadAttention's say True = blocked."""
    return None if mask is None else ~mask
