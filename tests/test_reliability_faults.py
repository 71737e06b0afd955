"""The fault drills of benchmarks/reliability_faults.py, run by the suite: SIGKILL of the batch worker at
3 seeded points inside chunks, over 2 clips (each kill proves the same resume; the benchmark kills it 10
times over 3 clips), ffmpeg killed mid-chunk, the SQLite file locked for 5 s. Every row must hold."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import reliability_faults


@pytest.mark.slow
def test_the_queue_survives_every_fault(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = reliability_faults.run_faults(tmp_path, seed=7, kills=3, clips=2)
    reliability_faults.print_rows(rows)
    table = capsys.readouterr().out
    with capsys.disabled():
        print("\n" + table)
    assert all(row.ok for row in rows), table
