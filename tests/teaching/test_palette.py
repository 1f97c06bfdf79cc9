"""The palette's claims: one colour per role, and the roles that appear together stay
apart in greyscale print and for readers with a colour-vision deficiency."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import numpy as np
import pytest
from matplotlib.colors import to_rgb

from transformer_lab.teaching import OTHER, PALETTE, SERIES_COLORS
from transformer_lab.teaching.style import ATTENTION_CMAP, DIVERGING_CMAP, MASK_CMAP

from colour_vision import VISIONS, contrast_ratio, delta_e, lab, linear_rgb, relative_luminance, simulate

ROLES = ("query", "key", "value", "mask")
MIN_DELTA_E = 20.0
MIN_CONTRAST = 3.0


def apart(a: str, b: str, vision: str) -> tuple[float, float]:
    x, y = simulate(a, vision), simulate(b, vision)
    return delta_e(x, y), contrast_ratio(x, y)


# ----------------------------------------------------------------- the arithmetic itself


def test_colour_arithmetic_matches_known_values():
    white, black = linear_rgb("#FFFFFF"), linear_rgb("#000000")
    assert contrast_ratio(white, black) == pytest.approx(21.0)
    assert relative_luminance(linear_rgb("#777777")) == pytest.approx(0.184, abs=1e-3)  # WCAG's 4.48:1 grey
    assert lab(white) == pytest.approx([100.0, 0.0, 0.0], abs=0.05)
    assert lab(linear_rgb("#FF0000")) == pytest.approx([53.24, 80.09, 67.20], abs=0.3)
    for vision in VISIONS:  # greys stay grey: every simulation keeps neutral colours
        grey = simulate("#808080", vision)
        assert np.ptp(grey) < 0.01, vision
    # protanopia and deuteranopia confuse red and green: they come out almost the same
    assert delta_e(simulate("#D62728", "deuteranopia"), simulate("#2CA02C", "deuteranopia")) < 25
    assert delta_e(linear_rgb("#D62728"), linear_rgb("#2CA02C")) > 70


# ----------------------------------------------------------------- the palette


def test_query_key_value_keep_their_okabe_ito_colours_and_mask_is_charcoal():
    assert PALETTE == {"query": "#0072B2", "key": "#E69F00", "value": "#009E73", "mask": "#3D3D3D", "ink": "#1B1F3B"}


def test_key_and_mask_differ_in_greyscale():
    ratio = contrast_ratio(linear_rgb(PALETTE["key"]), linear_rgb(PALETTE["mask"]))
    assert ratio >= MIN_CONTRAST, f"key/mask luminance contrast {ratio:.2f} < {MIN_CONTRAST}"


@pytest.mark.parametrize("vision", VISIONS)
def test_key_and_mask_differ_for_every_colour_vision(vision):
    de, ratio = apart(PALETTE["key"], PALETTE["mask"], vision)
    assert de >= MIN_DELTA_E and ratio >= MIN_CONTRAST, f"{vision}: Delta E {de:.1f}, contrast {ratio:.2f}"


#: Known exception, kept visible: the Okabe-Ito query blue and value green (kept by decision)
#: come out Delta E 17, contrast 1.4 under simulated tritanopia (about 1 in 10,000 readers).
TRITAN_QV = pytest.mark.xfail(strict=True, reason="query and value are Delta E 17 apart under tritanopia")
PAIRS = [pytest.param(a, b, v, marks=TRITAN_QV) if (a, b, v) == ("query", "value", "tritanopia") else (a, b, v)
         for a, b in itertools.combinations(ROLES, 2) for v in VISIONS]


@pytest.mark.parametrize("a, b, vision", PAIRS)
def test_query_key_value_and_mask_are_pairwise_distinguishable(a, b, vision):
    """Where they appear together (diagrams, the title band): a perceptual distance of at
    least 20 or a luminance contrast of at least 3."""
    de, ratio = apart(PALETTE[a], PALETTE[b], vision)
    assert de >= MIN_DELTA_E or ratio >= MIN_CONTRAST, f"{a}/{b}, {vision}: Delta E {de:.1f}, contrast {ratio:.2f}"


def test_other_series_never_reuse_a_role_colour():
    roles = {PALETTE[r].upper() for r in ROLES}
    assert not roles & {c.upper() for c in SERIES_COLORS}
    assert set(SERIES_COLORS) == set(OTHER.values())


@pytest.mark.parametrize("vision", VISIONS)
def test_masked_cells_stand_out_from_every_attention_weight(vision):
    """A masked cell (charcoal) against the map's light-grey zero and its query-blue top."""
    bad = ATTENTION_CMAP.get_bad()
    for level in (0.0, 1.0):
        de, ratio = apart(bad, ATTENTION_CMAP(level), vision)
        assert de >= MIN_DELTA_E, f"{vision}, weight {level}: Delta E {de:.1f}"


def test_attention_map_has_no_near_white_low_end_and_rises_in_darkness():
    """On a projector a white zero vanishes into the screen: the low end is a visible grey,
    and luminance falls monotonically to the query colour."""
    lum = [relative_luminance(linear_rgb(ATTENTION_CMAP(x)[:3])) for x in np.linspace(0, 1, 11)]
    assert lum[0] < 0.85  # white is 1.0
    assert all(a > b for a, b in zip(lum, lum[1:]))
    assert ATTENTION_CMAP(1.0)[:3] == pytest.approx(to_rgb(PALETTE["query"]))


def test_mask_and_positional_maps_use_no_query_or_key_colour():
    mask_colours = {tuple(np.round(MASK_CMAP(x)[:3], 3)) for x in (0.0, 1.0)}
    diverging = {tuple(np.round(DIVERGING_CMAP(x)[:3], 3)) for x in (0.0, 0.5, 1.0)}
    for role in ("query", "key", "value"):
        rgb = tuple(np.round(to_rgb(PALETTE[role]), 3))
        assert rgb not in mask_colours | diverging, role


def test_slides_scss_uses_the_same_hex_codes():
    """The slides' colour map mirrors ``PALETTE`` (custom_lab.scss's $lab-colors)."""
    scss = Path(__file__).resolve().parents[2] / "custom_lab.scss"
    text = scss.read_text()
    found = dict(re.findall(r'"(\w+)":\s*(#[0-9A-Fa-f]{6})', text))
    assert {k: v.upper() for k, v in found.items() if k in PALETTE} == {k: v.upper() for k, v in PALETTE.items()}
