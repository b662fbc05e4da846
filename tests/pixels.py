"""How much of an image is drawn: the check that a plot is not blank (pixels, not an <img> tag)."""
from __future__ import annotations

import io


def inked_fraction(png: bytes, *, threshold: int = 60) -> float:
    """Fraction of pixels that differ from the image's background (its most common colour)
    by more than ``threshold`` in any channel; transparent pixels count as background."""
    import numpy as np
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGBA")
    pixels = np.asarray(image).reshape(-1, 4).astype(int)
    opaque = pixels[pixels[:, 3] > 0][:, :3]
    if not len(opaque):
        return 0.0
    colours, counts = np.unique(opaque, axis=0, return_counts=True)
    background = colours[counts.argmax()]
    inked = (np.abs(opaque - background) > threshold).any(axis=1)
    return float(inked.sum()) / len(pixels)
