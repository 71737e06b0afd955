"""``run.py models list|verify|download|delete|import``: the model registry on the command line."""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from facefusion_ui.models import (
    ModelState,
    download_command,
    get_spec,
    import_model,
    load_manifest,
    model_state,
    models_dir,
    verify_model,
)

if TYPE_CHECKING:  # downloads (tqdm, http) are imported by the actions that download
    from facefusion_ui.model_download import DownloadProgress

CHECK_TEXT = {"sha256": "sha256", "hash_sidecar": "crc32+sha256", "package": "package", "none": "-"}
"""How each model is checked: a pinned sha256, or the publisher's CRC32 sidecar and then the sha256 recorded."""


def _size(value: int | None) -> str:
    return f"{value / 1e6:.1f}MB" if value else "-"


LICENCES = ("non-commercial", "GPL-3.0", "Apache-2.0", "BSD-3-Clause", "CC-BY-4.0", "MIT", "WTFPL")
"""The licence notes the catalog's descriptions use, the most restrictive first."""


def licence_note(description: str) -> str:
    """The licence a model's description names (``-`` where it names none it knows)."""
    for licence in LICENCES:
        if re.search(rf"(?<![\w-]){re.escape(licence)}(?![\w-])", description, re.IGNORECASE):
            return licence
    return "-"


def _state_row(state: ModelState) -> dict[str, Any]:
    spec = state.spec
    if spec.kind == "embedded":
        where = str(state.path) if state.installed else f"reinstall {spec.package}"
    else:
        where = str(state.path) if state.installed else f"not downloaded: {download_command(spec.name)}"
    return {
        "name": spec.name,
        "role": spec.role,
        "kind": spec.kind + (" (imported)" if spec.registered else ""),
        "installed": state.installed,
        "verified": state.verified,
        "verification": spec.verification,
        "family": spec.family,
        # dlib's HOG model is compiled into dlib itself: its "file" is the package, of no telling size
        "size": None if spec.name == "dlib_hog" else state.bytes_on_disk if state.installed else spec.size,
        "where": where,
        "metric": spec.metric,
        "threshold": spec.threshold,
        "licence": licence_note(spec.description),
    }


SIZE_QUESTIONS = 8
"""HEAD requests under way at once for ``models list --ask-sizes``."""


def ask_sizes(rows: list[dict[str, Any]], urls: dict[str, str], lookup: Callable[[str], int | None]) -> None:
    """Fill the size of each row that has none with what ``lookup`` (the server's ``Content-Length``)
    says for its model's address, marking it ``size_from: server``; a row the server says nothing for
    stays unknown."""
    missing = [row for row in rows if row["size"] is None and row["name"] in urls]
    with ThreadPoolExecutor(max_workers=SIZE_QUESTIONS) as pool:
        sizes = list(pool.map(lookup, [urls[row["name"]] for row in missing]))
    for row, size in zip(missing, sizes, strict=True):
        if size is not None:
            row["size"], row["size_from"] = size, "server"


def run_models_list(args: argparse.Namespace) -> int:
    specs = load_manifest()
    rows = [_state_row(model_state(spec)) for spec in specs.values()]
    if args.ask_sizes:
        from facefusion_ui.model_download import content_length

        urls = {spec.name: spec.url for spec in specs.values() if spec.url and spec.kind == "onnx"}
        ask_sizes(rows, urls, content_length)
    if args.json:
        print(json.dumps({"models_dir": str(models_dir()), "models": rows}, indent=2))
        return 0
    verified_text = {True: "yes", False: "MISMATCH", None: "-"}
    table = [["name", "role", "kind", "installed", "verified", "size", "check", "licence", "where"]]
    for row in rows:
        table.append(
            [
                row["name"],
                row["role"],
                row["kind"],
                "yes" if row["installed"] else "no",
                verified_text[row["verified"]],
                _size(row["size"]) + ("*" if row.get("size_from") == "server" else ""),
                CHECK_TEXT[row["verification"]],
                row["licence"],
                row["where"],
            ]
        )
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]) - 1)]
    for line in table:
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=False)) + "  " + line[-1])
    if any(row.get("size_from") == "server" for row in rows):
        print("* size as the publisher's server gives it (the catalog lists none)")
    elif args.ask_sizes:
        print("the publisher's server gave no sizes (offline, or it does not say): they stay unknown")
    elif any(row["size"] is None and row["kind"] == "onnx" for row in rows):
        print("sizes marked - are not in the catalog: 'models list --ask-sizes' asks the publisher's server")
    print(f"models folder: {models_dir()} (FACEFUSION_UI_MODELS to change)")
    return 0


def run_models_verify(args: argparse.Namespace) -> int:
    manifest = load_manifest()
    names = args.names or [name for name, spec in manifest.items() if model_state(spec).installed]
    failed = 0
    for name in names:
        state = verify_model(get_spec(name, manifest))
        if not state.installed:
            print(f"{name}: not installed ({download_command(name)})")
            failed += 1
        elif state.verified is False:
            print(f"{name}: sha256 MISMATCH: delete {state.path} and run '{download_command(name)}'")
            failed += 1
        elif state.spec.kind == "embedded":
            print(f"{name}: present in package {state.spec.package}")
        else:
            print(f"{name}: ok (sha256 verified)")
    return 1 if failed else 0


def _download_one(spec: Any) -> None:
    from tqdm import tqdm

    from facefusion_ui.model_download import download_model

    with tqdm(total=spec.size, unit="B", unit_scale=True, desc=spec.name) as bar:

        def progress(report: DownloadProgress, bar: Any = bar) -> None:
            if report.total and bar.total != report.total:
                bar.total = report.total
            bar.update(report.done - bar.n)

        path = download_model(spec, progress=progress)
    check = "sha256 pinned" if spec.sha256 else "publisher's hash, sha256 recorded"
    print(f"{spec.name}: downloaded and verified ({check}): {path}")


def run_models_download(args: argparse.Namespace) -> int:
    from facefusion_ui.model_service import required_closure

    manifest = load_manifest()
    for name in args.names:
        get_spec(name, manifest)
    for name in required_closure(args.names, manifest):
        spec = manifest[name]
        if spec.kind == "embedded":
            print(f"{spec.name}: embedded in the package {spec.package}, nothing to download")
            continue
        state = verify_model(spec) if model_state(spec).installed else model_state(spec)
        if state.installed and state.verified:
            print(f"{spec.name}: already downloaded and verified ({state.path})")
            continue
        if state.installed and state.verified is None:
            print(f"{spec.name}: already downloaded, not verifiable offline ({state.path})")
            continue
        _download_one(spec)
    return 0


def run_models_delete(args: argparse.Namespace) -> int:
    from facefusion_ui.model_service import ModelDownloads

    downloads = ModelDownloads()
    for name in args.names:
        freed = downloads.delete(name)
        print(f"{name}: deleted ({freed / 1e6:.1f} MB freed)" if freed else f"{name}: nothing to delete")
    return 0


def run_models_import(args: argparse.Namespace) -> int:
    spec = import_model(Path(args.path), name=args.name)
    origin = "registered as a new model" if spec.registered else "matches the manifest"
    print(f"{spec.name} ({spec.role}): imported into {models_dir()}; {origin}")
    return 0


def add_models_parser(commands: Any) -> None:
    models = commands.add_parser("models", help="list, verify, download or import models")
    model_commands = models.add_subparsers(dest="models_command", metavar="ACTION", required=True)
    listing = model_commands.add_parser("list", help="known models and their state")
    listing.add_argument("--json", action="store_true")
    listing.add_argument(
        "--ask-sizes",
        action="store_true",
        help="ask the publisher's server the size of each model the catalog gives none",
    )
    listing.set_defaults(handler=run_models_list)
    verify = model_commands.add_parser("verify", help="check sha256 of installed models")
    verify.add_argument("names", nargs="*", metavar="NAME")
    verify.set_defaults(handler=run_models_verify)
    download = model_commands.add_parser(
        "download", help="download models and the models they need (resumable, verified)"
    )
    download.add_argument("names", nargs="+", metavar="NAME")
    download.set_defaults(handler=run_models_download)
    delete = model_commands.add_parser("delete", help="delete downloaded models (files and sidecars)")
    delete.add_argument("names", nargs="+", metavar="NAME")
    delete.set_defaults(handler=run_models_delete)
    importing = model_commands.add_parser("import", help="add a model file you already have")
    importing.add_argument("path", metavar="PATH")
    importing.add_argument("--name", help="manifest name, when the file name does not say it")
    importing.set_defaults(handler=run_models_import)
