"""The real downloader against a real HTTP server on 127.0.0.1: full, resumed, corrupt, server down."""

from __future__ import annotations

import hashlib
import socket
from pathlib import Path

import pytest

from facefusion_ui.errors import DownloadError, ModelError
from facefusion_ui.models import ModelSpec, download_model, model_state, verify_model
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
        path = download_model(spec_for(BODY), tmp_path, url=url, progress=lambda d, t: progress.append((d, t)))
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


def test_without_a_sha256_the_publishers_crc32_is_checked(tmp_path: Path) -> None:
    import dataclasses
    import zlib

    checksum = f"{zlib.crc32(BODY):08x}\n".encode()
    with serve(ServedFile(checksum)) as hash_url:
        with serve(ServedFile(BODY)) as url:
            spec = dataclasses.replace(spec_for(BODY), sha256=None, hash_url=hash_url)
            assert download_model(spec, tmp_path, url=url).read_bytes() == BODY
        corrupt = BODY[:-1] + b"\x00"
        with serve(ServedFile(corrupt)) as url, pytest.raises(ModelError, match="wrong CRC32"):
            download_model(dataclasses.replace(spec, file="other.onnx"), tmp_path, url=url)
    assert not (tmp_path / "other.onnx").exists() and not (tmp_path / "other.onnx.part").exists()
