"""The lip syncer's audio: any file ffmpeg reads (an audio file, or a video's first audio track), decoded
once to 16 kHz mono 16-bit PCM in a temporary file and memory-mapped (32 KB a second of audio, on disk:
an hour-long track does not sit in memory); and which audio a video output carries."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np
import numpy.typing as npt

from facefusion_ui.errors import InputError
from facefusion_ui.processors.mel import SAMPLE_RATE
from facefusion_ui.state_manager import Settings
from facefusion_ui.video.ffmpeg import ffmpeg_failure, resolve_ffmpeg, run_tool

LIP_SYNCER = "lip_syncer"


def replacement_audio(settings: Settings) -> Path | None:
    """The audio a video output carries instead of the target's: the lip syncer's, when it runs."""
    if LIP_SYNCER in settings.processors and settings.source_audio:
        return Path(settings.source_audio)
    return None


def decode_args(ffmpeg: str, source: Path, output: Path) -> list[str]:
    """The first audio track of ``source`` as raw 16 kHz mono s16le in ``output``."""
    return [
        ffmpeg,
        "-hide_banner",
        "-nostdin",
        "-loglevel",
        "error",
        "-i",
        str(source),
        "-map",
        "0:a:0",
        "-vn",
        "-ac",
        "1",
        "-ar",
        str(SAMPLE_RATE),
        "-f",
        "s16le",
        "-y",
        str(output),
    ]


class DecodedAudio:
    """A decoded track; ``samples`` maps its file. ``close()`` removes the file."""

    def __init__(self, source: Path, folder: Path | None = None) -> None:
        if not source.is_file():
            raise InputError(f"the source audio {source} does not exist: give an audio or video file")
        handle, name = tempfile.mkstemp(prefix="ffui-audio-", suffix=".pcm", dir=folder)
        os.close(handle)
        self.path = Path(name)
        completed = run_tool(decode_args(resolve_ffmpeg().path, source, self.path))
        if completed.returncode != 0:
            self.path.unlink(missing_ok=True)
            if "matches no streams" in completed.stderr:
                raise InputError(f"{source} has no audio track: give a file with audio for --source-audio")
            raise ffmpeg_failure(f"cannot read the audio of {source}", completed.stderr, self.path.parent)
        size = self.path.stat().st_size // 2
        self.samples: npt.NDArray[np.int16] = (
            np.memmap(self.path, dtype=np.int16, mode="r", shape=(size,)) if size else np.zeros(0, dtype=np.int16)
        )

    @property
    def seconds(self) -> float:
        return len(self.samples) / SAMPLE_RATE

    def close(self) -> None:
        self.samples = np.zeros(0, dtype=np.int16)  # drops the map before the file goes (Windows)
        self.path.unlink(missing_ok=True)
