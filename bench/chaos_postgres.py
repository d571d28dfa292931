"""A private PostgreSQL cluster for the chaos harness, so it can restart a server no one else uses.

`initdb` into a temporary folder, `pg_ctl start` on a free port (TCP on 127.0.0.1, its Unix socket
in the same folder), `pg_ctl restart -m fast|immediate` as often as the harness likes, and
`pg_ctl stop -m immediate` plus the folder removed at the end. PostgreSQL refuses to run as root:
run as root, every PostgreSQL command runs as the `postgres` OS user (`runuser`), which then owns
the folder.

`fsync=off`: the server's own crashes (an immediate shutdown) lose nothing with it, only the
machine's would; it spares the shared disk.
"""
from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

BIN_DIRS = [Path(f"/usr/lib/postgresql/{v}/bin") for v in (17, 16, 15, 14, 13)]


def find_bin() -> Path | None:
    """The folder holding initdb and pg_ctl (PG_BIN, else Debian's /usr/lib/postgresql/<v>/bin, else PATH)."""
    given = os.environ.get("PG_BIN")
    candidates = [Path(given)] if given else [*BIN_DIRS]
    for folder in candidates:
        if (folder / "initdb").is_file() and (folder / "pg_ctl").is_file():
            return folder
    found = shutil.which("initdb")
    return Path(found).parent if found and shutil.which("pg_ctl") else None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PrivatePostgres:
    def __init__(self, bin_dir: Path, *, keep: bool = False) -> None:
        self.bin = bin_dir
        self.keep = keep
        self.as_postgres = os.geteuid() == 0
        self.folder = Path(tempfile.mkdtemp(prefix="sanoma-chaos-pg-"))
        self.data = self.folder / "data"
        self.log = self.folder / "server.log"
        self.port = free_port()
        if self.as_postgres:
            owner = pwd.getpwnam("postgres")
            os.chown(self.folder, owner.pw_uid, owner.pw_gid)
        self.options = (f"-p {self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={self.folder} "
                        "-c fsync=off -c max_connections=200")

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}"

    def _command(self, *args: str) -> list[str]:
        return ["runuser", "-u", "postgres", "--", *args] if self.as_postgres else list(args)

    def _run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        done = subprocess.run(self._command(*args), capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
        return done

    def init(self) -> PrivatePostgres:
        self._run(str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust",
                  "--encoding=UTF8", "--no-sync")
        return self

    def start(self) -> None:
        self._run(str(self.bin / "pg_ctl"), "start", "-D", str(self.data), "-w", "-t", "60", "-l", str(self.log),
                  "-o", self.options)

    def restart(self, mode: str) -> subprocess.Popen:
        """`pg_ctl restart -m <mode>` started, not awaited: the caller polls it."""
        if mode not in ("fast", "immediate"):
            raise ValueError(f"mode must be fast or immediate; got {mode!r}")
        return subprocess.Popen(
            self._command(str(self.bin / "pg_ctl"), "restart", "-D", str(self.data), "-m", mode, "-w", "-t", "60",
                          "-l", str(self.log), "-o", self.options),
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def create_database(self, name: str) -> str:
        import psycopg
        from psycopg import sql

        with psycopg.connect(f"{self.url}/postgres", autocommit=True) as admin:
            admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return f"{self.url}/{name}"

    def cleanup(self) -> None:
        """Stop the server (immediately: nothing in it is kept) and remove its folder."""
        if (self.data / "postmaster.pid").exists():
            subprocess.run(self._command(str(self.bin / "pg_ctl"), "stop", "-D", str(self.data), "-m", "immediate",
                                         "-w", "-t", "30"), capture_output=True, timeout=60)
        deadline = time.monotonic() + 10
        while (self.data / "postmaster.pid").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        if not self.keep:
            shutil.rmtree(self.folder, ignore_errors=True)
