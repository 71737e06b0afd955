"""One run never spoils another's output, and every failure is one line: the output lock, an output
that is a folder, no part file left behind, what really ran, and targets that are no video file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import cv2
import pytest

from benchmarks.reliability import Skip, fill_up, workshop
from facefusion_ui.errors import DiskFullError, FfmpegError, InputError
from facefusion_ui.jobs.payload import make_payload
from facefusion_ui.jobs.store import JobStore
from facefusion_ui.output_lock import OutputLock
from facefusion_ui.state_manager import Settings
from facefusion_ui.video.ffmpeg import ffmpeg_failure, resolve_ffmpeg, run_tool
from facefusion_ui.video.probe import probe_video
from tests.conftest import ROOT, RunCli
from tests.support import media, videos

HOLD_LOCK = """
import sys
from pathlib import Path
from facefusion_ui.output_lock import OutputLock
with OutputLock(Path(sys.argv[1])):
    print("held", flush=True)
    sys.stdin.read()
"""


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("isolation")
    face = folder / "astronaut.png"
    cv2.imwrite(str(face), media.astronaut())
    target = folder / "grace.jpg"
    cv2.imwrite(str(target), media.grace_hopper())
    clip = videos.write_video(folder / "clip.mp4", videos.moving_face(160, 120, 10), 10)
    return {"face": face, "target": target, "clip": clip, "folder": folder}


def one_line_error(completed: subprocess.CompletedProcess[str], fragment: str) -> str:
    assert completed.returncode == 2, completed.stderr
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), completed.stderr
    assert fragment in lines[0], lines[0]
    return lines[0]


def hold_lock(output: Path, home: Path) -> subprocess.Popen[str]:
    """Another process holding ``output`` (as a run does), stopped at a known point: until its stdin closes."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(output)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "FACEFUSION_UI_HOME": str(home)},
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def test_a_second_run_on_the_same_output_is_refused_and_a_killed_holder_leaves_no_stale_lock(
    run_cli: RunCli, files: dict[str, Path], tmp_path: Path, private_home: Path
) -> None:
    output = tmp_path / "out.mp4"
    holder = hold_lock(output, private_home)
    try:
        completed = run_cli(["process", "-s", str(files["face"]), "-t", str(files["clip"]), "-o", str(output)])
        one_line_error(
            completed, f"another run (pid {holder.pid}) is writing {output}: wait for it or choose another -o"
        )
        assert not output.exists()
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    completed = run_cli(["process", "-s", str(files["face"]), "-t", str(files["clip"]), "-o", str(output)])
    assert completed.returncode == 0, completed.stderr
    assert output.exists()


def test_runs_with_different_homes_on_one_output_see_the_same_lock(
    run_cli: RunCli, files: dict[str, Path], tmp_path: Path
) -> None:
    output, release = tmp_path / "out.mp4", tmp_path / "release"
    args = [sys.executable, str(ROOT / "run.py"), "process", "-s", str(files["face"]), "-t", str(files["clip"])]
    hold = {"FACEFUSION_UI_INJECT_FAULT": f"hold:chunk=1,until={release}", "FACEFUSION_UI_HOME": str(tmp_path / "a")}
    first = subprocess.Popen(
        [*args, "-o", str(output)], env={**os.environ, **hold}, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 300
        while not release.with_name("release.held").exists():  # the first run holds its output, in its first chunk
            assert time.monotonic() < deadline and first.poll() is None, "the first run did not reach its chunk"
            time.sleep(0.05)
        second = run_cli(["process", *args[3:], "-o", str(output)], env={"FACEFUSION_UI_HOME": str(tmp_path / "b")})
        one_line_error(second, f"another run (pid {first.pid}) is writing {output}: wait for it or choose another -o")
    finally:
        release.touch()
        _, stderr = first.communicate(timeout=300)
    assert first.returncode == 0, stderr
    assert len(videos.decode_all(output)) == 10
    assert not (tmp_path / ".out.mp4.lock").exists(), "the lock file is removed when the run lets go"


@pytest.mark.parametrize("how", ["same path", "symlink", "hard link"])
def test_an_output_that_is_a_source_photo_is_refused(
    run_cli: RunCli, files: dict[str, Path], tmp_path: Path, how: str
) -> None:
    source = tmp_path / "face.png"
    source.write_bytes(files["face"].read_bytes())
    output = {"same path": source, "symlink": tmp_path / "link.png", "hard link": tmp_path / "hard.png"}[how]
    if how == "symlink":
        output.symlink_to(source)
    elif how == "hard link":
        output.hardlink_to(source)
    before = source.read_bytes()
    completed = run_cli(["process", "-s", str(source), "-t", str(files["target"]), "-o", str(output)])
    one_line_error(completed, f"output {output} is the source photo {source} itself: choose another output path")
    assert source.read_bytes() == before


def test_batch_refuses_an_output_that_is_a_source_photo_even_with_overwrite(
    run_cli: RunCli, files: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    source = out / "grace_swapped.jpg"  # the name batch add makes for the target grace.jpg
    source.write_bytes(files["face"].read_bytes())
    before = source.read_bytes()
    add = ["batch", "add", "-s", str(source), "-t", str(files["target"]), "--output-dir", str(out), "--overwrite"]
    listing = tmp_path / "jobs.json"
    listing.write_text(json.dumps([{"sources": [str(source)], "target": str(files["target"]), "output": str(source)}]))
    for completed in (run_cli(add), run_cli(["batch", "import", str(listing), "--overwrite"])):
        assert completed.returncode == 2 and completed.stderr.count("\n") == 1, completed.stderr
        assert f"output {source} is the source photo {source} itself" in completed.stderr
    assert source.read_bytes() == before


def test_the_lock_is_exclusive_within_a_process_too_and_released_after(tmp_path: Path) -> None:
    output = tmp_path / "out.png"
    with OutputLock(output), pytest.raises(InputError, match=r"another run \(pid \d+\) is writing"):
        OutputLock(output).acquire()
    with OutputLock(output):  # released by the first one's exit
        pass


def test_an_image_run_is_refused_while_another_holds_its_output(
    run_cli: RunCli, files: dict[str, Path], tmp_path: Path, private_home: Path
) -> None:
    output = tmp_path / "out.png"
    holder = hold_lock(output, private_home)
    try:
        completed = run_cli(["process", "-s", str(files["face"]), "-t", str(files["target"]), "-o", str(output)])
        one_line_error(completed, "is writing")
    finally:
        holder.communicate("")
    assert not output.exists()


@pytest.mark.parametrize("kind", ["clip", "target"])
def test_an_output_that_is_a_folder_is_refused_up_front(
    run_cli: RunCli, files: dict[str, Path], tmp_path: Path, kind: str
) -> None:
    folder = tmp_path / ("adir.mp4" if kind == "clip" else "adir.png")
    folder.mkdir()
    completed = run_cli(["process", "-s", str(files["face"]), "-t", str(files[kind]), "-o", str(folder)])
    one_line_error(completed, f"output {folder} is a folder: give a file name inside it")
    assert not list(tmp_path.rglob("*.part*")), "no part file is left behind"


def test_targets_that_are_no_video_file_say_what_they_are(
    run_cli: RunCli, files: dict[str, Path], tmp_path: Path
) -> None:
    folder_named_mp4 = tmp_path / "folder.mp4"
    folder_named_mp4.mkdir()
    fifo = tmp_path / "pipe.mp4"
    os.mkfifo(fifo)
    audio_only = tmp_path / "sound.mp4"
    ffmpeg = resolve_ffmpeg().path
    made = run_tool([ffmpeg, "-v", "error", "-f", "lavfi", "-i", "sine=duration=1", "-c:a", "aac", str(audio_only)])
    assert made.returncode == 0, made.stderr
    cases = {
        folder_named_mp4: "is a folder, not a file",
        fifo: "is not a regular file (a pipe or a device)",
        audio_only: "has no video stream (only audio): choose a video file",
    }
    for target, fragment in cases.items():
        output = tmp_path / "out.mp4"
        completed = run_cli(["process", "-s", str(files["face"]), "-t", str(target), "-o", str(output)], timeout=120)
        one_line_error(completed, fragment)
        assert not output.exists()
    with pytest.raises(InputError, match="has no video stream"):
        probe_video(audio_only)


def test_a_full_disk_is_one_plain_line_and_ffmpeg_s_words_stay_in_the_detail(files: dict[str, Path]) -> None:
    ffmpeg = resolve_ffmpeg().path
    # /dev/full answers every write with ENOSPC, as a full disk does
    completed = run_tool([ffmpeg, "-v", "error", "-y", "-i", str(files["clip"]), "-f", "mp4", "/dev/full"])
    assert completed.returncode != 0
    error = ffmpeg_failure("writing the output failed", completed.stderr, Path("/dev"))
    assert isinstance(error, DiskFullError) and error.exit_code == 2
    assert str(error).startswith("no space left in /dev (") and "MiB free)" in str(error)
    assert "\n" not in str(error) and error.detail and "No space left on device" in error.detail
    other = ffmpeg_failure("joining failed", "Invalid data found when processing input", Path("/tmp"))
    assert type(other) is FfmpegError and "Invalid data" in str(other)


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Callable[[str, str], Path]]:
    """``small_tmpfs(name, size)`` mounts a tmpfs of ``size`` at ``tmp_path/name`` (unmounted after the test).
    Mounting needs root, which CI has; elsewhere the test is skipped and says so."""
    with workshop(tmp_path / "shop") as shop:

        def mount(name: str, size: str) -> Path:
            try:
                shop.mount_tmpfs(tmp_path / name, f"size={size}")
            except Skip as skip:
                pytest.skip(str(skip))
            return tmp_path / name

        yield mount


def test_a_full_home_is_one_line_and_the_queue_keeps_its_jobs(
    run_cli: RunCli, files: dict[str, Path], tmp_path: Path, small_tmpfs: Callable[[str, str], Path]
) -> None:
    home = small_tmpfs("home", "4m")
    env = {"FACEFUSION_UI_HOME": str(home)}
    add = ["batch", "add", "-s", str(files["face"]), "-t", str(files["clip"]), "--output-dir", str(tmp_path / "out")]
    assert run_cli(add, env=env).returncode == 0
    filler = fill_up(home)
    video = ["process", "-s", str(files["face"]), "-t", str(files["clip"]), "-o", str(tmp_path / "out" / "o.mp4")]
    for args in (add, ["batch", "list"], ["batch", "run", "--until-empty"], ["batch", "retry", "1"], video):
        line = one_line_error(run_cli(args, env=env), f"no space left in {home}")
        assert "MiB free): free some space or choose another folder" in line, line
    filler.unlink()
    assert [(job.id, job.status) for job in JobStore(home / "jobs.db").jobs()] == [(1, "queued")]


def test_a_home_that_fills_under_a_running_worker_stops_it_with_one_line(
    files: dict[str, Path], tmp_path: Path, small_tmpfs: Callable[[str, str], Path]
) -> None:
    home, release = small_tmpfs("home", "8m"), tmp_path / "release"
    store = JobStore(home / "jobs.db")
    job_id = store.add(make_payload([files["face"]], files["clip"], tmp_path / "out.mp4", Settings()))
    env = {**os.environ, "FACEFUSION_UI_HOME": str(home), "FACEFUSION_UI_INJECT_FAULT": f"hold:chunk=1,until={release}"}
    worker = subprocess.Popen(
        [sys.executable, str(ROOT / "run.py"), "batch", "run", "--until-empty"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 300
        while not release.with_name("release.held").exists():  # the job runs, in its first chunk
            assert time.monotonic() < deadline and worker.poll() is None, "the job did not start"
            time.sleep(0.05)
        filler = fill_up(home)
    finally:
        release.touch()
        _, stderr = worker.communicate(timeout=300)
    assert "Traceback" not in stderr, stderr
    filler.unlink()
    job = store.get(job_id)
    if worker.returncode == 2:  # the queue could not record the failure: the worker stopped, the job stays
        assert stderr.strip().splitlines()[-1].startswith(f"error: no space left in {home}"), stderr
        assert job.status in ("running", "queued"), job
    else:  # the queue recorded it: retried, then failed with the line
        assert worker.returncode == 0 and job.status == "failed", (worker.returncode, stderr, job)
        assert job.last_error is not None and job.last_error.startswith(f"no space left in {home}"), job


def test_an_image_output_on_a_full_disk_is_one_line(
    run_cli: RunCli, files: dict[str, Path], small_tmpfs: Callable[[str, str], Path]
) -> None:
    out = small_tmpfs("out", "1m")
    fill_up(out)
    output = out / "swapped.jpg"
    completed = run_cli(["process", "-s", str(files["face"]), "-t", str(files["target"]), "-o", str(output)])
    one_line_error(completed, f"no space left in {out} (0 MiB free): free some space or choose another folder")
    assert sorted(path.name for path in out.iterdir()) == ["filler.bin"]


def test_cuda_asked_for_without_cuda_reports_what_ran_and_warns_once(
    run_cli: RunCli, files: dict[str, Path], tmp_path: Path
) -> None:
    output = tmp_path / "out.png"
    args = ["process", "-s", str(files["face"]), "-t", str(files["target"]), "-o", str(output), "--json"]
    completed = run_cli([*args, "--execution-providers", "cuda", "cpu"])
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout)["execution_providers"] == ["cpu"]
    assert completed.stderr.count("CUDA requested but not usable: running on CPU") == 1, completed.stderr
