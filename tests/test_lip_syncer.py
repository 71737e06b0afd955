"""The lip syncer: wav2lip's mel features against an independent reference on a generated tone, the
mouth pasted back with stand-in wav2lip and EDTalk models, and a video whose audio becomes the new track."""

from __future__ import annotations

import json
import math
import wave
from pathlib import Path

import cv2
import numpy as np
import pytest

from facefusion_ui.errors import InputError
from facefusion_ui.faces.analyser import FaceAnalyser
from facefusion_ui.faces.face import Face
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.inference import SessionPool
from facefusion_ui.models import load_manifest
from facefusion_ui.processors.base import FrameContext
from facefusion_ui.processors.lip_syncer import LipSyncer, edtalk_face, edtalk_input
from facefusion_ui.processors.mel import MelWindows
from facefusion_ui.processors.source_audio import DecodedAudio
from facefusion_ui.state_manager import Settings
from facefusion_ui.video.probe import probe_video
from tests.conftest import RunCli
from tests.support import media, occluders
from tests.support.onnx_models import build_edtalk, build_wav2lip
from tests.support.videos import moving_face, write_video


def write_tone(path: Path, seconds: float, frequency: float = 440.0, rate: int = 16000) -> np.ndarray:
    times = np.arange(int(seconds * rate)) / rate
    samples = np.round(0.4 * np.sin(2 * np.pi * frequency * times) * 32767).astype(np.int16)
    with wave.open(str(path), "wb") as handle:
        handle.setnchannels(1)
        handle.setsampwidth(2)
        handle.setframerate(rate)
        handle.writeframes(samples.tobytes())
    return samples


# An independent reference: loops and the textbook formulas, no code shared with facefusion_ui.processors.mel.
def slaney_mel(hz: float) -> float:
    return hz * 3 / 200 if hz < 1000 else 15 + 27 * math.log(hz / 1000) / math.log(6.4)


def slaney_hz(mel: float) -> float:
    return mel * 200 / 3 if mel < 15 else 1000 * math.exp((mel - 15) * math.log(6.4) / 27)


def reference_filterbank() -> np.ndarray:
    points = [slaney_hz(slaney_mel(55) + i * (slaney_mel(7600) - slaney_mel(55)) / 81) for i in range(82)]
    bank = np.zeros((80, 401))
    for band in range(80):
        low, centre, high = points[band], points[band + 1], points[band + 2]
        for k in range(401):
            frequency = k * 16000 / 800
            if low < frequency < centre:
                bank[band, k] = (frequency - low) / (centre - low)
            elif centre <= frequency < high:
                bank[band, k] = (high - frequency) / (high - centre)
        bank[band] *= 2 / (high - low)
    return bank


def reference_mel(samples: np.ndarray, frames: int) -> np.ndarray:
    x = samples.astype(np.float64) / 32768
    y = np.concatenate([[x[0]], x[1:] - 0.97 * x[:-1]])
    padded = np.concatenate([y[1:401][::-1], y, np.zeros(800 * 4 + frames * 200)])
    window = np.array([0.5 - 0.5 * math.cos(2 * math.pi * n / 800) for n in range(800)])
    spectra = np.stack([np.abs(np.fft.fft(padded[m * 200 : m * 200 + 800] * window))[:401] for m in range(frames)])
    mel = reference_filterbank() @ spectra.T
    decibels = 20 * np.log10(np.maximum(1e-5, mel)) - 20
    normalised: np.ndarray = np.clip(8 * (decibels + 100) / 100 - 4, -4, 4)
    return normalised


def test_mel_windows_match_the_reference_on_a_tone(tmp_path: Path) -> None:
    samples = write_tone(tmp_path / "tone.wav", 1.5, 1000.0)
    expected = reference_mel(samples, 160)
    windows = MelWindows(samples)
    for frame, fps in ((0, 25.0), (1, 25.0), (17, 25.0), (30, 30.0)):
        start = int(frame * 80 / fps)
        np.testing.assert_allclose(windows.at(frame / fps), expected[:, start : start + 16], atol=1e-6)
    # the loudest band of a 1 kHz tone is the one centred nearest 1 kHz
    centres = [slaney_hz(slaney_mel(55) + (i + 1) * (slaney_mel(7600) - slaney_mel(55)) / 81) for i in range(80)]
    loudest = int(windows.at(0.5).mean(axis=1).argmax())
    assert abs(centres[loudest] - 1000) == min(abs(c - 1000) for c in centres)


def test_decoded_audio_matches_the_file_and_silence_follows_its_end(tmp_path: Path) -> None:
    samples = write_tone(tmp_path / "tone.wav", 1.0)
    audio = DecodedAudio(tmp_path / "tone.wav", tmp_path)
    try:
        assert np.array_equal(np.asarray(audio.samples), samples)
        windows = MelWindows(audio.samples)
        assert windows.seconds == pytest.approx(1.0)
        assert (windows.at(1.5) == -4.0).all()  # past the end: silence's features
        assert windows.at(0.5).max() > 0
    finally:
        audio.close()
    assert not audio.path.exists()


def test_a_file_without_audio_is_one_clear_error(tmp_path: Path) -> None:
    video = write_video(tmp_path / "silent.mp4", moving_face(64, 48, 3), 3)
    with pytest.raises(InputError, match="has no audio track"):
        DecodedAudio(video, tmp_path)


@pytest.fixture
def wav2lip_models(tmp_path: Path) -> Path:
    folder = tmp_path / "models"
    folder.mkdir()
    build_wav2lip(folder / "wav2lip_gan_96.onnx")
    return folder


def test_only_the_lower_face_changes(tmp_path: Path, wav2lip_models: Path, shared_runtime: ModelRuntime) -> None:
    write_tone(tmp_path / "tone.wav", 1.0)
    settings = Settings(processors=("lip_syncer",), source_audio=str(tmp_path / "tone.wav"))
    runtime = ModelRuntime(load_manifest(folder=wav2lip_models), wav2lip_models, SessionPool(("cpu",)))
    syncer = LipSyncer(settings, runtime)
    assert syncer.pre_check() == []
    frame = media.astronaut()
    face = FaceAnalyser(shared_runtime).analyse(frame, Settings(), embeddings=False)[0]
    assert face.landmarks_68 is not None
    result = syncer.process_frame(frame, FrameContext(0, 0.5, settings, [face]))
    changed = np.abs(result.astype(int) - frame.astype(int)).max(axis=2) > 8
    ys = np.nonzero(changed)[0]
    landmarks = face.landmarks_68
    assert changed.sum() > 500
    assert ys.min() >= landmarks[27:31, 1].min()  # nothing above the nose bridge
    assert ys.max() <= landmarks[:, 1].max() + 0.1 * face.height
    mouth = landmarks[48:68].mean(axis=0)
    assert changed[int(mouth[1]), int(mouth[0])]
    assert syncer.counts() == {"faces_lip_synced": 1}
    syncer.release()


def test_lip_syncer_without_audio_says_so(wav2lip_models: Path) -> None:
    runtime = ModelRuntime(load_manifest(folder=wav2lip_models), wav2lip_models, SessionPool(("cpu",)))
    with pytest.raises(InputError, match="--source-audio"):
        LipSyncer(Settings(processors=("lip_syncer",)), runtime).pre_check()


def test_video_gets_the_new_audio_padded_to_its_length(tmp_path: Path, run_cli: RunCli, wav2lip_models: Path) -> None:
    target = write_video(tmp_path / "clip.mp4", moving_face(200, 160, 25), 25, audio=True)  # 1 s, 440 Hz
    write_tone(tmp_path / "short.wav", 0.4, 2000.0)
    face = tmp_path / "face.png"
    cv2.imwrite(str(face), media.astronaut())
    output = tmp_path / "out.mp4"
    command = ["process", "-s", str(face), "-t", str(target), "-o", str(output), "--json"]
    command += ["--processors", "lip_syncer", "--source-audio", str(tmp_path / "short.wav")]
    completed = run_cli(command, env={"FACEFUSION_UI_MODELS": str(wav2lip_models)}, timeout=300)
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout)["faces_lip_synced"] > 0
    info = probe_video(output)
    assert info.has_audio and info.frame_count == 25
    pcm = DecodedAudio(output, tmp_path)
    try:
        samples = np.asarray(pcm.samples, dtype=np.float64)
        assert len(samples) / 16000 == pytest.approx(1.0, abs=0.05)  # padded to the video's length
        spectrum = np.abs(np.fft.rfft(samples[1600:4800]))
        assert abs(int(spectrum.argmax()) * 16000 / 3200 - 2000) < 50  # the new audio, not the 440 Hz one
        assert np.abs(samples[9600:]).max() < 200  # silence after its end
    finally:
        pcm.close()


def test_the_lower_face_is_pasted_through_the_mask_stage(
    tmp_path: Path, wav2lip_models: Path, shared_runtime: ModelRuntime
) -> None:
    """A cup held over the mouth stays where it is with occlusion on, as it does for the swappers."""
    write_tone(tmp_path / "tone.wav", 1.0)
    portrait = media.grace_hopper()
    face = FaceAnalyser(shared_runtime).analyse(portrait, Settings(face_landmarker_model="mediapipe_face_mesh"))[0]
    assert face.mesh is not None
    mesh = face.mesh.points
    held, cup = occluders.held_over(
        portrait, occluders.cup(), mesh[14] + (mesh[14] - mesh[168]) * 0.15, face.width * 0.7
    )
    target = FaceAnalyser(shared_runtime).analyse(held, Settings(), embeddings=False)[0]
    runtime = ModelRuntime(load_manifest(folder=wav2lip_models), wav2lip_models, SessionPool(("cpu",)))
    kept = {}
    for types in (("box",), ("box", "occlusion")):
        settings = Settings(processors=("lip_syncer",), source_audio=str(tmp_path / "tone.wav"), face_mask_types=types)
        syncer = LipSyncer(settings, runtime)
        result = syncer.process_frame(held, FrameContext(0, 0.5, settings, [target]))
        same = np.abs(result.astype(int) - held.astype(int)).max(axis=2) <= 8
        kept[types[-1]] = float(same[cup].mean())
        assert syncer.mask_counts()["faces_masked"] == 1
        syncer.release()
    assert kept["occlusion"] >= 0.9 and kept["occlusion"] > kept["box"], kept


@pytest.fixture
def edtalk_models(tmp_path: Path) -> Path:
    folder = tmp_path / "edtalk_models"
    folder.mkdir()
    build_edtalk(folder / "edtalk_256.onnx")
    return folder


def test_edtalk_input_is_rgb_nchw_at_256_and_its_output_comes_back_bgr_at_512() -> None:
    crop = np.zeros((512, 512, 3), np.uint8)
    crop[:256, :, 2] = 200  # red (BGR) in the top half
    crop[256:, :, 0] = 100  # blue in the bottom half
    blob = edtalk_input(crop)
    assert blob.shape == (1, 3, 256, 256) and blob.dtype == np.float32
    assert blob[0, 0, :128].mean() == pytest.approx(200 / 255) and blob[0, 0, 128:].max() == 0
    assert blob[0, 2, 128:].mean() == pytest.approx(100 / 255) and blob[0, 2, :128].max() == 0
    output = np.zeros((1, 3, 256, 256), np.float32)
    output[0, 0, :, :128] = 1.5  # red on the left, beyond 1: clipped
    output[0, 1, :, 128:] = 0.999  # green on the right: truncated to 254, not rounded
    face = edtalk_face(output)
    assert face.shape == (512, 512, 3) and face.dtype == np.uint8
    assert (face[:, :200, 2] == 255).all() and face[:, :200, :2].max() == 0
    assert (face[:, 312:, 1] == 254).all() and face[:, 312:, [0, 2]].max() == 0


def edtalk_run(models: Path, face_frame: np.ndarray, face: Face, audio: str, weight: float) -> np.ndarray:
    options = {"lip_syncer": {"model": "edtalk_256", "weight": weight}}
    settings = Settings(processors=("lip_syncer",), source_audio=audio, processor_options=options)
    runtime = ModelRuntime(load_manifest(folder=models), models, SessionPool(("cpu",)))
    syncer = LipSyncer(settings, runtime)
    assert syncer.pre_check() == [] and syncer.required_models()[0] == "edtalk_256"
    assert not syncer.needs_68_landmarks
    result = syncer.process_frame(face_frame, FrameContext(0, 0.5, settings, [face]))
    assert syncer.counts() == {"faces_lip_synced": 1}
    syncer.release()
    return result


def test_edtalk_paints_the_mouth_through_the_ffhq_crop_in_the_right_channel(
    tmp_path: Path, edtalk_models: Path, shared_runtime: ModelRuntime
) -> None:
    """The stand-in paints red over the 256 px crop's mouth, scaled by loudness and weight: the frame's
    mouth turns red (a wrong template, arcface_112's say, paints below it; arcface_128's mouth is where
    ffhq_512's is; a wrong channel order paints blue); silence or weight 0 paint nothing, and nothing
    changes away from the face."""
    write_tone(tmp_path / "tone.wav", 1.0)
    write_tone(tmp_path / "silence.wav", 1.0, 0.0)
    frame = media.astronaut()
    face = FaceAnalyser(shared_runtime).analyse(frame, Settings(), embeddings=False)[0]
    assert face.landmarks_68 is not None
    mouth = face.landmarks_68[48:68].mean(axis=0)
    reddened = {}
    for audio, weight in (("tone", 1.0), ("tone", 0.5), ("tone", 0.0), ("silence", 1.0)):
        result = edtalk_run(edtalk_models, frame, face, str(tmp_path / f"{audio}.wav"), weight)
        gain = result.astype(int) - frame.astype(int)
        red = (gain[:, :, 2] > 40) & (np.abs(gain[:, :, :2]).max(axis=2) < 25)
        reddened[(audio, weight)] = int(red.sum())
        if (audio, weight) == ("tone", 1.0):
            ys, xs = np.nonzero(red)
            assert abs(xs.mean() - mouth[0]) < 0.08 * face.width and abs(ys.mean() - mouth[1]) < 0.08 * face.height
            assert (gain[:, :, 0] > 40).sum() < 0.05 * red.sum()  # blue did not rise
            assert red.sum() > 100
        ys, xs = np.mgrid[: frame.shape[0], : frame.shape[1]]
        far = np.hypot(xs - face.center[0], ys - face.center[1]) > 2 * max(face.width, face.height)
        assert np.abs(gain[far]).max() == 0  # nothing away from the face
    assert reddened[("tone", 0.0)] == 0 and reddened[("silence", 1.0)] == 0
    assert reddened[("tone", 1.0)] >= reddened[("tone", 0.5)] > 0


def test_edtalk_from_the_command_line_with_its_weight(tmp_path: Path, run_cli: RunCli, edtalk_models: Path) -> None:
    write_tone(tmp_path / "tone.wav", 1.0)
    target = tmp_path / "face.png"
    cv2.imwrite(str(target), media.astronaut())
    output = tmp_path / "out.png"
    command = ["process", "-t", str(target), "-o", str(output), "--json", "--processors", "lip_syncer"]
    command += ["--source-audio", str(tmp_path / "tone.wav"), "--lip-syncer-model", "edtalk_256"]
    completed = run_cli([*command, "--lip-syncer-weight", "0.8"], env={"FACEFUSION_UI_MODELS": str(edtalk_models)})
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout)["faces_lip_synced"] == 1
    gain = np.asarray(cv2.imread(str(output)), dtype=int) - media.astronaut().astype(int)
    assert (gain[:, :, 2] > 40).sum() > 100
    wrong = run_cli([*command, "--lip-syncer-weight", "1.5"], env={"FACEFUSION_UI_MODELS": str(edtalk_models)})
    assert wrong.returncode != 0 and "Traceback" not in wrong.stderr
    assert len(wrong.stderr.strip().splitlines()) == 1, wrong.stderr
