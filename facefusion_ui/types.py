"""Literal choices and array aliases: the one source for argparse, UI dropdowns and validation."""

from __future__ import annotations

from typing import Any, Literal, get_args

import numpy as np
import numpy.typing as npt

# Arrays ---------------------------------------------------------------------------------------------
Frame = npt.NDArray[np.uint8]
"""A BGR image, shape (height, width, 3), as OpenCV reads it."""
Mask = npt.NDArray[np.float32]
Points = npt.NDArray[np.float32]
"""An (N, 2) array of x, y pixel coordinates."""
Embedding = npt.NDArray[np.float32]
Matrix = npt.NDArray[np.float64]

# Choices --------------------------------------------------------------------------------------------
BuiltinProcessorName = Literal["face_swapper", "face_enhancer"]
FaceSelectorMode = Literal["many", "one", "reference"]
ReferenceFaceFrom = Literal["frame", "source"]
FaceSelectorOrder = Literal["large-small", "small-large", "left-right", "right-left", "top-bottom", "best-worst"]
FaceDetectorModel = Literal["dlib_hog", "mediapipe_blazeface", "scrfd_2.5g", "det_10g"]
FaceLandmarkerModel = Literal["dlib_68", "dlib_5", "mediapipe_face_mesh"]
FaceRecognizerModel = Literal["dlib_resnet", "arcface_w600k_r50"]
FaceSwapperModel = Literal["mesh_warp", "inswapper_128", "inswapper_128_fp16"]
FaceEnhancerModel = Literal["gfpgan_1.4"]
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
ModelRole = Literal["detector", "landmarker", "recognizer", "swapper", "enhancer"]
DistanceMetric = Literal["cosine", "euclidean"]

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
