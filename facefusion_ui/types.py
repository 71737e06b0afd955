"""Literal choices and array aliases: the one source for argparse, UI dropdowns and validation."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, get_args

# Arrays ---------------------------------------------------------------------------------------------
# numpy is imported only when an alias is used at run time (``__getattr__`` below): the command line
# reads the choices of this module before it knows whether the command needs numpy at all.
if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Frame = npt.NDArray[np.uint8]
    """A BGR image, shape (height, width, 3), as OpenCV reads it."""
    Mask = npt.NDArray[np.float32]
    Points = npt.NDArray[np.float32]
    """An (N, 2) array of x, y pixel coordinates."""
    Embedding = npt.NDArray[np.float32]
    Matrix = npt.NDArray[np.float64]

ARRAY_ALIASES = ("Frame", "Mask", "Points", "Embedding", "Matrix")


def __getattr__(name: str) -> Any:
    """The array aliases, made on first use (PEP 562), so importing the choices does not import numpy."""
    if name not in ARRAY_ALIASES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import numpy as np
    import numpy.typing as npt

    aliases: dict[str, Any] = {
        "Frame": npt.NDArray[np.uint8],
        "Mask": npt.NDArray[np.float32],
        "Points": npt.NDArray[np.float32],
        "Embedding": npt.NDArray[np.float32],
        "Matrix": npt.NDArray[np.float64],
    }
    globals().update(aliases)
    return aliases[name]


# Choices --------------------------------------------------------------------------------------------
FaceSelectorMode = Literal["many", "one", "reference"]
ReferenceFaceFrom = Literal["frame", "source"]
FaceSelectorOrder = Literal[
    "large-small", "small-large", "left-right", "right-left", "top-bottom", "bottom-top", "best-worst", "worst-best"
]
Gender = Literal["female", "male"]
"""What the face classifier (fairface) says of a face (FaceFusion's ``types.py``, ``Gender``)."""
Race = Literal["white", "black", "latino", "asian", "indian", "arabic"]
"""FairFace's seven classes as FaceFusion reads them onto six (``face_classifier.py``, ``categorize_race``)."""
FaceSelectorGender = Literal["auto", "female", "male"]
"""Keep only faces of this gender; ``auto``: the source face's (FaceFusion's ``FaceSelectorGender``)."""
FaceSelectorRace = Literal["auto", "white", "black", "latino", "asian", "indian", "arabic"]
"""Keep only faces of this race; ``auto``: the source face's (FaceFusion's ``FaceSelectorRace``)."""
FACE_SELECTOR_AGE_RANGE = (0, 100)
"""The ages a selector's window may start and end at (FaceFusion's ``face_selector_age_range``)."""
FaceDetectorModel = Literal[
    "dlib_hog", "mediapipe_blazeface", "scrfd_2.5g", "det_10g", "retinaface_10g", "yoloface_8n", "yunet_2023_mar"
]
DETECTOR_GRID = 32
"""The ONNX detectors' coarsest stride: a side they decode exactly is a multiple of it (a convolution
network's grid at stride s is ceil(side / s) cells, which the anchors match only on such a side)."""
DETECTOR_SIZE_RANGE = (128, 2048)
FIXED_DETECTOR_SIZES: dict[str, int] = {"yoloface_8n": 640, "yunet_2023_mar": 640}
"""Detectors exported at one input size (FaceFusion offers these two at 640x640 only: its ``choices.py``,
``face_detector_set``); the others take any multiple of ``DETECTOR_GRID`` in ``DETECTOR_SIZE_RANGE``."""
FaceLandmarkerModel = Literal["dlib_68", "dlib_5", "mediapipe_face_mesh", "2dfan4"]
FaceRecognizerModel = Literal["dlib_resnet", "arcface_w600k_r50"]
FaceSwapperModel = Literal[
    "mesh_warp",
    "hyperswap_1a_256",
    "hyperswap_1b_256",
    "hyperswap_1c_256",
    "inswapper_128",
    "inswapper_128_fp16",
    "simswap_256",
    "simswap_unofficial_512",
    "ghost_1_256",
    "ghost_2_256",
    "ghost_3_256",
    "blendswap_256",
    "uniface_256",
    "hififace_unofficial_256",
]
FaceSwapperPixelBoost = Literal[128, 256, 384, 512, 768, 1024]
"""Side of the aligned crop the swapper works on, in tiles of its own size (a multiple of it)."""
FaceEnhancerModel = Literal[
    "gfpgan_1.4",
    "gfpgan_1.2",
    "gfpgan_1.3",
    "codeformer",
    "gpen_bfr_256",
    "gpen_bfr_512",
    "gpen_bfr_1024",
    "gpen_bfr_2048",
    "restoreformer_plus_plus",
]
FrameEnhancerModel = Literal[
    "real_esrgan_x2",
    "real_esrgan_x2_fp16",
    "real_esrgan_x4",
    "real_esrgan_x4_fp16",
    "real_hatgan_x4",
    "ultra_sharp_x4",
    "clear_reality_x4",
    "nomos8k_sc_x4",
    "remacri_x4",
    "siax_x4",
    "span_kendata_x4",
    "face_dat_x4",
    "real_esrgan_x8",
    "real_esrgan_x8_fp16",
    "real_web_photo_x4",
    "realistic_rescaler_x4",
    "swin2_sr_x4",
    "tghq_face_x8",
    "ultra_sharp_2_x4",
]
FrameEnhancerOutputSize = Literal["enhanced", "target"]
FrameColorizerModel = Literal["ddcolor", "ddcolor_artistic", "deoldify", "deoldify_artistic", "deoldify_stable"]
FrameColorizerSize = Literal["192x192", "256x256", "384x384", "512x512"]
"""The square the whole frame is resized to for the colorizer (FaceFusion's ``frame_colorizer_sizes``)."""
ExpressionRestorerModel = Literal["live_portrait"]
FaceEditorModel = Literal["live_portrait"]
FACE_EDITOR_CONTROLS = (
    "eyebrow_direction",
    "eye_gaze_horizontal",
    "eye_gaze_vertical",
    "eye_open_ratio",
    "lip_open_ratio",
    "mouth_grim",
    "mouth_pout",
    "mouth_purse",
    "mouth_smile",
    "mouth_position_horizontal",
    "mouth_position_vertical",
    "head_pitch",
    "head_yaw",
    "head_roll",
)
"""The face editor's sliders, each -1..1 (FaceFusion's ``face_editor_*_range``), setting ``face_editor_NAME``."""
ExpressionRestorerArea = Literal["upper-face", "lower-face"]
AgeModifierModel = Literal["fran", "styleganex_age"]
"""FaceFusion's age modifier models (``age_modifier/core.py``)."""
AGE_MODIFIER_DIRECTION_RANGE = (-100, 100)
"""Younger (negative) to older (positive), FaceFusion's ``age_modifier_direction_range``."""
BackgroundRemoverModel = Literal[
    "mediapipe_selfie_segmentation",
    "ben_2",
    "birefnet_general",
    "birefnet_portrait",
    "corridor_key_1024",
    "corridor_key_2048",
    "isnet_general",
    "modnet",
    "ormbg",
    "rmbg_1.4",
    "rmbg_2.0",
    "silueta",
    "u2net_cloth",
    "u2net_general",
    "u2net_human",
    "u2netp",
]
"""The background remover's model: ``mediapipe_selfie_segmentation`` the embedded one (no download), or
one of FaceFusion's (``background_remover/core.py``, ``create_static_model_set``)."""
LipSyncerModel = Literal["wav2lip_gan_96", "wav2lip_96", "edtalk_256"]
PresetName = Literal["lightweight", "balanced", "strict"]
TempFrameFormat = Literal["jpg", "png"]
VideoCopyMode = Literal["auto", "on", "off"]
ExecutionProvider = Literal["cuda", "tensorrt", "rocm", "directml", "coreml", "openvino", "cpu"]
JobStatus = Literal["queued", "running", "completed", "failed", "cancelled"]
Fp16Mode = Literal["on", "off", "auto"]
ReleasePolicy = Literal["after_chunk", "after_job", "never"]
FaceCacheScope = Literal["job", "chunk"]
VideoEncoder = Literal["libx264", "libx265", "libvpx-vp9", "libopenh264", "mpeg4", "h264_nvenc", "hevc_nvenc"]
VideoPreset = Literal["ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow"]
ModelRole = Literal[
    "detector",
    "landmarker",
    "recognizer",
    "swapper",
    "enhancer",
    "masker",
    "converter",
    "frame_enhancer",
    "lip_syncer",
    "debugger",
    "classifier",
    "background_remover",
    "age_modifier",
    "frame_colorizer",
    "expression_restorer",
    "face_editor",
    "deep_swapper",
]
"""What a model does; a ``classifier`` tells a face's gender, age and race; a ``converter`` maps an ArcFace
embedding into the space a swapper was trained on; a ``background_remover`` tells the person from the
background (a matte)."""
ModelVerification = Literal["sha256", "hash_sidecar", "package", "none"]
"""How a download is checked: a pinned sha256, the publisher's CRC32 ``.hash`` sidecar (its sha256 then
recorded and checked on later loads), the package it ships in, or nothing (imported files)."""
DistanceMetric = Literal["cosine", "euclidean"]
FaceMaskType = Literal["box", "occlusion", "area", "region"]
FaceMaskRegion = Literal[
    "skin",
    "left-eyebrow",
    "right-eyebrow",
    "left-eye",
    "right-eye",
    "glasses",
    "nose",
    "mouth",
    "upper-lip",
    "lower-lip",
]
FaceMaskArea = Literal["upper-face", "lower-face", "mouth"]
LiveSize = Literal["480p", "720p"]
"""Live mode's frame size (``live/commands.py``: 640x480, 1280x720)."""
FaceOccluderModel = Literal["mediapipe", "xseg_1", "xseg_2", "xseg_3"]
"""The occlusion mask's model: ``mediapipe`` the embedded one (hands, the face's own appearance, selfie
segmentation), or an XSeg model of the catalog."""
FaceParserModel = Literal["mediapipe", "bisenet_resnet_18", "bisenet_resnet_34"]
"""The region mask's model: ``mediapipe`` the regions of the embedded face mesh, or a BiSeNet face parser."""
PageGroup = Literal[
    "settings:execution",
    "settings:faces",
    "settings:output",
    "single:faces",
    "single:mask",
    "single:output",
]
"""Where the page shows a setting: a section of the Settings tab (``settings:``; the preset values have
their own), or of the Single tab (``single:``). A processor's own settings are shown beside it as the
processor declares them (``SettingsReadingProcessor.reads_settings``), not placed here."""

ONNX_PROVIDER_NAMES: dict[ExecutionProvider, str] = {
    "cuda": "CUDAExecutionProvider",
    "tensorrt": "TensorrtExecutionProvider",
    "rocm": "ROCMExecutionProvider",
    "directml": "DmlExecutionProvider",
    "coreml": "CoreMLExecutionProvider",
    "openvino": "OpenVINOExecutionProvider",
    "cpu": "CPUExecutionProvider",
}


def choices(literal: Any) -> tuple[str, ...]:
    """The allowed values of a ``Literal`` alias, in declaration order."""
    return tuple(get_args(literal))
