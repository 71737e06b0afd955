"""Frame progress: the rate and ETA it reports and how long the first frame took."""

from __future__ import annotations

import subprocess
import sys
import time

from facefusion_ui.progress import FrameProgress, frames_state, process_age, process_age_at


def test_frames_state_counts_only_processed_frames_in_the_rate() -> None:
    state = frames_state(done=30, total=100, processed=20, elapsed_s=2.0)
    assert state == {"frames_done": 30, "frames_total": 100, "fps": 10.0, "eta_s": 7.0}


def test_first_frame_is_timed_from_the_job_and_from_the_process() -> None:
    progress = FrameProgress(frames_total=3, chunks_total=1)
    assert progress.first_frame_seconds() is None
    progress.skip(1)  # a chunk reused from an earlier run is not a frame this run made
    assert progress.first_frame_seconds() is None
    progress.advance()
    first = progress.first_frame_seconds()
    assert first is not None
    progress.advance()
    assert progress.first_frame_seconds() == first  # the first frame's time, not the latest
    assert 0 <= first["since_job_start"] <= first["since_process_start"]
    assert first["since_process_start"] <= process_age() + 0.001  # rounded to a millisecond


def test_process_age_counts_from_the_process_start() -> None:
    script = "import time; from facefusion_ui.progress import process_age; time.sleep(0.5); print(process_age())"
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120)
    lived = time.perf_counter() - started
    assert 0.5 <= float(done.stdout) <= lived + 0.01  # no longer than the child lived (to a clock tick)


def test_process_age_grows_with_the_moment() -> None:
    earlier, later = time.perf_counter() - 1.0, time.perf_counter()
    assert abs((process_age_at(later) - process_age_at(earlier)) - 1.0) < 0.05
