"""The journal of graded students, a table beside nbgrader's in the gradebook's own database.

One row per (assignment, student): the hashes the grade was made from (grader.classgrade.identity), the
score, where and how long it ran, how many attempts it took and why earlier ones ended; beside it, in a
table of its own, where those seconds went. A row is written
only after nbgrader has recorded the grade, so a run killed at any point loses no recorded grade and
repeats at most the students in flight; `ladder grade` run again skips a student whose row matches.
nbgrader's schema has no place for this; the table lives in the same database (SQLite or PostgreSQL,
through SQLAlchemy) so that the grade and its provenance are never kept apart.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

from sqlalchemy import (
    Column,
    DateTime,
    Float,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    and_,
    create_engine,
    delete,
    select,
)
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError

from ..errors import LadderError

TABLE = Table(
    "ladder_graded", MetaData(),
    Column("assignment", String(128), primary_key=True),
    Column("student", String(128), primary_key=True),
    Column("submission_sha256", String(64), nullable=False),
    Column("source_sha256", String(64), nullable=False),
    Column("grader_sha256", String(64), nullable=False),
    Column("score", Float),
    Column("max_score", Float),
    Column("seconds", Float),
    Column("worker", String(256)),
    Column("attempts", Integer),
    Column("notes", Text),           # JSON: why earlier attempts ended, kernel losses, errors
    Column("graded_at", DateTime(timezone=True)),
)

# Where each recorded student's seconds went (grader.classgrade.timing.student_split), as JSON, and when its
# worker began: a table of its own, so that a gradebook made before it keeps its journal as it was.
SPLIT_TABLE = Table(
    "ladder_grading_split", MetaData(),
    Column("assignment", String(128), primary_key=True),
    Column("student", String(128), primary_key=True),
    Column("started", Float),
    Column("split", Text),
)


@dataclass
class Entry:
    assignment: str
    student: str
    submission_sha256: str
    source_sha256: str
    grader_sha256: str
    score: float
    max_score: float
    seconds: float
    worker: str
    attempts: int = 1
    notes: list[str] = field(default_factory=list)

    def same_grading(self, submission: str, source: str, grader: str) -> bool:
        return (self.submission_sha256, self.source_sha256, self.grader_sha256) == (submission, source, grader)


def retrying(action, attempts: int = 8):
    """Run `action()`, again after a short wait when several writers collided on the database (SQLite's
    lock, PostgreSQL's unique keys or serialization): concurrent `ladder grade` runs share a gradebook."""
    for attempt in range(attempts):
        try:
            return action()
        except (OperationalError, IntegrityError, DBAPIError):
            if attempt == attempts - 1:
                raise
            time.sleep(0.05 * 2 ** attempt)


def checked_url(db_url: str) -> str:
    """`db_url` if SQLAlchemy can open a database through it on this machine; otherwise LadderError saying why in
    one line: not a URL, a database SQLAlchemy does not know, or its driver not installed."""
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError

    try:
        url = make_url(db_url)
    except ArgumentError:
        raise LadderError(f"--db {db_url!r} is not a database URL: write it as SQLAlchemy does, e.g. "
                          "postgresql+psycopg://grader@host/class or sqlite:///gradebook.db") from None
    shown = url.render_as_string(hide_password=True)
    try:
        dialect = url.get_dialect()
    except NoSuchModuleError:
        raise LadderError(f"--db {shown}: SQLAlchemy knows no database {url.drivername!r}; use postgresql+psycopg:// "
                          "or sqlite:///") from None
    try:
        dialect.import_dbapi()
    except ImportError as exc:
        raise LadderError(f"--db {shown}: the driver for {url.drivername} is not installed ({exc}); for PostgreSQL, "
                          "write postgresql+psycopg:// (psycopg comes with pip install -e '.[class]')") from None
    return db_url


class Journal:
    def __init__(self, db_url: str, existing: bool = False):
        """The journal in the gradebook at `db_url`, its tables made where missing; with `existing`, only in a
        gradebook `ladder grade` wrote, which must be there (LadderError otherwise, having created nothing)."""
        shown = make_url(db_url).render_as_string(hide_password=True)
        if existing:
            _must_exist(db_url, shown)
        self.engine = create_engine(db_url)
        try:
            if existing:
                from sqlalchemy import inspect

                found = set(inspect(self.engine).get_table_names())
                if not {TABLE.name, "assignment"} <= found:
                    raise LadderError(f"{shown} is not a gradebook `ladder grade` wrote (it has no "
                                      f"{' or '.join(sorted({TABLE.name, 'assignment'} - found))} table): give the "
                                      "--db that `ladder grade` was given")
            for table in (TABLE, SPLIT_TABLE) if not existing else (SPLIT_TABLE,):   # a gradebook from before it
                retrying(lambda table=table: table.create(self.engine, checkfirst=True))
        except OperationalError as exc:   # the first contact with the gradebook: say which, and why
            reason = str(exc.orig or exc).strip().splitlines()[0]
            raise LadderError(f"cannot open the gradebook at {shown}: {reason}. Check --db (is the database "
                              "server running, and does the database exist?)") from None
        except LadderError:
            self.engine.dispose()
            raise

    def entries(self, assignment: str) -> dict[str, Entry]:
        with self.engine.connect() as conn:
            rows = conn.execute(select(TABLE).where(TABLE.c.assignment == assignment)).mappings().all()
        return {r["student"]: Entry(r["assignment"], r["student"], r["submission_sha256"], r["source_sha256"],
                                    r["grader_sha256"], r["score"], r["max_score"], r["seconds"], r["worker"],
                                    r["attempts"], json.loads(r["notes"] or "[]")) for r in rows}

    def record(self, entry: Entry, split: dict | None = None, started: float = 0.0) -> None:
        """Write `entry`, with where its seconds went (`split`), replacing the student's earlier rows."""
        row = dict(entry.__dict__, notes=json.dumps(entry.notes), graded_at=datetime.now(UTC))

        def write():
            with self.engine.begin() as conn:
                for table in (TABLE, SPLIT_TABLE):
                    conn.execute(delete(table).where(and_(table.c.assignment == entry.assignment,
                                                          table.c.student == entry.student)))
                conn.execute(TABLE.insert().values(**row))
                if split:
                    conn.execute(SPLIT_TABLE.insert().values(assignment=entry.assignment, student=entry.student,
                                                             started=started, split=json.dumps(split)))
        retrying(write)

    def splits(self, assignment: str) -> dict[str, dict]:
        """student -> where their last grading's seconds went, and when it began (`started`)."""
        with self.engine.connect() as conn:
            rows = conn.execute(select(SPLIT_TABLE).where(SPLIT_TABLE.c.assignment == assignment)).mappings().all()
        return {r["student"]: dict(json.loads(r["split"] or "{}"), started=r["started"]) for r in rows}

    def close(self) -> None:
        self.engine.dispose()


def _must_exist(db_url: str, shown: str) -> None:
    """An SQLite gradebook's file must be there before it is opened: opening one makes an empty file."""
    url = make_url(db_url)
    if url.get_backend_name() == "sqlite":
        from pathlib import Path

        if not url.database or url.database == ":memory:" or not Path(url.database).is_file():
            raise LadderError(f"no gradebook at {shown}: give the --db that `ladder grade` was given (its default is "
                              "WORKSPACE/gradebook.db)")
