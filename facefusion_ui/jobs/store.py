"""The persistent job queue: one SQLite file (WAL mode) under the data directory.

Claiming is one atomic ``UPDATE ... RETURNING`` statement, so two workers (threads or processes) never
get the same job. A worker renews its lease while it works; a job whose lease expired (crash, kill -9,
power loss) is claimed again by the next worker and resumes from its chunk manifest. Every connection
waits for locks (busy timeout) and writes start with ``BEGIN IMMEDIATE``, so "database is locked" does
not reach the user under contention. A full disk is a ``DiskFullError`` naming the folder (a write that
cannot be made is rolled back whole: nothing already in the file is lost).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from facefusion_ui.errors import DiskFullError, JobError, disk_full_named, free_mib
from facefusion_ui.jobs.outputs import choose_output
from facefusion_ui.paths import home_dir
from facefusion_ui.types import JobStatus

BUSY_TIMEOUT_MS = 60_000
FULL_BELOW_MIB = 1
"""SQLite says "disk I/O error" when it cannot grow its shared-memory file: a full disk when this little is free."""
DEFAULT_MAX_ATTEMPTS = 3
TOO_LATE = "completed: the cancel came too late (its output was already written)"
"""The status line of a job whose cancel was asked for after its last frames."""
MAX_INTERRUPTIONS = 20
"""A job whose workers died this many times while running it (e.g. it crashes them) is failed. Attempts
count only the job's own failures: a worker killed mid-job is an interruption, and the job resumes from
its finished chunks."""

MIGRATIONS: list[str] = [
    """
    CREATE TABLE jobs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        status TEXT NOT NULL DEFAULT 'queued',
        priority INTEGER NOT NULL DEFAULT 0,
        payload TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        max_attempts INTEGER NOT NULL DEFAULT 3,
        last_error TEXT,
        frames_done INTEGER NOT NULL DEFAULT 0,
        frames_total INTEGER NOT NULL DEFAULT 0,
        fps REAL NOT NULL DEFAULT 0,
        chunk INTEGER NOT NULL DEFAULT 0,
        chunks_total INTEGER NOT NULL DEFAULT 0,
        eta_s REAL,
        status_line TEXT,
        result TEXT,
        cancel_requested INTEGER NOT NULL DEFAULT 0,
        not_before REAL NOT NULL DEFAULT 0,
        lease_owner TEXT,
        lease_expires REAL,
        created_at REAL NOT NULL,
        started_at REAL,
        finished_at REAL,
        updated_at REAL NOT NULL
    );
    CREATE INDEX jobs_claim ON jobs (status, priority DESC, id);
    CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    """,
    # a worker that died (its lease expired) costs the job no attempt: it is counted apart
    "ALTER TABLE jobs ADD COLUMN interruptions INTEGER NOT NULL DEFAULT 0",
]

CLAIM = """
UPDATE jobs SET status = 'running', lease_owner = :owner, lease_expires = :expires,
       attempts = attempts + (status = 'queued'), interruptions = interruptions + (status = 'running'),
       started_at = COALESCE(started_at, :now), updated_at = :now, status_line = 'running'
WHERE id = (
    SELECT id FROM jobs
    WHERE cancel_requested = 0 AND (
        (status = 'queued' AND attempts < max_attempts AND not_before <= :now)
        OR (status = 'running' AND lease_expires < :now AND interruptions + 1 < :max_interruptions))
    ORDER BY priority DESC, id ASC LIMIT 1)
RETURNING *
"""


@dataclass(frozen=True)
class Job:
    id: int
    status: JobStatus
    priority: int
    payload: dict[str, Any]
    attempts: int
    max_attempts: int
    last_error: str | None
    frames_done: int
    frames_total: int
    fps: float
    chunk: int
    chunks_total: int
    eta_s: float | None
    status_line: str | None
    result: dict[str, Any] | None
    cancel_requested: bool
    lease_owner: str | None
    lease_expires: float | None
    created_at: float
    started_at: float | None
    finished_at: float | None
    updated_at: float
    interruptions: int = 0
    """Times a worker died (its lease expired) while running the job; they cost no attempt."""

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Job:
        data = dict(row)
        data["payload"] = json.loads(data["payload"])
        data["result"] = json.loads(data["result"]) if data["result"] else None
        data["cancel_requested"] = bool(data["cancel_requested"])
        data.pop("not_before", None)
        return cls(**data)

    @property
    def target(self) -> str:
        return str(self.payload.get("target", ""))

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def disk_full(error: sqlite3.Error, folder: Path) -> bool:
    """Whether SQLite failed because the disk of ``folder`` is full."""
    text = str(error)
    if "database or disk is full" in text:
        return True
    return "disk I/O error" in text and free_mib(folder) < FULL_BELOW_MIB


class JobStore:
    def __init__(self, path: Path | None = None) -> None:
        self.path = path or home_dir() / "jobs.db"
        with self._disk_errors(), disk_full_named(self.path.parent.parent):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with contextlib.closing(self._connect()) as connection:
                connection.execute("PRAGMA journal_mode=WAL")
                self._migrate(connection)

    # connections -----------------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _disk_errors(self) -> Iterator[None]:
        """SQLite's words for a full disk become one line naming the folder."""
        try:
            yield
        except sqlite3.OperationalError as error:
            if not disk_full(error, self.path.parent):
                raise
            raise DiskFullError.in_folder(self.path.parent, f"SQLite: {error}") from error

    def _connect(self) -> sqlite3.Connection:
        connection = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        connection.row_factory = sqlite3.Row
        connection.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        connection.execute("PRAGMA synchronous=NORMAL")
        return connection

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._disk_errors(), contextlib.closing(self._connect()) as connection:
            connection.execute("BEGIN IMMEDIATE")
            try:
                yield connection
            except BaseException:
                if connection.in_transaction:  # SQLite may have rolled back already (a full disk)
                    connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")

    @contextlib.contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        with self._disk_errors(), contextlib.closing(self._connect()) as connection:
            yield connection

    def _migrate(self, connection: sqlite3.Connection) -> None:
        connection.execute("BEGIN IMMEDIATE")
        try:
            version = connection.execute("PRAGMA user_version").fetchone()[0]
            for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
                for statement in filter(str.strip, script.split(";")):
                    connection.execute(statement)
                connection.execute(f"PRAGMA user_version={number}")
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise

    def schema_version(self) -> int:
        with self._read() as connection:
            return int(connection.execute("PRAGMA user_version").fetchone()[0])

    # adding ------------------------------------------------------------------------------------------------
    def add(self, payload: dict[str, Any], priority: int = 0, max_attempts: int = DEFAULT_MAX_ATTEMPTS) -> int:
        return self.add_many([payload], priority, max_attempts)[0]

    def add_many(
        self, payloads: Sequence[dict[str, Any]], priority: int = 0, max_attempts: int = DEFAULT_MAX_ATTEMPTS
    ) -> list[int]:
        now = time.time()
        with self._write() as connection:
            ids = []
            for payload in payloads:
                cursor = connection.execute(
                    "INSERT INTO jobs (payload, priority, max_attempts, created_at, updated_at, status_line)"
                    " VALUES (?, ?, ?, ?, ?, 'queued')",
                    (json.dumps(payload), priority, max_attempts, now, now),
                )
                ids.append(int(cursor.lastrowid or 0))
            return ids

    def add_claiming(
        self, payload: dict[str, Any], priority: int, choose: Callable[[Mapping[str, str]], str]
    ) -> tuple[int, str]:
        """Add a job whose output ``choose`` picks from the live jobs' outputs, in the same transaction
        (two processes adding at once see each other's claims)."""
        now = time.time()
        with self._write() as connection:
            rows = connection.execute(
                "SELECT json_extract(payload, '$.output'), id FROM jobs WHERE status IN ('queued', 'running')"
            ).fetchall()
            output = choose({str(path): str(job_id) for path, job_id in rows})
            cursor = connection.execute(
                "INSERT INTO jobs (payload, priority, max_attempts, created_at, updated_at, status_line)"
                " VALUES (?, ?, ?, ?, ?, 'queued')",
                (json.dumps({**payload, "output": output}), priority, DEFAULT_MAX_ATTEMPTS, now, now),
            )
            return int(cursor.lastrowid or 0), output

    def add_failed(self, payload: dict[str, Any], reason: str, priority: int = 0) -> int:
        """Record a job rejected at enqueue (bad input): failed at once, never retried, reason kept."""
        now = time.time()
        with self._write() as connection:
            cursor = connection.execute(
                "INSERT INTO jobs (payload, priority, status, last_error, created_at, updated_at, finished_at,"
                " status_line) VALUES (?, ?, 'failed', ?, ?, ?, ?, 'rejected at enqueue')",
                (json.dumps(payload), priority, reason, now, now, now),
            )
            return int(cursor.lastrowid or 0)

    # reading -----------------------------------------------------------------------------------------------------
    def get(self, job_id: int) -> Job:
        with self._read() as connection:
            row = connection.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
        if row is None:
            raise JobError(f"no job {job_id}: 'run.py batch list' shows the jobs")
        return Job.from_row(row)

    def jobs(self, statuses: Sequence[str] | None = None) -> list[Job]:
        query = "SELECT * FROM jobs"
        arguments: list[Any] = []
        if statuses:
            query += f" WHERE status IN ({','.join('?' * len(statuses))})"
            arguments = list(statuses)
        with self._read() as connection:
            rows = connection.execute(query + " ORDER BY id", arguments).fetchall()
        return [Job.from_row(row) for row in rows]

    def counts(self) -> dict[str, int]:
        with self._read() as connection:
            rows = connection.execute("SELECT status, COUNT(*) FROM jobs GROUP BY status").fetchall()
        return {str(status): int(count) for status, count in rows}

    def has_work(self) -> bool:
        """Jobs that are queued (maybe waiting for a retry) or running under a lease."""
        with self._read() as connection:
            row = connection.execute(
                "SELECT COUNT(*) FROM jobs WHERE (status = 'queued' AND attempts < max_attempts)"
                " OR (status = 'running' AND interruptions + 1 < ?)",
                (MAX_INTERRUPTIONS,),
            ).fetchone()
        return bool(row[0])

    def next_queued(self) -> Job | None:
        with self._read() as connection:
            row = connection.execute(
                "SELECT * FROM jobs WHERE status = 'queued' ORDER BY priority DESC, id ASC LIMIT 1"
            ).fetchone()
        return Job.from_row(row) if row else None

    # the worker's side ---------------------------------------------------------------------------------------------
    def claim(self, owner: str, lease_s: float) -> Job | None:
        """The next job (highest priority, then oldest) for ``owner``, or None. One atomic statement."""
        now = time.time()
        with self._write() as connection:
            self._fail_exhausted(connection, now)
            values = {"owner": owner, "expires": now + lease_s, "now": now, "max_interruptions": MAX_INTERRUPTIONS}
            row = connection.execute(CLAIM, values).fetchone()
        return Job.from_row(row) if row else None

    def _fail_exhausted(self, connection: sqlite3.Connection, now: float) -> None:
        """A job whose workers died ``MAX_INTERRUPTIONS`` times is failed (it will not be claimed again)."""
        connection.execute(
            "UPDATE jobs SET status = 'failed', finished_at = ?, updated_at = ?, lease_owner = NULL,"
            " interruptions = interruptions + 1, last_error = COALESCE(last_error, ?),"
            " status_line = 'failed: its workers kept stopping'"
            " WHERE status = 'running' AND lease_expires < ? AND interruptions + 1 >= ?",
            (now, now, f"its worker stopped {MAX_INTERRUPTIONS} times while running it", now, MAX_INTERRUPTIONS),
        )

    def heartbeat(self, job_id: int, owner: str, lease_s: float) -> bool:
        """Renew the lease; False when ``owner`` no longer holds the job (or cancel was asked for)."""
        now = time.time()
        with self._write() as connection:
            cursor = connection.execute(
                "UPDATE jobs SET lease_expires = ?, updated_at = ? WHERE id = ? AND lease_owner = ?"
                " AND status = 'running'",
                (now + lease_s, now, job_id, owner),
            )
            row = connection.execute("SELECT cancel_requested FROM jobs WHERE id = ?", (job_id,)).fetchone()
        return cursor.rowcount == 1 and not (row and row[0])

    def report(self, job_id: int, owner: str, **fields: Any) -> None:
        """Progress fields (frames_done, frames_total, fps, chunk, chunks_total, eta_s, status_line)."""
        allowed = {"frames_done", "frames_total", "fps", "chunk", "chunks_total", "eta_s", "status_line"}
        values = {key: value for key, value in fields.items() if key in allowed}
        if not values:
            return
        assignments = ", ".join(f"{key} = :{key}" for key in values)
        with self._write() as connection:
            connection.execute(
                f"UPDATE jobs SET {assignments}, updated_at = :now WHERE id = :id AND lease_owner = :owner",
                {**values, "now": time.time(), "id": job_id, "owner": owner},
            )

    def set_status_line(self, job_id: int, line: str) -> None:
        with self._write() as connection:
            connection.execute(
                "UPDATE jobs SET status_line = ?, updated_at = ? WHERE id = ?", (line, time.time(), job_id)
            )

    def complete(self, job_id: int, owner: str, result: dict[str, Any]) -> bool:
        """The job's output is written. A cancel asked for after its last frames came too late: the job
        is completed and its status line says so (never completed with a cancel still pending)."""
        now = time.time()
        with self._write() as connection:
            cursor = connection.execute(
                "UPDATE jobs SET status = 'completed', result = ?, finished_at = ?, updated_at = ?, lease_owner = NULL,"
                " lease_expires = NULL, last_error = NULL, status_line = CASE WHEN cancel_requested"
                f" THEN '{TOO_LATE}' ELSE 'completed' END, cancel_requested = 0"
                " WHERE id = ? AND lease_owner = ? AND status = 'running'",
                (json.dumps(result), now, now, job_id, owner),
            )
            return cursor.rowcount == 1

    def wait_for_output(self, job_id: int, owner: str, reason: str, wait_s: float) -> None:
        """Another run writes the job's output: the job waits for it, queued again after ``wait_s`` without
        its attempt counting (it never fails for that)."""
        now = time.time()
        with self._write() as connection:
            connection.execute(
                "UPDATE jobs SET status = 'queued', attempts = MAX(attempts - 1, 0), last_error = ?, not_before = ?,"
                " updated_at = ?, lease_owner = NULL, lease_expires = NULL,"
                " status_line = 'waiting: another job is writing its output' WHERE id = ? AND lease_owner = ?",
                (reason, now + wait_s, now, job_id, owner),
            )

    def fail(self, job_id: int, owner: str, reason: str, transient: bool, backoff_s: float = 5.0) -> JobStatus:
        """A failed attempt: requeued after a backoff when transient and attempts remain, else failed."""
        now = time.time()
        with self._write() as connection:
            row = connection.execute("SELECT attempts, max_attempts FROM jobs WHERE id = ?", (job_id,)).fetchone()
            retry = transient and row is not None and row[0] < row[1]
            if retry:
                wait = backoff_s * 2 ** max(row[0] - 1, 0)
                connection.execute(
                    "UPDATE jobs SET status = 'queued', last_error = ?, not_before = ?, updated_at = ?,"
                    " lease_owner = NULL, lease_expires = NULL, status_line = ? WHERE id = ? AND lease_owner = ?",
                    (reason, now + wait, now, f"retry {row[0] + 1}/{row[1]} in {wait:.0f} s", job_id, owner),
                )
                return "queued"
            connection.execute(
                "UPDATE jobs SET status = 'failed', last_error = ?, finished_at = ?, updated_at = ?,"
                " lease_owner = NULL, lease_expires = NULL, status_line = 'failed' WHERE id = ? AND lease_owner = ?",
                (reason, now, now, job_id, owner),
            )
            return "failed"

    def release(self, job_id: int, owner: str) -> None:
        """A worker stopping in an orderly way gives the job back (its attempt does not count)."""
        with self._write() as connection:
            connection.execute(
                "UPDATE jobs SET status = 'queued', attempts = MAX(attempts - 1, 0), lease_owner = NULL,"
                " lease_expires = NULL, status_line = 'queued (worker stopped)', updated_at = ?"
                " WHERE id = ? AND lease_owner = ? AND status = 'running'",
                (time.time(), job_id, owner),
            )

    def mark_cancelled(self, job_id: int) -> None:
        now = time.time()
        with self._write() as connection:
            connection.execute(
                "UPDATE jobs SET status = 'cancelled', finished_at = ?, updated_at = ?, lease_owner = NULL,"
                " lease_expires = NULL, status_line = 'cancelled' WHERE id = ?",
                (now, now, job_id),
            )

    # the user's side -------------------------------------------------------------------------------------------------
    def cancel(self, job_id: int) -> JobStatus:
        """A queued job is cancelled at once; a running one stops at its next frames and cleans up. Read and
        written in one transaction: a job that ended meanwhile is refused, never marked."""
        now = time.time()
        with self._write() as connection:
            row = connection.execute("SELECT status FROM jobs WHERE id = ?", (job_id,)).fetchone()
            if row is None:
                raise JobError(f"no job {job_id}: 'run.py batch list' shows the jobs")
            status = str(row[0])
            if status in ("completed", "failed", "cancelled"):
                raise JobError(f"job {job_id} is already {status}: nothing to cancel")
            if status == "queued":
                connection.execute(
                    "UPDATE jobs SET status = 'cancelled', finished_at = ?, updated_at = ?, status_line = 'cancelled'"
                    " WHERE id = ? AND status = 'queued'",
                    (now, now, job_id),
                )
                return "cancelled"
            connection.execute(
                "UPDATE jobs SET cancel_requested = 1, status_line = 'cancelling', updated_at = ?"
                " WHERE id = ? AND status = 'running'",
                (now, job_id),
            )
        return "running"

    def retry(self, job_id: int) -> None:
        """Queue a failed or cancelled job again. Its output is claimed again in the same transaction: a
        name the tool made that a live job took meanwhile steps aside to a free one (``-2``...); a name the
        user chose stays, and the job waits for the other run writing it (``wait_for_output``)."""
        with self._write() as connection:
            row = connection.execute("SELECT status, payload FROM jobs WHERE id = ?", (job_id,)).fetchone()
            if row is None:
                raise JobError(f"no job {job_id}: 'run.py batch list' shows the jobs")
            if row[0] not in ("failed", "cancelled"):
                raise JobError(f"job {job_id} is {row[0]}: only failed or cancelled jobs can be retried")
            payload = json.loads(row[1])
            if payload.get("output_made") and payload.get("output"):
                live = connection.execute(
                    "SELECT json_extract(payload, '$.output'), id FROM jobs"
                    " WHERE status IN ('queued', 'running') AND id != ?",
                    (job_id,),
                ).fetchall()
                taken = {str(path): str(other) for path, other in live}
                wanted = Path(payload["output"])
                overwrite = bool(payload.get("overwrite"))
                payload["output"] = str(choose_output(wanted, taken, made=True, overwrite=overwrite))
            connection.execute(
                "UPDATE jobs SET status = 'queued', attempts = 0, interruptions = 0, cancel_requested = 0, payload = ?,"
                " not_before = 0, finished_at = NULL, status_line = 'queued (retry)', updated_at = ? WHERE id = ?",
                (json.dumps(payload), time.time(), job_id),
            )

    def retry_failed(self) -> list[int]:
        ids = [job.id for job in self.jobs(["failed"])]
        for job_id in ids:
            self.retry(job_id)
        return ids

    def remove(self, job_id: int) -> None:
        job = self.get(job_id)
        if job.status == "running":
            raise JobError(f"job {job_id} is running: cancel it first ('run.py batch cancel {job_id}')")
        with self._write() as connection:
            connection.execute("DELETE FROM jobs WHERE id = ?", (job_id,))

    # queue-wide settings -------------------------------------------------------------------------------------------
    def set_paused(self, paused: bool) -> None:
        with self._write() as connection:
            connection.execute(
                "INSERT INTO settings (key, value) VALUES ('paused', ?) ON CONFLICT(key) DO UPDATE SET value = ?",
                ("1" if paused else "0", "1" if paused else "0"),
            )

    def is_paused(self) -> bool:
        with self._read() as connection:
            row = connection.execute("SELECT value FROM settings WHERE key = 'paused'").fetchone()
        return bool(row and row[0] == "1")


def wait_for(store: JobStore, job_id: int, timeout_s: float) -> Job:
    """Until the job ends (for callers that queue and wait, like the UI); polls the row."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        job = store.get(job_id)
        if job.status in ("completed", "failed", "cancelled"):
            return job
        time.sleep(0.2)
    raise JobError(f"job {job_id} did not finish within {timeout_s:.0f} s")
