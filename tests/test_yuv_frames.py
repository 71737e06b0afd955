"""YUV frames: our BGR <-> YUV conversions agree with ffmpeg's, untouched pixels pass through bit for bit,
and only the area a processor changed is written back."""

from __future__ import annotations

import subprocess

import cv2
import numpy as np
import pytest

from facefusion_ui.video.ffmpeg import resolve_ffmpeg
from facefusion_ui.video.yuv import ColourMatrix, YuvFrame, changed_box, even_size, matrix_for
from tests.support import media

WIDTH, HEIGHT = 320, 240


def photo() -> np.ndarray:
    return np.ascontiguousarray(cv2.resize(media.astronaut(), (WIDTH, HEIGHT), interpolation=cv2.INTER_AREA))


def ffmpeg_convert(data: bytes, source: str, target: str, matrix: str) -> bytes:
    """Convert one raw frame with ffmpeg's swscale (accurate rounding), ``matrix`` limited range."""
    side = "out" if target == "yuv420p" else "in"
    scale = f"scale={side}_color_matrix={matrix}:{side}_range=tv"
    command = [
        resolve_ffmpeg().path,
        "-hide_banner",
        "-loglevel",
        "error",
        "-f",
        "rawvideo",
        "-pix_fmt",
        source,
        "-s",
        f"{WIDTH}x{HEIGHT}",
        "-i",
        "-",
        "-sws_flags",
        "accurate_rnd+full_chroma_int",
        "-vf",
        scale,
        "-f",
        "rawvideo",
        "-pix_fmt",
        target,
        "-",
    ]
    return subprocess.run(command, input=data, capture_output=True, check=True).stdout


@pytest.mark.parametrize("name", ["bt709", "bt601"])
def test_conversions_agree_with_ffmpeg(name: str) -> None:
    matrix, image = ColourMatrix(name), photo()
    ours = YuvFrame.from_bgr(image, matrix)
    theirs = np.frombuffer(ffmpeg_convert(image.tobytes(), "bgr24", "yuv420p", name), np.uint8)
    luma = WIDTH * HEIGHT
    assert np.abs(ours.data.reshape(-1)[:luma].astype(int) - theirs[:luma]).max() <= 1
    assert np.abs(ours.data.reshape(-1)[luma:].astype(int) - theirs[luma:]).mean() < 0.5
    back = np.frombuffer(ffmpeg_convert(ours.data.tobytes(), "yuv420p", "bgr24", name), np.uint8)
    difference = np.abs(ours.bgr().astype(int) - back.reshape(HEIGHT, WIDTH, 3))
    assert difference.mean() < 1.0  # chroma upsampling differs a little at edges only
    other = ColourMatrix("bt601" if name == "bt709" else "bt709")
    assert np.abs(YuvFrame(ours.data, WIDTH, HEIGHT, other).bgr().astype(int) - ours.bgr()).mean() > 2


def test_untagged_video_gets_the_matrix_players_assume() -> None:
    assert matrix_for("bt709", 640, 480) == "bt709" and matrix_for("smpte170m", 1920, 1080) == "bt601"
    assert matrix_for(None, 1280, 720) == "bt709" and matrix_for(None, 720, 576) == "bt601"
    assert matrix_for("bt2020nc", 3840, 2160) == "bt2020"
    assert even_size(641, 479) == (642, 480) and even_size(640, 480) == (640, 480)


def test_store_writes_back_only_the_changed_area() -> None:
    matrix = ColourMatrix("bt709")
    original = YuvFrame.from_bgr(photo(), matrix)
    frame = YuvFrame(original.data.copy(), WIDTH, HEIGHT, matrix)
    before = frame.bgr()
    after = before.copy()
    after[41:90, 101:150] = (0, 0, 255)
    assert changed_box(before, after) == (100, 40, 150, 90)  # grown to even sides for 4:2:0
    assert frame.store(after, before) is True
    y, u, _ = frame.planes()
    original_y, original_u, _ = original.planes()
    outside = np.ones_like(y, dtype=bool)
    outside[40:90, 100:150] = False
    assert np.array_equal(y[outside], original_y[outside])  # bit for bit outside the box
    assert np.array_equal(u[:20], original_u[:20])
    red = frame.bgr()[60, 120]
    assert red[2] > 230 and red[0] < 25 and red[1] < 25
    unchanged = YuvFrame(original.data.copy(), WIDTH, HEIGHT, matrix)
    assert unchanged.store(unchanged.bgr().copy(), unchanged.bgr()) is False
    assert np.array_equal(unchanged.data, original.data)


def test_the_changed_box_holds_a_change_in_any_one_channel() -> None:
    before = photo()
    for channel in range(3):
        after = before.copy()
        after[41, 101, channel] ^= 1  # top left corner, one channel
        after[89, 148, 2 - channel] ^= 1  # bottom right corner, another
        assert changed_box(before, after) == (100, 40, 150, 90)
    one = before.copy()
    one[7, WIDTH - 1, 1] ^= 255  # the last column's middle channel
    assert changed_box(before, one) == (WIDTH - 2, 6, WIDTH, 8)
    assert changed_box(before, before.copy()) is None


def reference_changed_box(before: np.ndarray, after: np.ndarray) -> tuple[int, int, int, int] | None:
    """``changed_box`` as plainly as it can be said: every differing pixel, the box grown to even sides."""
    differs = np.asarray(before != after)
    if differs.ndim == 3:
        differs = np.asarray(differs.any(axis=2))
    rows, columns = np.flatnonzero(differs.any(axis=1)), np.flatnonzero(differs.any(axis=0))
    if not len(rows):
        return None
    x0, y0, x1, y1 = int(columns[0]), int(rows[0]), int(columns[-1]) + 1, int(rows[-1]) + 1
    x0, y0, x1, y1 = x0 - x0 % 2, y0 - y0 % 2, x1 + x1 % 2, y1 + y1 % 2
    return x0, y0, min(x1, before.shape[1]), min(y1, before.shape[0])


def test_the_changed_box_found_word_by_word_is_the_plain_one() -> None:
    """The box is found comparing 4 bytes at a time, then byte by byte in the words that changed: on any
    size (rows a whole number of words or not, one to four channels, views that are not contiguous) it is
    the box of every differing pixel."""
    rng = np.random.default_rng(5)
    for _ in range(400):
        height, width = (int(value) for value in rng.integers(1, 40, 2))
        channels = int(rng.choice([1, 3, 4]))
        shape = (height, width, channels) if channels > 1 else (height, width)
        before = rng.integers(0, 256, shape, dtype=np.uint8)
        after = before.copy()
        for _ in range(int(rng.integers(0, 4))):
            at = tuple(int(rng.integers(0, side)) for side in shape)
            after[at] ^= np.uint8(rng.integers(1, 256))
        if rng.random() < 0.2:
            before, after = before[:, ::2], after[:, ::2]
        assert changed_box(before, after) == reference_changed_box(before, after)
    frame = np.ascontiguousarray(cv2.resize(photo(), (1280, 720)), dtype=np.uint8)
    swapped = frame.copy()
    swapped[203:487, 411:702] //= 2
    assert changed_box(frame, swapped) == (410, 202, 702, 488) == reference_changed_box(frame, swapped)


def test_preview_is_a_small_bgr_copy_with_its_scale() -> None:
    frame = YuvFrame.from_bgr(np.asarray(cv2.resize(photo(), (1280, 720)), dtype=np.uint8), ColourMatrix("bt709"))
    small, scale = frame.preview(640)
    assert small.shape == (360, 640, 3) and scale == 0.5
    full = cv2.resize(frame.bgr(), (640, 360), interpolation=cv2.INTER_AREA)
    assert np.abs(small.astype(int) - full).mean() < 2.0
    same, one = frame.preview(2048)
    assert one == 1.0 and same is frame.bgr()
