"""Downloading one catalog model: resumable, verified, and never a half file under the final name.

The bytes go to ``FILE.part`` (resumed with an HTTP Range request after a cut, in this run or the next);
the free space of the models folder is checked before; the file takes its final name only once it
matches its pinned sha256 or, for models the publisher checks with a CRC32 ``.hash`` sidecar, that
sidecar (its sha256 is then recorded as trusted, see ``models.py``). A file that fails the check is
deleted. The command line and the page both download through ``download_model``.
"""

from __future__ import annotations

import errno
import http.client
import os
import shutil
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from facefusion_ui.errors import DownloadCancelled, DownloadError, ModelError, NotEnoughSpace, Remedy
from facefusion_ui.models import (
    CHUNK_BYTES,
    ModelSpec,
    crc32_file,
    download_remedy,
    model_path,
    record_digest,
    sha256_file,
)

SPACE_MARGIN_BYTES = 16 << 20
"""Kept free beyond the file itself, so a download never fills the disk to the last byte."""
SPEED_WINDOW_S = 5.0
SPEED_SAMPLES = 64
NETWORK_ERRORS = (urllib.error.URLError, http.client.HTTPException, ConnectionError, TimeoutError, OSError)
HEAD_TIMEOUT_S = 10.0


def content_length(url: str, timeout_s: float = HEAD_TIMEOUT_S) -> int | None:
    """The size the server gives for ``url`` (redirects followed), None when it says none or cannot be reached."""
    request = urllib.request.Request(url, method="HEAD")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            length = response.headers.get("Content-Length")
    except (*NETWORK_ERRORS, ValueError):
        return None
    return int(length) if length and length.isdigit() and int(length) > 0 else None


@dataclass(frozen=True)
class DownloadProgress:
    """One progress report: bytes so far (resumed bytes included), total when known, speed, time left."""

    name: str
    done: int
    total: int | None
    speed_bps: float
    eta_s: float | None

    @property
    def fraction(self) -> float | None:
        return min(1.0, self.done / self.total) if self.total else None


ProgressCallback = Callable[[DownloadProgress], None]
FreeSpace = Callable[[Path], int]


class ProgressMeter:
    """Speed over the last few seconds of samples (a bounded window), and the ETA it gives."""

    def __init__(self, name: str, clock: Callable[[], float] = time.monotonic) -> None:
        self.name = name
        self.clock = clock
        self.samples: deque[tuple[float, int]] = deque(maxlen=SPEED_SAMPLES)

    def update(self, done: int, total: int | None) -> DownloadProgress:
        now = self.clock()
        self.samples.append((now, done))
        while len(self.samples) > 2 and now - self.samples[0][0] > SPEED_WINDOW_S:
            self.samples.popleft()
        first_time, first_done = self.samples[0]
        elapsed = now - first_time
        speed = (done - first_done) / elapsed if elapsed > 0 else 0.0
        eta = (total - done) / speed if total is not None and speed > 0 else None
        return DownloadProgress(self.name, done, total, speed, 0.0 if total is not None and done >= total else eta)


def free_bytes(folder: Path) -> int:
    """Free bytes on the disk holding ``folder`` (its nearest existing parent)."""
    probe = folder
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return shutil.disk_usage(probe).free


def check_space(spec: ModelSpec, folder: Path, needed: int, free_space: FreeSpace) -> None:
    free = free_space(folder)
    if needed + SPACE_MARGIN_BYTES > free:
        raise NotEnoughSpace(
            f"not enough free space for '{spec.name}' in {folder}: it needs {needed / 1e6:.1f} MB more, "
            f"{free / 1e6:.1f} MB are free; free some space or point FACEFUSION_UI_MODELS at a larger disk"
        )


def describe_network_error(error: BaseException, url: str) -> str:
    """One clause a person understands: offline, server down, refused, slow, or the HTTP status."""
    host = urllib.parse.urlsplit(url).netloc or url
    if isinstance(error, urllib.error.HTTPError):
        hint = "the server is down or busy, try later" if error.code >= 500 else "the address is wrong or gone"
        return f"{host} answered HTTP {error.code} {error.reason} ({hint})"
    reason = error.reason if isinstance(error, urllib.error.URLError) else error
    if isinstance(reason, socket.gaierror):
        return f"cannot reach the server: {host} cannot be looked up (offline, or no DNS)"
    if isinstance(reason, ConnectionRefusedError):
        return f"cannot reach the server: {host} refused the connection (it is down)"
    if isinstance(reason, (TimeoutError, socket.timeout)):
        return f"cannot reach the server: no answer from {host} in time (slow or offline network)"
    return f"cannot reach the server {host}: {type(reason).__name__}: {reason}"


def unreachable(error: BaseException) -> bool:
    """Whether ``error`` says this machine is offline (no DNS, no route, no answer), not that the server
    answered with an error or refused the connection (it is down)."""
    reason = error.reason if isinstance(error, urllib.error.URLError) else error
    if isinstance(error, urllib.error.HTTPError) or isinstance(reason, ConnectionRefusedError):
        return False
    offline = (errno.ENETUNREACH, errno.EHOSTUNREACH, errno.ENETDOWN)
    return isinstance(reason, (socket.gaierror, TimeoutError, socket.timeout)) or (
        isinstance(reason, OSError) and reason.errno in offline
    )


def fetch_hash(spec: ModelSpec, hash_url: str, timeout_s: float) -> str:
    """The publisher's CRC32 for the model: 8 hex digits from its ``.hash`` sidecar."""
    try:
        with urllib.request.urlopen(hash_url, timeout=timeout_s) as response:
            text = str(response.read(256).decode("ascii", "replace")).strip().lower()
    except NETWORK_ERRORS as error:
        why = describe_network_error(error, hash_url)
        raise DownloadError(
            f"cannot fetch the hash of '{spec.name}' from {hash_url} ({why}): nothing was downloaded",
            why=why,
            offline=unreachable(error),
            remedy=download_remedy(spec.name, then=" again later", sep="; "),
        ) from error
    if len(text) != 8 or any(char not in "0123456789abcdef" for char in text):
        raise ModelError(f"the hash sidecar {hash_url} of '{spec.name}' is not a CRC32 ({text[:20]!r}): report it")
    return text


@dataclass(frozen=True)
class _Fetch:
    """One attempt's fixed inputs."""

    spec: ModelSpec
    url: str
    partial: Path
    timeout_s: float
    meter: ProgressMeter
    progress: ProgressCallback | None
    cancel: threading.Event | None
    free_space: FreeSpace


def _cancelled(fetch: _Fetch) -> DownloadCancelled:
    kept = fetch.partial.stat().st_size if fetch.partial.exists() else 0
    return DownloadCancelled(
        f"download of '{fetch.spec.name}' cancelled; {kept} bytes are kept in {fetch.partial.name}: "
        "start it again to resume"
    )


def _fetch_into(fetch: _Fetch) -> bool:
    """Append the rest of the file to the partial one; True when the whole file is there."""
    size, partial = fetch.spec.size, fetch.partial
    offset = partial.stat().st_size if partial.exists() else 0
    if size is not None and offset == size:
        return True
    if size is not None and offset > size:
        partial.unlink()
        offset = 0
    request = urllib.request.Request(fetch.url, headers={"Range": f"bytes={offset}-"} if offset else {})
    try:
        response = urllib.request.urlopen(request, timeout=fetch.timeout_s)
    except urllib.error.HTTPError as error:
        if error.code == 416 and offset:  # nothing left to send: the file is complete
            return size is None or offset == size
        raise
    with response:
        if offset and response.status != 206:  # the server ignored the range: start again
            offset = 0
        length = response.headers.get("Content-Length")
        total = offset + int(length) if length is not None else size
        if total is not None:
            check_space(fetch.spec, partial.parent, total - offset, fetch.free_space)
        return _copy_body(fetch, response, offset, total)


def _copy_body(fetch: _Fetch, response: http.client.HTTPResponse, offset: int, total: int | None) -> bool:
    done = offset
    with fetch.partial.open("ab" if offset else "wb") as handle:
        while True:
            if fetch.cancel is not None and fetch.cancel.is_set():
                raise _cancelled(fetch)
            block = response.read(CHUNK_BYTES)
            if not block:
                break
            handle.write(block)
            done += len(block)
            if fetch.progress:
                fetch.progress(fetch.meter.update(done, total))
    return total is None or done == total


def _incomplete(
    spec: ModelSpec, source: str, partial: Path, last_error: str, attempts: int, offline: bool = False
) -> DownloadError:
    kept = partial.stat().st_size if partial.exists() else 0
    if partial.exists() and kept == 0:
        partial.unlink()
    where = f"; {kept} bytes are kept in {partial.name}" if kept else ""
    return DownloadError(
        f"download of '{spec.name}' from {source} failed after {attempts} attempts ({last_error}){where}",
        why=last_error,
        offline=offline,
        kept=kept,
        remedy=download_remedy(spec.name, then=" again to resume" if kept else " again"),
    )


def _attempts(fetch: _Fetch, retries: int, backoff_s: float) -> None:
    """Fetch with retries; raises the clear error when the file is still incomplete."""
    last_error = ""
    offline = False
    for attempt in range(retries + 1):
        if attempt:
            time.sleep(backoff_s * 2 ** (attempt - 1))
        if fetch.cancel is not None and fetch.cancel.is_set():
            raise _cancelled(fetch)
        try:
            if _fetch_into(fetch):
                return
            last_error, offline = "the connection closed before the end of the file", False
        except NETWORK_ERRORS as error:
            last_error, offline = describe_network_error(error, fetch.url), unreachable(error)
            if isinstance(error, urllib.error.HTTPError) and error.code in (401, 403, 404, 410):
                retries = attempt
                break
    raise _incomplete(fetch.spec, fetch.url, fetch.partial, last_error, min(retries, attempt) + 1, offline)


def _verify_partial(spec: ModelSpec, partial: Path, source: str, crc32: str | None) -> tuple[str, str | None]:
    """The partial file's sha256 and the digest to trust from now on; a file that fails is deleted."""
    digest = sha256_file(partial)
    if spec.sha256 and digest != spec.sha256:
        partial.unlink(missing_ok=True)
        raise ModelError(
            f"download of '{spec.name}' from {source} has the wrong sha256 ({digest}, expected {spec.sha256}): "
            "the file was deleted",
            remedy=Remedy(
                "try again later or import a copy you trust with 'python run.py models import'",
                "try again later or import a copy you trust with the Settings tab (Models)",
                "; ",
            ),
        )
    if spec.sha256 or crc32 is None:
        return digest, None
    found = crc32_file(partial)
    if found != crc32:
        partial.unlink(missing_ok=True)
        raise ModelError(
            f"download of '{spec.name}' from {source} does not match the publisher's hash (CRC32 {found}, "
            f"expected {crc32}): the file was deleted",
            remedy=download_remedy(spec.name, then=" again later", sep="; "),
        )
    return digest, digest


def download_model(
    spec: ModelSpec,
    folder: Path | None = None,
    url: str | None = None,
    retries: int = 3,
    timeout_s: float = 30.0,
    backoff_s: float = 1.0,
    progress: ProgressCallback | None = None,
    cancel: threading.Event | None = None,
    free_space: FreeSpace = free_bytes,
) -> Path:
    """Fetch ``spec`` resumably into ``folder``; the final name appears only once the file is verified.

    ``url`` replaces the manifest's address (its hash sidecar is then looked for beside it)."""
    if spec.kind != "onnx":
        raise ModelError(f"'{spec.name}' ships inside the package {spec.package}: there is nothing to download")
    source = url or spec.url
    if not source:
        raise ModelError(
            f"model '{spec.name}' has no download address",
            remedy=Remedy("use 'python run.py models import PATH'", "use the Settings tab (Models)"),
        )
    target = cast(Path, model_path(spec, folder))
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".part")
    hash_url = _hash_url(spec, url)
    crc32 = fetch_hash(spec, hash_url, timeout_s) if hash_url and not spec.sha256 else None
    if spec.size is not None:
        done = partial.stat().st_size if partial.exists() else 0
        check_space(spec, target.parent, max(0, spec.size - done), free_space)
    fetch = _Fetch(spec, source, partial, timeout_s, ProgressMeter(spec.name), progress, cancel, free_space)
    _attempts(fetch, retries, backoff_s)
    if not partial.exists() or (spec.size is not None and partial.stat().st_size != spec.size):
        raise _incomplete(spec, source, partial, "the file is shorter than the manifest says", retries + 1)
    digest, trusted = _verify_partial(spec, partial, source, crc32)
    if crc32 is not None and spec.hash_file:
        target.with_name(spec.hash_file).write_text(crc32, encoding="ascii")
    os.replace(partial, target)
    target.with_name(target.name + ".sha256").unlink(missing_ok=True)  # no digest of an earlier file survives
    record_digest(target, digest, trusted)
    return target


def _hash_url(spec: ModelSpec, url: str | None) -> str | None:
    if not spec.hash_url:
        return None
    if url is None:
        return spec.hash_url
    base, _, _ = url.rpartition("/")
    return f"{base}/{spec.hash_url.rpartition('/')[2]}"
