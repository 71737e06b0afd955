"""Processor plugins: a third-party package registered through an entry point is listed and runs, and
the options it declares reach it from the command line, the queue and the pipeline."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import cv2
import numpy as np
import pytest

from facefusion_ui.errors import PluginError, SettingsError, UsageError
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.jobs.store import JobStore
from facefusion_ui.pipeline import FramePipeline
from facefusion_ui.processors.base import FrameContext, Processor
from facefusion_ui.processors.face_debugger import MASK
from facefusion_ui.processors.options import ProcessorOption, check_option_values, resolve_options
from facefusion_ui.processors.registry import BUILTIN_PROCESSORS, ENTRY_POINT_GROUP, ProcessorEntry, ProcessorRegistry
from facefusion_ui.state_manager import Settings
from tests.conftest import ROOT, RunCli
from tests.support import media

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 only
    import tomli as tomllib

from tests.support.plugins import install_plugin, registry_with_plugins


def test_plugin_is_discovered_and_processes_a_frame(tmp_path: Path) -> None:
    install_plugin(tmp_path)
    script = textwrap.dedent(
        """
        import numpy as np
        from facefusion_ui.faces.runtime import ModelRuntime
        from facefusion_ui.processors.base import FrameContext
        from facefusion_ui.processors.registry import ProcessorRegistry
        from facefusion_ui.state_manager import Settings

        registry = ProcessorRegistry.discover()
        entry = registry.entry("invert")
        print(entry.origin)
        processor = registry.create("invert", Settings(), ModelRuntime.create(Settings()))
        frame = np.full((4, 6, 3), 10, dtype=np.uint8)
        out = processor.process_frame(frame, FrameContext(0, 0.0, Settings()))
        print(int(out[0, 0, 0]), out.shape)
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    completed = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=False, timeout=120
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.splitlines() == ["plugin from ffui-test-plugin", "245 (4, 6, 3)"]


def test_plugin_choices_reach_the_cli(tmp_path: Path) -> None:
    install_plugin(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    script = "from facefusion_ui.processors.registry import ProcessorRegistry as R; print(R.discover().names())"
    completed = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=False, timeout=120
    )
    assert "'invert'" in completed.stdout and "'broken'" in completed.stdout


def test_protocol_is_checked_when_created(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_plugin(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    runtime = ModelRuntime.create(Settings())
    registry = ProcessorRegistry(
        [
            ProcessorEntry("broken", "ffui_test_plugin:Broken", "plugin from test"),
            ProcessorEntry("gone", "no_such_module:Thing", "plugin from test"),
            ProcessorEntry("invert", "ffui_test_plugin:Invert", "plugin from test"),
        ]
    )
    with pytest.raises(PluginError, match="does not follow the Processor protocol"):
        registry.create("broken", Settings(), runtime)
    with pytest.raises(PluginError, match="cannot be loaded"):
        registry.create("gone", Settings(), runtime)
    with pytest.raises(UsageError, match="unknown processor 'nope'"):
        registry.create("nope", Settings(), runtime)
    processor = registry.create("invert", Settings(), runtime)
    assert isinstance(processor, Processor)
    frame = np.zeros((2, 2, 3), np.uint8)
    assert processor.process_frame(frame, FrameContext(3, 0.1, Settings())).max() == 255


def test_plugin_cannot_take_a_builtin_name() -> None:
    registry = ProcessorRegistry(
        [
            ProcessorEntry("face_swapper", "a:B", "built-in"),
            ProcessorEntry("face_swapper", "evil:C", "plugin from evil"),
        ]
    )
    assert registry.entry("face_swapper").origin == "built-in"


def write_photos(folder: Path) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    source, target = folder / "astronaut.png", folder / "grace.png"
    cv2.imwrite(str(source), media.astronaut())
    cv2.imwrite(str(target), media.grace_hopper())
    return source, target


def test_cli_option_reaches_the_plugins_process_frame(tmp_path: Path, run_cli: RunCli) -> None:
    site = install_plugin(tmp_path / "site")
    source, target = write_photos(tmp_path / "media")
    output = tmp_path / "out.png"
    options = ["--processors", "tint", "--tint-level", "77", "--tint-channel", "green", "--tint-gain", "1"]
    completed = run_cli(
        ["process", "-s", str(source), "-t", str(target), "-o", str(output), *options], env={"PYTHONPATH": str(site)}
    )
    assert completed.returncode == 0, completed.stderr
    tinted = media.read(output)
    assert (tinted[:, :, 1] == 77).all()
    assert np.array_equal(tinted[:, :, 0], media.grace_hopper()[:, :, 0])  # the other channels untouched
    help_text = run_cli(["process", "--help"], env={"PYTHONPATH": str(site)}).stdout
    assert "--tint-level" in help_text and "--no-tint-enabled" in help_text and "blue,green,red" in help_text


def test_queued_job_keeps_its_processor_options(tmp_path: Path, run_cli: RunCli, private_home: Path) -> None:
    site = install_plugin(tmp_path / "site")
    source, target = write_photos(tmp_path / "media")
    env = {"PYTHONPATH": str(site)}
    tinted = ["--processors", "tint", "--tint-level", "33", "--tint-gain", "0.5"]
    (tmp_path / "out").mkdir()
    added = run_cli(
        ["batch", "add", "-s", str(source), "-t", str(target), "--output-dir", str(tmp_path / "out"), *tinted],
        env=env,
    )
    assert added.returncode == 0, added.stderr
    (job,) = JobStore(private_home / "jobs.db").jobs()
    stored = job.payload["settings"]
    assert stored["processor_options"] == {"tint": {"level": 33, "gain": 0.5}}
    assert Settings.from_dict(stored).to_dict() == stored
    ran = run_cli(["batch", "run", "--until-empty"], env=env, timeout=300)
    assert ran.returncode == 0, ran.stderr
    done = JobStore(private_home / "jobs.db").get(job.id)
    assert done.status == "completed", done.last_error
    assert (media.read(Path(job.payload["output"]))[:, :, 2] == 16).all()  # 33 x 0.5, in the default channel


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--tint-level", "300"], "invalid value 300 for option 'tint.level': allowed a whole number from 0 to 255"),
        (["--tint-level", "lots"], "'lots' is not a whole number from 0 to 255"),
        (["--tint-gain", "2.5"], "invalid value 2.5 for option 'tint.gain': allowed a number from 0 to 1"),
        (["--tint-channel", "purple"], "invalid choice: 'purple'"),
        (["--tint-strength", "1"], "unrecognized arguments: --tint-strength 1"),
    ],
)
def test_bad_processor_option_is_one_line_and_exit_2(
    tmp_path: Path, run_cli: RunCli, options: list[str], message: str
) -> None:
    site = install_plugin(tmp_path / "site")
    completed = run_cli(
        ["process", "-s", "a.png", "-t", "b.png", "-o", "c.png", *options], env={"PYTHONPATH": str(site)}
    )
    assert completed.returncode == 2
    assert completed.stderr.count("\n") == 1 and completed.stderr.startswith("error: ")
    assert message in completed.stderr


def test_unknown_saved_processor_option_is_one_line_and_exit_2(
    tmp_path: Path, run_cli: RunCli, private_home: Path
) -> None:
    site = install_plugin(tmp_path / "site")
    private_home.mkdir(parents=True, exist_ok=True)
    (private_home / "settings.json").write_text(json.dumps({"processor_options": {"tint": {"strength": 3}}}))
    for command in (["process", "-s", "a.png", "-t", "b.png", "-o", "c.png"], ["ui", "--port", "1"]):
        completed = run_cli(command, env={"PYTHONPATH": str(site)})
        assert completed.returncode == 2, completed.stderr
        assert completed.stderr == (
            "error: unknown option 'strength' for processor 'tint': known options: level, channel, enabled, gain\n"
        )


def test_options_reach_the_context_in_the_pipeline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shared_runtime: ModelRuntime
) -> None:
    install_plugin(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    source, _ = write_photos(tmp_path / "media")
    registry = registry_with_plugins()
    settings = Settings(processors=("tint",), processor_options={"tint": {"channel": "blue", "level": 9}})
    assert registry.options_for("tint", settings) == {"level": 9, "channel": "blue", "enabled": True, "gain": 1.0}
    pipeline = FramePipeline.build(settings, shared_runtime, [source], registry)
    out = pipeline.process(media.grace_hopper(), 0)
    assert (out[:, :, 0] == 9).all()
    with pytest.raises(SettingsError, match=r"invalid value 'cyan' for option 'tint\.channel'"):
        FramePipeline.build(
            Settings(processors=("tint",), processor_options={"tint": {"channel": "cyan"}}),
            shared_runtime,
            [source],
            registry,
        )


def test_a_plugin_declaring_the_optional_face_parts_is_treated_as_a_builtin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shared_runtime: ModelRuntime
) -> None:
    """A plugin that says what the embedded swapper says (it draws with smoothed meshes, never reads the
    68 landmarks) gets what the swapper gets: a video's meshes smoothed, faces followed by their meshes
    without a landmark pass; and the face debugger after it draws the outline the plugin gives."""
    install_plugin(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    source, _ = write_photos(tmp_path / "media")
    outliner = ProcessorEntry("outliner", "ffui_test_plugin:Outliner", "plugin from ffui-test-plugin")
    registry = ProcessorRegistry([*registry_with_plugins().entries(), outliner])

    def pipeline(*processors: str) -> FramePipeline:
        return FramePipeline.build(Settings(processors=processors), shared_runtime, [source], registry)

    for chain in (pipeline("face_swapper"), pipeline("outliner")):
        assert chain.meshes is None and not chain.reads_68
        chain.start_video(0)
        assert chain.meshes is not None
    assert pipeline("invert").reads_68  # a processor that does not say may read them
    debugged = pipeline("outliner", "face_debugger")
    frame = media.grace_hopper()
    analysis = debugged.analyse(frame)
    [face] = analysis.selected
    result = debugged.apply(frame.copy(), analysis)
    x1, y1, x2, y2 = (float(value) for value in face.bbox)
    grow, middle = (x2 - x1) / 10, (y1 + y2) / 2
    for x in (x1 - grow, x2 + grow):
        assert colour_near(result, x, middle, MASK)


def test_a_plugin_says_what_it_does_and_which_settings_are_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the built-ins do on their factories: the page labels it with its summary, shows its own settings
    beside it, and checks a model among them at save only while it runs."""
    from facefusion_ui.ui.processor_options import processor_label, processor_settings
    from facefusion_ui.ui.settings import in_use

    install_plugin(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    outliner = ProcessorEntry("outliner", "ffui_test_plugin:Outliner", "plugin from ffui-test-plugin")
    registry = ProcessorRegistry([*registry_with_plugins().entries(), outliner])
    assert processor_label(registry, "outliner") == "outliner: outlines the faces it would change"
    assert processor_label(registry, "face_swapper").startswith("face_swapper: puts the source person's face")
    assert processor_label(registry, "invert") == "invert"  # says nothing
    assert processor_settings(registry, "outliner") == ("face_enhancer_model",)
    assert "face_swapper_model" in processor_settings(registry, "face_swapper")
    assert in_use(registry, "face_enhancer_model", Settings(processors=("outliner",)))
    assert not in_use(registry, "face_enhancer_model", Settings(processors=("face_swapper",)))
    assert in_use(registry, "face_detector_model", Settings(processors=("invert",)))  # no processor's own


def colour_near(frame: np.ndarray, x: float, y: float, colour: tuple[int, int, int]) -> bool:
    """Some pixel within 2 px of (x, y) has ``colour`` (give or take antialiasing)."""
    patch = frame[max(round(y) - 2, 0) : round(y) + 3, max(round(x) - 2, 0) : round(x) + 3].astype(int)
    return bool((np.abs(patch - np.array(colour)).max(axis=2) <= 40).any())


def test_declared_options_are_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_plugin(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = registry_with_plugins()
    assert [option.name for option in registry.options("tint")] == ["level", "channel", "enabled", "gain"]
    assert registry.options("invert") == () and registry.options("face_swapper") == ()
    assert set(registry.option_table()) == {*BUILTIN_PROCESSORS, "invert", "flaky", "tint"}
    assert [option.name for option in registry.options("frame_enhancer")] == ["model", "blend", "output_size"]
    with pytest.raises(PluginError, match="a str option needs its choices"):
        ProcessorOption("mode", str, "x")
    with pytest.raises(PluginError, match="default 300 is not a whole number from 0 to 255"):
        ProcessorOption("level", int, 300, low=0, high=255)
    with pytest.raises(PluginError, match="must be lowercase"):
        ProcessorOption("Level", int, 1)
    with pytest.raises(SettingsError, match="unknown option 'x' for processor 'invert': known options: it takes none"):
        resolve_options("invert", (), {"x": 1})
    with pytest.raises(SettingsError, match="options given for processor 'nope', which is not installed"):
        check_option_values(registry.option_table(), {"nope": {}})


def test_builtins_are_declared_as_entry_points_like_a_plugin() -> None:
    with (ROOT / "pyproject.toml").open("rb") as handle:
        declared = tomllib.load(handle)["project"]["entry-points"][ENTRY_POINT_GROUP]
    assert declared == dict(BUILTIN_PROCESSORS)


def test_builtins_come_from_the_packages_own_entry_points(tmp_path: Path) -> None:
    """The package's own entry points are 'built-in'; a built-in its metadata lacks (an older install)
    comes from the fallback table; another distribution's are plugins."""
    own = tmp_path / "facefusion_ui-0.1.0.dist-info"
    own.mkdir()
    (own / "METADATA").write_text("Metadata-Version: 2.1\nName: facefusion-ui\nVersion: 0.1.0\n")
    (own / "entry_points.txt").write_text(
        f"[{ENTRY_POINT_GROUP}]\nface_swapper = facefusion_ui.processors.face_swapper:FaceSwapper\n"
        "frame_enhancer = facefusion_ui.processors.frame_enhancer:FrameEnhancer\n"
    )
    install_plugin(tmp_path)
    points = [
        point
        for distribution in importlib.metadata.distributions(path=[str(tmp_path)])
        for point in distribution.entry_points
        if point.group == ENTRY_POINT_GROUP
    ]
    registry = ProcessorRegistry.discover(plugins=points)
    origins = {entry.name: entry.origin for entry in registry.entries()}
    assert {name: origins[name] for name in BUILTIN_PROCESSORS} == dict.fromkeys(BUILTIN_PROCESSORS, "built-in")
    assert origins["invert"] == "plugin from ffui-test-plugin"
    assert registry.names()[:2] == ("face_swapper", "frame_enhancer")  # the package's own first


def test_the_built_ins_base_classes(tmp_path: Path) -> None:
    """``ModelProcessor``: its models checked with their download command, counts read from the attributes
    it names; ``MaskedProcessor`` adds the mask stage's models and counts, and says it masks."""
    import threading

    from facefusion_ui.inference import SessionPool
    from facefusion_ui.masks.stage import MaskingProcessor, MaskStage
    from facefusion_ui.models import load_manifest
    from facefusion_ui.processors.base import MaskedProcessor, ModelProcessor

    runtime = ModelRuntime(load_manifest(folder=tmp_path), tmp_path, SessionPool(("cpu",)))

    class Colouring(ModelProcessor):
        counted = ("frames_done", "faces_done")

        def __init__(self) -> None:
            self.runtime, self._lock = runtime, threading.Lock()
            self.frames_done, self.faces_done = 3, 0

        def own_models(self) -> tuple[str, ...]:
            return ("ddcolor",)

    class Masking(MaskedProcessor):
        def __init__(self) -> None:
            self.runtime, self._lock = runtime, threading.Lock()
            self.masks = MaskStage(
                Settings(face_mask_types=("box", "occlusion"), face_occluder_model="xseg_2"), runtime
            )

        def own_models(self) -> tuple[str, ...]:
            return ("gfpgan_1.4", "xseg_2")

    colouring, masking = Colouring(), Masking()
    assert colouring.pre_check() == ["model 'ddcolor' is not downloaded: run 'python run.py models download ddcolor'"]
    assert colouring.counts() == {"frames_done": 3, "faces_done": 0}
    assert not isinstance(colouring, MaskingProcessor) and isinstance(masking, MaskingProcessor)
    assert masking.required_models() == ("gfpgan_1.4", "xseg_2")  # each once, its own first
    assert masking.mask_counts()["faces_masked"] == 0 and masking.counts() == {}
    colouring.release()  # nothing loaded: nothing to free, no error


def test_installed_entry_points_are_read_once_a_process(monkeypatch: pytest.MonkeyPatch) -> None:
    from facefusion_ui.processors import registry as registry_module

    reads: list[str] = []

    def counted(group: str) -> object:
        reads.append(group)
        return importlib.metadata.entry_points(group=group)

    monkeypatch.setattr(registry_module, "entry_points", counted)
    registry_module._entry_points_on.cache_clear()
    try:
        names = {ProcessorRegistry.discover().names() for _ in range(3)}
    finally:
        registry_module._entry_points_on.cache_clear()
    assert reads == [ENTRY_POINT_GROUP] and len(names) == 1
    assert set(BUILTIN_PROCESSORS) <= set(names.pop())


def test_a_distributions_name_is_read_once_a_process() -> None:
    """Each read of an entry point's distribution name parses its whole metadata file: the registry,
    discovered several times a run, reads each installed distribution's name once."""
    from facefusion_ui.processors import registry as registry_module

    registry_module._distribution_name.cache_clear()
    names = {ProcessorRegistry.discover().names() for _ in range(3)}
    read = registry_module._distribution_name.cache_info()
    distributions = {id(point.dist) for point in registry_module.installed_processor_entry_points()}
    assert len(names) == 1 and read.misses == len(distributions) and read.hits > 0


def test_a_plugin_added_to_the_import_path_is_found_after_a_first_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = ProcessorRegistry.discover().names()
    assert "invert" not in before
    monkeypatch.syspath_prepend(str(install_plugin(tmp_path)))
    assert {"invert", "tint"} <= set(ProcessorRegistry.discover().names())
