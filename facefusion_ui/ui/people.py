"""The Single tab's People panel: find the people of the target in the background (a video's pass with
its progress, cancellable), one card per person (thumbnail, time on screen, first seen) with their own
source upload and "leave as is"; Start then queues the job with that face map (``faces/face_map.py``)."""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gradio as gr

from facefusion_ui.errors import CancelledError, FacefusionError, InputError
from facefusion_ui.faces.face_map import FaceMapEntry, PeopleSwap
from facefusion_ui.media_files import media_kind
from facefusion_ui.people_job import (
    PeopleResult,
    cache_dir,
    find_people,
    load_cached,
    resolved_map,
    write_thumbnails,
)
from facefusion_ui.state_manager import Settings
from facefusion_ui.ui.common import file_path, file_paths, problem
from facefusion_ui.ui.media_view import target_info
from facefusion_ui.ui.services import UiServices

PeopleMap = dict[str, dict[str, Any]]
"""The cards' choices by person number: ``{"sources": [paths], "leave": bool}``."""


@dataclass
class PeopleSearch:
    """One target's people pass running on a thread of its own."""

    target: Path
    cancel: threading.Event = field(default_factory=threading.Event)
    done: int = 0
    total: int = 0
    people: list[dict[str, Any]] | None = None
    error: str | None = None
    finished: threading.Event = field(default_factory=threading.Event)

    def progress(self, done: int, total: int) -> None:
        self.done, self.total = done, total


class PeopleSearches:
    """The searches of the page, one per browser session (the last one asked)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._searches: dict[str, PeopleSearch] = {}

    def get(self, session: str) -> PeopleSearch | None:
        with self._lock:
            return self._searches.get(session)

    def start(self, services: UiServices, session: str, target: Path) -> PeopleSearch:
        previous = self.get(session)
        if previous is not None:
            previous.cancel.set()
        search = PeopleSearch(target)
        with self._lock:
            self._searches[session] = search
        folder = services.uploads_dir / "people" / (session or "page")
        thread = threading.Thread(target=run_search, args=(services, search, folder), name="people", daemon=True)
        thread.start()
        return search


def run_search(services: UiServices, search: PeopleSearch, folder: Path) -> None:
    try:
        result = find_people(search.target, services.settings(), services.runtime, search.progress, search.cancel)
        search.people = cards_of(result, write_thumbnails(result, folder), target_info(search.target).fps)
    except CancelledError:
        search.error = "finding people was cancelled"
    except FacefusionError as error:
        search.error = str(error)
    except Exception as error:  # one line for the page; the traceback in the terminal
        search.error = f"internal error ({type(error).__name__}: {error})"
    finally:
        search.finished.set()


def cards_of(result: PeopleResult, thumbnails: dict[int, str], fps: float) -> list[dict[str, Any]]:
    """What each card shows, as plain data (a gr.State)."""
    cards = []
    for person in result.people:
        if result.kind == "video" and fps > 0:
            seen = f"on screen {person.frames / fps:.1f} s, first seen at {person.first_frame / fps:.1f} s"
        else:
            seen = "in the image"
        cards.append({"id": person.id, "thumbnail": thumbnails.get(person.id), "seen": seen})
    return cards


def find(searches: PeopleSearches, services: UiServices, target_value: Any, request: gr.Request) -> tuple[Any, ...]:
    """Find people: the pass starts in the background and the timer shows its progress."""
    target = file_path(target_value)
    if target is None:
        return problem("add a target first"), gr.Timer(active=False)
    searches.start(services, request.session_hash or "", target)
    return "Finding the people of the target...", gr.Timer(active=True)


def tick(searches: PeopleSearches, request: gr.Request) -> tuple[Any, ...]:
    """The pass's progress; once it ends, the people (the cards) and the timer off."""
    search = searches.get(request.session_hash or "")
    if search is None:
        return "", gr.skip(), gr.Timer(active=False)
    if not search.finished.is_set():
        share = f" {search.done} of {search.total} frames" if search.total else ""
        return f"Finding the people of the target...{share}", gr.skip(), gr.Timer(active=True)
    if search.error is not None:
        return problem(search.error), gr.skip(), gr.Timer(active=False)
    people = search.people or []
    line = f"{len(people)} people: give each the source face they get, or leave them as they are"
    return (line if people else "no people found in the target"), people, gr.Timer(active=False)


def cancel(searches: PeopleSearches, request: gr.Request) -> str:
    search = searches.get(request.session_hash or "")
    if search is None or search.finished.is_set():
        return "nothing to cancel"
    search.cancel.set()
    return "cancelling..."


def with_sources(choices: PeopleMap | None, person: int, files: Any) -> PeopleMap:
    updated = {key: dict(value) for key, value in (choices or {}).items()}
    entry = updated.setdefault(str(person), {"sources": [], "leave": False})
    entry["sources"] = [str(path) for path in file_paths(files)]
    entry["leave"] = entry["leave"] and not entry["sources"]
    return updated


def with_leave(choices: PeopleMap | None, person: int, leave: bool) -> PeopleMap:
    updated = {key: dict(value) for key, value in (choices or {}).items()}
    updated.setdefault(str(person), {"sources": [], "leave": False})["leave"] = bool(leave)
    return updated


def face_map_of(choices: PeopleMap | None) -> list[FaceMapEntry]:
    """The job's face map: each person with a source who is not left as they are."""
    return [
        FaceMapEntry(str(int(person)), tuple(Path(path) for path in entry["sources"]))
        for person, entry in sorted((choices or {}).items(), key=lambda item: int(item[0]))
        if entry.get("sources") and not entry.get("leave")
    ]


def preview_map(services: UiServices, target: Path, settings: Settings, entries: list[FaceMapEntry]) -> PeopleSwap:
    """The panel's map resolved for the preview, as the job will resolve it. A video's people come from
    its cached pass (the one the panel ran, under the saved settings, when the tab's own differ): the
    preview never runs a whole video's pass itself."""
    if media_kind(target) == "image":
        people = find_people(target, settings, services.runtime).people
    else:
        cached = load_cached(cache_dir(target, settings)) or load_cached(cache_dir(target, services.settings()))
        if cached is None:
            raise InputError("press Find people (People panel) again: the people of this video are not known yet")
        people = cached.people
    return resolved_map(entries, people, settings, services.runtime)


def map_line(people: PeopleSwap) -> str:
    """What the preview shows, in words: ``Preview with the People map: person 1 gets tom.jpg; ...``."""
    given = "; ".join(f"person {person} gets {label}" for person, label in sorted(people.labels.items()))
    return f"Preview with the People map: {given} (everybody else as they are)"


@dataclass(frozen=True)
class PeoplePanel:
    find: Any
    cancel: Any
    message: Any
    people: Any
    """gr.State: the cards (``cards_of``)."""
    choices: Any
    """gr.State: ``PeopleMap``."""
    timer: Any


def render_people_panel() -> PeoplePanel:
    with gr.Accordion("People: a source face for each person", open=False, elem_id="single-people"):
        gr.Markdown(
            "Find the people of the target, then give each the face they get (or leave them as they are). "
            "With a source for anyone here, Start swaps only those people and the source photos above are not used."
        )
        with gr.Row():
            find_button = gr.Button("Find people", elem_id="single-people-find")
            cancel_button = gr.Button("Cancel", elem_id="single-people-cancel")
        message = gr.Markdown("", elem_id="single-people-message")
        people, choices = gr.State([]), gr.State({})

        @gr.render(inputs=people)  # type: ignore[untyped-decorator]
        def cards(listed: list[dict[str, Any]]) -> None:
            with gr.Row():
                for card in listed:
                    render_card(card, choices)

    return PeoplePanel(find_button, cancel_button, message, people, choices, gr.Timer(1.0, active=False))


def render_card(card: dict[str, Any], choices: Any) -> None:
    person = int(card["id"])
    with gr.Column(min_width=160, elem_id=f"people-card-{person}", elem_classes=["people-card"]):
        gr.Image(card["thumbnail"], label=f"Person {person}", height=140, interactive=False, show_label=True)
        gr.Markdown(card["seen"])
        upload = gr.File(
            label="Their source photo(s)",
            file_count="multiple",
            file_types=["image"],
            elem_id=f"people-source-{person}",
        )
        leave = gr.Checkbox(label="leave as is", value=False, elem_id=f"people-leave-{person}")
        upload.change(functools.partial(chosen_sources, person), [choices, upload], choices)
        leave.change(functools.partial(chosen_leave, person), [choices, leave], choices)


def chosen_sources(person: int, choices: PeopleMap | None, files: Any) -> PeopleMap:
    return with_sources(choices, person, files)


def chosen_leave(person: int, choices: PeopleMap | None, leave: bool) -> PeopleMap:
    return with_leave(choices, person, leave)


def listen_people_panel(panel: PeoplePanel, services: UiServices, target: Any) -> None:
    searches = PeopleSearches()

    def find_people_of(target_value: Any, request: gr.Request) -> tuple[Any, ...]:
        return find(searches, services, target_value, request)

    def progress(request: gr.Request) -> tuple[Any, ...]:
        return tick(searches, request)

    def stop(request: gr.Request) -> str:
        return cancel(searches, request)

    panel.find.click(find_people_of, target, [panel.message, panel.timer])
    panel.timer.tick(progress, None, [panel.message, panel.people, panel.timer], show_progress="hidden")
    panel.cancel.click(stop, None, panel.message)
    target.change(lambda: ([], {}, ""), None, [panel.people, panel.choices, panel.message])
