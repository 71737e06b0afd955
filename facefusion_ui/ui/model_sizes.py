"""Download sizes the catalog does not give: the publisher's ``Content-Length``, asked with one HEAD request
per address on a background thread the first time the page names the model, so a page never waits on the
network. Kept in a bounded table; offline (or while the answer is on its way) the size is unknown, and
``answered`` tells the two apart: an address asked and answered without a size means no network."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from facefusion_ui.model_download import content_length

SIZE_LIMIT = 512
"""Models whose size is kept (the catalog holds far fewer: the bound is a guard, not a budget)."""


class ModelSizes:
    """``size(url)``: the size when known, else None (and the HEAD request started, once per address)."""

    def __init__(self, limit: int = SIZE_LIMIT, workers: int = 4) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._sizes: dict[str, int | None] = {}
        """Per address: its size, or None when asked and not (yet) known; the oldest dropped past ``limit``."""
        self._pending: set[str] = set()
        """The addresses of ``_sizes`` whose request has not ended yet."""
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="model-size")

    def size(self, url: str) -> int | None:
        with self._lock:
            if url in self._sizes:
                return self._sizes[url]
            if len(self._sizes) >= self.limit:
                oldest = next(iter(self._sizes))
                del self._sizes[oldest]
                self._pending.discard(oldest)
            self._sizes[url] = None
            self._pending.add(url)
        try:
            self._pool.submit(self._ask, url)
        except RuntimeError:  # closed: the server is stopping, the size stays unknown (an answer)
            with self._lock:
                self._pending.discard(url)
        return None

    def answered(self, url: str) -> bool:
        """Whether the request for ``url`` ended (a size, or none: offline); False before ``size`` asks."""
        with self._lock:
            return url in self._sizes and url not in self._pending

    def __len__(self) -> int:
        with self._lock:
            return len(self._sizes)

    def close(self) -> None:
        """No new requests; those under way end by their timeout."""
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _ask(self, url: str) -> None:
        found = content_length(url)
        with self._lock:
            if url in self._sizes:
                self._sizes[url] = found
            self._pending.discard(url)
