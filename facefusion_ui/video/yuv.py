"""Video frames as the decoder gives them and the encoder takes them: 8-bit 4:2:0 planes (I420, limited
range).

Frames stay YUV from decoder to encoder, so a frame that no processor touches (no face in view) is
written back bit for bit and costs no colour conversion. BGR is made only when a stage asks for it, with
the matrix the video declares (or, when it declares none, the one players assume for its size), and the
area a processor changed is converted back with the same matrix; the output is tagged with it.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor, Future, wait
from dataclasses import dataclass
from functools import cached_property

import cv2
import numpy as np

from facefusion_ui.faces.detection import fit_within
from facefusion_ui.types import Frame

KR_KB = {"bt709": (0.2126, 0.0722), "bt601": (0.299, 0.114), "bt2020": (0.2627, 0.0593)}
"""Luma coefficients of red and blue per matrix family."""
MATRIX_OF_TAG = {
    "bt709": "bt709",
    "smpte170m": "bt601",
    "bt470bg": "bt601",
    "bt601": "bt601",
    "bt2020nc": "bt2020",
    "bt2020c": "bt2020",
}
"""ffmpeg's colour space names (as ``ffmpeg -i`` and ffprobe print them) onto the matrices we convert with."""
TAGS_OF_MATRIX = {
    "bt709": ["-colorspace", "bt709", "-color_primaries", "bt709", "-color_trc", "bt709"],
    "bt601": ["-colorspace", "smpte170m", "-color_primaries", "smpte170m", "-color_trc", "smpte170m"],
    "bt2020": ["-colorspace", "bt2020nc"],
}


def matrix_for(colour_space: str | None, width: int, height: int) -> str:
    """The declared matrix, or for an untagged video the one players assume: BT.709 from HD up, else BT.601."""
    if colour_space in MATRIX_OF_TAG:
        return MATRIX_OF_TAG[colour_space]
    return "bt709" if width >= 1280 or height > 576 else "bt601"


@dataclass(frozen=True)
class ColourMatrix:
    """BGR <-> limited-range YCbCr with one matrix, as 3x4 affine transforms for ``cv2.transform``."""

    name: str

    @cached_property
    def to_yuv(self) -> np.ndarray:
        kr, kb = KR_KB[self.name]
        kg = 1.0 - kr - kb
        luma, chroma = 219.0 / 255.0, 224.0 / 255.0
        # columns: B, G, R, constant
        y = [kb * luma, kg * luma, kr * luma, 16.0]
        cb = [x * chroma / (2 * (1 - kb)) for x in (1 - kb, -kg, -kr)] + [128.0]
        cr = [x * chroma / (2 * (1 - kr)) for x in (-kb, -kg, 1 - kr)] + [128.0]
        return np.array([y, cb, cr], dtype=np.float64)

    @cached_property
    def to_bgr(self) -> np.ndarray:
        forward = self.to_yuv
        inverse = np.linalg.inv(forward[:, :3])
        return np.hstack([inverse, (-inverse @ forward[:, 3])[:, None]])

    def output_tags(self) -> list[str]:
        return [*TAGS_OF_MATRIX[self.name], "-color_range", "tv"]


def frame_bytes(width: int, height: int) -> int:
    return width * height * 3 // 2


def even_size(width: int, height: int) -> tuple[int, int]:
    """4:2:0 needs even sides: odd ones are padded by one pixel (see ``commands.decode_args``)."""
    return width + width % 2, height + height % 2


def planes(data: np.ndarray, width: int, height: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Views of the Y, U and V planes of an I420 buffer of shape (height * 3 / 2, width)."""
    flat = data.reshape(-1)
    quarter = (width // 2) * (height // 2)
    y = flat[: width * height].reshape(height, width)
    u = flat[width * height : width * height + quarter].reshape(height // 2, width // 2)
    v = flat[width * height + quarter :].reshape(height // 2, width // 2)
    return y, u, v


def yuv_to_bgr(y: np.ndarray, u: np.ndarray, v: np.ndarray, matrix: ColourMatrix) -> Frame:
    """BGR at the size of ``y`` (the chroma planes are scaled up or down to it)."""
    size = (y.shape[1], y.shape[0])
    if u.shape != y.shape:
        u = cv2.resize(u, size, interpolation=cv2.INTER_LINEAR)
        v = cv2.resize(v, size, interpolation=cv2.INTER_LINEAR)
    return np.asarray(cv2.transform(cv2.merge([y, u, v]), matrix.to_bgr), dtype=np.uint8)


def region_to_bgr(
    y: np.ndarray, u: np.ndarray, v: np.ndarray, region: tuple[int, int, int, int], matrix: ColourMatrix
) -> Frame:
    """``yuv_to_bgr`` of the whole planes, cut to ``region`` (x1, y1, x2, y2, even), made from that region
    alone. The chroma is read with a sample beyond each side the frame has there: scaled up to twice its
    size, a sample's neighbours decide the pixels at its edge, as they do in the whole frame."""
    x1, y1, x2, y2 = region
    cx1, cy1 = max(x1 // 2 - 1, 0), max(y1 // 2 - 1, 0)
    cx2, cy2 = min(x2 // 2 + 1, u.shape[1]), min(y2 // 2 + 1, u.shape[0])
    size = (2 * (cx2 - cx1), 2 * (cy2 - cy1))
    up_u = cv2.resize(u[cy1:cy2, cx1:cx2], size, interpolation=cv2.INTER_LINEAR)
    up_v = cv2.resize(v[cy1:cy2, cx1:cx2], size, interpolation=cv2.INTER_LINEAR)
    left, top = x1 - 2 * cx1, y1 - 2 * cy1
    cut = (slice(top, top + y2 - y1), slice(left, left + x2 - x1))
    return np.asarray(cv2.transform(cv2.merge([y[y1:y2, x1:x2], up_u[cut], up_v[cut]]), matrix.to_bgr), dtype=np.uint8)


def bgr_to_planes(bgr: Frame, matrix: ColourMatrix) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Y at full size and U, V at half size (2x2 averages) of an even-sized BGR image."""
    height, width = bgr.shape[:2]
    y, u, v = cv2.split(cv2.transform(bgr, matrix.to_yuv))
    half = (width // 2, height // 2)
    return y, cv2.resize(u, half, interpolation=cv2.INTER_AREA), cv2.resize(v, half, interpolation=cv2.INTER_AREA)


WORD = 4
"""Bytes compared at a time by ``changed_words`` (as 32-bit integers)."""


def changed_words(before: Frame, after: Frame) -> tuple[int, int, int, int] | None:
    """Where ``before`` and ``after`` (same shape, uint8, C-contiguous, rows a whole number of ``WORD``
    bytes) differ, to the word: (first row, row after the last, first byte column, byte column after the
    last), None when they do not. A swapped face changes a tenth of a frame: comparing 4 bytes at a time
    finds it in a fraction of the time a whole frame's difference image and its bounding box took."""
    height = before.shape[0]
    differs = cv2.compare(
        before.reshape(height, -1).view(np.int32), after.reshape(height, -1).view(np.int32), cv2.CMP_NE
    )
    x, y, w, h = cv2.boundingRect(differs)
    if w == 0 or h == 0:
        return None
    return y, y + h, x * WORD, (x + w) * WORD


def changed_box(before: Frame, after: Frame) -> tuple[int, int, int, int] | None:
    """The smallest box (x0, y0, x1, y1), grown to even coordinates, holding every changed pixel."""
    channels = before.shape[2] if before.ndim == 3 else 1
    row_bytes = before.shape[1] * channels
    alike = before.shape == after.shape and before.dtype == after.dtype == np.uint8
    words = alike and before.flags.c_contiguous and after.flags.c_contiguous and row_bytes % WORD == 0
    # only the rows and words that changed are compared byte by byte (whole frames when that cannot be)
    band = changed_words(before, after) if words else (0, before.shape[0], 0, row_bytes)
    if band is None:
        return None
    top, bottom, left, right = band
    difference = cv2.absdiff(
        before.reshape(before.shape[0], -1)[top:bottom, left:right],
        after.reshape(after.shape[0], -1)[top:bottom, left:right],
    )
    # the channels side by side in one plane (a pixel's columns x * channels ...): no per-channel copies
    x, y, w, h = cv2.boundingRect(difference)
    if w == 0 or h == 0:
        return None
    x, y = x + left, y + top
    x, w = x // channels, -(-(x + w) // channels) - x // channels
    x0, y0 = x - x % 2, y - y % 2
    x1, y1 = x + w + (x + w) % 2, y + h + (y + h) % 2
    return x0, y0, min(x1, before.shape[1]), min(y1, before.shape[0])


class YuvFrame:
    """One decoded frame; ``bgr()`` converts once on demand (or takes the conversion ``convert_on`` started
    on a helper thread), ``store()`` writes a processed frame back."""

    def __init__(self, data: np.ndarray, width: int, height: int, matrix: ColourMatrix) -> None:
        self.data = data
        self._width = width
        self._height = height
        self.matrix = matrix
        self._bgr: Frame | None = None
        self._converting: Future[Frame] | None = None
        self.after_bgr: Callable[[], None] | None = None
        """Called once, the first time ``bgr()`` is asked (the video pipeline: convert the next frame ahead)."""

    @classmethod
    def from_bgr(cls, bgr: Frame, matrix: ColourMatrix) -> YuvFrame:
        height, width = bgr.shape[:2]
        data = np.empty((height * 3 // 2, width), dtype=np.uint8)
        frame = cls(data, width, height, matrix)
        y, u, v = planes(data, width, height)
        y[:], u[:], v[:] = bgr_to_planes(bgr, matrix)
        return frame

    @property
    def width(self) -> int:
        return self._width

    @property
    def height(self) -> int:
        return self._height

    def planes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return planes(self.data, self._width, self._height)

    def bgr(self) -> Frame:
        if self._bgr is None:
            converting, self._converting = self._converting, None
            self._bgr = converting.result() if converting is not None else self._convert()
            after, self.after_bgr = self.after_bgr, None
            if after is not None:
                after()
        return self._bgr

    def _convert(self) -> Frame:
        return yuv_to_bgr(*self.planes(), self.matrix)

    def bgr_region(self, region: tuple[int, int, int, int]) -> Frame:
        """The BGR pixels of ``region`` (x1, y1, x2, y2, even), the same as that slice of ``bgr()``: the
        chroma is scaled up with a sample to spare on each side, as the whole frame's is, then cut."""
        if self._bgr is not None:
            x1, y1, x2, y2 = region
            return np.array(self._bgr[y1:y2, x1:x2])
        return region_to_bgr(*self.planes(), region, self.matrix)

    def convert_on(self, executor: Executor) -> None:
        """Start the BGR conversion on ``executor`` now; ``bgr()`` takes it (waiting for it if it runs, its
        error raised there). The same pixels as converting on demand. Call from the thread that asks ``bgr()``."""
        if self._bgr is None and self._converting is None:
            self._converting = executor.submit(self._convert)

    def forget_bgr(self) -> None:
        """Drop the BGR copy (twice the frame's size) while the frame waits in a queue; made again on demand.
        A conversion still running on a helper thread is waited for (and its result dropped)."""
        self.after_bgr = None
        converting, self._converting = self._converting, None
        if converting is not None and not converting.cancel():
            wait([converting])
        self._bgr = None

    def preview(self, max_side: int) -> tuple[Frame, float]:
        scale = min(1.0, max_side / float(max(self._width, self._height)))
        if scale >= 1.0:
            return self.bgr(), 1.0
        size = (max(2, round(self._width * scale)), max(2, round(self._height * scale)))
        y, u, v = self.planes()
        small_y = cv2.resize(y, size, interpolation=cv2.INTER_AREA)
        interpolation = cv2.INTER_AREA if size[0] <= u.shape[1] else cv2.INTER_LINEAR
        small_u = u if u.shape[::-1] == size else cv2.resize(u, size, interpolation=interpolation)
        small_v = v if v.shape[::-1] == size else cv2.resize(v, size, interpolation=interpolation)
        return yuv_to_bgr(small_y, small_u, small_v, self.matrix), size[0] / self._width

    def resized_bgr(self, width: int, height: int) -> Frame:
        """Each plane scaled bilinearly to ``width`` x ``height``, then converted: the whole frame is not."""
        y, u, v = (cv2.resize(plane, (width, height), interpolation=cv2.INTER_LINEAR) for plane in self.planes())
        return yuv_to_bgr(y, u, v, self.matrix)

    def luma(self, max_side: int) -> tuple[Frame, float]:
        """The Y plane, scaled down to fit ``max_side`` (no colour conversion at all)."""
        return fit_within(self.planes()[0], max_side)

    def store(self, result: Frame, before: Frame, origin: tuple[int, int] = (0, 0)) -> bool:
        """Write the pixels of ``result`` that differ from ``before`` (the frame given to the processors, or
        the crop of it whose top left corner is ``origin``, even); pixels outside the changed box stay
        exactly as decoded. Whether any pixel differed."""
        box = changed_box(before, result)
        if box is None:
            return False
        left, top = origin
        x0, y0, x1, y1 = box
        result = result[y0:y1, x0:x1]
        x0, y0, x1, y1 = x0 + left, y0 + top, x1 + left, y1 + top
        y, u, v = self.planes()
        new_y, new_u, new_v = bgr_to_planes(np.ascontiguousarray(result), self.matrix)
        y[y0:y1, x0:x1] = new_y
        u[y0 // 2 : y1 // 2, x0 // 2 : x1 // 2] = new_u
        v[y0 // 2 : y1 // 2, x0 // 2 : x1 // 2] = new_v
        self._bgr = None
        return True
