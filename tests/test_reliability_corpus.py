"""The reliability corpus (benchmarks/reliability.py) through pytest: every bad or unusual input, through
``run.py process`` and through the batch queue, ends as the case asks (an output of its own target, or
exit 2 with one line naming the problem), and the good jobs queued among them complete."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.reliability import (
    CASES,
    Case,
    Inputs,
    Outcome,
    Report,
    classify_batch,
    classify_process,
    meets_expectation,
    problems_of,
    run_corpus,
    snapshot,
)

CORPUS_TIMEOUT_S = 2400
BY_NAME = {case.name: case for case in CASES}


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    return run_corpus(tmp_path_factory.mktemp("corpus"), parallel=2)


def outcome_of(report: Report, name: str, path: str) -> Outcome:
    (found,) = [o for o in report.outcomes if o.case == name and o.path == path]
    return found


@pytest.mark.slow
@pytest.mark.timeout(CORPUS_TIMEOUT_S)
@pytest.mark.parametrize("path", ["process", "batch"])
@pytest.mark.parametrize("name", [case.name for case in CASES])
def test_case_ends_as_it_should(report: Report, name: str, path: str) -> None:
    case = BY_NAME[name]
    outcome = outcome_of(report, name, path)
    if outcome.kind == "skipped":
        pytest.skip(outcome.detail)
    assert not problems_of(case, outcome), problems_of(case, outcome)
    wanted = "an output of its own target" if case.expect == "output" else f"exit 2 naming one of {case.mentions}"
    assert meets_expectation(case, outcome), f"{outcome.kind}: {outcome.detail} (wanted: {wanted})"


@pytest.mark.slow
@pytest.mark.timeout(CORPUS_TIMEOUT_S)
def test_good_jobs_among_the_bad_ones_complete_and_the_verdict_is_clean(report: Report) -> None:
    assert set(report.good_jobs.values()) == {"completed"}, report.good_jobs
    assert not report.problems, "\n".join(report.problems)


# The classification itself, on hand-made results ------------------------------------------------------------------
def small_job(tmp_path: Path) -> Inputs:
    target = tmp_path / "clip.mp4"
    target.write_bytes(b"not really a video")
    (tmp_path / "out").mkdir()
    return Inputs((tmp_path / "face.jpg",), target, tmp_path / "out" / "clip_swapped.mp4")


def test_a_traceback_is_an_internal_error_whatever_the_exit_code(tmp_path: Path) -> None:
    inputs = small_job(tmp_path)
    stderr = 'Traceback (most recent call last):\n  File "x.py"\nValueError: boom\n'
    assert classify_process(2, stderr, inputs, snapshot(inputs))[0] == "internal"
    assert classify_process(1, "internal error: KeyError: 'x' (run with --verbose)", inputs, snapshot(inputs)) == (
        "internal",
        "internal error: KeyError: 'x' (run with --verbose)",
    )


def test_exit_one_is_wrong_for_a_user_mistake_only(tmp_path: Path) -> None:
    inputs = small_job(tmp_path)
    kind, detail = classify_process(1, "error: ffmpeg failed: No space left on device\n", inputs, snapshot(inputs))
    assert kind == "error_exit"
    mistake = Case("x", "refused", lambda shop, folder: inputs, ("space",))
    disk = Case("y", "refused", lambda shop, folder: inputs, ("space",), user_mistake=False)
    assert problems_of(mistake, Outcome("x", "process", kind, detail))
    assert not problems_of(disk, Outcome("y", "process", kind, detail))
    assert meets_expectation(disk, Outcome("y", "process", kind, detail))


def test_a_failed_run_that_leaves_a_file_or_touches_the_target_is_caught(tmp_path: Path) -> None:
    inputs = small_job(tmp_path)
    before = snapshot(inputs)
    inputs.output.write_bytes(b"half a video")
    assert classify_process(2, "error: bad input\n", inputs, before)[0] == "stray"
    inputs.output.unlink()
    inputs.target.write_bytes(b"overwritten")
    assert classify_process(2, "error: bad input\n", inputs, before)[0] == "lost"


def test_a_refusal_must_name_the_problem_not_just_a_path(tmp_path: Path) -> None:
    inputs = small_job(tmp_path)
    case = Case("t", "refused", lambda shop, folder: inputs, ("folder", "directory"))
    vague = Outcome("t", "process", "refused", "error: target /tmp/a_folder/movie.mp4 does not exist: check the path")
    clear = Outcome("t", "process", "refused", "error: target /tmp/x/movie.mp4 is a folder: give a video file")
    assert not meets_expectation(case, vague)
    assert meets_expectation(case, clear)


def test_batch_jobs_rejected_failed_or_missing(tmp_path: Path) -> None:
    inputs = small_job(tmp_path)
    before = snapshot(inputs)
    rejected = classify_batch(2, "error: job 3 rejected: no face found\n", None, inputs, before)
    assert rejected == ("refused", "error: job 3 rejected: no face found")
    internal = {"id": "4", "status": "failed", "last_error": "internal error KeyError: 'x'"}
    assert classify_batch(0, "", internal, inputs, before)[0] == "internal"
    assert classify_batch(0, "", None, inputs, before)[0] == "lost"
    waiting = {"id": "5", "status": "queued", "last_error": None, "status_line": "queued"}
    assert classify_batch(0, "", waiting, inputs, before)[0] == "unfinished"
