"""Test videos made at test time from package photos: a face that moves and scales, a cut, two people,
optional sine-tone audio, rotation metadata, odd sizes, variable frame rate."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import cv2
import numpy as np

from facefusion_ui.video.ffmpeg import resolve_ffmpeg
from tests.support import media

FrameMaker = Callable[[int], np.ndarray]


def face_crop(image: np.ndarray, box: tuple[int, int, int, int]) -> np.ndarray:
    x1, y1, x2, y2 = box
    return np.ascontiguousarray(image[y1:y2, x1:x2])


def grace_head() -> np.ndarray:
    return face_crop(media.grace_hopper(), (130, 60, 390, 360))


def t1_pair() -> tuple[np.ndarray, np.ndarray]:
    image = media.t1()
    return face_crop(image, (20, 240, 210, 430)), face_crop(image, (1080, 250, 1270, 440))


def background(width: int, height: int) -> np.ndarray:
    ramp = np.linspace(60, 140, width, dtype=np.float32)
    canvas = np.repeat(ramp[None, :, None], height, axis=0).repeat(3, axis=2)
    canvas[..., 0] += 20
    return canvas.astype(np.uint8)


def paste(canvas: np.ndarray, patch: np.ndarray, x: int, y: int) -> None:
    h, w = patch.shape[:2]
    x0, y0 = max(x, 0), max(y, 0)
    x1, y1 = min(x + w, canvas.shape[1]), min(y + h, canvas.shape[0])
    if x1 > x0 and y1 > y0:
        canvas[y0:y1, x0:x1] = patch[y0 - y : y1 - y, x0 - x : x1 - x]


def moving_face(width: int, height: int, frames: int, cut_at: int | None = None) -> FrameMaker:
    """Grace Hopper's head drifting right and growing; after ``cut_at``, two t1 people side by side."""
    head = grace_head()
    left, right = t1_pair()

    def make(index: int) -> np.ndarray:
        canvas = background(width, height)
        if cut_at is not None and index >= cut_at:
            size = int(height * 0.55)
            paste(canvas, cv2.resize(left, (size, size)), int(width * 0.05) + index % 7, int(height * 0.2))
            paste(canvas, cv2.resize(right, (size, size)), int(width * 0.52) - index % 5, int(height * 0.22))
            return canvas
        t = index / max(frames - 1, 1)
        size = int(height * (0.55 + 0.25 * t))
        patch = cv2.resize(head, (int(size * head.shape[1] / head.shape[0]), size))
        paste(canvas, patch, int((width - patch.shape[1]) * (0.2 + 0.5 * t)), int((height - size) * 0.4))
        return canvas

    return make


def blank(width: int, height: int) -> FrameMaker:
    def make(index: int) -> np.ndarray:
        canvas = background(width, height)
        cv2.circle(canvas, (20 + index * 3 % (width - 40), height // 2), 15, (0, 200, 255), -1)
        return canvas

    return make


def scenery() -> np.ndarray:
    """A large textured picture without people: scikit-image's coffee, rocket and Hubble photos side by side."""
    from skimage import data

    height = 900
    parts = [data.coffee(), data.rocket(), data.hubble_deep_field()]  # type: ignore[no-untyped-call]
    resized = [cv2.resize(part, (round(part.shape[1] * height / part.shape[0]), height)) for part in parts]
    return np.ascontiguousarray(np.hstack(resized)[:, :, ::-1])


def panning_scene(width: int, height: int, frames: int) -> FrameMaker:
    """A camera panning across ``scenery`` (real texture and motion, no face), as in a landscape shot."""
    picture = scenery()
    span_x, span_y = picture.shape[1] - width, picture.shape[0] - height
    if span_x < 0 or span_y < 0:
        picture = cv2.resize(picture, (max(width, picture.shape[1]), max(height, picture.shape[0])))
        span_x, span_y = picture.shape[1] - width, picture.shape[0] - height

    def make(index: int) -> np.ndarray:
        t = index / max(frames - 1, 1)
        x, y = round(span_x * t), round(span_y * (0.5 + 0.4 * np.sin(t * 6.28)))
        return np.ascontiguousarray(picture[y : y + height, x : x + width])

    return make


def write_video(
    path: Path,
    make: FrameMaker,
    frames: int,
    fps: Fraction = Fraction(25),
    audio: bool = False,
    rotation: int = 0,
    frame_durations: list[float] | None = None,
    codec: str = "libx264",
) -> Path:
    """Encode ``frames`` frames (from ``make``) with real ffmpeg; a sine tone when ``audio``."""
    ffmpeg = resolve_ffmpeg().path
    # like a phone: frames are stored sideways and the rotation tag (counter-clockwise) turns them upright
    stored = {0: None, 90: cv2.ROTATE_90_CLOCKWISE, 180: cv2.ROTATE_180, 270: cv2.ROTATE_90_COUNTERCLOCKWISE}[rotation]

    def frame(index: int) -> np.ndarray:
        image = make(index)
        return np.ascontiguousarray(cv2.rotate(image, stored)) if stored is not None else image

    first = frame(0)
    height, width = first.shape[:2]
    raw = path.with_suffix(".raw.mkv") if (rotation or frame_durations) else path
    # odd sizes stay odd: yuv444p allows them (yuv420p would need padding)
    pixels = "yuv444p" if width % 2 or height % 2 else "yuv420p"
    command = [
        ffmpeg,
        "-hide_banner",
        "-loglevel",
        "error",
        "-f",
        "rawvideo",
        "-pix_fmt",
        "bgr24",
        "-s",
        f"{width}x{height}",
        "-framerate",
        f"{fps.numerator}/{fps.denominator}",
        "-i",
        "-",
    ]
    if audio:
        command += ["-f", "lavfi", "-i", f"sine=frequency=440:sample_rate=44100:duration={float(frames / fps):.4f}"]
    command += ["-c:v", codec, "-crf", "12", "-pix_fmt", pixels, "-g", "12"]
    command += ["-preset", "ultrafast"] if codec == "libx264" else []
    command += (["-c:a", "aac", "-shortest"] if audio else []) + ["-y", str(raw)]
    encoder = subprocess.Popen(command, stdin=subprocess.PIPE)
    assert encoder.stdin is not None
    for index in range(frames):
        encoder.stdin.write(frame(index).tobytes())
    encoder.stdin.close()
    assert encoder.wait() == 0
    if frame_durations:
        return _retime(raw, path, frame_durations)
    if rotation:
        return _tag_rotation(ffmpeg, raw, path, rotation)
    return path


def _tag_rotation(ffmpeg: str, raw: Path, path: Path, rotation: int) -> Path:
    """Copy ``raw`` to ``path`` with a display-rotation tag (no re-encoding)."""
    subprocess.run(
        [
            *(ffmpeg, "-hide_banner", "-loglevel", "error", "-display_rotation", str(rotation)),
            *("-i", str(raw), "-c", "copy", "-y", str(path)),
        ],
        check=True,
    )
    raw.unlink()
    return path


def _retime(raw: Path, path: Path, durations: list[float]) -> Path:
    """Variable frame rate: rewrite the frame timestamps with the given per-frame durations."""
    ffmpeg = resolve_ffmpeg().path
    stamps = np.concatenate([[0.0], np.cumsum(durations)[:-1]])
    # commas inside a filter's argument are escaped for the filtergraph parser
    expression = "+".join(f"between(N\\,{i}\\,{i})*{t:.6f}" for i, t in enumerate(stamps))
    subprocess.run(
        [
            ffmpeg,
            "-hide_banner",
            "-loglevel",
            "error",
            "-i",
            str(raw),
            "-vf",
            f"setpts=({expression})/TB",
            "-fps_mode",
            "passthrough",
            "-c:v",
            "libx264",
            "-preset",
            "ultrafast",
            "-crf",
            "12",
            "-pix_fmt",
            "yuv420p",
            "-video_track_timescale",
            "1000",
            "-y",
            str(path),
        ],
        check=True,
    )
    raw.unlink()
    return path


def decode_all(path: Path, every: int = 1) -> list[np.ndarray]:
    """Every frame of a video as BGR (upright), for frame-exact comparisons; ``every``: only frames 0, N,
    2N, ... (a long clip's samples without holding all of it)."""
    from facefusion_ui.video.probe import probe_video

    info = probe_video(path)
    ffmpeg = resolve_ffmpeg().path
    sampled = ["-vf", f"select=not(mod(n\\,{every}))"] if every > 1 else []
    data = subprocess.run(
        [
            ffmpeg,
            "-hide_banner",
            "-loglevel",
            "error",
            "-sws_flags",
            "accurate_rnd+full_chroma_int",
            "-i",
            str(path),
            "-map",
            "0:v:0",
            *sampled,
            "-fps_mode",
            "passthrough",
            "-f",
            "rawvideo",
            "-pix_fmt",
            "bgr24",
            "-",
        ],
        capture_output=True,
        check=True,
    ).stdout
    size = info.width * info.height * 3
    return [
        np.frombuffer(data[i : i + size], np.uint8).reshape(info.height, info.width, 3)
        for i in range(0, len(data), size)
    ]


def talking_head(width: int, height: int, frames: int) -> FrameMaker:
    """One head with the small motion of someone talking: a few pixels of drift and a little zoom."""
    head = grace_head()

    def make(index: int) -> np.ndarray:
        canvas = background(width, height)
        size = int(height * (0.78 + 0.03 * np.sin(index / 7)))
        patch = cv2.resize(head, (int(size * head.shape[1] / head.shape[0]), size))
        x = (width - patch.shape[1]) // 2 + int(6 * np.sin(index / 5))
        y = (height - size) // 2 + int(4 * np.cos(index / 6))
        paste(canvas, patch, x, y)
        return canvas

    return make


def crossing_positions(width: int, frames: int, size: int) -> list[tuple[int, int]]:
    """x of person A (left to right) and person B (right to left) at each frame."""
    return [(int(t * (width - size)), int((1 - t) * (width - size))) for t in np.linspace(0, 1, frames)]


def crossing(width: int, height: int, frames: int) -> FrameMaker:
    """Two t1 people walking past each other, one a little higher than the other."""
    left, right = t1_pair()
    size = int(height * 0.45)
    a, b = cv2.resize(left, (size, size)), cv2.resize(right, (size, size))
    positions = crossing_positions(width, frames, size)

    def make(index: int) -> np.ndarray:
        canvas = background(width, height)
        xa, xb = positions[index]
        paste(canvas, b, xb, int(height * 0.5))
        paste(canvas, a, xa, int(height * 0.05))
        return canvas

    return make


def three_people(width: int, height: int, frames: int) -> FrameMaker:
    """Three people: two t1 people crossing (one higher than the other) on the left, Grace Hopper on the
    right who leaves for the middle third of the clip and comes back; a cut at two thirds, after which the
    background changes and the two t1 people stand still on the other sides."""
    left, right = t1_pair()
    size = int(height * 0.4)
    a, b = cv2.resize(left, (size, size)), cv2.resize(right, (size, size))
    head = grace_head()
    c = cv2.resize(head, (int(size * head.shape[1] / head.shape[0]), size))
    lane = width - c.shape[1] - 8
    cut, away = frames * 2 // 3, (frames // 3, frames // 2)
    positions = crossing_positions(lane, cut, size)

    def make(index: int) -> np.ndarray:
        if index >= cut:
            canvas = (background(width, height) * 0.6).astype(np.uint8)
            paste(canvas, b, 4, int(height * 0.1))
            paste(canvas, a, lane - size, int(height * 0.5))
        else:
            canvas = background(width, height)
            xa, xb = positions[index]
            paste(canvas, b, xb, int(height * 0.55))
            paste(canvas, a, xa, int(height * 0.02))
        if not away[0] <= index < away[1]:
            paste(canvas, c, width - c.shape[1], int(height * 0.3))
        return canvas

    return make


def three_people_who(width: int, height: int, frames: int, index: int, x: float, y: float) -> str:
    """Which person of ``three_people`` a face centred at (x, y) in frame ``index`` is: "A" and "B" (the
    two t1 people, A the higher one before the cut) or "C" (Grace Hopper), from how the clip was made."""
    if x > width - height * 0.4:
        return "C"
    if index >= frames * 2 // 3:
        return "B" if y < height * 0.45 else "A"
    return "A" if y < height * 0.45 else "B"
