"""The quality a video job encodes at: the user's ``output_video_quality`` when set (it wins, whatever the
source), else the default quality's CRF but no finer than ``CRF_BELOW_SOURCE`` steps below the CRF the
source was itself encoded with, where its encoder wrote it in the stream (x264 and x265 do, in an SEI
message; ``splice.source_crf_of``). This holds for every frame encoded: the GOPs re-encoded between
copied ones and a video encoded whole alike.

Encoding much finer than the source spends bits and time on the source's own compression noise: a 720p
x264 ``veryfast`` CRF 23 source's 6 s around a face, re-encoded at the default quality's CRF 10, took 5.1x
the source's bits and 1.5x the CPU of CRF 18, which keeps the decoded source frames at 47.9 dB PSNR
(CRF 10: 51.6 dB). The rule reads CRFs on x264's and x265's scale, so it applies to those two encoders;
the others get the default quality when none is set.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from facefusion_ui.video.commands import crf_for, trace_headers_args
from facefusion_ui.video.ffmpeg import run_tool
from facefusion_ui.video.splice import EarlyProbes, source_crf_of

DEFAULT_VIDEO_QUALITY = 80
"""The quality when none is set and the source's CRF is not known (CRF 10 on x264's scale)."""
CRF_BELOW_SOURCE = 5
"""With no quality set, frames are encoded at most this many CRF steps finer than the source."""
CRF_ENCODERS = ("libx264", "libx265")
"""The encoders whose CRF is on the scale x264 and x265 write in their streams."""
Chosen = Literal["setting", "source", "default"]


@dataclass(frozen=True)
class VideoQuality:
    """The quality (0-100) a job encodes at, the CRF that is for a CRF encoder, and what chose it."""

    quality: int
    crf: int | None
    chosen: Chosen
    source_crf: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"quality": self.quality, "crf": self.crf, "chosen_by": self.chosen, "source_crf": self.source_crf}


def planned_quality(setting: int | None) -> int:
    """The quality of a job's planned settings (``choose_quality`` set it); the default where no plan did."""
    return DEFAULT_VIDEO_QUALITY if setting is None else setting


def quality_of_crf(crf: int) -> int:
    """The highest quality whose CRF (``crf_for``) is ``crf`` (every CRF from 0 to 51 has one)."""
    return max(quality for quality in range(101) if crf_for(quality) == crf)


def choose_quality(setting: int | None, encoder: str, source_crf: float | None) -> VideoQuality:
    """The quality to encode at (module docstring): ``setting`` when set; else the default's, no finer
    than ``CRF_BELOW_SOURCE`` CRF steps below ``source_crf`` for a CRF encoder."""
    is_crf = encoder in CRF_ENCODERS
    if setting is not None:
        return VideoQuality(setting, crf_for(setting) if is_crf else None, "setting", source_crf)
    default_crf = crf_for(DEFAULT_VIDEO_QUALITY)
    if not is_crf or source_crf is None or int(source_crf) - CRF_BELOW_SOURCE <= default_crf:
        return VideoQuality(DEFAULT_VIDEO_QUALITY, default_crf if is_crf else None, "default", source_crf)
    crf = min(int(source_crf) - CRF_BELOW_SOURCE, 51)
    return VideoQuality(quality_of_crf(crf), crf, "source", source_crf)


def read_source_crf(ffmpeg: str, source: Path, early: EarlyProbes | None = None) -> float | None:
    """The CRF the source's encoder wrote in its first frame, None when it wrote none (or ffmpeg failed:
    the job then encodes at the default quality, and the decoder reports a broken file itself);
    ``early``: its first frame's headers already read (``splice.EarlyProbes``)."""
    traced = early.traced.result() if early is not None else run_tool(trace_headers_args(ffmpeg, source), 120)
    return source_crf_of(traced.stderr)
