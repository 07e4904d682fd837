"""The figures' colours stay apart for readers with the common colour-vision deficiencies.

Each colour is passed through Machado, Oliveira and Fernandes's (2009) simulation of protanopia,
deuteranopia and tritanopia (severity 1.0, on linear RGB), and every pair of colours a figure can
draw side by side must stay at least ``MIN_DELTA_E`` apart in CIELAB (CIE76, D65): the cycle, the
roles that mark data series, and the neutral grey against the colours drawn beside it (the sweep's
boxes: its points and its mean). The grey is not a series colour: under deuteranopia it is only 9.7
from the fusion green, so a figure must not use the two for two series. matplotlib's old red and
green fail the same check, so it can fail."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from ragcourse.toolkit.figures import CYCLE, PALETTE

MACHADO = {
    "protanopia": [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216], [-0.003882, -0.048116, 1.051998]],
    "deuteranopia": [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.011820, 0.042940, 0.968881]],
    "tritanopia": [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602], [0.004733, 0.691367, 0.303900]],
    "typical vision": np.eye(3).tolist(),
}
MIN_DELTA_E = 15.0   # measured: the closest pair is 16.1 apart (tritanopia: #009E73 and #56B4E9)
SRGB_TO_XYZ = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]])
D65 = np.array([0.95047, 1.0, 1.08883])


def linear_rgb(colour: str) -> np.ndarray:
    channels = np.array([int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)])
    return np.where(channels <= 0.04045, channels / 12.92, ((channels + 0.055) / 1.055) ** 2.4)


def cielab(linear: np.ndarray) -> np.ndarray:
    xyz = SRGB_TO_XYZ @ np.clip(linear, 0.0, 1.0) / D65
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def closest_pair(colours, vision: str) -> tuple[float, str, str]:
    matrix = np.array(MACHADO[vision])
    seen = {c: cielab(matrix @ linear_rgb(c)) for c in colours}
    return min((float(np.linalg.norm(seen[a] - seen[b])), a, b) for a, b in itertools.combinations(colours, 2))


def test_the_colour_conversion_matches_published_values():
    assert np.allclose(cielab(linear_rgb("#FFFFFF")), [100.0, 0.0, 0.0], atol=0.05)
    assert np.allclose(cielab(linear_rgb("#FF0000")), [53.24, 80.09, 67.20], atol=0.1)   # sRGB red in CIELAB D65


SERIES_ROLES = sorted({colour for role, colour in PALETTE.items() if role not in ("neutral", "dark")})
BESIDE_THE_GREY = [PALETTE["neutral"], PALETTE["embedding"], PALETTE["warning"]]   # batch.sweep's figure


@pytest.mark.parametrize("vision", sorted(MACHADO))
@pytest.mark.parametrize("colours", [CYCLE, SERIES_ROLES, BESIDE_THE_GREY], ids=["cycle", "series roles", "sweep"])
def test_every_pair_stays_apart(vision, colours):
    distance, a, b = closest_pair(colours, vision)
    assert distance >= MIN_DELTA_E, f"{a} and {b} are {distance:.1f} apart under {vision}"


def test_the_check_catches_red_against_green():
    distance, _, _ = closest_pair(["#d62728", "#2ca02c"], "deuteranopia")   # matplotlib's tab:red and tab:green
    assert distance < MIN_DELTA_E
