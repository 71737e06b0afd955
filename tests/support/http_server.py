"""A real HTTP server on 127.0.0.1 serving generated files, with Range support and fault modes."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class ServedFile:
    body: bytes
    cut_after: int | None = None
    """Close the connection after sending this many bytes of the body (for the first ``cuts`` requests)."""
    cuts: int = 0
    ignore_range: bool = False
    requests: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    hold: threading.Event | None = None
    """When set, the body stops after its first block until the event is set (a download held mid-way)."""
    extra: dict[str, bytes] = field(default_factory=dict)
    """Other files served beside it, by name (``model.hash``)."""


def _answer_head(handler: BaseHTTPRequestHandler, served: ServedFile) -> None:
    name = handler.path.rsplit("/", 1)[-1]
    body = served.body if name == "model.onnx" else served.extra.get(name)
    handler.send_response(200 if body is not None else 404)
    handler.send_header("Content-Length", str(len(body) if body is not None else 0))
    handler.end_headers()


def _handler(served: ServedFile) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:  # keep test output clean
            pass

        def do_GET(self) -> None:
            name = self.path.rsplit("/", 1)[-1]
            if name in served.extra:
                self._send_small(served.extra[name])
                return
            if name != "model.onnx":
                self._send_small(b"not found", 404)
                return
            requested = self.headers.get("Range", "")
            with served.lock:
                served.requests.append(requested)
                cut = served.cut_after if served.cuts > 0 else None
                if cut is not None:
                    served.cuts -= 1
            start = 0
            if requested.startswith("bytes=") and not served.ignore_range:
                start = int(requested[6:].split("-")[0])
                if start >= len(served.body):
                    self.send_response(416)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{len(served.body) - 1}/{len(served.body)}")
            else:
                self.send_response(200)
            payload = served.body[start:]
            self.send_header("Content-Length", str(len(payload)))
            self.send_header("Content-Type", "application/octet-stream")
            self.end_headers()
            if served.hold is not None:
                self.wfile.write(payload[: 1 << 20])
                self.wfile.flush()
                served.hold.wait(timeout=60)
                payload = payload[1 << 20 :]
            if cut is not None:
                self.wfile.write(payload[:cut])
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(2)
                return
            self.wfile.write(payload)

        def do_HEAD(self) -> None:  # the size a page shows before downloading
            _answer_head(self, served)

        def _send_small(self, body: bytes, status: int = 200) -> None:
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler


class QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        """A client that hangs up mid-file (a cancelled or cut download: what the tests do) is no error."""
        error = sys.exc_info()[1]
        if not isinstance(error, (ConnectionResetError, BrokenPipeError)):
            super().handle_error(request, client_address)  # type: ignore[arg-type]


@contextmanager
def serve(served: ServedFile) -> Iterator[str]:
    """Serve ``served`` on a free loopback port; yields the file's URL."""
    server = QuietServer(("127.0.0.1", 0), _handler(served))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/model.onnx"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
