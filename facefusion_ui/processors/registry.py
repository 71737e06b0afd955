"""The processor registry: built-ins plus plugins found through entry points.

A plugin package declares, in its pyproject.toml::

    [project.entry-points."facefusion_ui.processors"]
    my_filter = "my_package.module:MyFilter"

where ``MyFilter(settings, runtime)`` returns an object following ``processors.base.Processor``. A class
that declares ``options`` (``processors.base.ConfigurableProcessor``) takes settings of its own.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points

from facefusion_ui.errors import PluginError, UsageError
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.processors.base import ConfigurableProcessor, Processor, ProcessorFactory
from facefusion_ui.processors.options import OptionValue, ProcessorOption, resolve_options
from facefusion_ui.state_manager import Settings

ENTRY_POINT_GROUP = "facefusion_ui.processors"
BUILTIN_PROCESSORS: Mapping[str, str] = {
    "face_swapper": "facefusion_ui.processors.face_swapper:FaceSwapper",
    "face_enhancer": "facefusion_ui.processors.face_enhancer:FaceEnhancer",
}
"""name -> "module:attribute" of the built-in processors (filled as they land)."""

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ProcessorEntry:
    name: str
    target: str
    origin: str
    """'built-in', or 'plugin from DISTRIBUTION'."""


def _load_target(target: str) -> object:
    module_name, _, attribute = target.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attribute) if attribute else module


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
        found = plugins if plugins is not None else entry_points(group=ENTRY_POINT_GROUP)
        entries = [ProcessorEntry(name, target, "built-in") for name, target in builtins.items()]
        for point in found:
            distribution = point.dist.name if point.dist is not None else "an unknown package"
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
