"""Model registry: the manifest, where files live, sha256 verification, resumable download, import.

ONNX weights live in ``models/`` of the checkout (``FACEFUSION_UI_MODELS`` overrides). A verified file
gets a sidecar ``FILE.sha256`` holding its digest, size and mtime, so ``models list`` can say
"verified" without hashing hundreds of megabytes each time.
"""

from __future__ import annotations

import hashlib
import http.client
import importlib.util
import json
import os
import shutil
import time
import urllib.error
import urllib.request
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from facefusion_ui.errors import DownloadError, InputError, ModelError
from facefusion_ui.types import DistanceMetric, ModelRole, choices

ModelKind = Literal["onnx", "embedded"]
Progress = Callable[[int, int | None], None]
"""Called with (bytes done, bytes total or None)."""

CHUNK_BYTES = 1 << 20
REGISTERED_FILE = "registered.json"


@dataclass(frozen=True)
class ModelSpec:
    name: str
    role: ModelRole
    kind: ModelKind
    description: str = ""
    file: str | None = None
    url: str | None = None
    sha256: str | None = None
    hash_url: str | None = None
    """Without a sha256: where the publisher's CRC32 of the file is (FaceFusion's ``.hash`` files)."""
    size: int | None = None
    input_size: tuple[int, int] | None = None
    mean: float = 0.0
    std: float = 1.0
    template: str | None = None
    metric: DistanceMetric | None = None
    threshold: float | None = None
    fp16_variant: str | None = None
    scale: int | None = None
    """Upscalers: how many times larger each side of the output is than the input."""
    requires: tuple[str, ...] = ()
    package: str | None = None
    package_file: str | None = None
    registered: bool = False
    signature: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModelSpec:
        name = data.get("name", "?")
        if data.get("role") not in choices(ModelRole) or data.get("kind") not in ("onnx", "embedded"):
            raise ModelError(f"manifest entry '{name}' has a bad role or kind: fix models/manifest.json")
        if data["kind"] == "onnx" and not data.get("file"):
            raise ModelError(f"manifest entry '{name}' is an ONNX model without a file name")
        if data["role"] == "recognizer" and (
            data.get("metric") not in choices(DistanceMetric) or not isinstance(data.get("threshold"), (int, float))
        ):
            raise ModelError(f"manifest entry '{name}' is a recognizer without a metric and threshold")
        values = {key: value for key, value in data.items() if key in cls.__dataclass_fields__}
        if values.get("input_size") is not None:
            values["input_size"] = tuple(values["input_size"])
        values["requires"] = tuple(values.get("requires", ()))
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        data = {key: getattr(self, key) for key in self.__dataclass_fields__}
        data["input_size"] = list(self.input_size) if self.input_size else None
        data["requires"] = list(self.requires)
        data["signature"] = dict(self.signature)
        return data


@dataclass(frozen=True)
class ModelState:
    spec: ModelSpec
    installed: bool
    verified: bool | None
    """True: sha256 matches; False: it does not; None: not checked yet (or nothing to check)."""
    path: Path | None
    bytes_on_disk: int | None


# Locations --------------------------------------------------------------------------------------------
def checkout_root() -> Path:
    return Path(__file__).resolve().parent.parent


def models_dir() -> Path:
    override = os.environ.get("FACEFUSION_UI_MODELS")
    return Path(override) if override else checkout_root() / "models"


def manifest_path() -> Path:
    return checkout_root() / "models" / "manifest.json"


def package_file_path(spec: ModelSpec) -> Path | None:
    """Where an embedded model's file lies inside its installed package, found without importing it."""
    if not spec.package_file:
        return None
    top, _, rest = spec.package_file.partition("/")
    try:
        found = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    if found is None or not found.submodule_search_locations:
        return None
    for location in found.submodule_search_locations:
        candidate = Path(location) / rest
        if candidate.exists():
            return candidate
    return None


def model_path(spec: ModelSpec, folder: Path | None = None) -> Path | None:
    if spec.kind == "embedded":
        return package_file_path(spec)
    return (folder or models_dir()) / cast(str, spec.file)


# Manifest -----------------------------------------------------------------------------------------------
def load_manifest(path: Path | None = None, folder: Path | None = None) -> dict[str, ModelSpec]:
    """The shipped manifest plus the models registered by ``models import`` in ``folder``."""
    source = path or manifest_path()
    try:
        entries = json.loads(source.read_text(encoding="utf-8"))["models"]
    except (OSError, ValueError, KeyError) as error:
        raise ModelError(f"the model manifest {source} cannot be read ({error}): restore it") from error
    specs = {entry["name"]: ModelSpec.from_dict(entry) for entry in entries}
    for entry in _read_registered(folder or models_dir()):
        specs.setdefault(entry["name"], ModelSpec.from_dict({**entry, "registered": True}))
    return specs


def _read_registered(folder: Path) -> list[dict[str, Any]]:
    registry = folder / REGISTERED_FILE
    if not registry.exists():
        return []
    try:
        return list(json.loads(registry.read_text(encoding="utf-8")))
    except ValueError as error:
        raise ModelError(f"{registry} is corrupt ({error}): delete it and import the models again") from error


def get_spec(name: str, manifest: Mapping[str, ModelSpec]) -> ModelSpec:
    try:
        return manifest[name]
    except KeyError:
        raise ModelError(f"unknown model '{name}': 'python run.py models list' shows the known models") from None


# State and verification -----------------------------------------------------------------------------------
def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(CHUNK_BYTES), b""):
            digest.update(block)
    return digest.hexdigest()


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _record_digest(path: Path, digest: str) -> None:
    stat = path.stat()
    record = {"sha256": digest, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    _sidecar(path).write_text(json.dumps(record), encoding="utf-8")


def _recorded_digest(path: Path) -> str | None:
    try:
        record = json.loads(_sidecar(path).read_text(encoding="utf-8"))
        stat = path.stat()
    except (OSError, ValueError):
        return None
    if record.get("size") == stat.st_size and record.get("mtime_ns") == stat.st_mtime_ns:
        return str(record["sha256"])
    return None


def model_state(spec: ModelSpec, folder: Path | None = None) -> ModelState:
    path = model_path(spec, folder)
    if path is None or not path.exists():
        return ModelState(spec, False, None, None, None)
    if spec.kind == "embedded":
        return ModelState(spec, True, None, path, path.stat().st_size)
    recorded = _recorded_digest(path)
    verified = None if recorded is None or spec.sha256 is None else recorded == spec.sha256
    return ModelState(spec, True, verified, path, path.stat().st_size)


def verify_model(spec: ModelSpec, folder: Path | None = None) -> ModelState:
    """Hash the installed file, remember the result, and report it (embedded: the file exists)."""
    state = model_state(spec, folder)
    if not state.installed or state.path is None or spec.kind == "embedded":
        return state
    digest = sha256_file(state.path)
    _record_digest(state.path, digest)
    return ModelState(spec, True, spec.sha256 is None or digest == spec.sha256, state.path, state.bytes_on_disk)


def download_command(name: str) -> str:
    return f"python run.py models download {name}"


def require_model(spec: ModelSpec, folder: Path | None = None) -> Path:
    """The path of an installed model, or a ModelError that names the command to get it."""
    state = model_state(spec, folder)
    if state.installed and state.path is not None:
        return state.path
    if spec.kind == "embedded":
        raise ModelError(
            f"embedded model '{spec.name}' is missing: reinstall the package {spec.package} "
            "(python -m facefusion_ui.installer)"
        )
    raise ModelError(f"model '{spec.name}' is not downloaded: run '{download_command(spec.name)}'")


# Download ---------------------------------------------------------------------------------------------------
def download_model(
    spec: ModelSpec,
    folder: Path | None = None,
    url: str | None = None,
    retries: int = 3,
    timeout_s: float = 30.0,
    backoff_s: float = 1.0,
    progress: Progress | None = None,
) -> Path:
    """Fetch ``spec`` resumably into ``folder``; the final name appears only once the sha256 matches."""
    if spec.kind != "onnx":
        raise ModelError(f"'{spec.name}' ships inside the package {spec.package}: there is nothing to download")
    source = url or spec.url
    if not source:
        raise ModelError(f"model '{spec.name}' has no download address: use 'python run.py models import PATH'")
    target = cast(Path, model_path(spec, folder))
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".part")
    last_error = ""
    for attempt in range(retries + 1):
        if attempt:
            time.sleep(backoff_s * 2 ** (attempt - 1))
        try:
            if _fetch_into(source, partial, spec.size, timeout_s, progress):
                break
            last_error = "the connection closed before the end of the file"
        except (urllib.error.URLError, http.client.HTTPException, ConnectionError, TimeoutError, OSError) as error:
            last_error = _describe_network_error(error)
            if isinstance(error, urllib.error.HTTPError) and error.code in (401, 403, 404, 410):
                break
    else:
        raise _incomplete(spec, source, partial, last_error, retries)
    if not _looks_complete(partial, spec.size):
        raise _incomplete(spec, source, partial, last_error, retries)
    digest = sha256_file(partial)
    if not spec.sha256 and spec.hash_url:
        _check_crc32(spec, source, partial, timeout_s)
    if spec.sha256 and digest != spec.sha256:
        partial.unlink(missing_ok=True)
        raise ModelError(
            f"download of '{spec.name}' from {source} has the wrong sha256 ({digest}, expected {spec.sha256}): "
            "the file was deleted; try again later or import a copy you trust with 'python run.py models import'"
        )
    os.replace(partial, target)
    _record_digest(target, digest)
    return target


def _check_crc32(spec: ModelSpec, source: str, partial: Path, timeout_s: float) -> None:
    """The file against the CRC32 its publisher lists at ``spec.hash_url`` (8 hex digits)."""
    try:
        with urllib.request.urlopen(cast(str, spec.hash_url), timeout=timeout_s) as response:
            expected = response.read(64).decode("ascii", "replace").strip().lower()
    except (urllib.error.URLError, http.client.HTTPException, OSError) as error:
        raise DownloadError(
            f"cannot fetch the checksum of '{spec.name}' from {spec.hash_url} ({_describe_network_error(error)}): "
            f"run '{download_command(spec.name)}' again"
        ) from error
    crc = 0
    with partial.open("rb") as handle:
        for block in iter(lambda: handle.read(CHUNK_BYTES), b""):
            crc = zlib.crc32(block, crc)
    if f"{crc:08x}" != expected:
        partial.unlink(missing_ok=True)
        raise ModelError(
            f"download of '{spec.name}' from {source} has the wrong CRC32 ({crc:08x}, expected {expected}): "
            "the file was deleted; try again later or import a copy you trust with 'python run.py models import'"
        )


def _looks_complete(partial: Path, size: int | None) -> bool:
    return partial.exists() and (size is None or partial.stat().st_size == size)


def _incomplete(spec: ModelSpec, source: str, partial: Path, last_error: str, retries: int) -> DownloadError:
    kept = partial.stat().st_size if partial.exists() else 0
    if partial.exists() and kept == 0:
        partial.unlink()
    return DownloadError(
        f"download of '{spec.name}' from {source} failed after {retries + 1} attempts ({last_error}); "
        f"{kept} bytes are kept in {partial.name}: run '{download_command(spec.name)}' again to resume"
    )


def _describe_network_error(error: BaseException) -> str:
    if isinstance(error, urllib.error.HTTPError):
        return f"HTTP {error.code} {error.reason}"
    if isinstance(error, urllib.error.URLError):
        return f"cannot reach the server: {error.reason}"
    return f"{type(error).__name__}: {error}"


def _fetch_into(url: str, partial: Path, size: int | None, timeout_s: float, progress: Progress | None) -> bool:
    """Append the rest of ``url`` to ``partial``; True when the whole file is there."""
    offset = partial.stat().st_size if partial.exists() else 0
    if size is not None and offset == size:
        return True
    if size is not None and offset > size:
        partial.unlink()
        offset = 0
    request = urllib.request.Request(url, headers={"Range": f"bytes={offset}-"} if offset else {})
    try:
        response = urllib.request.urlopen(request, timeout=timeout_s)
    except urllib.error.HTTPError as error:
        if error.code == 416 and offset:  # nothing left to send: the file is complete
            return size is None or offset == size
        raise
    with response:
        if offset and response.status != 206:  # the server ignored the range: start again
            offset = 0
        length = response.headers.get("Content-Length")
        total = offset + int(length) if length is not None else size
        with partial.open("ab" if offset else "wb") as handle:
            done = offset
            while True:
                block = response.read(CHUNK_BYTES)
                if not block:
                    break
                handle.write(block)
                done += len(block)
                if progress:
                    progress(done, total)
    return total is None or done == total


# Import -------------------------------------------------------------------------------------------------------
def inspect_onnx(path: Path) -> dict[str, list[dict[str, Any]]]:
    """Input and output names and shapes of an ONNX file (a symbolic dimension is its name)."""
    import onnx

    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as error:  # onnx raises DecodeError and friends
        raise InputError(f"{path} is not an ONNX model ({type(error).__name__}): check the file") from error

    def describe(values: Any) -> list[dict[str, Any]]:
        described = []
        for value in values:
            dims = [
                d.dim_value if d.HasField("dim_value") else (d.dim_param or "?")
                for d in value.type.tensor_type.shape.dim
            ]
            described.append({"name": value.name, "shape": dims})
        return described

    initializers = {item.name for item in model.graph.initializer}
    inputs = [item for item in model.graph.input if item.name not in initializers]
    return {"inputs": describe(inputs), "outputs": describe(model.graph.output)}


def guess_role(signature: Mapping[str, list[dict[str, Any]]]) -> ModelRole | None:
    """What a model does, judged from its inputs and outputs (the shapes the known families use)."""
    inputs, outputs = signature["inputs"], signature["outputs"]
    shapes = [item["shape"] for item in inputs]
    if len(inputs) == 2 and any(len(s) == 2 and s[-1] == 512 for s in shapes):
        return "swapper"
    if len(inputs) != 1 or len(shapes[0]) != 4:
        return None
    height = shapes[0][2]
    if len(outputs) in (6, 9, 10, 15):
        return "detector"
    out_shape = outputs[0]["shape"] if len(outputs) == 1 else []
    if height == 112 and len(out_shape) == 2:
        return "recognizer"
    if len(out_shape) == 4 and height in (512, 1024) and out_shape[1] == 3:
        return "enhancer"
    if len(out_shape) in (2, 3) and height in (192, 256):
        return "landmarker"
    return None


def import_model(
    source: Path,
    name: str | None = None,
    folder: Path | None = None,
    manifest: Mapping[str, ModelSpec] | None = None,
) -> ModelSpec:
    """Copy a model file the user has into the models folder, checked against the manifest or registered."""
    folder = folder or models_dir()
    if not source.is_file():
        raise InputError(f"{source} is not a file: give the path of a model file")
    known = manifest if manifest is not None else load_manifest(folder=folder)
    by_file = {spec.file: spec for spec in known.values() if spec.file}
    spec = known.get(name or "") or by_file.get(source.name) or known.get(source.stem)
    digest = sha256_file(source)
    if spec is not None and spec.kind == "embedded":
        raise ModelError(f"'{spec.name}' is embedded in the package {spec.package}: it cannot be imported")
    if spec is not None and not spec.registered:
        if spec.sha256 and digest != spec.sha256:
            raise ModelError(
                f"{source} is not the file the manifest lists for '{spec.name}' (sha256 {digest}, expected "
                f"{spec.sha256}): import it under another --name to register it as a new model"
            )
    else:
        signature = inspect_onnx(source)
        role = guess_role(signature)
        if role is None:
            raise InputError(
                f"cannot tell what {source.name} does from its inputs and outputs: "
                "pass --name with the manifest name it replaces"
            )
        model_name = name or source.stem
        spec = ModelSpec(
            name=model_name,
            role=role,
            kind="onnx",
            file=f"{model_name}.onnx",
            sha256=digest,
            size=source.stat().st_size,
            registered=True,
            signature=signature,
            description=f"imported from {source.name}",
            metric="cosine" if role == "recognizer" else None,
            threshold=0.6 if role == "recognizer" else None,
        )
        _write_registered(folder, spec)
    target = cast(Path, model_path(spec, folder))
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(target.name + ".tmp")
    shutil.copyfile(source, temporary)
    os.replace(temporary, target)
    _record_digest(target, digest)
    return spec


def _write_registered(folder: Path, spec: ModelSpec) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    entries = [entry for entry in _read_registered(folder) if entry["name"] != spec.name]
    entries.append({key: value for key, value in spec.to_dict().items() if key != "registered"})
    temporary = folder / (REGISTERED_FILE + ".tmp")
    temporary.write_text(json.dumps(entries, indent=2), encoding="utf-8")
    os.replace(temporary, folder / REGISTERED_FILE)
