"""A real JupyterHub on loopback for tests/hub: Unix accounts, the users' environment, the
hub process and commands run as a hub user.

Everything lives under one temporary folder (mode 0755, outside root's 0700 tmp) that the
test removes: the accounts' homes, the users' environment (made with uv from
``requirements.lock`` on Debian's ``/usr/bin/python3``, which every account can run, plus
this repository installed as a package), the exchange and the hub's own state.
"""

from __future__ import annotations

import contextlib
import http.server
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
UV = ROOT / ".venv-uv" / "bin" / "uv"
CHP = ROOT / "tests" / "hub" / "node_modules" / ".bin" / "configurable-http-proxy"
SYSTEM_PYTHON = Path("/usr/bin/python3")
HUB_CONFIG = ROOT / "course" / "jupyterhub_config.py"
DOMAIN = "hub.labkit.test"  # Chromium maps it (and its subdomains) to 127.0.0.1
HUB_START_S = 90
COMMAND_S = 600


def require(condition: bool, message: str) -> None:
    """Fail (never skip) with what to install: CI must run these tests."""
    if not condition:
        import pytest

        pytest.fail(message, pytrace=False)


def check_prerequisites() -> None:
    require(sys.platform == "linux" and os.geteuid() == 0,
            "tests/hub creates Unix accounts and runs JupyterHub's PAM login and "
            "LocalProcessSpawner: run them as root (CI does), or deselect with -m 'not hub'")
    require(CHP.exists(), f"{CHP} missing: scripts/test installs it (npm ci in tests/hub)")
    require(SYSTEM_PYTHON.exists(), "install Debian's python3 (scripts/system-packages tests)")
    require(UV.exists(), "run ./scripts/setup first (it installs uv into .venv-uv)")


def run(cmd: list[str], *, cwd: Path | None = None, env: dict[str, str] | None = None,
        timeout: float = COMMAND_S) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    if proc.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, cmd))} exited {proc.returncode}:\n"
                             f"{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    return proc.stdout


def users_environment(folder: Path) -> Path:
    """The environment the hub and every user's server run from: the lock's packages on
    Debian's python3 and this repository installed (not editable: the accounts may not
    read the checkout). Returns its ``bin`` folder."""
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
    env.pop("VIRTUAL_ENV", None)
    run([str(UV), "venv", "--quiet", "--python", str(SYSTEM_PYTHON), str(folder)], env=env)
    py = str(folder / "bin" / "python")
    # compiled: the accounts' servers and kernels cannot write bytecode into it later
    quiet = ["--quiet", "--compile-bytecode", "--python", py]
    run([str(UV), "pip", "sync", *quiet, str(ROOT / "requirements.lock")], env=env)
    run([str(UV), "pip", "install", *quiet, "--no-deps", str(ROOT)], env=env)
    return folder / "bin"


@dataclass(frozen=True)
class Account:
    name: str
    password: str
    home: Path
    uid: int
    gid: int


def create_account(name: str, homes: Path) -> Account:
    """``useradd`` with a home under ``homes`` and a random password (PAM checks it)."""
    if _exists(name):
        run(["userdel", "--remove", name])
    home = homes / name
    run(["useradd", "--create-home", "--home-dir", str(home), "--shell", "/bin/bash",
         "--user-group", name])
    password = secrets.token_urlsafe(12)
    subprocess.run(["chpasswd"], input=f"{name}:{password}\n", text=True, check=True)
    entry = pwd.getpwnam(name)
    return Account(name, password, home, entry.pw_uid, entry.pw_gid)


def remove_account(name: str) -> None:
    if _exists(name):
        subprocess.run(["pkill", "-KILL", "-u", name], check=False)
        subprocess.run(["userdel", "--remove", "--force", name], check=False,
                       capture_output=True)


def _exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def as_user(account: Account, cmd: list[str], *, cwd: Path, bin_dir: Path,
            extra_env: dict[str, str] | None = None, timeout: float = COMMAND_S) -> str:
    """Run ``cmd`` as ``account`` (``setpriv``: its uid, gid and groups) with a login-like
    environment: its HOME, the users' environment first on PATH."""
    env = {"HOME": str(account.home), "USER": account.name, "LOGNAME": account.name,
           "PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
           "PYTHONWARNINGS": "ignore", **(extra_env or {})}
    return run(["setpriv", f"--reuid={account.uid}", f"--regid={account.gid}",
                "--init-groups", "--", *cmd], cwd=cwd, env=env, timeout=timeout)


class Hub:
    """``jupyterhub -f course/jupyterhub_config.py`` from the users' environment, on
    ``http://hub.labkit.test:<port>`` (loopback), with its state in ``folder``."""

    def __init__(self, folder: Path, bin_dir: Path, settings: dict[str, str],
                 ports: tuple[int, int, int]) -> None:
        self.folder, self.bin_dir = folder, bin_dir
        port, hub_port, api_port = ports
        self.port = port
        self.url = f"http://{DOMAIN}:{port}"
        self.log_path = folder / "jupyterhub.log"
        self.proxy_pid_file = folder / "jupyterhub-proxy.pid"
        self.env = {**os.environ, **{f"LABKIT_HUB_{k}": v for k, v in settings.items()
                                     if k != "EXCHANGE_ROOT"},
                    "LABKIT_EXCHANGE_ROOT": settings["EXCHANGE_ROOT"],
                    "LABKIT_HUB_URL": self.url,
                    "PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
                    "CONFIGPROXY_AUTH_TOKEN": secrets.token_hex(16)}
        self.env.pop("VIRTUAL_ENV", None)
        self.cmd = [str(bin_dir / "jupyterhub"), "-f", str(HUB_CONFIG),
                    f"--JupyterHub.bind_url=http://127.0.0.1:{port}",
                    f"--JupyterHub.hub_bind_url=http://127.0.0.1:{hub_port}",
                    f"--ConfigurableHTTPProxy.api_url=http://127.0.0.1:{api_port}",
                    f"--ConfigurableHTTPProxy.command={CHP}",
                    f"--JupyterHub.db_url=sqlite:///{folder / 'jupyterhub.sqlite'}",
                    f"--JupyterHub.cookie_secret_file={folder / 'cookie_secret'}",
                    f"--JupyterHub.pid_file={folder / 'jupyterhub.pid'}",
                    f"--ConfigurableHTTPProxy.pid_file={self.proxy_pid_file}",
                    "--Spawner.http_timeout=120", "--Spawner.start_timeout=120"]
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Hub:
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(self.cmd, cwd=self.folder, env=self.env,
                                         stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        deadline = time.monotonic() + HUB_START_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"jupyterhub exited {self.proc.returncode}:\n"
                                   f"{self.log_tail()}")
            with contextlib.suppress(OSError):
                req = urllib.request.Request(f"http://127.0.0.1:{self.port}/hub/health",
                                             headers={"Host": f"{DOMAIN}:{self.port}"})
                with urllib.request.urlopen(req, timeout=5) as resp:
                    if resp.status == 200:
                        return self
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"jupyterhub did not answer within {HUB_START_S} s:\n"
                           f"{self.log_tail()}")

    def stop(self) -> None:
        """SIGTERM (the hub stops its proxy, service and servers), SIGKILL if stuck; then
        the proxy, which runs in a session of its own, if the hub left it running (a hub
        killed by SIGKILL cannot stop it)."""
        if self.proc is not None and self.proc.poll() is None:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, sig)
                try:
                    self.proc.wait(30)
                    break
                except subprocess.TimeoutExpired:
                    continue
        pid = self.proxy_pid()
        if pid is not None:
            end_process(pid)

    def proxy_pid(self) -> int | None:
        """The hub's configurable-http-proxy if it still runs (its pid file, checked
        against the process's command line: a pid can be reused)."""
        try:
            pid = int(self.proxy_pid_file.read_text().strip())
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except (OSError, ValueError):
            return None
        return pid if b"configurable-http-proxy" in cmdline else None

    def log_tail(self, n: int = 8000) -> str:
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")[-n:]
        except OSError:
            return "(no log)"


def end_process(pid: int, grace_s: float = 10.0) -> None:
    """SIGTERM ``pid``, SIGKILL it after ``grace_s`` if it still runs."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            if not Path(f"/proc/{pid}").exists() or _zombie(pid):
                return
            time.sleep(0.1)


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")
    except (OSError, IndexError):
        return True


def copy_course(dest: Path) -> None:
    """The course repository as an instructor clones it: every file git tracks (as it is
    in the working tree)."""
    files = run(["git", "ls-files", "-z"], cwd=ROOT).split("\0")
    for rel in filter(None, files):
        src = ROOT / rel
        if src.is_file():
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target)


def chown_tree(path: Path, account: Account) -> None:
    run(["chown", "-R", f"{account.uid}:{account.gid}", str(path)])


class CanaryServer:
    """A loopback HTTP server on the fixed port the page-attack fixtures point at
    (:data:`labkit.course.fixtures.pages.CANARY_PORT`): every path requested is recorded in
    :attr:`hits`. A port already taken fails the test (never skips it)."""

    def __init__(self, port: int) -> None:
        hits: list[str] = []
        self.hits, self._lock = hits, threading.Lock()
        lock = self._lock

        class Record(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                with lock:
                    hits.append(self.path)
                self.send_response(204)
                self.send_header("Access-Control-Allow-Origin", "*")
                self.end_headers()

            do_POST = do_HEAD = do_GET  # noqa: N815 -- http.server's names

            def log_message(self, *args: object) -> None:
                pass

        try:
            self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Record)
        except OSError as exc:
            require(False, f"the canary server cannot listen on 127.0.0.1:{port} ({exc}): "
                    "the page-attack fixtures name that port; free it and run again")
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> CanaryServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def take(self) -> list[str]:
        """The paths requested since the last call."""
        with self._lock:
            taken = list(self.hits)
            self.hits.clear()
            return taken
