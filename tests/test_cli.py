"""The command line: help for every command, presets output, one-line errors with exit codes."""

from __future__ import annotations

import argparse
import json

import pytest

from facefusion_ui.cli import main, normalise_argv
from facefusion_ui.cli.argv import COMMANDS
from facefusion_ui.cli.parser import build_parser, command_of
from tests.conftest import RunCli


@pytest.mark.parametrize(
    "command",
    [
        [],
        ["ui"],
        ["process"],
        ["batch"],
        ["batch", "add"],
        ["people"],
        ["batch", "run"],
        ["worker"],
        ["models"],
        ["models", "download"],
        ["presets"],
        ["presets", "show"],
        ["doctor"],
    ],
)
def test_help_for_every_command(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main([*command, "--help"])
    assert exited.value.code == 0
    assert "usage: run.py" in capsys.readouterr().out


def test_process_help_lists_choices_from_types(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["process", "--help"])
    out = capsys.readouterr().out
    assert "{many,one,reference}" in out
    assert "--video-memory" in out and "--input-video" in out
    assert "{lightweight,balanced,strict}" in out


def test_presets_list_prints_three_presets_with_values(cli_here: RunCli) -> None:
    completed = cli_here(["presets", "list"])
    assert completed.returncode == 0, completed.stderr
    lines = completed.stdout.splitlines()
    assert lines[0].split()[:4] == ["preset", "fp16", "chunk_s", "cache"]
    rows = {line.split()[0]: line.split() for line in lines[1:4]}
    assert set(rows) == {"lightweight", "balanced", "strict"}
    assert rows["lightweight"][1:4] == ["on", "30", "32"]
    assert "after_chunk" in lines[3]
    assert "suggested for this machine" in lines[-1]


def test_presets_show_prints_the_mapping(cli_here: RunCli) -> None:
    completed = cli_here(["presets", "show", "lightweight"])
    assert completed.returncode == 0, completed.stderr
    assert "video_chunk_size = 30" in completed.stdout
    assert 'release_models = "after_job"' in completed.stdout
    as_json = json.loads(cli_here(["presets", "show", "strict", "--json"]).stdout)
    assert as_json["video_chunk_size"] == "auto" and as_json["frame_queue_size"] == 4


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["process", "--bogus"], "unrecognized arguments: --bogus"),
        (["process", "--face-selector-mode", "all"], "invalid choice: 'all'"),
        (["process", "--face-detector-score", "abc"], "invalid float value: 'abc'"),
        (["process", "--face-detector-score", "3"], "'face_detector_score': allowed a number from 0 to 1"),
        (["presets", "show", "turbo"], "invalid choice: 'turbo'"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
        (["process", "--preset", "huge"], "invalid choice: 'huge'"),
        (["batch", "run", "--video-chunk-size", "30"], "unrecognized arguments: --video-chunk-size 30"),
        (["worker", "--face-selector-mode", "one"], "unrecognized arguments: --face-selector-mode one"),
    ],
)
def test_user_errors_are_one_line_with_exit_code_2(cli_here: RunCli, args: list[str], fragment: str) -> None:
    completed = cli_here(args)
    assert completed.returncode == 2
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1, completed.stderr
    assert lines[0].startswith("error: ") and fragment in lines[0]
    assert "Traceback" not in completed.stderr


def test_verbose_adds_the_traceback(cli_here: RunCli) -> None:
    completed = cli_here(["--verbose", "presets", "show", "strict", "--json", "--bogus"])
    assert completed.returncode == 2
    assert "Traceback" in completed.stderr


def test_unknown_backend_is_a_user_error(cli_here: RunCli) -> None:
    completed = cli_here(["batch", "list", "--backend", "postgres://x"])
    assert completed.returncode == 2
    assert completed.stderr.strip() == "error: unknown backend 'postgres://x': use sqlite or redis://HOST:PORT/DB"


def test_version_reports_ffmpeg_and_providers(cli_here: RunCli) -> None:
    completed = cli_here(["--version"])
    assert completed.returncode == 0, completed.stderr
    out = completed.stdout
    assert out.startswith("facefusion_ui 0.1.0")
    assert "ffmpeg: " in out and "CPUExecutionProvider" in out
    assert "CUDA: " in out


def test_doctor_tells_when_cuda_was_requested_but_not_usable(cli_here: RunCli) -> None:
    completed = cli_here(["doctor", "--execution-providers", "cuda", "cpu", "--json"])
    assert completed.returncode == 0, completed.stderr
    report = json.loads(completed.stdout)
    cuda = report["requested_providers"][0]
    assert cuda["provider"] == "cuda"
    if not cuda["usable"]:  # machines without an NVIDIA GPU (this one and CI)
        assert cuda["notice"].startswith("CUDA requested but not usable: running on CPU because ")
    assert report["requested_providers"][1] == {
        "provider": "cpu",
        "usable": True,
        "reason": "always available",
        "notice": None,
    }


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([], ["ui"]),
        (["--verbose"], ["--verbose", "ui"]),
        (["--port", "8000"], ["ui", "--port", "8000"]),
        (["--help"], ["--help"]),
        (["presets", "list"], ["presets", "list"]),
    ],
)
def test_no_command_means_ui(argv: list[str], expected: list[str]) -> None:
    assert normalise_argv(argv) == expected


def test_importing_the_package_leaves_the_environment_alone_and_the_entry_point_sets_it() -> None:
    import subprocess
    import sys

    from tests.conftest import ROOT

    pools = ("OPENBLAS_NUM_THREADS", "OPENCV_FOR_THREADS_NUM")
    environment = {k: v for k, v in __import__("os").environ.items() if k not in pools}
    script = (
        "import os\n"
        "import facefusion_ui.core, facefusion_ui.cli\n"
        f"print([os.environ.get(name) for name in {pools!r}])\n"
        "facefusion_ui.cli.main(['presets', 'show', 'strict'])\n"
        "import cv2\n"
        f"print([os.environ.get(name) for name in {pools!r}], cv2.getNumThreads())\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=environment, cwd=ROOT, check=True
    )
    lines = completed.stdout.splitlines()
    assert lines[0] == "[None, None]"
    assert lines[-1] == "['1', '1'] 1"


@pytest.mark.parametrize("command", [["batch", "run"], ["worker"]])
def test_worker_commands_take_only_the_settings_they_read(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Each job carries its settings: a worker takes only its runtime's and how it takes jobs."""
    with pytest.raises(SystemExit):
        main([*command, "--help"])
    out = capsys.readouterr().out
    for flag in ("--preset", "--fp16", "--execution-providers", "--execution-threads", "--memory-threshold-mb"):
        assert flag in out
    assert "--max-concurrent-jobs" in out and "--execution-device-id" in out
    assert "--face-selector-mode" not in out and "--video-chunk-size" not in out and "--output-video-quality" not in out


def option_strings(parser: argparse.ArgumentParser, command: str) -> set[str]:
    subparsers = next(action for action in parser._actions if isinstance(action, argparse._SubParsersAction))
    return {flag for action in subparsers.choices[command]._actions for flag in action.option_strings}


@pytest.mark.parametrize("command", COMMANDS)
def test_one_commands_parser_is_the_whole_parsers_part(command: str) -> None:
    whole, alone = build_parser(), build_parser(command)
    subparsers = next(action for action in alone._actions if isinstance(action, argparse._SubParsersAction))
    assert list(subparsers.choices) == [command]  # the others' arguments are not made for a run of this one
    assert option_strings(alone, command) == option_strings(whole, command)


def test_a_run_parses_its_own_command_alone_and_an_unknown_one_names_them_all() -> None:
    assert command_of(["--verbose", "process", "-s", "a.jpg"]) == "process"
    assert command_of(["--help"]) is None
    assert (
        build_parser(command_of(["process", "-s", "a.jpg", "-t", "b.mp4"]))
        .parse_args(["process", "-s", "a.jpg", "-t", "b.mp4"])
        .command
        == "process"
    )
    subparsers = next(a for a in build_parser("bogus")._actions if isinstance(a, argparse._SubParsersAction))
    assert list(subparsers.choices) == list(COMMANDS)
