"""The Live tab: the browser's camera streams to the server through Gradio's own streaming (the webcam
image's ``stream`` event), each frame is swapped by a ``LiveEngine`` on the page's runtime and comes back
as a JPEG inside the page (no file per frame), with the browser's stamp of the frame (``live_measure``)
and the server's read-out in the same output; camera-to-screen latency and fps measured by the page,
Record into a downloadable file. The source photos (one person) or the People rows (a photo of each person
in front of the camera and their own source, as ``run.py live --face-map``) choose who becomes whom. See
docs/ARCHITECTURE.md (Live mode) for why this transport."""

from __future__ import annotations

import base64
import html
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import cv2
import gradio as gr

from facefusion_ui.errors import InputError
from facefusion_ui.faces.face_map import FaceMapEntry
from facefusion_ui.live.face_map import start_engine
from facefusion_ui.live.pushed import PushedStream
from facefusion_ui.types import Frame, LiveSize, choices
from facefusion_ui.ui.common import file_path, file_paths, problem, reported
from facefusion_ui.ui.live_measure import SCREEN_STATS_ID, SCREEN_STATS_WAITING
from facefusion_ui.ui.services import UiServices

LIVE_ROUTE = "live"
"""The Live tab's own page of the app (``/live``): a frame's update of a page costs the browser more the
more the page holds (docs/ARCHITECTURE.md, Live mode)."""
LIVE_PAGE_LINK = (
    f"<p>The camera runs on a page of its own, kept small so that the browser keeps up with the frames: "
    f'<a href="{LIVE_ROUTE}" target="_self"><strong>open Live</strong></a> (also in the bar at the top). '
    f"Settings saved here apply there.</p>"
)
"""The main page's Live tab: a link to the Live page, in the same browser tab."""
STREAM_EVERY_S = 0.01
"""How often Gradio's webcam grabs a camera frame and posts it, whatever the server's progress; the page's
script (``live_measure``) lets it grab only when the frame before is back (one frame in flight), so this
is the most a frame waits once the last is back."""
STREAM_TIME_LIMIT_S = 3600
"""A stream ends after an hour; press the camera's Record again to go on."""
JPEG_QUALITY = 80
STOP_CAMERA_JS = """() => {
  document.querySelectorAll('#live-camera video').forEach((video) => {
    if (video.srcObject) { video.srcObject.getTracks().forEach((track) => track.stop()); video.srcObject = null; }
  });
}"""
"""Stop ends the camera's tracks in the browser (its light goes off), not only the stream."""
PEOPLE_ROWS = 3
"""The People accordion's rows: a photo of a person in front of the camera, and that person's source."""
PEOPLE_NOTE = (
    "Each row: a photo of someone in front of the camera, and the source photo(s) they get. Only the people "
    "in these rows change; with a row filled in, the source photos above are not used."
)


class LiveTab(NamedTuple):
    message: Any
    source: Any
    size: Any
    mirror: Any
    start: Any
    stop: Any
    camera: Any
    sent: Any
    """A hidden number: the browser's stamp of the frame being sent (``live_measure``)."""
    shown: Any
    stats: Any
    record: Any
    record_stop: Any
    recording: Any
    stream: Any
    people: tuple[Any, ...]
    """The People rows' uploads, two a row: the person's photo, then their source photo(s)."""


def render_live_tab() -> LiveTab:
    message = gr.Markdown("", elem_id="live-message")
    with gr.Row():
        # the camera's own picture in the narrow column: the browser draws it at the camera's rate, so its
        # size on screen costs CPU beside the swapped frames (about a seventh of the browser's a frame)
        with gr.Column(scale=1):
            source = gr.File(
                label="Source face photo(s): one person",
                file_count="multiple",
                file_types=["image"],
                elem_id="live-source",
            )
            people = render_people_rows()
            camera = gr.Image(
                label="Camera (press Record under it to stream)",
                sources=["webcam"],
                streaming=True,
                type="numpy",
                webcam_options=gr.WebcamOptions(mirror=False),  # the Mirror box mirrors, once, what is swapped
                elem_id="live-camera",
            )
            size = gr.Radio(list(choices(LiveSize)), value="480p", label="Size", elem_id="live-size")
            mirror = gr.Checkbox(value=True, label="Mirror (as in a mirror)", elem_id="live-mirror")
            with gr.Row():
                start = gr.Button("Start", variant="primary", elem_id="live-start")
                stop = gr.Button("Stop", elem_id="live-stop")
            with gr.Row():
                record = gr.Button("Record", elem_id="live-record")
                record_stop = gr.Button("Stop recording", elem_id="live-record-stop")
            recording = gr.File(label="Recording", elem_id="live-recording", interactive=False)
        with gr.Column(scale=2):
            gr.HTML(f'<p id="{SCREEN_STATS_ID}">{SCREEN_STATS_WAITING}</p>', elem_id="live-screen")
            shown = gr.HTML("", elem_id="live-shown")
            stats = gr.Markdown("", elem_id="live-stats")
    sent = gr.Number(None, visible=False, elem_id="live-sent")
    return LiveTab(
        message,
        source,
        size,
        mirror,
        start,
        stop,
        camera,
        sent,
        shown,
        stats,
        record,
        record_stop,
        recording,
        gr.State(None),
        people,
    )


def render_people_rows() -> tuple[Any, ...]:
    """The optional face map: a closed accordion of ``PEOPLE_ROWS`` rows (uploads only, nothing per frame)."""
    uploads: list[Any] = []
    with gr.Accordion("People (optional)", open=False, elem_id="live-people"):
        gr.Markdown(PEOPLE_NOTE)
        for row in range(1, PEOPLE_ROWS + 1):
            with gr.Row():
                uploads.append(
                    gr.File(label=f"Person {row}: a photo of them", file_types=["image"], elem_id=f"live-person-{row}")
                )
                uploads.append(
                    gr.File(
                        label=f"Person {row}'s source photo(s)",
                        file_count="multiple",
                        file_types=["image"],
                        elem_id=f"live-person-{row}-source",
                    )
                )
    return tuple(uploads)


def face_map_rows(rows: Sequence[tuple[Any, Any]]) -> list[FaceMapEntry]:
    """The People rows filled in as face-map entries (``run.py live --face-map WHO=SOURCE``'s); a row with
    only one of its two photos is an InputError."""
    entries = []
    for number, (who, sources) in enumerate(rows, start=1):
        person, given = file_path(who), file_paths(sources)
        if person is None and not given:
            continue
        if person is None or not given:
            missing = "a photo of the person" if person is None else "their source photo"
            raise InputError(f"People row {number}: add {missing} too, or clear the row")
        entries.append(FaceMapEntry(str(person.resolve()), tuple(path.resolve() for path in given)))
    return entries


def started_note(entries: Sequence[FaceMapEntry]) -> str:
    allow = "allow the camera, then press Record under the camera to stream it"
    if not entries:
        return f"started: {allow}"
    people = f"{len(entries)} {'person' if len(entries) == 1 else 'people'}"
    return f"started for {people} of the People rows (the others are left as they are): {allow}"


def jpeg_html(rgb: Frame, sent: float | None, readout: str) -> str:
    """The frame as an <img> carrying its JPEG inline (one response, nothing written to disk) and the
    browser's stamp of the camera frame it came from (``data-sent``), the server's read-out under it."""
    ok, encoded = cv2.imencode(".jpg", rgb[:, :, ::-1], [cv2.IMWRITE_JPEG_QUALITY, JPEG_QUALITY])
    assert ok, "JPEG encoding failed"
    data = base64.b64encode(encoded.tobytes()).decode("ascii")
    height, width = rgb.shape[:2]
    stamp = f' data-sent="{sent:.3f}"' if sent else ""
    return (
        f'<img id="live-frame" width="{width}" height="{height}" alt="swapped"{stamp} '
        f'src="data:image/jpeg;base64,{data}"><p id="live-server-stats">{html.escape(readout)}</p>'
    )


class Started(NamedTuple):
    message: Any
    stream: Any
    stats: Any


@reported(Started)
def run_start(
    services: UiServices,
    sources: Any,
    size: LiveSize,
    mirror: bool,
    running: PushedStream | None,
    people: Sequence[tuple[Any, Any]] = (),
) -> Started:
    """A new engine for the source photos (one person), or for the People rows' map when a row is filled
    in (as ``run.py live``: ``start_engine``), on the page's settings and runtime; the one before is closed."""
    entries = face_map_rows(people)
    paths = file_paths(sources)
    if not paths and not entries:
        raise InputError("choose a source face photo first (or fill in a People row)")
    if running is not None:
        running.close()
    engine = start_engine(services.settings(), services.runtime, paths, entries)
    return Started(started_note(entries), PushedStream(engine, size, mirror), "")  # read-outs come with frames


def paired(uploads: Sequence[Any]) -> list[tuple[Any, Any]]:
    """The People rows' uploads (person, sources, person, sources, ...) as rows."""
    return list(zip(uploads[::2], uploads[1::2], strict=True))


def run_stop(running: PushedStream | None) -> tuple[str, None, str, Any]:
    """Close the engine (and a recording, offered for download); the camera is stopped in the browser."""
    if running is None:
        return "stopped", None, "", gr.skip()
    recorded = running.close()
    readout = running.readout()
    return "stopped", None, readout, str(recorded) if recorded else gr.skip()


def live_frame(frame: Frame | None, sent: float | None, running: PushedStream | None) -> Any:
    """One camera frame swapped, as the shown frame's HTML (with the server's read-out): one output, so
    each frame is one small update of the page; nothing is shown before Start."""
    if frame is None:
        return gr.skip()
    if running is None:
        return '<p id="live-server-stats">press Start (with a source face) to swap</p>'
    swapped = running.swap(frame)
    return gr.skip() if swapped is None else jpeg_html(swapped, sent, running.readout())


def run_record(services: UiServices, running: PushedStream | None) -> str:
    if running is None:
        return problem("press Start first: Record saves the swapped frames")
    folder = services.outputs_dir / "live"
    folder.mkdir(parents=True, exist_ok=True)
    running.start_recording(folder / f"live_{time.strftime('%Y%m%d_%H%M%S')}.mp4")
    return "recording: press Stop recording to get the file"


def run_record_stop(running: PushedStream | None) -> tuple[str, Any]:
    recorded = running.stop_recording() if running is not None else None
    if recorded is None:
        return problem("nothing is recording"), gr.skip()
    return f"recorded {Path(recorded).name}", str(recorded)


def listen_live_tab(tab: LiveTab, services: UiServices) -> None:
    tab.start.click(
        lambda sources, size, mirror, running, *people: run_start(
            services, sources, size, mirror, running, paired(people)
        ),
        [tab.source, tab.size, tab.mirror, tab.stream, *tab.people],
        [tab.message, tab.stream, tab.stats],
    )
    tab.stop.click(
        run_stop,
        [tab.stream],
        [tab.message, tab.stream, tab.stats, tab.recording],
        js=STOP_CAMERA_JS,
        show_progress="hidden",
    )
    tab.camera.stream(
        live_frame,
        [tab.camera, tab.sent, tab.stream],
        [tab.shown],
        stream_every=STREAM_EVERY_S,
        time_limit=STREAM_TIME_LIMIT_S,
        concurrency_limit=None,
        show_progress="hidden",
    )
    tab.record.click(lambda running: run_record(services, running), [tab.stream], [tab.message])
    tab.record_stop.click(run_record_stop, [tab.stream], [tab.message, tab.recording])


def build_live_tab(services: UiServices) -> None:
    listen_live_tab(render_live_tab(), services)
