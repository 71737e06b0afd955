"""Start-up stays light: importing the command line loads no queue, page, inference or image library, and
``--version`` answers without loading the processors. Structure, not time (timings wander on a busy machine)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from facefusion_ui.inference import probe_model_bytes

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("gradio", "rq", "redis", "onnxruntime", "onnx", "cv2", "numpy", "dlib", "mediapipe", "tqdm", "fastapi")
"""What the command line must not import before it knows the command (each is imported by the command
that uses it)."""


def modules_after(code: str) -> set[str]:
    """The top-level modules loaded by ``code`` run in a fresh interpreter from the checkout."""
    script = f"{code}\nimport json, sys\nprint(json.dumps(sorted({{name.split('.')[0] for name in sys.modules}})))"
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True, timeout=120
    )
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_importing_the_command_line_loads_no_heavy_library() -> None:
    loaded = modules_after("import facefusion_ui.cli.app")
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_the_choices_module_makes_array_aliases_on_use() -> None:
    loaded = modules_after("import facefusion_ui.types")
    assert "numpy" not in loaded
    with_alias = modules_after("from facefusion_ui.types import Frame\nassert 'uint8' in str(Frame)")
    assert "numpy" in with_alias


def test_version_loads_no_processor() -> None:
    code = (
        "import contextlib, io\nfrom facefusion_ui.cli.app import run\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n    assert run(['--version']) == 0\n"
        "assert out.getvalue().startswith('facefusion_ui ')"
    )
    loaded = modules_after(code)
    assert not loaded & {"cv2", "dlib", "mediapipe", "gradio", "rq", "onnx"}, sorted(loaded)


def test_probe_model_is_what_onnx_makes() -> None:
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "probe",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    assert probe_model_bytes() == model.SerializeToString()
