"""The job's files: their kind by suffix, the checks made before any work, and atomic image writes."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

import cv2
import numpy as np

from facefusion_ui.errors import InputError, disk_full_named
from facefusion_ui.types import Frame

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp", ".bmp")
VIDEO_SUFFIXES = (".mp4", ".mov", ".mkv", ".avi", ".webm", ".m4v")


def media_kind(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix in IMAGE_SUFFIXES:
        return "image"
    if suffix in VIDEO_SUFFIXES:
        return "video"
    raise InputError(
        f"{path} is neither an image ({', '.join(IMAGE_SUFFIXES)}) nor a video ({', '.join(VIDEO_SUFFIXES)})",
        paths=(path,),
    )


def file_problem(path: Path) -> str | None:
    """Why ``path`` cannot be read as a media file, or None when it is a regular file."""
    if path.is_dir():
        return "is a folder, not a file"
    if path.exists() and not path.is_file():
        return "is not a regular file (a pipe or a device)"
    if not path.exists():
        return "does not exist"
    return None


def same_file(first: Path, second: Path) -> bool:
    """Whether two paths name one file: the same resolved path (through symlinks), or one file under two
    names (a hard link)."""
    if first.resolve() == second.resolve():
        return True
    try:
        return os.path.samefile(first, second)
    except OSError:  # one of them does not exist
        return False


def check_paths(sources: Sequence[Path], target: Path, output: Path, source_needed: bool = True) -> str:
    """Validate the job's files before any work; returns the target's kind. ``source_needed``: whether the
    job's processors need a source photo (``pipeline.source_face_needed``)."""
    if not sources and source_needed:
        raise InputError("no source image given: add -s PHOTO with the face to put in")
    for source in sources:
        if media_kind(source) != "image":
            raise InputError(f"source {source} is a video: the source must be a photo of the face", paths=(source,))
        problem = file_problem(source)
        if problem is not None:
            raise InputError(f"source {source} {problem}: check the path", paths=(source,))
    problem = file_problem(target)
    if problem is not None:
        raise InputError(f"target {target} {problem}: check the path", paths=(target,))
    kind = media_kind(target)
    if output.is_dir():
        raise InputError(
            f"output {output} is a folder: give a file name inside it, e.g. {output / target.name}", paths=(output,)
        )
    if media_kind(output) != kind:
        raise InputError(
            f"output {output} must be {'an image' if kind == 'image' else 'a video'} like the target", paths=(output,)
        )
    if same_file(output, target):
        raise InputError(f"output {output} is the target itself: choose another output path", paths=(output,))
    for source in sources:
        if same_file(output, source):
            raise InputError(
                f"output {output} is the source photo {source} itself: choose another output path",
                paths=(output, source),
            )
    folder = output.parent if str(output.parent) else Path(".")
    if not folder.is_dir():
        raise InputError(f"output folder {folder} does not exist: create it or choose another -o")
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".facefusion_ui-write-test-"):
            pass
    except OSError as error:
        raise InputError(f"cannot write to output folder {folder} ({error.strerror}): choose another -o") from error
    return kind


ALPHA_SUFFIXES = (".png", ".webp")
"""Image outputs that keep an alpha channel (a background remover's transparency)."""


def keeps_alpha(path: Path) -> bool:
    return path.suffix.lower() in ALPHA_SUFFIXES


def write_image(path: Path, image: Frame, quality: int) -> None:
    """Encode by the file's suffix and write atomically (temp + rename): no half-written output. A BGRA
    ``image`` keeps its alpha in a PNG or WebP."""
    suffix = path.suffix.lower()
    params: list[int] = []
    if suffix in (".jpg", ".jpeg"):
        params = [cv2.IMWRITE_JPEG_QUALITY, quality]
    elif suffix == ".webp":
        params = [cv2.IMWRITE_WEBP_QUALITY, max(quality, 1)]
    elif suffix == ".png":
        params = [cv2.IMWRITE_PNG_COMPRESSION, 3]
    ok, data = cv2.imencode(suffix, image, params)
    if not ok:
        raise InputError(f"cannot encode {path.name}: choose a .jpg or .png output")
    temporary = path.with_name(f".{path.name}.part")
    try:
        with disk_full_named(path.parent):
            temporary.write_bytes(np.asarray(data).tobytes())
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
