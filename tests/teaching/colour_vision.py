"""Colour arithmetic for the palette tests: WCAG relative luminance and contrast ratio,
colour-vision deficiency simulated with the matrices of Machado, Oliveira and Fernandes
(2009) at severity 1, and CIE Lab distances (Delta E 1976) under a D65 white."""

from __future__ import annotations

import numpy as np
from matplotlib.colors import to_rgb

#: Machado et al. (2009), Table 1 at severity 1.0: linear RGB -> simulated linear RGB.
MACHADO = {
    "protanopia": np.array([[0.152286, 1.052583, -0.204868],
                            [0.114503, 0.786281, 0.099216],
                            [-0.003882, -0.048116, 1.051998]]),
    "deuteranopia": np.array([[0.367322, 0.860646, -0.227968],
                              [0.280085, 0.672501, 0.047413],
                              [-0.011820, 0.042940, 0.968881]]),
    "tritanopia": np.array([[1.255528, -0.076749, -0.178779],
                            [-0.078411, 0.930809, 0.147602],
                            [0.004733, 0.691367, 0.303900]]),
}
VISIONS = ("typical", *MACHADO)
# sRGB (linear) -> CIE XYZ, D65 (IEC 61966-2-1)
_XYZ = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]])
_WHITE = _XYZ @ np.ones(3)


def linear_rgb(colour) -> np.ndarray:
    """sRGB components of ``colour`` (hex or name) decoded to linear light."""
    c = np.array(to_rgb(colour))
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def simulate(colour, vision: str) -> np.ndarray:
    """Linear RGB of ``colour`` as seen with ``vision`` ("typical" or a key of ``MACHADO``)."""
    rgb = linear_rgb(colour)
    return rgb if vision == "typical" else np.clip(MACHADO[vision] @ rgb, 0.0, 1.0)


def relative_luminance(rgb_linear: np.ndarray) -> float:
    """WCAG 2 relative luminance of a linear RGB triple (what a greyscale print keeps)."""
    return float(np.dot([0.2126, 0.7152, 0.0722], rgb_linear))


def contrast_ratio(a: np.ndarray, b: np.ndarray) -> float:
    """WCAG 2 contrast ratio (1 to 21) of two linear RGB triples."""
    hi, lo = sorted((relative_luminance(a), relative_luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def lab(rgb_linear: np.ndarray) -> np.ndarray:
    """CIE L*a*b* (D65) of a linear RGB triple."""
    t = (_XYZ @ rgb_linear) / _WHITE
    f = np.where(t > (6 / 29) ** 3, np.cbrt(t), t / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def delta_e(a: np.ndarray, b: np.ndarray) -> float:
    """CIE 1976 colour difference of two linear RGB triples (about 2.3: just noticeable)."""
    return float(np.linalg.norm(lab(a) - lab(b)))
