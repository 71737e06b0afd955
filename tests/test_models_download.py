"""The real downloader against a real HTTP server on 127.0.0.1: full, resumed, corrupt, server down, the
publisher's hash sidecar, disk space, cancel, and the background service the page uses."""

from __future__ import annotations

import hashlib
import socket
import threading
import time
import zlib
from pathlib import Path

import pytest

from facefusion_ui.errors import DownloadError, ModelError, NotEnoughSpace
from facefusion_ui.model_download import ProgressMeter, download_model
from facefusion_ui.model_service import ModelDownloads, required_closure
from facefusion_ui.models import ModelSpec, load_manifest, model_state, require_model, trusted_digest, verify_model
from tests.support.http_server import ServedFile, serve

BODY = bytes(range(256)) * 8192  # 2 MiB, two download blocks


def spec_for(body: bytes, sha256: str | None = None, size: int | None = None) -> ModelSpec:
    return ModelSpec(
        name="tiny",
        role="detector",
        kind="onnx",
        file="tiny.onnx",
        sha256=sha256 or hashlib.sha256(body).hexdigest(),
        size=len(body) if size is None else size,
    )


def test_full_download_is_verified_and_renamed(tmp_path: Path) -> None:
    served = ServedFile(BODY)
    progress: list[tuple[int, int | None]] = []
    with serve(served) as url:
        path = download_model(spec_for(BODY), tmp_path, url=url, progress=lambda p: progress.append((p.done, p.total)))
    assert path == tmp_path / "tiny.onnx"
    assert path.read_bytes() == BODY
    assert not (tmp_path / "tiny.onnx.part").exists()
    assert progress[-1] == (len(BODY), len(BODY))
    assert model_state(spec_for(BODY), tmp_path).verified is True


def test_cut_connection_is_resumed_with_range(tmp_path: Path) -> None:
    served = ServedFile(BODY, cut_after=700_000, cuts=2)
    with serve(served) as url:
        path = download_model(spec_for(BODY), tmp_path, url=url, backoff_s=0.01)
    assert path.read_bytes() == BODY
    assert served.requests[0] == ""
    assert served.requests[1] == "bytes=700000-"
    assert served.requests[2] == "bytes=1400000-"


def test_resume_across_runs_keeps_the_partial_file(tmp_path: Path) -> None:
    served = ServedFile(BODY, cut_after=1_000_000, cuts=10)
    with serve(served) as url:
        with pytest.raises(DownloadError) as caught:
            download_model(spec_for(BODY), tmp_path, url=url, retries=0)
        assert "again to resume" in str(caught.value)
        assert (tmp_path / "tiny.onnx.part").stat().st_size == 1_000_000
        assert not (tmp_path / "tiny.onnx").exists()
        served.cuts = 0
        path = download_model(spec_for(BODY), tmp_path, url=url, retries=0)
    assert path.read_bytes() == BODY
    assert served.requests[-1] == "bytes=1000000-"


def test_server_ignoring_range_restarts_cleanly(tmp_path: Path) -> None:
    (tmp_path / "tiny.onnx.part").write_bytes(BODY[:5000])
    served = ServedFile(BODY, ignore_range=True)
    with serve(served) as url:
        path = download_model(spec_for(BODY), tmp_path, url=url)
    assert path.read_bytes() == BODY


def test_hash_mismatch_deletes_the_file(tmp_path: Path) -> None:
    served = ServedFile(BODY)
    with serve(served) as url, pytest.raises(ModelError) as caught:
        download_model(spec_for(BODY, sha256="0" * 64), tmp_path, url=url)
    message = str(caught.value)
    assert "wrong sha256" in message and "the file was deleted" in message
    assert list(tmp_path.iterdir()) == []


def test_server_down_is_a_clear_error_and_leaves_no_final_file(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(DownloadError) as caught:
        download_model(spec_for(BODY), tmp_path, url=f"http://127.0.0.1:{port}/x.onnx", retries=1, backoff_s=0.01)
    message = str(caught.value)
    assert "failed after 2 attempts" in message and "cannot reach the server" in message
    assert "python run.py models download tiny" in message
    assert not (tmp_path / "tiny.onnx").exists()
    assert not (tmp_path / "tiny.onnx.part").exists()


def test_verify_detects_a_changed_file(tmp_path: Path) -> None:
    served = ServedFile(BODY)
    with serve(served) as url:
        path = download_model(spec_for(BODY), tmp_path, url=url)
    path.write_bytes(BODY[:-1] + b"x")
    assert model_state(spec_for(BODY), tmp_path).verified is None  # the recorded digest is stale
    assert verify_model(spec_for(BODY), tmp_path).verified is False


# The publisher's CRC32 sidecar, disk space, cancel, and the page's download service -----------------------
def crc32(body: bytes) -> str:
    return format(zlib.crc32(body), "08x")


def sidecar_spec(url: str, name: str = "tiny", size: int | None = None) -> ModelSpec:
    """A model verified like FaceFusion's: no pinned sha256, a ``.hash`` sidecar beside the file."""
    return ModelSpec(
        name=name,
        role="swapper",
        kind="onnx",
        file="model.onnx",
        url=url,
        hash_url=url.rsplit("/", 1)[0] + "/model.hash",
        size=size,
    )


def test_hash_sidecar_verifies_then_records_the_sha256(tmp_path: Path) -> None:
    served = ServedFile(BODY, extra={"model.hash": crc32(BODY).encode() + b"\n"})
    with serve(served) as url:
        spec = sidecar_spec(url)
        path = download_model(spec, tmp_path)
    assert path.read_bytes() == BODY and (tmp_path / "model.hash").read_text() == crc32(BODY)
    state = model_state(spec, tmp_path)
    assert state.verified is True and spec.verification == "hash_sidecar"
    assert trusted_digest(spec, path) == hashlib.sha256(BODY).hexdigest()
    require_model(spec, tmp_path)  # the later load checks the recorded digest
    path.write_bytes(BODY[:-1] + b"x")  # changed behind our back: the next load refuses it
    with pytest.raises(ModelError, match="has changed since it was verified"):
        require_model(spec, tmp_path)


def test_hash_sidecar_mismatch_deletes_the_file(tmp_path: Path) -> None:
    served = ServedFile(BODY, extra={"model.hash": b"00000000"})
    with serve(served) as url, pytest.raises(ModelError) as caught:
        download_model(sidecar_spec(url), tmp_path)
    assert "does not match the publisher's hash" in str(caught.value) and "deleted" in str(caught.value)
    assert list(tmp_path.iterdir()) == []


def test_missing_hash_sidecar_downloads_nothing(tmp_path: Path) -> None:
    served = ServedFile(BODY)  # no model.hash: the server answers 404
    with serve(served) as url, pytest.raises(DownloadError, match=r"cannot fetch the hash of 'tiny'.*HTTP 404"):
        download_model(sidecar_spec(url), tmp_path)
    assert served.requests == [] and list(tmp_path.iterdir()) == []


def test_disk_too_small_is_refused_before_any_byte(tmp_path: Path) -> None:
    served = ServedFile(BODY, extra={"model.hash": crc32(BODY).encode()})
    with serve(served) as url:
        with pytest.raises(NotEnoughSpace, match=r"not enough free space for 'tiny' .* 2\.1 MB more, 1\.0 MB are free"):
            download_model(sidecar_spec(url), tmp_path, free_space=lambda folder: 1_000_000)
        assert not (tmp_path / "model.onnx").exists() and not (tmp_path / "model.onnx.part").exists()
        with pytest.raises(NotEnoughSpace):  # a known size is checked before the request
            download_model(sidecar_spec(url, size=len(BODY)), tmp_path, free_space=lambda folder: 10)
    assert served.requests == [""]


def test_progress_reports_speed_and_eta() -> None:
    clock = iter([0.0, 1.0, 2.0])
    meter = ProgressMeter("tiny", clock=lambda: next(clock))
    meter.update(0, 4_000_000)
    meter.update(1_000_000, 4_000_000)
    report = meter.update(2_000_000, 4_000_000)
    assert report.speed_bps == pytest.approx(1_000_000) and report.eta_s == pytest.approx(2.0)
    assert report.fraction == pytest.approx(0.5)


def service_for(folder: Path, url: str, names: tuple[str, ...] = ("tiny",)) -> ModelDownloads:
    manifest = {name: sidecar_spec(url, name) for name in names}
    return ModelDownloads(folder, manifest, retries=0)


def test_service_downloads_in_the_background_with_progress(tmp_path: Path) -> None:
    hold = threading.Event()
    served = ServedFile(BODY, hold=hold, extra={"model.hash": crc32(BODY).encode()})
    with serve(served) as url:
        downloads = service_for(tmp_path, url)
        assert downloads.catalog()[0].label == "tiny (download)"
        assert downloads.missing(["tiny"]) == ["tiny"]
        downloads.start("tiny")
        deadline = time.monotonic() + 30
        while (status := downloads.status("tiny")) is not None and status.done < 1 << 20:
            assert time.monotonic() < deadline, status
            time.sleep(0.01)
        assert status is not None and status.state == "running" and status.total == len(BODY)
        assert downloads.start("tiny") == downloads.status("tiny")  # one download per model
        with pytest.raises(ModelError, match="is downloading: cancel the download before deleting it"):
            downloads.delete("tiny")
        hold.set()
        final = downloads.wait("tiny", timeout_s=30)
    assert final is not None and final.state == "done" and final.done == len(BODY)
    entry = downloads.entry("tiny")
    assert entry.installed and entry.verified is True and entry.label == "tiny (installed)"
    assert downloads.usage()["tiny"] > len(BODY)  # the model and its sidecars
    assert downloads.delete("tiny") > len(BODY)
    assert list(tmp_path.iterdir()) == [] and not downloads.entry("tiny").installed


def test_service_cancel_keeps_the_partial_file_for_a_resume(tmp_path: Path) -> None:
    hold = threading.Event()
    served = ServedFile(BODY, hold=hold, extra={"model.hash": crc32(BODY).encode()})
    with serve(served) as url:
        downloads = service_for(tmp_path, url)
        downloads.start("tiny")
        deadline = time.monotonic() + 30
        while (status := downloads.status("tiny")) is not None and status.done < 1 << 20:
            assert time.monotonic() < deadline, status
            time.sleep(0.01)
        assert downloads.cancel("tiny")
        hold.set()
        final = downloads.wait("tiny", timeout_s=30)
        assert final is not None and final.state == "cancelled" and "start it again to resume" in final.message
        assert (tmp_path / "model.onnx.part").stat().st_size >= 1 << 20
        served.hold = None
        downloads.start("tiny")
        resumed = downloads.wait("tiny", timeout_s=30)
    assert resumed is not None and resumed.state == "done"
    assert served.requests[-1].startswith("bytes=")
    assert (tmp_path / "model.onnx").read_bytes() == BODY


def test_service_failure_is_one_clear_line(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    downloads = service_for(tmp_path, f"http://127.0.0.1:{port}/model.onnx")
    downloads.start("tiny")
    final = downloads.wait("tiny", timeout_s=30)
    assert final is not None and final.state == "failed"
    assert "refused the connection (it is down)" in final.message and "\n" not in final.message


def test_requirements_come_first(tmp_path: Path) -> None:
    manifest = load_manifest(folder=tmp_path)
    assert required_closure(["ghost_1_256"], manifest) == ["arcface_w600k_r50", "crossface_ghost", "ghost_1_256"]
    downloads = ModelDownloads(tmp_path, manifest)
    assert downloads.missing(["ghost_1_256", "dlib_hog"]) == ["arcface_w600k_r50", "crossface_ghost", "ghost_1_256"]


def test_a_downloaded_model_is_usable_without_a_restart(tmp_path: Path) -> None:
    from facefusion_ui.faces.runtime import ModelRuntime
    from facefusion_ui.inference import SessionPool
    from tests.support import onnx_models

    body = onnx_models.build_enhancer(tmp_path / "built.onnx", 64).read_bytes()
    folder = tmp_path / "models"
    served = ServedFile(body, extra={"model.hash": crc32(body).encode()})
    with serve(served) as url:
        downloads = service_for(folder, url)
        runtime = ModelRuntime(dict(downloads.manifest), folder, SessionPool(("cpu",)))
        with pytest.raises(ModelError, match="is not downloaded"):
            runtime.onnx_session("tiny")
        downloads.start("tiny")
        final = downloads.wait("tiny", timeout_s=30)
    assert final is not None and final.state == "done"
    _, session = runtime.onnx_session("tiny")  # the same runtime, no restart
    assert session.get_inputs()[0].name == "input"
