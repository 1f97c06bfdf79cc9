"""Which optional extras a test needs: the package alone (`pip install -e ".[test]"`) runs
every test that needs only the package, and skips the rest saying which extra they need;
`make test` (DECK_TOOLCHAIN=required) runs them all, so a missing piece fails there."""

from __future__ import annotations

import importlib.util
import os

import pytest

REQUIRED = os.environ.get("DECK_TOOLCHAIN") == "required"


def needs(*modules: str, extra: str = "deck"):
    """A mark: skip the test (or module, as ``pytestmark``) when one of ``modules`` is not
    installed, naming the extra that provides it; under DECK_TOOLCHAIN=required the test
    runs, and fails on the missing import."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    reason = (f"needs {', '.join(missing)} from the [{extra}] extra: `pip install -e \".[test,{extra}]\"` "
              "or `make test`")
    return pytest.mark.skipif(bool(missing) and not REQUIRED, reason=reason)


def skip_module_without(*modules: str, extra: str = "deck") -> None:
    """Call at the top of a test module that cannot even be imported without ``modules``."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing and not REQUIRED:
        pytest.skip(f"needs {', '.join(missing)} from the [{extra}] extra: `pip install -e \".[test,{extra}]\"` "
                    "or `make test`", allow_module_level=True)
