"""The processor registry: every processor is found through entry points, the built-ins included.

A plugin package declares, in its pyproject.toml::

    [project.entry-points."facefusion_ui.processors"]
    my_filter = "my_package.module:MyFilter"

where ``MyFilter(settings, runtime)`` returns an object following ``processors.base.Processor``. A factory
that declares ``options`` (``processors.base.ConfigurableProcessor``) takes settings of its own; one that
declares ``summary`` or ``reads_settings`` is described on the page as the built-ins are.

facefusion-ui declares its own processors the same way (its pyproject.toml); they are 'built-in' because
their entry points come from this package's distribution.
"""

from __future__ import annotations

import functools
import importlib
import logging
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib.metadata import Distribution, EntryPoint, entry_points
from typing import TYPE_CHECKING

from facefusion_ui.errors import PluginError, UsageError
from facefusion_ui.processors.base import (
    ConfigurableProcessor,
    DescribedProcessor,
    Processor,
    ProcessorFactory,
    SettingsReadingProcessor,
    SourceReadingProcessor,
)
from facefusion_ui.processors.options import OptionValue, ProcessorOption, resolve_options

if TYPE_CHECKING:
    from facefusion_ui.faces.runtime import ModelRuntime
    from facefusion_ui.state_manager import Settings

ENTRY_POINT_GROUP = "facefusion_ui.processors"
OWN_DISTRIBUTION = "facefusion-ui"
BUILTIN_PROCESSORS: Mapping[str, str] = {
    "face_swapper": "facefusion_ui.processors.face_swapper:FaceSwapper",
    "face_enhancer": "facefusion_ui.processors.face_enhancer:FaceEnhancer",
    "frame_enhancer": "facefusion_ui.processors.frame_enhancer:FrameEnhancer",
    "lip_syncer": "facefusion_ui.processors.lip_syncer:LipSyncer",
    "face_debugger": "facefusion_ui.processors.face_debugger:FaceDebugger",
    "background_remover": "facefusion_ui.processors.background_remover:BackgroundRemover",
    "age_modifier": "facefusion_ui.processors.age_modifier:AgeModifier",
    "frame_colorizer": "facefusion_ui.processors.frame_colorizer:FrameColorizer",
    "expression_restorer": "facefusion_ui.processors.expression_restorer:ExpressionRestorer",
    "face_editor": "facefusion_ui.processors.face_editor:FaceEditor",
    "deep_swapper": "facefusion_ui.processors.deep_swapper:DeepSwapper",
}
"""The built-ins' entry points again, as pyproject.toml declares them (``tests/test_plugins.py`` checks the
two agree), used only for a built-in whose entry point the package's metadata lacks. It cannot be derived
at run time: pyproject.toml is not installed with the package, and the installed metadata is what is
missing or stale in the very cases this serves (a checkout run without installing it, or one installed
before that processor existed)."""

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ProcessorEntry:
    name: str
    target: str
    origin: str
    """'built-in', or 'plugin from DISTRIBUTION'."""


def _distribution(point: EntryPoint) -> str:
    if point.dist is None:
        return "an unknown package"
    return _distribution_name(point.dist)


@functools.lru_cache(maxsize=64)
def _distribution_name(dist: Distribution) -> str:
    """The distribution's name as pip writes it, read once per distribution object (the entry points are
    read once, ``_entry_points_on``): each read parses its whole metadata file, half a millisecond, and a
    run discovers the registry several times, each asking twice per entry point."""
    return dist.name.lower().replace("_", "-")


def _load_target(target: str) -> object:
    module_name, _, attribute = target.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attribute) if attribute else module


def installed_processor_entry_points() -> tuple[EntryPoint, ...]:
    """The entry points of the processors' group, read once for each import path: reading them walks the
    metadata of every installed distribution (about 0.1 s with a few hundred installed), and a run builds
    its registry several times (the parser, the pipeline, the source check). A folder added to
    ``sys.path`` (a plugin installed meanwhile) reads them again."""
    return _entry_points_on(tuple(sys.path))


@functools.lru_cache(maxsize=1)
def _entry_points_on(path: tuple[str, ...]) -> tuple[EntryPoint, ...]:
    del path  # the cache's key: entry_points() reads the distributions found on sys.path
    return tuple(entry_points(group=ENTRY_POINT_GROUP))


class ProcessorRegistry:
    def __init__(self, entries: Iterable[ProcessorEntry]) -> None:
        self._entries: dict[str, ProcessorEntry] = {}
        for entry in entries:
            if entry.name in self._entries:
                logger.warning(
                    "processor '%s' from %s ignored: the name is taken by %s",
                    entry.name,
                    entry.origin,
                    self._entries[entry.name].origin,
                )
                continue
            self._entries[entry.name] = entry

    @classmethod
    def discover(
        cls, builtins: Mapping[str, str] = BUILTIN_PROCESSORS, plugins: Iterable[EntryPoint] | None = None
    ) -> ProcessorRegistry:
        """Every processor of the entry-point group (``plugins`` instead when given): this package's own
        first, as 'built-in', then the fallback table's built-ins its metadata lacks, then the others."""
        found = list(plugins if plugins is not None else installed_processor_entry_points())
        own = [point for point in found if _distribution(point) == OWN_DISTRIBUTION]
        entries = [ProcessorEntry(point.name, point.value, "built-in") for point in own]
        declared = {point.name for point in own}
        entries += [
            ProcessorEntry(name, target, "built-in") for name, target in builtins.items() if name not in declared
        ]
        for point in found:
            distribution = _distribution(point)
            if distribution != OWN_DISTRIBUTION:
                entries.append(ProcessorEntry(point.name, point.value, f"plugin from {distribution}"))
        return cls(entries)

    def names(self) -> tuple[str, ...]:
        return tuple(self._entries)

    def entries(self) -> tuple[ProcessorEntry, ...]:
        return tuple(self._entries.values())

    def entry(self, name: str) -> ProcessorEntry:
        try:
            return self._entries[name]
        except KeyError:
            known = ", ".join(self._entries) or "none installed"
            raise UsageError(f"unknown processor '{name}': available processors are {known}") from None

    def reads_source_face(self, names: Iterable[str]) -> bool:
        """Whether a processor of ``names`` puts the source photos' face in (``SourceReadingProcessor``)."""
        for name in names:
            factory = self.factory(name)
            if not isinstance(factory, SourceReadingProcessor) or factory.needs_source_face:
                return True
        return False

    def factory(self, name: str) -> ProcessorFactory:
        """What the processor's entry point names (imported now)."""
        entry = self.entry(name)
        try:
            factory: ProcessorFactory = _load_target(entry.target)  # type: ignore[assignment]
        except (ImportError, AttributeError) as error:
            raise PluginError(
                f"processor '{name}' ({entry.origin}) cannot be loaded from {entry.target}: {error}; "
                "reinstall or remove that package"
            ) from error
        if not callable(factory):
            raise PluginError(f"processor '{name}' ({entry.origin}): {entry.target} is not callable")
        return factory

    def options(self, name: str) -> tuple[ProcessorOption, ...]:
        """The options the processor declares (none when its factory is not a ``ConfigurableProcessor``)."""
        factory = self.factory(name)
        if not isinstance(factory, ConfigurableProcessor):
            return ()
        declared = tuple(factory.options)
        if not all(isinstance(option, ProcessorOption) for option in declared):
            raise PluginError(f"processor '{name}' ({self.entry(name).origin}): options must be ProcessorOption")
        if len({option.name for option in declared}) != len(declared):
            raise PluginError(f"processor '{name}' ({self.entry(name).origin}) declares an option twice")
        return declared

    def option_table(self) -> dict[str, tuple[ProcessorOption, ...]]:
        """Every loadable processor's options; one that cannot be loaded is left out (it fails, with its
        reason, when a job uses it)."""
        table: dict[str, tuple[ProcessorOption, ...]] = {}
        for name in self._entries:
            try:
                table[name] = self.options(name)
            except PluginError as error:
                logger.debug("no options for %s: %s", name, error)
        return table

    def summary(self, name: str) -> str:
        """What the processor does, as its factory says (``DescribedProcessor``); empty when it does not
        say or cannot be loaded."""
        try:
            factory = self.factory(name)
        except PluginError:
            return ""
        return str(factory.summary) if isinstance(factory, DescribedProcessor) else ""

    def settings_read(self, name: str) -> tuple[str, ...]:
        """The ``Settings`` fields that are the processor's own (``SettingsReadingProcessor``); none when
        it does not say or cannot be loaded."""
        try:
            factory = self.factory(name)
        except PluginError:
            return ()
        return tuple(factory.reads_settings) if isinstance(factory, SettingsReadingProcessor) else ()

    def options_for(self, name: str, settings: Settings) -> dict[str, OptionValue]:
        """The processor's option values for a run: the settings' (checked) or else the defaults."""
        return resolve_options(name, self.options(name), settings.processor_options.get(name, {}))

    def create(self, name: str, settings: Settings, runtime: ModelRuntime) -> Processor:
        entry = self.entry(name)
        processor = self.factory(name)(settings, runtime)
        if not isinstance(processor, Processor):
            raise PluginError(
                f"processor '{name}' ({entry.origin}) does not follow the Processor protocol "
                "(name, required_models, pre_check, process_frame, release)"
            )
        return processor
