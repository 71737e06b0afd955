"""The Single tab: source photos (the face found in each), a target (its faces to pick a reference, a
frame slider and a trim range for a video), a live before/after preview, each processor's settings
beside it, output settings per run, Start/Cancel with progress, the job's log, and the result. Laid out
by ``render_single_tab``, wired by ``listen_single_tab`` to the handlers of ``single_run``."""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import gradio as gr

from facefusion_ui.faces.selector import FILTER_SETTINGS
from facefusion_ui.state_manager import Settings, setting_rule
from facefusion_ui.ui import single_models, single_run
from facefusion_ui.ui.common import outputs_of
from facefusion_ui.ui.controls import control_update, setting_control
from facefusion_ui.ui.people import PeoplePanel, face_map_of, listen_people_panel, render_people_panel
from facefusion_ui.ui.preview_gate import PreviewGate
from facefusion_ui.ui.processor_options import (
    MASK_SETTINGS,
    is_model_list,
    model_labels,
    option_fields,
    processor_label,
    processor_settings,
    render_option_control,
)
from facefusion_ui.ui.services import UiServices
from facefusion_ui.ui.single_request import FACE_SETTINGS, OUTPUT_SETTINGS, REQUEST_CONTROLS, Request, single_keys
from facefusion_ui.ui.swapper_hint import RECOMMENDED_SWAPPER

MODE_INFO = (
    "many: every face of the target · one: only the face at the reference position · "
    "reference: every face that looks like the reference face (click it below), in every frame"
)
FACE_INFOS = {"face_selector_mode": MODE_INFO, "reference_face_distance": "lower: stricter (same person only)"}
"""What the face settings' controls say under their label."""
POSITION_INFO = "0 is the first face in the gallery: faces are counted largest first (Settings: face order)"
PREVIEW_EVENT: dict[str, Any] = {
    "trigger_mode": "multiple",
    "concurrency_limit": 4,
    "concurrency_id": "single-preview",
    "show_progress": "minimal",
}
"""Every change is sent at once (so the server sees the newer ones); ``single_run.gated_preview`` waits
for a quiet moment, makes one preview at a time and drops the stale ones."""


def stamped(inputs: Sequence[Any]) -> str:
    """The browser-side step of an event whose first input is ``SingleTab.asked_at``: that input set to the
    browser's clock as the event is sent (a handler is given its inputs, then its outputs' values: only
    the inputs go on)."""
    return f"(...values) => {{ const sent = values.slice(0, {len(inputs)}); sent[0] = Date.now(); return sent; }}"


@dataclass(frozen=True)
class SingleTab:
    """The components of the Single tab that handlers read or update."""

    sources: Any
    source_faces: Any
    target: Any
    frame: Any
    frame_time: Any
    trim_start: Any
    trim_end: Any
    trim_times: Any
    faces: Any
    position: Any
    processors: Any
    run_order: Any
    folder: Any
    name: Any
    preview: Any
    message: Any
    start: Any
    cancel: Any
    status: Any
    result_video: Any
    result_image: Any
    download: Any
    log: Any
    job_id: Any
    timer: Any
    asked_at: Any
    """A hidden number the browser stamps with its clock as it sends a preview or Start (``stamped``)."""
    setting_controls: list[Any]
    """One control per key of ``single_keys``, in that order."""
    option_controls: list[Any]
    """One control per option of ``option_fields``, in that order."""
    option_panels: dict[str, Any]
    """Each processor's options (an accordion) by its name: shown, open, while it is ticked."""
    models: ModelPickers
    people: PeoplePanel
    shown: Settings
    """The settings the page was built with: what a browser shows before its page load updates it."""

    def loaded(self) -> list[Any]:
        """What ``page_values`` updates, in its order."""
        return [self.processors, *self.setting_controls, *self.option_controls]

    def request(self) -> list[Any]:
        """The inputs of preview and Start, as ``single_request.Request.parse`` reads them: the controls
        named in ``REQUEST_CONTROLS``, then the settings' and the option controls."""
        own = [getattr(self, name) for name in REQUEST_CONTROLS]
        return [*own, *self.setting_controls, *self.option_controls]


def render_sources_and_target() -> dict[str, Any]:
    sources = gr.File(
        label="Source face photo(s): one person", file_count="multiple", file_types=["image"], elem_id="single-sources"
    )
    gr.Markdown("The face found in each source photo", elem_classes=["strip-caption"])
    source_faces = gr.Gallery(
        label="The face found in each source photo",
        show_label=False,
        columns=6,
        height=130,
        object_fit="contain",
        allow_preview=False,
        elem_id="single-source-faces",
        elem_classes=["face-strip"],
    )
    # audio too: a file the picker would drop silently is said in the message area instead
    target = gr.File(label="Target image or video", file_types=["image", "video", "audio"], elem_id="single-target")
    frame = gr.Slider(
        0, 1, value=0, step=1, label="Frame (reference and preview)", visible=False, elem_id="single-frame"
    )
    frame_time = gr.Markdown("", elem_id="single-frame-time")
    with gr.Row():
        trim_start = gr.Slider(
            0, 1, value=0, step=1, label="Trim: first frame", visible=False, elem_id="single-trim-start"
        )
        trim_end = gr.Slider(0, 1, value=1, step=1, label="Trim: last frame", visible=False, elem_id="single-trim-end")
    trim_times = gr.Markdown("", elem_id="single-trim-times")
    gr.Markdown("Faces in that frame: click one to make it the reference", elem_classes=["strip-caption"])
    faces = gr.Gallery(
        label="Faces in that frame: click one to make it the reference",
        show_label=False,
        columns=6,
        height=170,
        object_fit="contain",
        allow_preview=False,
        elem_id="single-faces",
        elem_classes=["face-strip"],
    )
    return {
        "sources": sources,
        "source_faces": source_faces,
        "target": target,
        "frame": frame,
        "frame_time": frame_time,
        "trim_start": trim_start,
        "trim_end": trim_end,
        "trim_times": trim_times,
        "faces": faces,
    }


def render_faces(services: UiServices, controls: dict[str, Any]) -> Any:
    """Which faces change, the reference position, and the reference distance as a slider."""
    settings = services.settings()
    distance = services.runtime.spec(settings.face_recognizer_model).threshold
    for key in FACE_SETTINGS:  # a blank distance stands at the recognizer's own; a blank age bound is none
        fallback = distance if key == "reference_face_distance" else None
        controls[key] = setting_control(key, getattr(settings, key), info=FACE_INFOS.get(key), fallback=fallback)
    high = getattr(setting_rule("reference_face_position"), "high", 1000)
    return gr.Number(
        value=0,
        precision=0,
        minimum=0,
        maximum=high,
        label="Reference face position",
        info=POSITION_INFO,
        elem_id="single-position",
    )


@dataclass(frozen=True)
class SwapperLine:
    """The line beside the face swapper's dropdown (``single_models.swapper_hint``): its text, its
    Download button, and its timer, ticking while the network's answer or that download is awaited."""

    control: Any
    line: Any
    button: Any
    timer: Any


def render_swapper_line(services: UiServices, control: Any, value: Any) -> SwapperLine:
    shown = single_models.swapper_hint(services, value)
    with gr.Row(equal_height=True):
        line = gr.Markdown(shown.line, elem_id="single-swapper-hint")
        button = gr.Button(
            f"Download {RECOMMENDED_SWAPPER}",  # not a second plain "Download" under the dropdown's own
            visible=shown.button.visible,
            size="sm",
            scale=0,
            min_width=110,
            elem_id="single-hint-download",
        )
    return SwapperLine(control, line, button, gr.Timer(1.0, active=True))


@dataclass
class ModelPickers:
    """The tab's model dropdowns (settings and declared options), each with its Download button, the
    models it offers, and the downloads' progress line and timer."""

    controls: list[Any] = field(default_factory=list)
    buttons: list[Any] = field(default_factory=list)
    names: list[tuple[str, ...]] = field(default_factory=list)
    line: Any = None
    timer: Any = None
    swapper: SwapperLine | None = None
    """The face swapper's line naming the model of best likeness, when the tab has that dropdown."""

    def add(self, services: UiServices, control: Any, names: tuple[str, ...], value: Any, elem_id: str) -> Any:
        """A Download button beside ``control`` (shown while its choice is not downloaded)."""
        missing = single_models.downloadable(services, value)
        button = gr.Button("Download", visible=missing, size="sm", scale=0, min_width=110, elem_id=elem_id)
        self.controls.append(control)
        self.buttons.append(button)
        self.names.append(names)
        return control


def render_model_setting(services: UiServices, key: str, value: Any, pickers: ModelPickers) -> Any:
    names = tuple(setting_rule(key).cli_options().get("choices") or ())
    if not is_model_list(services, names):
        return setting_control(key, value)
    with gr.Row(equal_height=True):
        control = setting_control(key, value, choice_labels=model_labels(services, names))
        pickers.add(services, control, names, value, f"single-download-{key}")
    if key == "face_swapper_model":
        pickers.swapper = render_swapper_line(services, control, value)
    return control


def render_option(services: UiServices, processor: str, option: Any, value: Any, pickers: ModelPickers) -> Any:
    names = tuple(option.choices)
    if option.type is not str or not is_model_list(services, names):
        return render_option_control(processor, option, value)
    with gr.Row(equal_height=True):
        control = render_option_control(processor, option, value, model_labels(services, names))
        return pickers.add(services, control, names, value, f"single-download-{processor}-{option.name}")


def render_processors(
    services: UiServices, controls: dict[str, Any], pickers: ModelPickers
) -> tuple[Any, Any, list[Any], dict[str, Any]]:
    """The processors, and under them the settings and declared options of each ticked one (a model with
    its Download button); the downloads' progress line; then the face mask."""
    settings = services.settings()
    names = services.registry.names()
    chosen = [name for name in settings.processors if name in names] or ["face_swapper"]
    processors = gr.CheckboxGroup(
        [(processor_label(services.registry, name), name) for name in names],
        value=chosen,
        label="Processors (they run in the order you tick them)",
        elem_id="single-processors",
    )
    order = gr.Markdown(single_run.run_order(chosen), elem_id="single-run-order")
    table = services.registry.option_table()
    options = []
    panels = {}
    given = settings.processor_options
    for name in names:
        keys = [key for key in processor_settings(services.registry, name) if key in controls]
        declared = table.get(name, ())
        if not keys and not declared:
            continue
        panel = gr.Accordion(f"{name} options", visible=name in chosen, elem_id=f"single-options-{name}")
        panels[name] = panel
        with panel:
            for key in keys:
                controls[key] = render_model_setting(services, key, getattr(settings, key), pickers)
            options += [
                render_option(services, name, option, given.get(name, {}).get(option.name, option.default), pickers)
                for option in declared
            ]
    pickers.line = gr.Markdown("", elem_id="single-downloads")
    pickers.timer = gr.Timer(1.0, active=True)  # the first tick labels the models with the sizes found since
    render_group("Face mask (how changed faces blend in)", MASK_SETTINGS, settings, controls)
    return processors, order, options, panels


def render_group(title: str, keys: tuple[str, ...], settings: Any, controls: dict[str, Any]) -> None:
    shown = [key for key in keys if key in controls]
    if not shown:
        return
    with gr.Accordion(title, open=False):
        for key in shown:
            controls[key] = setting_control(key, getattr(settings, key))


def render_output(services: UiServices, controls: dict[str, Any]) -> tuple[Any, Any]:
    with gr.Accordion("Output", open=False):
        with gr.Row():
            folder = gr.Textbox(
                value="", label=f"Folder inside {services.outputs_dir} (blank: there)", elem_id="single-folder"
            )
            name = gr.Textbox(value="", label="Name (blank: TARGET_swapped_TIME)", elem_id="single-name")
        render_group_inline(OUTPUT_SETTINGS, services.settings(), controls)
    return folder, name


def render_group_inline(keys: tuple[str, ...], settings: Any, controls: dict[str, Any]) -> None:
    for key in keys:
        if key in controls:
            controls[key] = setting_control(key, getattr(settings, key))


def render_run_column() -> dict[str, Any]:
    preview = gr.ImageSlider(
        label="Preview: before | after (drag the line)", type="numpy", interactive=False, elem_id="single-preview"
    )
    message = gr.Markdown(
        "Add a target (and a source photo to swap a face in): the preview follows every change.",
        elem_id="single-message",
    )
    with gr.Row():
        start = gr.Button("Start", variant="primary", elem_id="single-start")
        cancel = gr.Button("Cancel", elem_id="single-cancel")
    return {
        "preview": preview,
        "message": message,
        "start": start,
        "cancel": cancel,
        "status": gr.Markdown("", elem_id="single-status"),
        "result_video": gr.Video(label="Result", visible=False, elem_id="single-result-video"),
        "result_image": gr.Image(label="Result", visible=False, type="filepath", elem_id="single-result-image"),
        "download": gr.File(label="Download", visible=False, elem_id="single-download"),
        "log": gr.Textbox(
            "", label="Job log", lines=6, max_lines=12, autoscroll=True, interactive=False, elem_id="single-log"
        ),
    }


def render_single_tab(services: UiServices) -> SingleTab:
    controls: dict[str, Any] = dict.fromkeys(single_keys(services.registry))
    pickers = ModelPickers()
    with gr.Row():
        with gr.Column(elem_id="single-options-column"):  # scrolled on its own: the preview stays in view
            media = render_sources_and_target()
            people = render_people_panel()
            position = render_faces(services, controls)
            processors, order, options, panels = render_processors(services, controls, pickers)
            folder, name = render_output(services, controls)
        with gr.Column(elem_id="single-run-column"):
            run = render_run_column()
    return SingleTab(
        **media,
        position=position,
        processors=processors,
        run_order=order,
        folder=folder,
        name=name,
        **run,
        job_id=gr.State(None),
        timer=gr.Timer(1.0, active=False),
        asked_at=gr.Number(None, visible=False, elem_id="single-asked-at"),
        setting_controls=[controls[key] for key in single_keys(services.registry)],
        option_controls=options,
        option_panels=panels,
        models=pickers,
        people=people,
        shown=services.settings(),
    )


TYPED_NUMBER_ENDS_JS = """() => {
  document.addEventListener('keydown', (event) => {
    const typed = event.target.closest && event.target.closest('#single-frame, #single-trim-start, #single-trim-end');
    if (event.key === 'Enter' && typed && event.target.type === 'number') event.target.blur();
  });
}"""
"""Enter in a frame slider's number box ends the typing as leaving the box does: Gradio sends a slider's
``release`` (which re-reads the frame's faces) on blur, not on Enter. Installed once per page load."""


def listen_target_and_frame(
    tab: SingleTab, services: UiServices, keys: Sequence[str], show_preview: dict[str, Any]
) -> None:
    """A new target, a moved frame or a changed face filter: the faces gallery, the frame's time, the preview."""
    fitted = outputs_of(single_run.TargetShown, tab)
    # the face selector's filters: the gallery shows the faces they keep, as the reference position counts them
    filters = [tab.setting_controls[keys.index(key)] for key in FILTER_SETTINGS]
    tab.target.change(
        functools.partial(single_run.analyse_target, services), [tab.target, tab.frame, *filters], fitted
    ).then(**show_preview, **PREVIEW_EVENT)
    tab.frame.input(**show_preview, **PREVIEW_EVENT)  # the preview follows a drag, once it pauses
    # the frame's time follows a drag and a typed number (Enter) alike
    tab.frame.input(
        single_run.frame_line,
        [tab.target, tab.frame],
        tab.frame_time,
        show_progress="hidden",
        trigger_mode="always_last",
    )
    for event in (tab.frame.release, *(control.change for control in filters)):
        event(
            functools.partial(single_run.change_frame, services),
            [tab.target, tab.frame, *filters],
            outputs_of(single_run.FrameShown, tab),
        ).then(**show_preview, **PREVIEW_EVENT)


def listen_single_tab(tab: SingleTab, services: UiServices) -> None:
    keys = single_keys(services.registry)
    gate = PreviewGate()

    def preview(request: gr.Request, asked_at: float | None, choices: Any, *values: Any) -> single_run.PreviewShown:
        asked = Request.parse(keys, values)
        face_map = face_map_of(choices)
        return single_run.gated_preview(services, gate, request.session_hash or "", asked, asked_at, face_map)

    preview_inputs = [tab.asked_at, tab.people.choices, *tab.request()]
    show_preview: dict[str, Any] = {
        "fn": preview,
        "inputs": preview_inputs,
        "outputs": outputs_of(single_run.PreviewShown, tab),
        "js": stamped(preview_inputs),
    }
    # the person's own changes only: the handler itself sets the list when it drops a photo
    for event in (tab.sources.upload, tab.sources.delete, tab.sources.clear):
        event(
            functools.partial(single_run.show_sources, services),
            tab.sources,
            outputs_of(single_run.SourcesShown, tab),
        ).then(**show_preview, **PREVIEW_EVENT)
    listen_target_and_frame(tab, services, keys, show_preview)
    for bound in (tab.trim_start, tab.trim_end):
        bound.release(single_run.trim_times, [tab.target, tab.trim_start, tab.trim_end], tab.trim_times)
    tab.faces.select(single_run.pick, None, tab.position)
    tab.processors.change(single_run.run_order, tab.processors, tab.run_order, show_progress="hidden")
    panels = functools.partial(single_run.option_panels_shown, tuple(tab.option_panels))
    tab.processors.change(panels, tab.processors, list(tab.option_panels.values()), show_progress="hidden")
    for control in (tab.position, tab.processors, *tab.setting_controls, *tab.option_controls):
        event = control.input if isinstance(control, gr.Slider) else control.change
        event(**show_preview, **PREVIEW_EVENT)
    tab.people.choices.change(**show_preview, **PREVIEW_EVENT)  # the preview shows the People map

    def start(
        request: gr.Request, asked_at: float | None, choices: Any, current: int | None, *values: Any
    ) -> Iterator[single_run.Started]:
        gate.hold_message(request.session_hash or "", asked_at)  # a preview asked before Start leaves its message
        asked = Request.parse(keys, values)
        yield from single_models.run_start_with_models(services, current, asked, face_map=face_map_of(choices))

    start_inputs = [tab.asked_at, tab.people.choices, tab.job_id, *tab.request()]
    tab.start.click(start, start_inputs, outputs_of(single_run.Started, tab), js=stamped(start_inputs))
    listen_people_panel(tab.people, services, tab.target)
    listen_models(tab.models, services)
    tab.timer.tick(
        functools.partial(single_run.poll, services),
        tab.job_id,
        outputs_of(single_run.Polled, tab),
    )
    tab.cancel.click(functools.partial(single_run.run_cancel, services), tab.job_id, tab.message)


def listen_models(models: ModelPickers, services: UiServices) -> None:
    """A choice shows or hides its Download button; a press starts the download and the timer that shows
    its progress and, once it ends, relabels every model dropdown."""
    for control, button in zip(models.controls, models.buttons, strict=True):
        shown = outputs_of(single_models.ModelChosen, {"line": models.line, "button": button})
        control.change(functools.partial(single_models.model_chosen, services), control, shown)
        started = outputs_of(single_models.DownloadStarted, models)
        button.click(functools.partial(single_models.download_chosen, services), control, started)
    models.timer.tick(
        functools.partial(single_models.download_tick, services, models.names),
        models.controls,
        [models.line, *models.controls, *models.buttons, models.timer],
        show_progress="hidden",
    )
    if models.swapper is not None:
        listen_swapper_line(models.swapper, models, services)


def listen_swapper_line(swapper: SwapperLine, models: ModelPickers, services: UiServices) -> None:
    """The line follows the dropdown and the network's answer; its Download starts the page's download
    flow (progress under the processors) and the line's timer, which says when the model is here."""
    update = functools.partial(single_models.swapper_hint, services)
    shown = outputs_of(single_models.HintShown, swapper)
    swapper.control.change(update, swapper.control, shown, show_progress="hidden")
    swapper.timer.tick(update, swapper.control, shown, show_progress="hidden")
    started = outputs_of(single_models.DownloadStarted, models)
    swapper.button.click(functools.partial(single_models.download_recommended, services), None, started).then(
        update, swapper.control, shown, show_progress="hidden"
    )


def build_single_tab(services: UiServices) -> SingleTab:
    tab = render_single_tab(services)
    listen_single_tab(tab, services)
    return tab


def page_values(services: UiServices, shown: Settings) -> list[Any]:
    """At each page load, the tab's settings as saved now (``SingleTab.loaded()``'s parts): the processors,
    each setting control and each option control whose saved value differs from ``shown`` (the page was
    built with those; the others are left as they are)."""
    settings = services.settings()
    names = services.registry.names()
    chosen = [name for name in settings.processors if name in names] or ["face_swapper"]
    processors = chosen if settings.processors != shown.processors else gr.skip()
    fallback = services.runtime.spec(settings.face_recognizer_model).threshold
    controls = []
    for key in single_keys(services.registry):
        value = getattr(settings, key)
        if value == getattr(shown, key):
            controls.append(gr.skip())
        else:
            controls.append(control_update(key, fallback if value is None and key in FACE_SETTINGS else value))
    options = []
    for processor, option in option_fields(services):
        now = settings.processor_options.get(processor, {}).get(option.name, option.default)
        before = shown.processor_options.get(processor, {}).get(option.name, option.default)
        options.append(gr.update(value=now) if now != before else gr.skip())
    return [processors, *controls, *options]
