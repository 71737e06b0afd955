"""Head pose (yaw, pitch) from the face mesh's own 3D points (x, y and mediapipe's depth).

The mesh's depth is on the same scale as x and y, so the line from one side of the face to the other
(several symmetric pairs of points, averaged) leans out of the image plane by the head's yaw, and the
line from chin to forehead by its pitch. No canonical face model is needed (mediapipe's wheel ships none).
"""

from __future__ import annotations

import numpy as np

from facefusion_ui.faces.face import FaceMesh

SIDE_PAIRS = ((234, 454), (127, 356), (93, 323), (132, 361), (58, 288), (172, 397), (33, 263), (133, 362), (61, 291))
"""Symmetric points, (image-left, image-right) on a face looking at the camera: cheeks, jaw, eyes, mouth."""
FOREHEAD, CHIN = 10, 152
FRONTAL_LEAN = 10.0
"""Degrees the chin-to-forehead line leans back on a face looking straight at the camera (the top of the
forehead lies behind the chin): 10-13 on the frontal portraits of astronaut and grace_hopper."""


def mesh_pose(mesh: FaceMesh) -> tuple[float, float]:
    """(yaw, pitch) in degrees, 0 facing the camera. Yaw has the sign of ``alignment.estimate_pose``'s
    (positive: the face turned toward the image's right side); pitch is positive looking down."""
    points = np.column_stack([mesh.points, mesh.depth]).astype(np.float64)
    left, right = (points[[pair[side] for pair in SIDE_PAIRS]] for side in (0, 1))
    across = (right - left).sum(axis=0)
    up = points[FOREHEAD] - points[CHIN]
    across /= np.linalg.norm(across) or 1.0
    up -= (up @ across) * across
    up /= np.linalg.norm(up) or 1.0
    # the lean undone in the face's own frame (about its across axis), so that a turn does not read as a tilt
    toward_camera = np.cross(across, up)
    lean = np.radians(FRONTAL_LEAN)
    upright = np.cos(lean) * up - np.sin(lean) * toward_camera
    yaw = float(np.degrees(np.arcsin(np.clip(across[2], -1.0, 1.0))))
    pitch = float(-np.degrees(np.arcsin(np.clip(upright[2], -1.0, 1.0))))
    return yaw, pitch
