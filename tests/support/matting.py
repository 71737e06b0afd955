"""People whose outline is known, for measuring a background remover: the skimage astronaut with a mask
drawn by hand (checked by eye on an overlay), and that person cut out along the mask and pasted onto a
freshly generated background, where the mask is then the exact truth."""

from __future__ import annotations

import cv2
import numpy as np

from tests.support import media

ASTRONAUT_BODY = [
    (190, 150), (265, 150), (300, 175), (308, 230), (335, 255), (355, 300), (368, 345), (430, 342), (480, 360),
    (505, 410), (511, 470), (511, 511), (20, 511), (18, 430), (25, 330), (45, 265), (85, 230), (115, 195), (150, 165),
]  # fmt: skip


def astronaut_person() -> np.ndarray:
    """The skimage astronaut's own mask, drawn by hand on the 512x512 photo, right to within a few pixels
    (the measures leave a band round the outline out): 255 on her (head, hair, suit), 128 on the helmet
    she holds (an object: neither person nor background, left out of the measures), 0 on the background."""
    mask = np.zeros((512, 512), np.uint8)
    cv2.ellipse(mask, (227, 85), (70, 72), 0, 0, 360, 255, -1)
    cv2.fillPoly(mask, [np.array(ASTRONAUT_BODY, np.int32)], 255)
    cv2.ellipse(mask, (395, 432), (112, 92), 0, 0, 360, HELMET, -1)
    return mask


HELMET = 128


def random_background(width: int, height: int, rng: np.random.Generator) -> np.ndarray:
    """A gradient in random colours with random soft blobs and noise (no person in it)."""
    top, bottom = rng.integers(0, 256, 3), rng.integers(0, 256, 3)
    ramp = np.linspace(0.0, 1.0, height, dtype=np.float32)[:, None, None]
    canvas = top * (1 - ramp) + bottom * ramp + np.zeros((height, width, 3), np.float32)
    for _ in range(int(rng.integers(4, 9))):
        centre = (int(rng.integers(0, width)), int(rng.integers(0, height)))
        axes = (int(rng.integers(width // 16, width // 4)), int(rng.integers(height // 16, height // 4)))
        cv2.ellipse(canvas, centre, axes, float(rng.integers(0, 180)), 0, 360, rng.integers(0, 256, 3).tolist(), -1)
    noisy = cv2.GaussianBlur(canvas, (0, 0), 3) + rng.normal(0, 6, canvas.shape)
    return np.clip(noisy, 0, 255).astype(np.uint8)


def composite(width: int, height: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The astronaut, cut along her mask, at a random size and place on a random background; and the
    truth (255 on her, 128 on the helmet she holds)."""
    side = int(height * rng.uniform(0.6, 0.9))
    person = np.asarray(cv2.resize(media.astronaut(), (side, side)), dtype=np.uint8)
    mask = np.asarray(cv2.resize(astronaut_person(), (side, side), interpolation=cv2.INTER_NEAREST), dtype=np.uint8)
    x, y = int(rng.integers(0, width - side + 1)), height - side  # standing on the frame's bottom edge
    frame, truth = random_background(width, height, rng), np.zeros((height, width), np.uint8)
    region = frame[y : y + side, x : x + side]
    region[mask > 0] = person[mask > 0]
    truth[y : y + side, x : x + side] = mask
    return frame, truth


def scores(alpha: np.ndarray, truth: np.ndarray, band: int) -> dict[str, float]:
    """Shares of the person's pixels (255 in ``truth``) that are opaque and of the background's (0) that
    are transparent, at alpha 0.5 and at 0.9 / 0.1, leaving out ``band`` pixels each side of the
    outlines (and what is neither, such as the helmet)."""
    disc = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * band + 1, 2 * band + 1))
    person = np.where(truth == 255, 255, 0).astype(np.uint8)
    inside, outside = cv2.erode(person, disc) > 0, cv2.dilate(truth, disc) == 0
    level = alpha.astype(np.float32) / 255.0
    return {
        "person_opaque": float((level[inside] >= 0.5).mean()),
        "background_clear": float((level[outside] < 0.5).mean()),
        "person_opaque_90": float((level[inside] >= 0.9).mean()),
        "background_clear_10": float((level[outside] <= 0.1).mean()),
    }
