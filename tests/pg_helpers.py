"""A throw-away PostgreSQL server for the tests: Debian's ``postgresql`` (its ``initdb``
and ``pg_ctl``) in a temporary folder on a free loopback port, run as an unprivileged user
when the tests run as root (the server refuses root), removed at the end."""

from __future__ import annotations

import contextlib
import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg  # the dev extra installs it: the tests fail, never skip, without it
import pytest

from course_helpers import free_port


def pg_bin() -> Path:
    """The newest Debian PostgreSQL's bin folder (/usr/lib/postgresql/<major>/bin)."""
    found = [p.parent for p in Path("/usr/lib/postgresql").glob("*/bin/initdb")
             if p.parent.parent.name.isdigit()]
    if not found:
        pytest.fail("no PostgreSQL server under /usr/lib/postgresql/*/bin: install Debian's "
                    "postgresql (scripts/system-packages tests)")
    return max(found, key=lambda p: int(p.parent.name))


class Cluster:
    """A PostgreSQL cluster in ``folder``, owned by an unprivileged user when the tests
    run as root (the server refuses to run as root), password-protected on loopback."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.bin = folder, pg_bin()
        self.password = secrets.token_hex(12)
        self.prefix: list[str] = []
        if os.geteuid() == 0:
            user = pwd.getpwnam("nobody")
            self.prefix = ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}",
                           "--clear-groups", "--"]
            os.chown(folder, user.pw_uid, user.pw_gid)
        (folder / "pw").write_text(self.password)
        if self.prefix:
            os.chown(folder / "pw", user.pw_uid, user.pw_gid)
        self._run("initdb", "-D", str(folder / "data"), "-U", "labkit", "-E", "UTF8",
                  f"--pwfile={folder / 'pw'}", "--auth=scram-sha-256", "--no-sync")
        self.port = free_port()
        self._run("pg_ctl", "-D", str(folder / "data"), "-l", str(folder / "log"), "-w",
                  "-o", f"-p {self.port} -c listen_addresses=127.0.0.1 "
                  "-c unix_socket_directories='' -c fsync=off", "start")

    def _run(self, tool: str, *args: str) -> None:
        proc = subprocess.run([*self.prefix, str(self.bin / tool), *args], cwd=self.folder,
                              capture_output=True, text=True, timeout=60)
        log = self.folder / "log"
        assert proc.returncode == 0, (proc.stdout, proc.stderr,
                                      log.read_text() if log.exists() else "")

    def url(self, database: str, password: str | None = None) -> str:
        return (f"postgresql://labkit:{password or self.password}@127.0.0.1:{self.port}/"
                f"{database}")

    def create(self, database: str, template: str | None = None) -> str:
        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{database}"'
                         + (f' TEMPLATE "{template}"' if template else ""))
        return self.url(database)

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.folder / "data"), "-m", "immediate", "stop")


@contextlib.contextmanager
def pg_cluster() -> Iterator[Cluster]:
    """A running cluster, stopped and deleted on exit."""
    folder = Path(tempfile.mkdtemp(prefix="labkit-pg-"))  # not under root's 0700 tmp
    try:
        pg = Cluster(folder)
        try:
            yield pg
        finally:
            pg.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
