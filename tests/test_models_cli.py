"""``run.py models``: the list, import of a known and an unknown file, verify, download errors."""

from __future__ import annotations

import hashlib
import json
import shutil
import socket
from pathlib import Path
from typing import Any

import pytest

from facefusion_ui.cli.models import ask_sizes
from facefusion_ui.errors import InputError, ModelError
from facefusion_ui.model_download import content_length
from facefusion_ui.models import ModelSpec, guess_role, import_model, inspect_onnx, load_manifest, model_state
from tests.conftest import RunCli
from tests.support import onnx_models
from tests.support.http_server import ServedFile, serve


def test_list_shows_embedded_installed_and_onnx_with_the_command(cli_here: RunCli, tmp_path: Path) -> None:
    completed = cli_here(["models", "list"], env={"FACEFUSION_UI_MODELS": str(tmp_path)})
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
    listing = json.loads(cli_here(["models", "list", "--json"], env={"FACEFUSION_UI_MODELS": str(tmp_path)}).stdout)
    recognizers = {m["name"]: (m["metric"], m["threshold"]) for m in listing["models"] if m["role"] == "recognizer"}
    assert recognizers == {"arcface_w600k_r50": ("cosine", 0.6), "dlib_resnet": ("euclidean", 0.6)}


def test_manifest_entries_are_complete() -> None:
    for spec in load_manifest().values():
        if spec.kind == "onnx" and not spec.registered:
            assert spec.url and spec.url.startswith("https://")
            if spec.sha256 is not None or spec.hash_url is None:
                assert spec.sha256 and len(spec.sha256) == 64
            else:  # checked by the publisher's CRC32 sidecar, which lies beside the file
                assert spec.hash_url == spec.url.rsplit("/", 1)[0] + "/" + str(spec.file).replace(".onnx", ".hash")
            if spec.role not in ("converter",) and spec.name != "fan_68_5":
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


def test_import_of_an_unknown_onnx_registers_it(cli_here: RunCli, tmp_path: Path) -> None:
    model = onnx_models.build_inswapper(tmp_path / "my_swapper.onnx")
    folder = tmp_path / "models"
    completed = cli_here(["models", "import", str(model)], env={"FACEFUSION_UI_MODELS": str(folder)})
    assert completed.returncode == 0, completed.stderr
    assert "my_swapper (swapper): imported" in completed.stdout and "registered as a new model" in completed.stdout
    listing = json.loads(cli_here(["models", "list", "--json"], env={"FACEFUSION_UI_MODELS": str(folder)}).stdout)
    entry = next(m for m in listing["models"] if m["name"] == "my_swapper")
    assert entry["installed"] and entry["verified"] is True and entry["kind"] == "onnx (imported)"
    verify = cli_here(["models", "verify", "my_swapper"], env={"FACEFUSION_UI_MODELS": str(folder)})
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


def test_bad_imports_are_one_line_errors(cli_here: RunCli, tmp_path: Path) -> None:
    text = tmp_path / "notes.onnx"
    text.write_text("hello")
    completed = cli_here(["models", "import", str(text)], env={"FACEFUSION_UI_MODELS": str(tmp_path / "m")})
    assert completed.returncode == 2
    assert completed.stderr.strip().startswith("error: ") and "is not an ONNX model" in completed.stderr
    assert len(completed.stderr.strip().splitlines()) == 1
    missing = cli_here(["models", "import", str(tmp_path / "nope.onnx")])
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


def test_download_of_an_unknown_or_embedded_model(cli_here: RunCli) -> None:
    unknown = cli_here(["models", "download", "nope"])
    assert unknown.returncode == 2 and "unknown model 'nope'" in unknown.stderr
    embedded = cli_here(["models", "download", "dlib_68"])
    assert embedded.returncode == 0 and "nothing to download" in embedded.stdout


def test_list_shows_the_catalog_with_how_each_download_is_checked(cli_here: RunCli, tmp_path: Path) -> None:
    completed = cli_here(["models", "list"], env={"FACEFUSION_UI_MODELS": str(tmp_path)})
    assert completed.returncode == 0, completed.stderr
    rows = {line.split()[0]: line.split() for line in completed.stdout.splitlines()[1:-1]}
    sidecar_checked = "hyperswap_1a_256 ghost_2_256 codeformer gpen_bfr_2048 xseg_3 bisenet_resnet_34 retinaface_10g"
    for name in (*sidecar_checked.split(), "yoloface_8n", "yunet_2023_mar", "2dfan4", "fan_68_5", "crossface_simswap"):
        assert rows[name][3] == "no" and rows[name][6] == "crc32+sha256", rows[name]
    assert rows["inswapper_128"][5:7] == ["554.3MB", "sha256"]
    assert rows["dlib_68"][6] == "package"
    completed = cli_here(["models", "delete", "hyperswap_1a_256"], env={"FACEFUSION_UI_MODELS": str(tmp_path)})
    assert completed.returncode == 0 and "hyperswap_1a_256: nothing to delete" in completed.stdout


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.slow  # waits on a loopback server's answers
def test_list_asks_the_server_for_sizes_the_catalog_lacks(cli_here: RunCli, tmp_path: Path) -> None:
    body = b"x" * 12345
    rows: list[dict[str, Any]] = [
        {"name": "served", "size": None},
        {"name": "gone", "size": None},
        {"name": "known", "size": 99},
    ]
    with serve(ServedFile(body)) as url:
        dead = url.replace(url.split(":")[2].split("/")[0], str(free_port()))
        ask_sizes(rows, {"served": url, "gone": dead, "known": url}, content_length)
    assert rows[0] == {"name": "served", "size": len(body), "size_from": "server"}
    assert rows[1] == {"name": "gone", "size": None}  # no answer: unknown, no error
    assert rows[2] == {"name": "known", "size": 99}  # the catalog's size is not asked again
    completed = cli_here(["models", "list", "--ask-sizes"], env={"FACEFUSION_UI_MODELS": str(tmp_path)})
    assert completed.returncode == 0, completed.stderr
    assert "gave no sizes" in completed.stdout or "* size as the publisher's server gives it" in completed.stdout
