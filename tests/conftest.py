"""Shared fixtures: a fixed seed for every test, and the devices to run on.

Sizes in tests are deliberately unequal (B=2, S=7, T=5, D=12, H=3) so that a swapped
axis cannot pass by accident.
"""

import pytest
import torch

# The CUDA case carries the cuda marker, so that `pytest -m cuda` runs it with the rest.
DEVICES = ["cpu"] + ([pytest.param("cuda", marks=pytest.mark.cuda)] if torch.cuda.is_available() else [])


@pytest.fixture(autouse=True)
def seed():
    torch.manual_seed(0)
    return 0


@pytest.fixture(params=DEVICES)
def device(request):
    return torch.device(request.param)


def pytest_collection_modifyitems(config, items):
    skip_cuda = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "cuda" in item.keywords and not torch.cuda.is_available():
            item.add_marker(skip_cuda)
