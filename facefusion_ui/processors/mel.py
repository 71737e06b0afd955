"""The mel spectrogram wav2lip was trained on, one video frame's window at a time.

wav2lip's ``audio.melspectrogram``: 16 kHz mono, pre-emphasis 0.97, a centred STFT (800-sample periodic
Hann window, hop 200: 80 mel frames a second), magnitudes through 80 Slaney mel bands (55-7600 Hz,
area-normalised), 20 * log10 (floor 1e-5) less 20 dB, then mapped from [-100, 0] dB onto [-4, 4] and
clipped. A video frame at time t reads the 16 mel frames from ``int(80 t)``.

Only the samples of the window asked for are read (the signal may be a memory-mapped file of any
length). Before the first sample the signal is mirrored, as the centred STFT does; after the last one it
is silence, so frames past the end of the audio get silence's features (a closed mouth).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

SAMPLE_RATE = 16000
N_FFT = 800
HOP = 200
MEL_BANDS = 80
F_MIN = 55.0
F_MAX = 7600.0
PREEMPHASIS = 0.97
MEL_STEP = 16
"""Mel frames in one window (wav2lip's ``mel_step_size``): 0.2 s of audio."""
MEL_PER_SECOND = SAMPLE_RATE / HOP
REF_LEVEL_DB = 20.0
MIN_LEVEL_DB = -100.0
MAX_ABS_VALUE = 4.0

Floats = npt.NDArray[np.float64]

# Slaney's mel scale (librosa's default): linear below 1 kHz, logarithmic above.
_LINEAR_STEP = 200.0 / 3
_BREAK_HZ = 1000.0
_BREAK_MEL = _BREAK_HZ / _LINEAR_STEP
_LOG_STEP = np.log(6.4) / 27.0


def hz_to_mel(hz: Floats) -> Floats:
    hz = np.asarray(hz, dtype=np.float64)
    mel = hz / _LINEAR_STEP
    above = hz >= _BREAK_HZ
    mel[above] = _BREAK_MEL + np.log(hz[above] / _BREAK_HZ) / _LOG_STEP
    return mel


def mel_to_hz(mel: Floats) -> Floats:
    mel = np.asarray(mel, dtype=np.float64)
    hz = mel * _LINEAR_STEP
    above = mel >= _BREAK_MEL
    hz[above] = _BREAK_HZ * np.exp(_LOG_STEP * (mel[above] - _BREAK_MEL))
    return hz


def mel_filterbank() -> Floats:
    """(80, 401): triangles evenly spaced in mels, each scaled to unit area in Hz (``norm='slaney'``)."""
    bins = np.linspace(0, SAMPLE_RATE / 2, N_FFT // 2 + 1)
    edges = mel_to_hz(np.linspace(hz_to_mel(np.array([F_MIN]))[0], hz_to_mel(np.array([F_MAX]))[0], MEL_BANDS + 2))
    widths = np.diff(edges)
    offsets = edges[:, None] - bins[None, :]
    rising = -offsets[:-2] / widths[:-1, None]
    falling = offsets[2:] / widths[1:, None]
    bank = np.maximum(0.0, np.minimum(rising, falling))
    bank *= (2.0 / (edges[2:] - edges[:-2]))[:, None]
    return bank


def periodic_hann(length: int) -> Floats:
    return 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(length) / length)


def preemphasised(samples: npt.NDArray[np.generic], start: int, stop: int) -> Floats:
    """y[start:stop] of y[n] = x[n] - 0.97 x[n - 1] (y[0] = x[0]), mirrored before 0, silence after the end.
    ``samples``: int16 PCM or floats in [-1, 1]."""
    scale = 1.0 / 32768 if np.issubdtype(samples.dtype, np.integer) else 1.0
    index = np.abs(np.arange(start, stop))

    def read(positions: npt.NDArray[np.int64]) -> Floats:
        inside = (positions >= 0) & (positions < len(samples))
        values = np.zeros(len(positions), dtype=np.float64)
        values[inside] = np.asarray(samples[positions[inside]], dtype=np.float64) * scale
        return values

    return read(index) - PREEMPHASIS * read(index - 1)


class MelWindows:
    """wav2lip's mel windows of one signal (16 kHz mono), computed on demand."""

    def __init__(self, samples: npt.NDArray[np.generic]) -> None:
        self.samples = samples
        self.bank = mel_filterbank()
        self.window = periodic_hann(N_FFT)

    @property
    def seconds(self) -> float:
        return len(self.samples) / SAMPLE_RATE

    def frames(self, first: int, count: int) -> Floats:
        """Mel frames ``first``..``first + count`` as (80, count), normalised to [-4, 4]."""
        start = first * HOP - N_FFT // 2
        signal = preemphasised(self.samples, start, start + (count - 1) * HOP + N_FFT)
        strided = np.lib.stride_tricks.sliding_window_view(signal, N_FFT)[::HOP][:count]
        magnitude = np.abs(np.fft.rfft(strided * self.window, axis=1))
        mel = self.bank @ magnitude.T
        decibels = 20 * np.log10(np.maximum(1e-5, mel)) - REF_LEVEL_DB
        scaled = 2 * MAX_ABS_VALUE * (decibels - MIN_LEVEL_DB) / -MIN_LEVEL_DB - MAX_ABS_VALUE
        clipped: Floats = np.clip(scaled, -MAX_ABS_VALUE, MAX_ABS_VALUE)
        return clipped

    def at(self, seconds: float) -> Floats:
        """The (80, 16) window of a video frame at ``seconds`` (wav2lip: mel frames from int(80 t))."""
        return self.frames(int(np.floor(seconds * MEL_PER_SECOND + 1e-6)), MEL_STEP)
