"""A throwaway PostgreSQL server: a temporary data folder, reached on a Unix socket only.

The checks and `make bench` start one to try the shared gradebook and its work queue. As root
the server runs as the unprivileged user `nobody` (PostgreSQL refuses root). Debian's
`postgresql` package brings it; `.ci/install-system` installs it.
"""

import contextlib
import glob
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

DEBIAN_BINARIES = "/usr/lib/postgresql/*/bin/pg_ctl"
SERVER_USER = "nobody"
DATABASE = "gradebook"


class NoPostgres(RuntimeError):
    """No PostgreSQL server can be started here."""


def postgres_binaries():
    """The folder of initdb, pg_ctl and postgres (on PATH, or Debian's), or None."""
    found = shutil.which("pg_ctl") or next(iter(sorted(glob.glob(DEBIAN_BINARIES))[::-1]), None)
    return Path(found).resolve().parent if found else None


def as_server_user(command):
    """`command` run as an unprivileged user when we are root (PostgreSQL refuses root)."""
    return ["runuser", "-u", SERVER_USER, "--", *command] if os.geteuid() == 0 else command


def run_server_command(command):
    """Run a PostgreSQL program; RuntimeError with its output if it fails."""
    result = subprocess.run(as_server_user(command), capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{command[0]} failed:\n{result.stdout}\n{result.stderr}")


@contextlib.contextmanager
def scratch_postgres():
    """Run a PostgreSQL server with an empty database `gradebook`; yield its SQLAlchemy URL."""
    binaries = postgres_binaries()
    if binaries is None:
        raise NoPostgres("PostgreSQL is not installed (apt-get install postgresql)")
    home = Path(tempfile.mkdtemp(prefix="pg-"))  # short: a socket path has at most 107 bytes
    if os.geteuid() == 0:
        shutil.chown(home, SERVER_USER)
    data = home / "data"
    initdb = [str(binaries / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust"]
    pg_ctl = [str(binaries / "pg_ctl"), "-D", str(data)]
    try:
        run_server_command([*initdb, "--locale=C", "-E", "UTF8", "--no-sync"])
        options = f"-k {home} -c listen_addresses='' -c fsync=off"
        run_server_command([*pg_ctl, "-l", str(home / "log"), "-o", options, "-w", "start"])
        try:
            create_database(home)
            yield f"postgresql+psycopg2://postgres@/{DATABASE}?host={home}"
        finally:
            run_server_command([*pg_ctl, "-m", "immediate", "stop"])
    finally:
        shutil.rmtree(home, ignore_errors=True)


def create_database(socket_folder):
    """CREATE DATABASE gradebook on the server listening in `socket_folder`."""
    import psycopg2

    connection = psycopg2.connect(host=str(socket_folder), user="postgres", dbname="postgres")
    connection.autocommit = True
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE DATABASE {DATABASE}")
    connection.close()
