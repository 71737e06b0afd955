"""mediapipe's face mesh, two ways over one landmark model: *found* in a crop (mediapipe's own face
detector first, for a face seen for the first time) or *read* in a region we give it (the landmark model
alone, for a face whose mesh is known from the frame before, as mediapipe's own video mode does: no
detector, a third less time per face, and a region turned with the head).

One ``MeshModel`` per landmark model (plain 468 points, or with attention: 478 with the irises); like
every mediapipe graph it is not thread-safe, so it is used inside ``ModelRuntime.using``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

MESH_INPUT_SIZE = 192
"""The side of the image both face landmark models read (``face_landmark*.tflite``)."""

READER_GRAPH = """
input_stream: "image"
input_stream: "roi"
input_side_packet: "with_attention"
output_stream: "face_landmarks"
executor { type: "ApplicationThreadExecutor" }
node {
  calculator: "FaceLandmarkCpu"
  input_stream: "IMAGE:image"
  input_stream: "ROI:roi"
  input_side_packet: "WITH_ATTENTION:with_attention"
  output_stream: "LANDMARKS:face_landmarks"
}
"""
"""mediapipe's landmark subgraph alone: the region in, the landmarks out (none when the model's own
face-presence score is under its threshold, 0.5). It runs on the thread that reads (its application
thread), not handed to a pool of mediapipe's own and waited for: the same landmarks, without two thread
switches per read beside the frame workers on busy cores."""
READ_TIMESTAMP_STEP = 33333
"""The reader's input timestamps go up by this (microseconds), as ``SolutionBase.process`` counts them."""

FINDER_DETECTION_SCORE = 0.3
PACKED_SIZE = 17
"""Bytes of a ``NormalizedLandmark`` with x, y and z alone, as protobuf writes it in a ``NormalizedLandmarkList``."""
PACKED_MARKS = ((0, 1, 2, 7, 12), (0x0A, 0x0F, 0x0D, 0x15, 0x1D))
"""Where in those bytes (offsets) and what: the field's tag and length (0x0a 0x0f), then each little-endian
float's tag (x 0x0d, y 0x15, z 0x1d), each float in the 4 bytes after its tag."""


def landmarks_of_bytes(data: bytes) -> np.ndarray:
    """The (n, 3) float32 x, y, z of a serialized ``NormalizedLandmarkList``: read straight from the bytes
    when every landmark has x, y and z alone (mediapipe's face mesh: a tenth of the time of parsing the
    message and reading 468 landmarks one by one in Python), else parsed. The same numbers either way."""
    if data and len(data) % PACKED_SIZE == 0:
        rows = np.frombuffer(data, dtype=np.uint8).reshape(-1, PACKED_SIZE)
        offsets, marks = PACKED_MARKS
        if (rows[:, offsets] == np.array(marks, dtype=np.uint8)).all():
            floats = np.ndarray((len(rows), 3), dtype="<f4", buffer=data, offset=3, strides=(PACKED_SIZE, 5))
            return np.array(floats, dtype=np.float32)
    from mediapipe.framework.formats import landmark_pb2

    message = landmark_pb2.NormalizedLandmarkList.FromString(data)
    return np.array([[p.x, p.y, p.z] for p in message.landmark], dtype=np.float32).reshape(-1, 3)


def landmark_array(landmarks: Any) -> np.ndarray:
    """The (n, 3) float32 x, y, z of a ``NormalizedLandmarkList`` message (``landmarks_of_bytes``)."""
    return landmarks_of_bytes(landmarks.SerializeToString())


class MeshModel:
    """The finder (``process``: mediapipe's static-image FaceMesh on an RGB crop, its detector first) and
    the reader (``read``: the landmark model on an RGB image that is the region itself, upright,
    ``MESH_INPUT_SIZE`` square) of one landmark model."""

    def __init__(self, with_attention: bool) -> None:
        from facefusion_ui.faces.mediapipe_import import import_mediapipe

        import_mediapipe()
        from mediapipe.framework.formats import rect_pb2
        from mediapipe.python.solution_base import SolutionBase
        from mediapipe.python.solutions import face_mesh

        self.finder = face_mesh.FaceMesh(
            static_image_mode=True,
            max_num_faces=1,
            min_detection_confidence=FINDER_DETECTION_SCORE,
            refine_landmarks=with_attention,
        )
        self.reader = SolutionBase(
            graph_config=READER_GRAPH, side_inputs={"with_attention": with_attention}, outputs=["face_landmarks"]
        )
        self._whole = rect_pb2.NormalizedRect(x_center=0.5, y_center=0.5, width=1.0, height=1.0, rotation=0.0)

    def process(self, rgb: np.ndarray) -> Any:
        """The finder's result on ``rgb`` (``multi_face_landmarks``, as mediapipe's FaceMesh gives it)."""
        return self.finder.process(rgb)

    def read(self, rgb: np.ndarray) -> np.ndarray | None:
        """The landmarks (n, 3: x, y as fractions of ``rgb``'s side, z on the scale of x) in ``rgb``, the
        region itself; None when the model sees no face there."""
        # what SolutionBase.process does for this graph, less the results' named tuple it builds each call
        # (a class made with eval: half of the Python time of a read) and the message it makes of the
        # landmarks (protobuf warns that the call it makes it with is deprecated, each time)
        from mediapipe.python import packet_creator
        from mediapipe.python._framework_bindings import _packet_getter, image_frame

        self.reader._simulated_timestamp += READ_TIMESTAMP_STEP  # its counter: its own process() may run too
        timestamp = self.reader._simulated_timestamp
        image = packet_creator.create_image_frame(rgb, image_format=image_frame.ImageFormat.SRGB)
        roi = packet_creator.create_proto(self._whole)
        outputs = self.reader._graph_outputs  # filled by the callback SolutionBase observes the output with
        outputs.clear()
        graph = self.reader._graph
        graph.add_packet_to_input_stream(stream="image", packet=image.at(timestamp))
        graph.add_packet_to_input_stream(stream="roi", packet=roi.at(timestamp))
        graph.wait_until_idle()
        packet = outputs.get("face_landmarks")
        if packet is None or packet.is_empty():
            return None
        return landmarks_of_bytes(_packet_getter._get_serialized_proto(packet))

    def warm_up(self) -> None:
        """Run both graphs once (TFLite prints its start-up lines on the first run)."""
        self.process(np.zeros((64, 64, 3), dtype=np.uint8))
        self.read(np.zeros((MESH_INPUT_SIZE, MESH_INPUT_SIZE, 3), dtype=np.uint8))

    def close(self) -> None:
        self.finder.close()
        self.reader.close()
