"""``run.py models``: the list, import of a known and an unknown file, verify, download errors."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from facefusion_ui.errors import InputError, ModelError
from facefusion_ui.models import ModelSpec, guess_role, import_model, inspect_onnx, load_manifest, model_state
from tests.conftest import RunCli
from tests.support import onnx_models


def test_list_shows_embedded_installed_and_onnx_with_the_command(run_cli: RunCli, tmp_path: Path) -> None:
    completed = run_cli(["models", "list"], env={"FACEFUSION_UI_MODELS": str(tmp_path)})
    assert completed.returncode == 0, completed.stderr
    rows = {line.split()[0]: line for line in completed.stdout.splitlines()[1:-1]}
    for name in (
        "dlib_hog",
        "dlib_68",
        "dlib_5",
        "dlib_resnet",
        "mediapipe_face_mesh",
        "mediapipe_blazeface",
        "mesh_warp",
    ):
        assert rows[name].split()[2:4] == ["embedded", "yes"], rows[name]
    for name in ("det_10g", "arcface_w600k_r50", "inswapper_128", "inswapper_128_fp16", "gfpgan_1.4"):
        assert rows[name].split()[3] == "no"
        assert f"not downloaded: python run.py models download {name}" in rows[name]
    listing = json.loads(run_cli(["models", "list", "--json"], env={"FACEFUSION_UI_MODELS": str(tmp_path)}).stdout)
    recognizers = {m["name"]: (m["metric"], m["threshold"]) for m in listing["models"] if m["role"] == "recognizer"}
    assert recognizers == {"arcface_w600k_r50": ("cosine", 0.6), "dlib_resnet": ("euclidean", 0.6)}


def test_manifest_entries_are_complete() -> None:
    for spec in load_manifest().values():
        if spec.kind == "onnx" and not spec.registered:
            assert spec.url and spec.url.startswith("https://")
            # a sha256, or the publisher's checksum file (checked on download) where no sha256 is pinned yet
            assert (spec.sha256 and len(spec.sha256) == 64) or (spec.hash_url and spec.hash_url.startswith("https://"))
            assert spec.input_size and spec.std > 0
        else:
            assert spec.package and spec.package_file


def test_import_of_a_known_model_checks_the_hash(tmp_path: Path) -> None:
    model = onnx_models.build_arcface(tmp_path / "arcface_w600k_r50.onnx")
    digest = hashlib.sha256(model.read_bytes()).hexdigest()
    manifest = {
        "arcface_w600k_r50": ModelSpec(
            name="arcface_w600k_r50",
            role="recognizer",
            kind="onnx",
            file="arcface_w600k_r50.onnx",
            sha256=digest,
            metric="cosine",
            threshold=0.6,
        )
    }
    folder = tmp_path / "models"
    spec = import_model(model, folder=folder, manifest=manifest)
    assert spec.name == "arcface_w600k_r50" and not spec.registered
    assert model_state(spec, folder).verified is True
    wrong = {"arcface_w600k_r50": ModelSpec(**{**manifest["arcface_w600k_r50"].__dict__, "sha256": "1" * 64})}
    with pytest.raises(ModelError, match="is not the file the manifest lists"):
        import_model(model, folder=tmp_path / "other", manifest=wrong)


def test_import_of_an_unknown_onnx_registers_it(run_cli: RunCli, tmp_path: Path) -> None:
    model = onnx_models.build_inswapper(tmp_path / "my_swapper.onnx")
    folder = tmp_path / "models"
    completed = run_cli(["models", "import", str(model)], env={"FACEFUSION_UI_MODELS": str(folder)})
    assert completed.returncode == 0, completed.stderr
    assert "my_swapper (swapper): imported" in completed.stdout and "registered as a new model" in completed.stdout
    listing = json.loads(run_cli(["models", "list", "--json"], env={"FACEFUSION_UI_MODELS": str(folder)}).stdout)
    entry = next(m for m in listing["models"] if m["name"] == "my_swapper")
    assert entry["installed"] and entry["verified"] is True and entry["kind"] == "onnx (imported)"
    verify = run_cli(["models", "verify", "my_swapper"], env={"FACEFUSION_UI_MODELS": str(folder)})
    assert verify.returncode == 0 and "my_swapper: ok" in verify.stdout


def test_signatures_are_recognised(tmp_path: Path) -> None:
    builders = {
        "detector": onnx_models.build_scrfd,
        "recognizer": onnx_models.build_arcface,
        "swapper": onnx_models.build_inswapper,
        "enhancer": onnx_models.build_gfpgan,
    }
    for role, build in builders.items():
        assert guess_role(inspect_onnx(build(tmp_path / f"{role}.onnx"))) == role


def test_bad_imports_are_one_line_errors(run_cli: RunCli, tmp_path: Path) -> None:
    text = tmp_path / "notes.onnx"
    text.write_text("hello")
    completed = run_cli(["models", "import", str(text)], env={"FACEFUSION_UI_MODELS": str(tmp_path / "m")})
    assert completed.returncode == 2
    assert completed.stderr.strip().startswith("error: ") and "is not an ONNX model" in completed.stderr
    assert len(completed.stderr.strip().splitlines()) == 1
    missing = run_cli(["models", "import", str(tmp_path / "nope.onnx")])
    assert missing.returncode == 2 and "is not a file" in missing.stderr
    with pytest.raises(InputError, match="cannot tell what"):
        shutil.copy(onnx_models.build_gfpgan(tmp_path / "g.onnx"), tmp_path / "odd.onnx")
        import_model(_reshaped(tmp_path), folder=tmp_path / "m2", manifest={})


def _reshaped(tmp_path: Path) -> Path:
    """A valid ONNX file of no known family (1-D input)."""
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [7])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [7])],
    )
    path = tmp_path / "identity.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return path


def test_download_of_an_unknown_or_embedded_model(run_cli: RunCli) -> None:
    unknown = run_cli(["models", "download", "nope"])
    assert unknown.returncode == 2 and "unknown model 'nope'" in unknown.stderr
    embedded = run_cli(["models", "download", "dlib_68"])
    assert embedded.returncode == 0 and "nothing to download" in embedded.stdout
