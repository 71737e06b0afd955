"""Tiny clips for the streaming tests, every frame different, and their frames as raw I420 for bit-exact checks."""

from __future__ import annotations

import subprocess
from pathlib import Path

import cv2
import numpy as np

from facefusion_ui.video.commands import decode_args
from facefusion_ui.video.ffmpeg import resolve_ffmpeg
from tests.support import videos

WIDTH, HEIGHT = 64, 48


def distinct_frame(index: int) -> np.ndarray:
    """A ramp a little brighter each frame and a square that moves: no two frames alike."""
    canvas = np.clip(videos.background(WIDTH, HEIGHT).astype(np.int16) + 3 * index, 0, 255).astype(np.uint8)
    x = 4 + (index * 5) % (WIDTH - 16)
    cv2.rectangle(canvas, (x, 30), (x + 10, 40), (0, 0, 255 - 4 * index), -1)
    return canvas


def write_clip(path: Path, frames: int) -> Path:
    return videos.write_video(path, distinct_frame, frames)


def decode_yuv(path: Path, width: int = WIDTH, height: int = HEIGHT) -> list[np.ndarray]:
    """Every frame of ``path`` as the pipeline's decoder gives it (I420, shape (height * 3 / 2, width))."""
    command = decode_args(resolve_ffmpeg().path, path, 0.0, 1_000_000, "")
    data = subprocess.run(command, capture_output=True, check=True, timeout=120).stdout
    size = width * height * 3 // 2
    return [
        np.frombuffer(data[i : i + size], np.uint8).reshape(height * 3 // 2, width) for i in range(0, len(data), size)
    ]
