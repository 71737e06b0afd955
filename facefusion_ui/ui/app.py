"""The page (tabs Single, Batch, Settings; the Live tab on its own page, ``/live``, of the same app) and its
launch: host and port, a share link that may fail
(offline: keep serving locally and say so), a password, analytics off, and only the output and upload
folders served."""

from __future__ import annotations

import logging
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from facefusion_ui.errors import UsageError
from facefusion_ui.paths import home_dir
from facefusion_ui.ui.login_limit import LoginLimiter, LoginThrottle
from facefusion_ui.version import __version__

logger = logging.getLogger(__name__)


def prepare_environment(home: Path) -> None:
    """Before gradio is imported: no analytics, uploads in our folder (so they can be served, nothing else)."""
    os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"
    os.environ.setdefault("GRADIO_TEMP_DIR", str(home / "ui-uploads"))


def parse_auth(value: str | None) -> list[tuple[str, str]] | None:
    """``user:pass``, or a file with one ``user:pass`` per line."""
    if not value:
        return None
    lines = Path(value).read_text(encoding="utf-8").splitlines() if Path(value).is_file() else [value]
    pairs = []
    for line in (line.strip() for line in lines):
        if not line or line.startswith("#"):
            continue
        user, separator, password = line.partition(":")
        if not separator or not user or not password:
            raise UsageError("--auth takes user:password (or a file of user:password lines)")
        pairs.append((user, password))
    if not pairs:
        raise UsageError("--auth file holds no user:password line")
    return pairs


def check_port(host: str, port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does: TIME_WAIT is not busy
        try:
            probe.bind((host, port))
        except OSError as error:
            raise UsageError(
                f"port {port} on {host} is busy ({error.strerror}): choose another with --port, e.g. --port {port + 1}"
            ) from error


PAGE_CSS = """
.face-strip .grid-container { grid-template-columns: repeat(auto-fill, 120px) !important; }
.strip-caption p { margin: 0; font-size: var(--block-label-text-size); color: var(--block-label-text-color); }
#single-sources .filename .stem, #single-target .filename .stem { white-space: normal; overflow-wrap: anywhere; }
#single-options-column { max-height: calc(100vh - 120px); overflow-y: auto; overflow-x: hidden; flex-wrap: nowrap; }
#single-options-column > * { flex-shrink: 0; }
#live-camera.live-streaming video { visibility: hidden; }
#live-camera.live-streaming::after { content: "streaming: the swapped picture shows the camera"; position: absolute;
  top: 45%; left: 0; right: 0; text-align: center; color: var(--body-text-color-subdued); pointer-events: none; }
"""
"""Face galleries as a strip of small whole thumbnails (Gradio widens a lone item to the full width, and the
gallery's height then shows only its top: a forehead), captioned above rather than under a label laid over
them; file names whole; the options' column scrolled on its own, so the preview beside it stays in view
while they are edited (its blocks one under another at their own height: a column of limited height
otherwise wraps them into further columns off to the side, or squeezes them). While the Live page streams,
the camera's own picture is not drawn: the swapped one beside it shows the camera, and drawing both at
the camera's rate cost the browser a sixth more CPU a frame (``ui.live_measure.STREAMING_CLASS``)."""


def build_app(services: Any) -> Any:
    import gradio as gr
    from gradio.components.navbar import Navbar

    from facefusion_ui.ui import settings, single
    from facefusion_ui.ui.api import build_api, hide_page_events
    from facefusion_ui.ui.batch import build_batch_tab
    from facefusion_ui.ui.live import LIVE_PAGE_LINK, LIVE_ROUTE, build_live_tab

    with gr.Blocks(title="facefusion_ui") as demo:
        gr.Markdown(f"## facefusion_ui {__version__} — swap faces in images and long videos")
        notice = gr.Markdown("", elem_id="page-notice")
        demo.load(lambda: services.notice, None, notice, show_progress="hidden")
        with gr.Tab("Single", id="single"):
            single_tab = single.build_single_tab(services)
        demo.load(None, None, None, js=single.TYPED_NUMBER_ENDS_JS)
        with gr.Tab("Batch", id="batch"):
            build_batch_tab(services)
        with gr.Tab("Live", id="live"):
            gr.HTML(LIVE_PAGE_LINK, elem_id="live-page-link")
        with gr.Tab("Settings", id="settings"):
            settings_tab = settings.build_settings_tab(services)
        build_api(services)
        Navbar(main_page_name="Studio", elem_id="page-navbar")
        # each page load shows the settings as saved now, not as they were when the server started
        demo.load(
            lambda: single.page_values(services, single_tab.shown), None, single_tab.loaded(), show_progress="hidden"
        )
        demo.load(
            lambda: settings.page_values(services, settings_tab.shown),
            None,
            settings_tab.loaded(),
            show_progress="hidden",
        )
    # the Live tab on a page of its own: Gradio's update of a page for each streamed frame grows with the
    # page (docs/ARCHITECTURE.md, Live mode)
    with demo.route("Live", f"/{LIVE_ROUTE}"):
        Navbar(main_page_name="Studio", elem_id="live-navbar")
        build_live_tab(services)
    hide_page_events(demo)
    return demo


@dataclass
class RunningUi:
    demo: Any
    services: Any
    url: str
    share_url: str | None

    def close(self) -> None:
        self.demo.close()
        self.services.stop()


def start_ui(
    host: str = "127.0.0.1",
    port: int = 7860,
    share: bool = False,
    auth: str | None = None,
    preset: str | None = None,
    overrides: dict[str, Any] | None = None,
    home: Path | None = None,
    login_limiter: LoginLimiter | None = None,
) -> RunningUi:
    """Launch without blocking; ``RunningUi.close()`` stops the page and its worker. With a password,
    failed logins are slowed per client (``login_limiter``, by default ``ui.login_limit.LoginLimiter()``)."""
    home = home or home_dir()
    prepare_environment(home)
    credentials = parse_auth(auth)
    check_port(host, port)
    import gradio as gr
    from starlette.middleware import Middleware

    from facefusion_ui.ui.live_measure import LIVE_MEASURE_HEAD
    from facefusion_ui.ui.services import UiServices

    throttle = Middleware(LoginThrottle, limiter=LoginLimiter() if login_limiter is None else login_limiter)

    services = UiServices.create(home=home, preset=preset, overrides=overrides)
    demo = build_app(services)
    demo.queue(default_concurrency_limit=4)
    try:
        demo.launch(
            server_name=host,
            server_port=port,
            share=share,
            auth=credentials,
            prevent_thread_lock=True,
            allowed_paths=[str(services.outputs_dir), str(services.uploads_dir)],
            show_error=True,
            quiet=True,
            theme=gr.themes.Soft(),
            css=PAGE_CSS,
            head=LIVE_MEASURE_HEAD,
            footer_links=[],
            app_kwargs={"middleware": [throttle]} if credentials else None,
        )
    except Exception:
        services.stop()
        raise
    url = f"http://{host}:{port}"
    share_url = getattr(demo, "share_url", None)
    if share and not share_url:
        logger.warning("could not get a public share link (no internet access?): serving locally only at %s", url)
        services.notice = share_notice(url)
    return RunningUi(demo, services, url, share_url)


def share_notice(url: str) -> str:
    return (
        f"⚠️ The public share link (--share) could not be made (no internet access?): "
        f"this page is served locally only, at {url}"
    )


def serve(host: str, port: int, share: bool, auth: str | None, preset: str | None, overrides: dict[str, Any]) -> None:
    """``run.py ui``: launch and block until Ctrl-C."""
    running = start_ui(host, port, share, auth, preset, overrides)
    print(f"facefusion_ui is running at {running.url}" + (f" and {running.share_url}" if running.share_url else ""))
    try:
        running.demo.block_thread()
    finally:
        running.close()
