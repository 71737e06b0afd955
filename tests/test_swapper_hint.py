"""The face swapper's line on the Single tab, as ``swapper_hint.hint`` decides it from the chosen model,
the recommended one, whether its size is known (online), whether the look-up ended, and whether it is
downloaded; and ``ModelSizes.answered``, which tells no network from an answer on its way."""

from __future__ import annotations

import time
import typing

from facefusion_ui.models import load_manifest
from facefusion_ui.types import FaceSwapperModel
from facefusion_ui.ui.model_sizes import ModelSizes
from facefusion_ui.ui.swapper_hint import RECOMMENDED_SWAPPER, Hint, hint
from tests.support.http_server import ServedFile, serve

BEST = RECOMMENDED_SWAPPER


def test_the_recommended_swapper_is_a_hyperswap_model_to_download() -> None:
    assert BEST in typing.get_args(FaceSwapperModel)
    spec = load_manifest()[BEST]
    assert spec.kind == "onnx" and spec.family == "hyperswap" and spec.role == "swapper"


def test_online_it_names_the_model_its_size_and_offers_one_click() -> None:
    line, offer = hint("mesh_warp", BEST, 402_500_000, answered=True, downloaded=False)
    assert line == f"Best likeness: **{BEST}** (402 MB): press Download to get it" and offer
    assert hint("inswapper_128", BEST, 402_500_000, answered=True, downloaded=False).offer


def test_chosen_and_not_downloaded_leaves_it_to_the_dropdowns_own_download() -> None:
    assert hint(BEST, BEST, 402_500_000, answered=True, downloaded=False) == Hint("", False)


def test_downloaded_it_says_so_once_and_nothing_when_it_is_the_choice() -> None:
    line, offer = hint("mesh_warp", BEST, 402_500_000, answered=True, downloaded=True)
    assert line == f"Best likeness: **{BEST}** is downloaded: choose it in the dropdown to use it" and not offer
    # downloaded wins whatever the network says: no size needed to use it
    assert hint("mesh_warp", BEST, None, answered=True, downloaded=True).line == line
    assert hint(BEST, BEST, None, answered=True, downloaded=True) == Hint("", False)


def test_offline_it_says_the_embedded_swapper_needs_no_download() -> None:
    line, offer = hint("mesh_warp", BEST, None, answered=True, downloaded=False, embedded="mesh_warp")
    assert line.startswith("The embedded swapper (mesh_warp) needs no download") and "Settings" in line
    assert not offer and "Best likeness" not in line and "MB" not in line
    assert hint(BEST, BEST, None, answered=True, downloaded=False).line == line  # also when it is chosen


def test_while_the_size_is_on_its_way_nothing_is_said() -> None:
    assert hint("mesh_warp", BEST, None, answered=False, downloaded=False) == Hint("", False)


def test_a_download_under_way_is_said_without_a_second_button() -> None:
    line, offer = hint("mesh_warp", BEST, 402_500_000, answered=True, downloaded=False, downloading=True)
    assert "is downloading" in line and not offer


def wait_answered(sizes: ModelSizes, url: str) -> None:
    deadline = time.monotonic() + 60
    while not sizes.answered(url):
        assert time.monotonic() < deadline, f"no answer for {url}"
        time.sleep(0.02)


def test_sizes_tell_no_network_from_an_answer_on_its_way() -> None:
    sizes = ModelSizes()
    closed = "http://127.0.0.1:9/model.onnx"  # nothing listens: the look-up ends with no size
    assert not sizes.answered(closed)  # never asked
    assert sizes.size(closed) is None
    wait_answered(sizes, closed)
    assert sizes.size(closed) is None
    held = ServedFile(b"x" * 1234)
    with serve(held) as url:
        assert sizes.size(url) is None
        wait_answered(sizes, url)
        assert sizes.size(url) == 1234
    sizes.close()
    after = "http://127.0.0.1:9/after.onnx"
    assert sizes.size(after) is None and sizes.answered(after)  # closed: an answer at once, no error
