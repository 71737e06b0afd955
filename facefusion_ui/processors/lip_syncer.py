"""The lip syncer: wav2lip (96 px) or EDTalk (256 px) moves each selected face's mouth to ``--source-audio``.

Both read the mel window of the frame's time (``mel.py``: wav2lip's ``audio.melspectrogram``, which
EDTalk's own repository computes too; FaceFusion approximates it with a scipy STFT), as ``source``
1x1x80x16, and the face FFHQ-aligned at 512 px. ``--lip-syncer-weight`` (0..1, FaceFusion's default 0.5)
is as FaceFusion applies it: wav2lip's mel times 2 x weight (1 at the default), EDTalk's ``weight`` input.

wav2lip: ``target`` 1x6x96x96 (BGR in [0, 1]: the face's landmark box resized to 96 px with its lower
half blanked, then whole) -> 1x3x96x96 BGR in [0, 1]; it goes back into the crop and only the lower face
(``mouth_mask``) is pasted into the frame.

EDTalk (FaceFusion's ``edtalk_256``): ``target`` 1x3x256x256 RGB in [0, 1] (the 512 px crop resized with
INTER_AREA) and ``weight`` (1,) -> 1x3x256x256 RGB in [0, 1], clipped, truncated to 8 bits, resized back
to 512 px with INTER_CUBIC; the whole crop is pasted through the mask stage (box, occlusion...).

Audio shorter than the video: the frames after its end see silence (the mouth closes) and the output's
audio is padded with silence; longer: it stops at the video's end.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import cv2
import numpy as np

from facefusion_ui.errors import InputError, Remedy
from facefusion_ui.faces.alignment import estimate_matrix, paste_back, warp_face
from facefusion_ui.faces.face import Face
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.masks.stage import MaskStage
from facefusion_ui.processors.base import FrameContext, MaskedProcessor
from facefusion_ui.processors.mask_outlines import box_outline, crop_mask_outline
from facefusion_ui.processors.mel import MelWindows
from facefusion_ui.processors.mouth_mask import mouth_mask
from facefusion_ui.processors.options import ProcessorOption, resolve_options
from facefusion_ui.processors.source_audio import DecodedAudio
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Frame, LipSyncerModel, Matrix, Points, choices

CROP = 512
MODEL_SIZE = 96
EDTALK_SIZE = 256
TEMPLATE_FACE_BOX = (0.2, 0.25, 0.8, 0.93)
"""Without 68 landmarks: the face's box in the FFHQ-aligned crop (x1, y1, x2, y2 in crop sizes)."""


def face_box(landmarks: Points | None) -> tuple[float, float, float, float]:
    """The box wav2lip sees, in the aligned crop: around the 68 landmarks, or the template's face."""
    if landmarks is None:
        x1, y1, x2, y2 = TEMPLATE_FACE_BOX
        return x1 * CROP, y1 * CROP, x2 * CROP, y2 * CROP
    low, high = landmarks.min(axis=0), landmarks.max(axis=0)
    return float(low[0]), float(low[1]), float(high[0]), float(high[1])


def box_matrix(box: tuple[float, float, float, float]) -> Matrix:
    """The affine map from the crop onto the model's 96 px square."""
    x1, y1, x2, y2 = box
    sx, sy = MODEL_SIZE / max(x2 - x1, 1.0), MODEL_SIZE / max(y2 - y1, 1.0)
    return np.array([[sx, 0, -x1 * sx], [0, sy, -y1 * sy]], dtype=np.float64)


def model_input(face: Frame) -> np.ndarray:
    """wav2lip's 1x6x96x96 target: the face with its lower half blanked, then the face whole."""
    blanked = face.copy()
    blanked[MODEL_SIZE // 2 :] = 0
    stacked = np.concatenate([blanked, face], axis=2).transpose(2, 0, 1)[None]
    blob: np.ndarray = (stacked / 255.0).astype(np.float32)
    return blob


def lip_family(model: str) -> str:
    """The contract a lip sync model follows: ``edtalk`` (edtalk_256) or ``wav2lip``."""
    return "edtalk" if model.startswith("edtalk") else "wav2lip"


def edtalk_input(crop: Frame) -> np.ndarray:
    """EDTalk's 1x3x256x256 target: the 512 px crop resized (INTER_AREA), RGB in [0, 1]."""
    small = cv2.resize(crop, (EDTALK_SIZE, EDTALK_SIZE), interpolation=cv2.INTER_AREA)
    blob: np.ndarray = (small[:, :, ::-1].transpose(2, 0, 1)[None] / 255.0).astype(np.float32)
    return blob


def edtalk_face(output: np.ndarray) -> Frame:
    """EDTalk's 1x3x256x256 RGB output as a 512 px BGR crop (clipped, truncated, INTER_CUBIC), as FaceFusion."""
    face = (np.clip(np.asarray(output, np.float32)[0].transpose(1, 2, 0), 0, 1) * 255).astype(np.uint8)
    resized = cv2.resize(np.ascontiguousarray(face[:, :, ::-1]), (CROP, CROP), interpolation=cv2.INTER_CUBIC)
    return np.asarray(resized, dtype=np.uint8)


def crop_landmarks(face: Face, matrix: Matrix) -> Points | None:
    """The face's 68 landmarks in the crop ``matrix`` aligns it to (None: the face has none)."""
    if face.landmarks_68 is None:
        return None
    landmarks: Points = cv2.transform(np.asarray(face.landmarks_68, np.float32)[None], matrix)[0]
    return landmarks


class LipSyncer(MaskedProcessor):
    name = "lip_syncer"
    summary = "moves the lips to a sound track"
    needs_source_face = False
    reads_settings = ("source_audio",)
    needs_68_landmarks = True  # the mouth is cut with them (wav2lip)
    counted = ("faces_lip_synced",)
    options = (
        ProcessorOption("model", str, "wav2lip_gan_96", help="lip sync model", choices=choices(LipSyncerModel)),
        ProcessorOption("weight", float, 0.5, help="how far the mouth follows the audio", low=0.0, high=1.0),
    )

    def __init__(self, settings: Settings, runtime: ModelRuntime) -> None:
        self.settings = settings
        self.runtime = runtime
        values = resolve_options(self.name, self.options, settings.processor_options.get(self.name, {}))
        self.model = str(values["model"])
        self.weight = float(values["weight"])
        self.family = lip_family(self.model)
        self.needs_68_landmarks = self.family == "wav2lip"  # EDTalk pastes the whole crop
        self.faces_lip_synced = 0
        # the lower face is pasted through the mask stage too (occlusion, regions...); its mouth mask,
        # which keeps the target's own mouth, would undo the lip sync: left out here
        self.masks = MaskStage(settings.with_items(mouth_mask=False), runtime)
        self._audio: DecodedAudio | None = None
        self._mel: MelWindows | None = None
        self._lock = threading.Lock()

    def own_models(self) -> tuple[str, ...]:
        return (self.model,)

    def pre_check(self) -> list[str]:
        problems = super().pre_check()
        if self.settings.source_audio is None:
            raise InputError(
                "the lip syncer needs the audio to follow",
                remedy=Remedy("give --source-audio FILE", "add an audio file in the lip syncer's options"),
            )
        self.mel_windows()  # reads the audio now: a file without audio fails before any frame
        return problems

    def mel_windows(self) -> MelWindows:
        with self._lock:
            if self._mel is None:
                assert self.settings.source_audio is not None
                self._audio = DecodedAudio(Path(self.settings.source_audio))
                self._mel = MelWindows(self._audio.samples)
            return self._mel

    def release(self) -> None:
        super().release()
        with self._lock:
            if self._audio is not None:
                self._audio.close()
            self._audio, self._mel = None, None

    def changes_frame(self, faces: Sequence[Face]) -> bool:
        return bool(faces)

    def run_model(self, mel: np.ndarray, face: Frame) -> Frame:
        _, session = self.runtime.onnx_session(self.model)
        inputs = {item.name: item for item in session.get_inputs()}
        audio = (mel * (self.weight * 2.0)).astype(np.float32)[None, None]
        feeds = {"source": audio, "target": model_input(face)} if "source" in inputs else None
        if feeds is None:  # an export with other names: the 4-D mel input is the one with one channel
            names = sorted(inputs, key=lambda name: inputs[name].shape[1] != 1)
            feeds = {names[0]: audio, names[1]: model_input(face)}
        output = np.asarray(session.run(None, feeds)[0], dtype=np.float32)[0]
        face_out: Frame = np.clip(output.transpose(1, 2, 0) * 255.0 + 0.5, 0, 255).astype(np.uint8)
        return face_out

    def run_edtalk(self, mel: np.ndarray, crop: Frame) -> Frame:
        _, session = self.runtime.onnx_session(self.model)
        feeds = {
            "source": mel.astype(np.float32)[None, None],
            "target": edtalk_input(crop),
            "weight": np.array([self.weight], np.float32),
        }
        return edtalk_face(session.run(None, feeds)[0])

    def sync_face_edtalk(self, frame: Frame, face: Face, mel: np.ndarray) -> Frame:
        crop, matrix = warp_face(frame, face.kps, "ffhq_512", CROP)
        synced = self.run_edtalk(mel, np.asarray(crop, dtype=np.uint8))
        return paste_back(frame, synced, matrix, self.masks.crop_mask(frame, face, matrix, CROP))

    def sync_face(self, frame: Frame, face: Face, mel: np.ndarray) -> Frame:
        if self.family == "edtalk":
            return self.sync_face_edtalk(frame, face, mel)
        crop, matrix = warp_face(frame, face.kps, "ffhq_512", CROP)
        landmarks = crop_landmarks(face, matrix)
        to_model = box_matrix(face_box(landmarks))
        small = cv2.warpAffine(crop, to_model, (MODEL_SIZE, MODEL_SIZE), flags=cv2.INTER_AREA)
        synced = self.run_model(mel, np.asarray(small, dtype=np.uint8))
        back = cv2.warpAffine(
            synced, cv2.invertAffineTransform(to_model), (CROP, CROP), borderMode=cv2.BORDER_REPLICATE
        )
        mask = np.minimum(
            mouth_mask(CROP, landmarks, self.settings.face_mask_blur), self.masks.crop_mask(frame, face, matrix, CROP)
        )
        return paste_back(frame, np.asarray(back, dtype=np.uint8), matrix, mask)

    def mask_outline(self, face: Face) -> list[Points]:
        """The mouth mask's outline (EDTalk: the box mask's; the mask stage's other masks are not drawn)."""
        if self.family == "edtalk":
            return box_outline(face, "ffhq_512", CROP, self.settings)
        matrix = estimate_matrix(face.kps, "ffhq_512", CROP)
        return crop_mask_outline(mouth_mask(CROP, crop_landmarks(face, matrix), self.settings.face_mask_blur), matrix)

    def process_frame(self, frame: Frame, context: FrameContext) -> Frame:
        if not context.faces:
            return frame
        mel = self.mel_windows().at(context.timestamp)
        for face in context.faces:
            frame = self.sync_face(frame, face, mel)
            with self._lock:
                self.faces_lip_synced += 1
        return frame
