"""Processor options: what a processor declares it takes (``ProcessorOption``), and the checks that turn
the values given (command line, page, saved settings, a queued job's snapshot) into the values a run uses.

Values live in ``Settings.processor_options`` under the processor's name, e.g.
``{"my_filter": {"strength": 0.5}}``: plain JSON, so a queued job keeps the options it was queued with.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from facefusion_ui.errors import PluginError, SettingsError

OptionValue = bool | int | float | str
OptionTable = Mapping[str, Sequence["ProcessorOption"]]
"""processor name -> the options it declares (``ProcessorRegistry.option_table()``)."""

OPTION_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
OPTION_TYPES: tuple[type, ...] = (bool, int, float, str)


@dataclass(frozen=True)
class ProcessorOption:
    """One option of a processor. ``type`` is bool, int, float or str; a str option takes one of
    ``choices``; an int or float option may have a range ``low``..``high`` (the page shows a slider)."""

    name: str
    type: type
    default: OptionValue
    help: str = ""
    choices: tuple[str, ...] = ()
    low: float | None = None
    high: float | None = None

    def __post_init__(self) -> None:
        if not OPTION_NAME.match(self.name):
            raise PluginError(f"processor option name '{self.name}' must be lowercase letters, digits and _")
        if self.type not in OPTION_TYPES:
            raise PluginError(f"processor option '{self.name}': type must be bool, int, float or str")
        if self.type is str and not self.choices:
            raise PluginError(f"processor option '{self.name}': a str option needs its choices")
        if (self.low is None) != (self.high is None) or (self.low is not None and self.type not in (int, float)):
            raise PluginError(f"processor option '{self.name}': a range needs low and high, on an int or float")
        try:
            self.validate("", self.default)
        except SettingsError:
            raise PluginError(
                f"processor option '{self.name}': default {self.default!r} is not {self.allowed()}"
            ) from None

    def allowed(self) -> str:
        if self.type is bool:
            return "true or false"
        if self.type is str:
            return ", ".join(self.choices)
        kind = "a whole number" if self.type is int else "a number"
        return f"{kind} from {self.low:g} to {self.high:g}" if self.low is not None else kind

    def validate(self, processor: str, value: Any) -> OptionValue:
        """``value`` checked and normalised (an int given for a float option becomes a float)."""
        if self.type is bool:
            valid = isinstance(value, bool)
        elif self.type is str:
            valid = value in self.choices
        else:
            kinds = (int,) if self.type is int else (int, float)
            valid = isinstance(value, kinds) and not isinstance(value, bool)
            if valid and self.low is not None and self.high is not None:
                valid = self.low <= value <= self.high
        if not valid:
            raise SettingsError(
                f"invalid value {value!r} for option '{processor}.{self.name}': allowed {self.allowed()}"
            )
        return float(value) if self.type is float else value

    def flag(self, processor: str) -> str:
        """The command-line option: ``--my-filter-strength``."""
        return f"--{processor}-{self.name}".replace("_", "-").replace(".", "-")


def resolve_options(
    processor: str, declared: Sequence[ProcessorOption], given: Mapping[str, Any]
) -> dict[str, OptionValue]:
    """Every declared option of ``processor``: the given value (checked) or else its default."""
    by_name = {option.name: option for option in declared}
    unknown = sorted(set(given) - set(by_name))
    if unknown:
        known = ", ".join(by_name) if by_name else "it takes none"
        raise SettingsError(f"unknown option '{unknown[0]}' for processor '{processor}': known options: {known}")
    return {name: option.validate(processor, given.get(name, option.default)) for name, option in by_name.items()}


def check_option_values(table: OptionTable, values: Mapping[str, Mapping[str, Any]]) -> None:
    """Every processor named in ``values`` is installed and every value is one it declares and accepts."""
    for processor, given in values.items():
        if processor not in table:
            raise SettingsError(
                f"options given for processor '{processor}', which is not installed: "
                "install it or remove its processor_options"
            )
        resolve_options(processor, table[processor], given)
