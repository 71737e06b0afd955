"""The one line beside the face swapper's dropdown: online, which model gives the best likeness, its size
and one click to download it; offline, that the embedded swapper needs no download. Decided by ``hint``
from what the page knows (the network is known to answer once the recommended model's size came back),
said once in its place, never as a pop-up."""

from __future__ import annotations

from typing import NamedTuple

from facefusion_ui.types import FaceSwapperModel

RECOMMENDED_SWAPPER: FaceSwapperModel = "hyperswap_1a_256"
"""The swapper offered for likeness: FaceFusion's own default face swapper since 3.5, the one its
authors ship as the best identity/attribute balance of their HyperSwap family (1b and 1c are the same
network trained to other balances, for when 1a misses on a particular face); a 256 px model, where
inswapper_128 works on half the resolution and the embedded ``mesh_warp`` only moves the source's pixels."""


class Hint(NamedTuple):
    """What the line says, and whether the Download button beside it is shown."""

    line: str
    offer: bool


def hint(
    chosen: str,
    recommended: str,
    size: int | None,
    *,
    answered: bool,
    downloaded: bool,
    downloading: bool = False,
    embedded: str = "mesh_warp",
) -> Hint:
    """The line for the swapper dropdown showing ``chosen``. ``size``: the recommended model's download
    size when known; ``answered``: whether the look-up for it ended (unknown then means no network);
    ``embedded``: the swapper that comes with the program. Empty when there is nothing to say: the
    recommended model is chosen (its own Download button is beside it), or the look-up is on its way."""
    if downloaded:
        if chosen == recommended:
            return Hint("", False)
        return Hint(f"Best likeness: **{recommended}** is downloaded: choose it in the dropdown to use it", False)
    if downloading:
        return Hint(f"Best likeness: **{recommended}** is downloading (its progress is under the processors)", False)
    if size is not None:
        if chosen == recommended:
            return Hint("", False)
        return Hint(f"Best likeness: **{recommended}** ({size / 1e6:.0f} MB): press Download to get it", True)
    if answered:
        return Hint(
            f"The embedded swapper ({embedded}) needs no download "
            "(no network now: models can be added later in Settings)",
            False,
        )
    return Hint("", False)
