"""What a command's start-up loads, made cheaper: dlib's HOG detector read from its saved binary copy (the
same detector: the same faces with the same margins), mediapipe imported without matplotlib or its tasks
API, a video's source photos read in the background, and the proposer imported beside a video's planning."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import cv2
import numpy as np
import pytest

from facefusion_ui import video_job
from facefusion_ui.errors import InputError
from facefusion_ui.faces import runtime
from facefusion_ui.faces.analyser import FaceAnalyser
from facefusion_ui.faces.detection import Detection
from facefusion_ui.faces.detector_dlib import load_hog_detector
from facefusion_ui.faces.runtime import ModelRuntime
from facefusion_ui.faces.source import LoadingIdentity, load_sources, load_sources_in_background
from facefusion_ui.inference import captured_native_stderr
from facefusion_ui.job import RunContext, SwapJob
from facefusion_ui.models import get_spec, load_manifest
from facefusion_ui.pipeline import FramePipeline, meshes_the_source
from facefusion_ui.processors.registry import ProcessorRegistry
from facefusion_ui.processors.swapping import Swapper
from facefusion_ui.state_manager import Settings
from facefusion_ui.types import Frame
from tests.support import media

ROOT = Path(__file__).resolve().parent.parent


def test_the_saved_hog_detector_is_dlibs_own(tmp_path: Path) -> None:
    import dlib

    made = load_hog_detector(tmp_path)  # made by dlib, and saved
    saved = list(tmp_path.glob("dlib_hog_frontal-*.svm"))
    assert [path.name for path in saved] == [f"dlib_hog_frontal-{dlib.__version__}.svm"]
    assert not list(tmp_path.glob(".*")), "no temporary file left"
    read = load_hog_detector(tmp_path)  # read from the copy
    grey = cv2.cvtColor(media.grace_hopper(), cv2.COLOR_BGR2GRAY)
    own = dlib.get_frontal_face_detector().run(grey, 1, -0.5)
    for detector in (made, read):
        rects, margins, kinds = detector.run(grey, 1, -0.5)
        assert [(r.left(), r.top(), r.right(), r.bottom()) for r in rects] == [
            (r.left(), r.top(), r.right(), r.bottom()) for r in own[0]
        ]
        assert list(margins) == list(own[1]) and list(kinds) == list(own[2])
    assert len(own[0]) >= 1


def test_a_damaged_copy_is_made_again(tmp_path: Path) -> None:
    import dlib

    path = tmp_path / f"dlib_hog_frontal-{dlib.__version__}.svm"
    path.write_bytes(b"not a detector")
    detector = load_hog_detector(tmp_path)
    grey = cv2.cvtColor(media.grace_hopper(), cv2.COLOR_BGR2GRAY)
    assert len(detector.run(grey, 1, 0.0)[0]) >= 1
    assert path.stat().st_size > 1000  # replaced by the real one


def test_an_unwritable_folder_still_gives_the_detector(tmp_path: Path) -> None:
    folder = tmp_path / "file"
    folder.write_text("a file where the folder would be")
    detector = load_hog_detector(folder)
    assert len(detector.run(cv2.cvtColor(media.grace_hopper(), cv2.COLOR_BGR2GRAY), 1, 0.0)[0]) >= 1


def test_mediapipe_is_imported_without_matplotlib() -> None:
    """matplotlib, the solutions no face reading uses (drawing helpers, hands, pose...) and the tasks API
    (and sounddevice, which runs gcc to look for PortAudio) are imported only when something asks for
    them, and are then the real ones."""
    script = (
        "import resource, sys\n"
        "from facefusion_ui.faces.mediapipe_import import UNUSED_SOLUTIONS, import_mediapipe\n"
        "import_mediapipe()\n"
        "from mediapipe.python.solutions import face_detection, face_mesh\n"
        "assert 'matplotlib' not in sys.modules and 'matplotlib.pyplot' not in sys.modules, 'matplotlib imported'\n"
        "assert 'sounddevice' not in sys.modules and 'mediapipe.tasks' not in sys.modules, 'tasks imported'\n"
        "assert not [name for name in UNUSED_SOLUTIONS if name in sys.modules], 'an unused solution imported'\n"
        "assert resource.getrusage(resource.RUSAGE_CHILDREN).ru_nvcsw == 0, 'a program was run'\n"
        "from mediapipe.python.solutions import drawing_utils, hands\n"
        "import matplotlib.pyplot\n"
        "assert drawing_utils.plt is matplotlib.pyplot and callable(drawing_utils.plt.figure)\n"
        "assert type(sys.modules['matplotlib']).__name__ == 'module'\n"
        "assert hands.Hands.__name__ == 'Hands' and type(sys.modules[hands.__name__]).__name__ == 'module'\n"
        "import mediapipe\n"
        "assert mediapipe.solutions.pose.Pose.__name__ == 'Pose'\n"
        "assert mediapipe.tasks.vision.FaceDetector.__name__ == 'FaceDetector'\n"
        "assert type(sys.modules['mediapipe.tasks']).__name__ == 'module'\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


class CountedAnalyser(FaceAnalyser):
    """The face analyser, its full-frame searches counted."""

    searches = 0

    def detect(self, frame: Frame, settings: Settings) -> list[Detection]:
        self.searches += 1
        return super().detect(frame, settings)


def test_source_photos_read_in_the_background(tmp_path: Path) -> None:
    """A video's source photos: checked for a face at once, analysed in full (the landmarks' model loaded)
    only when a face shows in the video; the same faces and key as read at once; a photo without a face
    is the same error."""
    face, blank = tmp_path / "face.jpg", tmp_path / "blank.jpg"
    cv2.imwrite(str(face), media.grace_hopper())
    cv2.imwrite(str(blank), np.full((300, 300, 3), 128, np.uint8))
    settings = Settings()
    runtime = ModelRuntime.create(settings)
    analyser = CountedAnalyser(runtime)
    loading = load_sources_in_background([face], analyser, settings)
    loading.check()
    loading.settle()
    assert "dlib_68" not in runtime.embedded.loaded()  # checked with the detector alone
    loading.prefetch()  # a face in the video
    loading.settle()
    assert "dlib_68" in runtime.embedded.loaded()
    at_once = load_sources([face], FaceAnalyser(ModelRuntime.create(settings)), settings)
    assert loading.key == at_once.key
    assert np.array_equal(loading.faces[0].face.bbox, at_once.faces[0].face.bbox)
    assert np.array_equal(loading.best_frontal().face.kps, at_once.best_frontal().face.kps)
    assert analyser.searches == 1, "the analysis completes the faces the check found, not searches again"
    bad = load_sources_in_background([blank], FaceAnalyser(runtime), settings)
    bad.settle()
    for asked in (bad.check, bad.raise_if_failed, lambda: bad.faces):
        with pytest.raises(InputError, match="no face found in"):
            asked()


def test_the_proposer_is_imported_beside_the_planning_only_when_probes_use_it() -> None:
    """A video with the default detector imports mediapipe's face detection and builds its graph on a
    thread of its own; settings whose probes never propose import nothing."""
    script = (
        "import sys\n"
        "from facefusion_ui.faces.detection_schedule import warm_proposer\n"
        "from facefusion_ui.faces.runtime import ModelRuntime\n"
        "from facefusion_ui.state_manager import Settings\n"
        "never = [Settings(face_detector_interval=1), Settings(face_detector_model='mediapipe_blazeface'),\n"
        "         Settings(face_detector_upsample=0)]\n"
        "assert all(warm_proposer(settings) is None for settings in never)\n"
        "assert 'mediapipe' not in sys.modules, 'imported for settings that never propose'\n"
        "runtime = ModelRuntime.create(Settings())\n"
        "warming = warm_proposer(Settings(), runtime)\n"
        "warming.join(timeout=120)\n"
        "assert not warming.is_alive() and 'mediapipe.python.solutions.face_detection' in sys.modules\n"
        "assert runtime.embedded.loads['mediapipe_blazeface'] == 1\n"
        "assert warming.name == 'warm-proposer'\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_faces_read_by_their_meshes_need_no_68_point_model(tmp_path: Path) -> None:
    """When nothing reads the 68 landmarks and the faces' meshes are wanted (a video for the embedded
    swapper), a detected face gets its mesh (the same one found later otherwise) and its 5 points from
    it, with no 68-point landmarks: dlib's model (0.4 s of CPU to load) is never loaded. The source photo
    read for it (``mesh_only``) likewise, with no embedding. A box the mesh is not found in still gets
    the 68 landmarks, as before."""
    settings = Settings()
    runtime = ModelRuntime.create(settings)
    analyser = FaceAnalyser(runtime)
    frame = media.astronaut()
    [face] = analyser.analyse(frame, settings, embeddings=False, mesh=True, landmarks=False)
    assert face.landmarks_68 is None and face.mesh is not None
    found = analyser.mesh(frame, Detection(face.bbox, face.score))
    assert found is not None and np.array_equal(face.mesh.points, found.points)
    photo = tmp_path / "source.jpg"
    cv2.imwrite(str(photo), media.grace_hopper())
    [source] = load_sources([photo], analyser, settings, mesh_only=True).faces
    assert source.face.mesh is not None and source.face.landmarks_68 is None and source.face.embedding is None
    assert not {"dlib_68", "dlib_5", "dlib_resnet"} & set(runtime.embedded.loaded())
    blank = np.full((300, 300, 3), 128, np.uint8)
    [kept] = analyser.analyse(
        blank,
        settings,
        embeddings=False,
        mesh=True,
        landmarks=False,
        detections=[Detection(np.array([50, 50, 250, 250], np.float32), 0.9)],
    )
    assert kept.mesh is None and kept.landmarks_68 is not None, "no mesh: the 68 landmarks give its points"
    [full] = analyser.analyse(frame, settings, embeddings=False, mesh=True)
    assert full.landmarks_68 is not None and np.array_equal(full.mesh.points, face.mesh.points)  # type: ignore[union-attr]


def test_the_source_is_read_by_its_mesh_alone_only_where_nothing_else_is_read() -> None:
    """One photo for the embedded swapper: its mesh alone. Several photos (the most frontal is chosen by
    the 68 landmarks' poses), a reference taken from the source (its embedding) or a filter classifying
    it: read in full, as before."""
    settings = Settings()
    runtime = ModelRuntime.create(settings)
    registry = ProcessorRegistry.discover()
    processors = [registry.create(name, settings, runtime) for name in settings.processors]
    assert meshes_the_source(settings, processors, 1)
    assert not meshes_the_source(settings, processors, 2)
    reference = settings.with_items(face_selector_mode="reference", reference_face_from="source")
    assert not meshes_the_source(reference, processors, 1)


class CountingAnalyser(FaceAnalyser):
    """A real analyser that counts its full-frame detections."""

    detections = 0

    def detect(self, frame: np.ndarray, settings: Settings) -> list[Detection]:
        self.detections += 1
        return super().detect(frame, settings)


def test_the_analysis_of_checked_photos_detects_no_face_again(tmp_path: Path) -> None:
    """The background analysis starts from the faces the check found: each photo is searched once."""
    face, other = tmp_path / "face.jpg", tmp_path / "other.jpg"
    cv2.imwrite(str(face), media.grace_hopper())
    cv2.imwrite(str(other), media.astronaut())
    settings = Settings()
    analyser = CountingAnalyser(ModelRuntime.create(settings))
    loading = load_sources_in_background([face, other], analyser, settings)
    loading.prefetch()  # before the check ends: the analysis waits for it
    loading.settle()
    assert "dlib_68" in analyser.runtime.embedded.loaded()  # analysed
    assert analyser.detections == 2
    at_once = load_sources([face, other], FaceAnalyser(ModelRuntime.create(settings)), settings)
    for read, expected in zip(loading.faces, at_once.faces, strict=True):
        assert np.array_equal(read.image, expected.image)
        for mine, theirs in (
            (read.face.landmarks_68, expected.face.landmarks_68),
            (read.face.embedding, expected.face.embedding),
        ):
            assert mine is not None and theirs is not None and np.array_equal(mine, theirs)


def test_the_recognizer_loads_the_5_point_model_only_for_faces_without_68_landmarks() -> None:
    """dlib's recognizer aligns a face by its 68 landmarks when it has them: the 5-point predictor is
    loaded only for a face without them (a landmarker that gives none)."""
    image = media.grace_hopper()
    settings = Settings()
    runtime = ModelRuntime.create(settings)
    [with_68] = FaceAnalyser(runtime).analyse(image, settings)
    assert with_68.embedding is not None and "dlib_5" not in runtime.embedded.loaded()
    meshed = settings.with_items(face_landmarker_model="mediapipe_face_mesh")
    [without_68] = FaceAnalyser(runtime).analyse(image, meshed)
    assert without_68.landmarks_68 is None and without_68.embedding is not None
    assert "dlib_5" in runtime.embedded.loaded()


def test_the_source_is_prepared_ahead_when_the_first_face_is_found(tmp_path: Path) -> None:
    """A video's pipeline prepares the source for the swapper on a thread of its own at the first face
    found, once; a frame without a face starts nothing (a video without faces never prepares it)."""
    face = tmp_path / "face.jpg"
    cv2.imwrite(str(face), media.grace_hopper())
    settings = Settings()
    pipeline = FramePipeline.build(settings, ModelRuntime.create(settings), [face], background=True)
    [swapper] = pipeline.processors
    assert isinstance(swapper, Swapper)
    pipeline.analyse(np.full((360, 640, 3), 90, np.uint8))
    assert pipeline.preparing is None
    frame = media.astronaut()
    analysis = pipeline.analyse(frame)
    assert analysis.selected and pipeline.preparing is not None
    pipeline.settle()
    assert swapper.preparations == 1
    pipeline.apply(frame, analysis, 0, 0.0)
    pipeline.analyse(frame, 1, 0.04)
    assert swapper.preparations == 1 and swapper.counts()["faces_swapped"] == 1


class Planned(Exception):
    """Raised by the stand-in planning: the test ends there."""


@pytest.mark.parametrize("selector", ["many", "reference"])
def test_a_videos_source_is_checked_beside_its_planning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, selector: str
) -> None:
    """The first frame waits for the source photos' check, not for the planning's ffmpeg runs: the check
    starts before the planning. The source is prepared for the swap only once a face shows (a video
    without faces never holds the face mesh's model)."""
    face = tmp_path / "face.jpg"
    cv2.imwrite(str(face), media.grace_hopper())
    checked, prepared = threading.Event(), threading.Event()
    real_check, real_prepare = LoadingIdentity._check, Swapper.prepare

    def check(self: LoadingIdentity) -> object:
        checked.set()
        return real_check(self)

    def prepare(self: Swapper[object], sources: object) -> object:
        prepared.set()
        return real_prepare(self, sources)  # type: ignore[arg-type]

    def make(*args: object, **kwargs: object) -> None:
        assert checked.wait(60), "the planning ran before the source photos' check started"
        raise Planned

    monkeypatch.setattr(LoadingIdentity, "_check", check)
    monkeypatch.setattr(Swapper, "prepare", prepare)
    monkeypatch.setattr(video_job.VideoPlan, "make", make)
    settings = Settings(face_selector_mode=selector, reference_face_from="source")  # type: ignore[arg-type]
    job = SwapJob.of(settings, [face], tmp_path / "clip.mp4", tmp_path / "out.mp4")
    runtime = ModelRuntime.create(settings)
    with pytest.raises(Planned):
        video_job.VideoRun(job, RunContext(), runtime)
    assert not prepared.is_set()


class StandInGraph:
    """A mediapipe graph's stand-in: building it writes TFLite's start-up line; meanwhile another thread
    of the process logs a line of its own."""

    def process(self, image: Frame) -> None:
        del image


def test_what_other_threads_write_while_a_graph_is_built_is_not_lost(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    def load(spec: object) -> StandInGraph:
        os.write(2, b"INFO: Created TensorFlow Lite XNNPACK delegate for CPU.\n")
        os.write(2, b"W0000 00:00:1796316546.092650   27383 inference_feedback_manager.cc:114] Feedback\n")
        writer = threading.Thread(target=lambda: os.write(2, b"INFO the job's planning said this\n"))
        writer.start()
        writer.join()
        return StandInGraph()

    monkeypatch.setattr(runtime, "_load_embedded", load)
    spec = get_spec("mediapipe_blazeface", load_manifest())
    assert isinstance(runtime._load_quietly(spec), StandInGraph)
    err = capfd.readouterr().err
    assert "INFO the job's planning said this" in err
    assert "TensorFlow Lite" not in err and "inference_feedback_manager" not in err


def test_two_threads_capturing_stderr_at_once_leave_it_as_it_was(capfd: pytest.CaptureFixture[str]) -> None:
    """Two models loaded on two threads at once: each capture gets its own lines, and stderr points where
    it did before (the later capture to end must not restore the first one's file)."""
    before = os.fstat(2)
    first_in, second_trying, release = threading.Event(), threading.Event(), threading.Event()
    caught: dict[str, list[str]] = {}

    def first() -> None:
        with captured_native_stderr() as lines:
            os.write(2, b"first\n")
            first_in.set()
            release.wait(60)
        caught["first"] = lines

    def second() -> None:
        assert first_in.wait(60)
        second_trying.set()
        with captured_native_stderr() as lines:
            os.write(2, b"second\n")
            release_second.wait(60)
        caught["second"] = lines

    release_second = threading.Event()
    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    assert second_trying.wait(60)
    release.set()  # the first capture ends before the second
    threads[0].join(60)
    release_second.set()
    threads[1].join(60)
    assert caught == {"first": ["first"], "second": ["second"]}
    after = os.fstat(2)
    assert (after.st_dev, after.st_ino) == (before.st_dev, before.st_ino)
    os.write(2, b"after the captures\n")
    assert "after the captures" in capfd.readouterr().err
