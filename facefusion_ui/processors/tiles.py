"""Whole-frame models run on overlapping tiles, joined with feathered weights, one band of rows at a time.

An upscaler's memory grows with the area it is given: a 4K frame in one piece needs gigabytes. Here the
model sees fixed ``tile`` x ``tile`` pieces that overlap their neighbours by ``overlap`` pixels. In an
overlap each tile's weight is zero on the ``trim`` pixels nearest its own edge (where a network sees zero
padding, not the picture) and then rises linearly, so the join shows no seam. Rows of tiles are joined
into a band that is finished (divided by the summed weights) as soon as no later tile reaches it, and
handed to ``BandSink``: only one band of the enhanced size is held besides the output.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import cv2
import numpy as np

from facefusion_ui.types import Frame

TileModel = Callable[[Frame], Frame]
"""A BGR uint8 tile -> the model's BGR uint8 result, ``scale`` times larger on each side."""


@dataclass(frozen=True)
class TileGrid:
    tile: int
    overlap: int
    trim: int

    def __post_init__(self) -> None:
        if self.tile < 8 or not 0 <= 2 * self.trim < self.overlap < self.tile:
            raise ValueError(f"bad tile grid {self}: need 2 * trim < overlap < tile")

    def starts(self, length: int) -> list[int]:
        """Tile starts along a side of ``length`` (at least ``tile``): every ``tile - overlap`` pixels, the
        last one flush with the end."""
        if length <= self.tile:
            return [0]
        step = self.tile - self.overlap
        starts = list(range(0, length - self.tile, step))
        starts.append(length - self.tile)
        return starts

    def weights(self, start: int, length: int, starts: list[int]) -> np.ndarray:
        """The 1-D weight of the tile at ``start``: zero on ``trim`` pixels facing a neighbour, then a
        ramp to 1 across the overlap, 1 elsewhere (and up to the frame's own edges)."""
        weight = np.ones(self.tile, dtype=np.float32)
        position = starts.index(start)
        if position > 0:
            shared = starts[position - 1] + self.tile - start
            weight[:shared] = np.minimum(weight[:shared], _ramp(shared, self.trim))
        if position < len(starts) - 1:
            shared = start + self.tile - starts[position + 1]
            weight[self.tile - shared :] = np.minimum(weight[self.tile - shared :], _ramp(shared, self.trim)[::-1])
        return weight


def _ramp(length: int, trim: int) -> np.ndarray:
    ramp = np.zeros(length, dtype=np.float32)
    rising = length - 2 * trim
    ramp[trim : length - trim] = (np.arange(rising, dtype=np.float32) + 0.5) / rising
    ramp[length - trim :] = 1.0
    return ramp


class BandSink(Protocol):
    def put(self, top: int, band: Frame) -> None:
        """Rows ``top``.. of the enhanced frame, finished (BGR uint8), in order from the top."""
        ...


def pad_to_tile(frame: Frame, tile: int) -> Frame:
    """A frame smaller than a tile, padded with black to the tile's size (cropped again after): the
    network sees the frame's edge as it would whole (its own padding is zeros)."""
    height, width = frame.shape[:2]
    bottom, right = max(tile - height, 0), max(tile - width, 0)
    if not bottom and not right:
        return frame
    return np.asarray(cv2.copyMakeBorder(frame, 0, bottom, 0, right, cv2.BORDER_CONSTANT, value=0), dtype=np.uint8)


def run_tiled(frame: Frame, model: TileModel, scale: int, grid: TileGrid, sink: BandSink) -> None:
    """Run ``model`` over ``frame`` tile by tile and give ``sink`` the joined result band by band."""
    height, width = frame.shape[:2]
    padded = pad_to_tile(frame, grid.tile)
    rows, columns = grid.starts(padded.shape[0]), grid.starts(padded.shape[1])
    out_width, out_tile = width * scale, grid.tile * scale
    column_weights = [np.repeat(grid.weights(x, padded.shape[1], columns), scale) for x in columns]
    carry: tuple[np.ndarray, np.ndarray] | None = None
    for index, y in enumerate(rows):
        total = np.zeros((out_tile, padded.shape[1] * scale, 3), dtype=np.float32)
        weight_sum = np.zeros((out_tile, padded.shape[1] * scale, 1), dtype=np.float32)
        if carry is not None:
            kept = carry[0].shape[0]
            total[:kept] += carry[0]
            weight_sum[:kept] += carry[1]
        row_weight = np.repeat(grid.weights(y, padded.shape[0], rows), scale)
        for x, column_weight in zip(columns, column_weights, strict=True):
            result = model(np.ascontiguousarray(padded[y : y + grid.tile, x : x + grid.tile]))
            if result.shape[:2] != (out_tile, out_tile):
                raise ValueError(f"the model made a {result.shape[1]}x{result.shape[0]} tile of a {grid.tile} px one")
            weight = (row_weight[:, None] * column_weight[None, :])[..., None]
            total[:, x * scale : x * scale + out_tile] += result.astype(np.float32) * weight
            weight_sum[:, x * scale : x * scale + out_tile] += weight
        done = (rows[index + 1] - y) * scale if index + 1 < len(rows) else out_tile
        done = min(done, height * scale - y * scale)
        if done > 0:
            finished = total[:done, :out_width] / np.maximum(weight_sum[:done, :out_width], 1e-6)
            sink.put(y * scale, np.clip(finished + 0.5, 0, 255).astype(np.uint8))
        carry = (total[done:], weight_sum[done:]) if index + 1 < len(rows) else None
