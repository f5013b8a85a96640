"""The kernel launcher, for real: namespaces, nobody, rlimits, scrubbed environment.

Every test starts ``python -m labkit.course.sandbox POLICY -- python -c CODE`` as a real
subprocess. Inside the box stdout and stderr are /dev/null, so CODE reports what it saw
as JSON in ``work/out.json``, which the test reads on the host. These tests need root
(or user namespaces) on Linux; where that is missing they fail, they are not skipped.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from labkit.course.sandbox import NOBODY, Policy, default_hide, default_keep, probe

MiB = 1024**2
ROOT = Path(__file__).resolve().parents[1]
TOKEN_VAR = "LABKIT_TEST_SECRET_TOKEN"


@dataclass
class Box:
    root: Path
    work: Path
    ipc: Path
    secret: Path       # a file the kernel must not see
    policy: Path


def make_box(tmp_path: Path, **limits) -> Box:
    assert str(tmp_path).startswith("/tmp/"), tmp_path  # /tmp is hidden inside the box
    work, ipc, secret_dir = tmp_path / "work", tmp_path / "ipc", tmp_path / "secret"
    for d in (work, ipc, secret_dir):
        d.mkdir()
    secret = secret_dir / "gradebook.txt"
    secret.write_text("hidden test answers")
    policy = Policy(workdir=str(work), ipc_dir=str(ipc), hide=default_hide(secret_dir),
                    keep=default_keep(), **limits)
    return Box(tmp_path, work, ipc, secret, policy.save(tmp_path / "policy.json"))


def launch(box: Box, code: str, *, env: dict[str, str] | None = None, timeout: float = 30,
           ) -> subprocess.CompletedProcess[str]:
    """Run CODE in the box. ``P`` inside is a dict of the box's paths."""
    params = {"work": str(box.work), "ipc": str(box.ipc), "secret": str(box.secret),
              "out": str(box.work / "out.json")}
    prelude = f"import json, os, sys\nP = json.loads({json.dumps(params)!r})\n"
    argv = [sys.executable, "-m", "labkit.course.sandbox", str(box.policy), "--",
            sys.executable, "-c", prelude + textwrap.dedent(code)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                          env=env if env is not None else os.environ.copy())


def report(box: Box, proc: subprocess.CompletedProcess[str]) -> dict:
    out = box.work / "out.json"
    assert out.is_file(), (f"the boxed code wrote no report (exit {proc.returncode}); "
                           f"launcher stderr: {proc.stderr[-2000:]}")
    return json.loads(out.read_text())


def test_probe_says_isolation_works_here():
    assert probe() == (True, "namespaces+nobody")


# -- what the kernel sees -----------------------------------------------------------------

INSIDE = """
import pathlib, socket
r = {}
r["uid"], r["euid"], r["gid"] = os.getuid(), os.geteuid(), os.getgid()
r["groups"] = os.getgroups()
r["secret_exists"] = os.path.exists(P["secret"])
r["secret_dir_exists"] = os.path.exists(os.path.dirname(P["secret"]))
home = P["home"]
r["home_list"] = sorted(os.listdir(home)) if os.path.isdir(home) else None
r["tmp_list"] = sorted(os.listdir("/tmp"))
def connect(addr):
    s = socket.socket()
    s.settimeout(3)
    try:
        s.connect(addr)
        return "connected"
    except OSError as exc:
        return f"{type(exc).__name__}: {exc}"
    finally:
        s.close()
r["net_public"] = connect(("1.1.1.1", 53))
r["net_local"] = connect(("127.0.0.1", P["port"]))
r["env"] = dict(os.environ)
try:
    with open(os.path.join(sys.prefix, P["venv_probe"]), "w") as fh:
        fh.write("x")
    r["venv_write"] = "ok"
except OSError as exc:
    r["venv_write"] = exc.errno
try:
    with open(os.path.join(sys.base_prefix, P["venv_probe"]), "w") as fh:
        fh.write("x")
    r["base_write"] = "ok"
except OSError as exc:
    r["base_write"] = exc.errno
r["prefix"] = sys.prefix
r["cwd"] = os.getcwd()
pathlib.Path(P["work"], "hello.txt").write_text("from the box")
try:
    pathlib.Path(P["tmpx"]).write_text("x")
    r["tmpx_inside"] = pathlib.Path(P["tmpx"]).read_text()
except OSError as exc:
    r["tmpx_inside"] = exc.errno
print("stdout goes nowhere")
with open(P["out"], "w") as fh:
    json.dump(r, fh)
"""


def test_inside_the_box(tmp_path):
    box = make_box(tmp_path, cpu_seconds=20)
    home = os.path.expanduser("~")
    tmpx = Path(f"/tmp/labkit-sandbox-x-{uuid.uuid4().hex}")
    venv_probe = f"labkit-sandbox-probe-{uuid.uuid4().hex}"
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    port = server.getsockname()[1]
    extra = {"home": home, "port": port, "tmpx": str(tmpx), "venv_probe": venv_probe}
    code = f"P.update(json.loads({json.dumps(extra)!r}))\n" + INSIDE
    env = {**os.environ, TOKEN_VAR: "s3cr3t-token", "PATH": os.environ.get("PATH", "/usr/bin")}
    tmpx.unlink(missing_ok=True)
    try:
        # the test server really is reachable from outside the box
        with socket.create_connection(("127.0.0.1", port), timeout=3):
            pass
        proc = launch(box, code, env=env)
        r = report(box, proc)
        tmpx_on_host = tmpx.exists()
        venv_files = [Path(sys.prefix, venv_probe), Path(sys.base_prefix, venv_probe)]
        leaked = [p for p in venv_files if p.exists()]
    finally:
        server.close()
        tmpx.unlink(missing_ok=True)
        for p in (Path(sys.prefix, venv_probe), Path(sys.base_prefix, venv_probe)):
            p.unlink(missing_ok=True)

    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""                     # the kernel's stdout is /dev/null
    # an unprivileged user
    assert (r["uid"], r["euid"], r["gid"]) == (NOBODY, NOBODY, NOBODY)
    assert r["groups"] in ([], [NOBODY])
    # hidden paths
    assert not r["secret_exists"] and not r["secret_dir_exists"]
    real_home = set(os.listdir(home))
    allowed_home = {Path(p).relative_to(home).parts[0] for p in default_keep()
                    if p.startswith(home.rstrip("/") + "/")}
    assert real_home - allowed_home, "the grader's home has nothing to hide: test is moot"
    assert r["home_list"] is not None and set(r["home_list"]) <= allowed_home, r["home_list"]
    kept = (str(box.work), str(box.ipc), *default_keep())
    allowed_tmp = {Path(p).relative_to("/tmp").parts[0] for p in kept
                   if p.startswith("/tmp/")}
    assert set(r["tmp_list"]) <= allowed_tmp, r["tmp_list"]
    assert set(os.listdir("/tmp")) - allowed_tmp  # the host's /tmp does have other things
    # no network, not even the loopback
    assert r["net_public"] != "connected" and r["net_local"] != "connected", r
    # a scrubbed environment
    assert TOKEN_VAR not in r["env"]
    assert r["env"].get("PATH") == env["PATH"]
    assert r["env"]["LABKIT_SANDBOX"] == "namespaces+nobody"
    assert r["env"]["HOME"] == "/tmp"
    assert not {k for k in r["env"] if "TOKEN" in k or "SECRET" in k}
    # read-only Python, writable workdir
    assert r["prefix"] == sys.prefix
    assert r["venv_write"] in (errno.EACCES, errno.EROFS, errno.EPERM), r["venv_write"]
    assert r["base_write"] in (errno.EACCES, errno.EROFS, errno.EPERM), r["base_write"]
    assert not leaked, leaked
    assert os.path.realpath(r["cwd"]) == os.path.realpath(box.work)
    assert (box.work / "hello.txt").read_text() == "from the box"
    # the box's /tmp is its own
    assert r["tmpx_inside"] == "x"
    assert not tmpx_on_host


def test_policy_env_reaches_the_kernel(tmp_path):
    box = make_box(tmp_path, cpu_seconds=20)
    policy = Policy.load(box.policy)
    Policy(**{**policy.__dict__, "env": {"LABKIT_TEST_POLICY_VAR": "yes"}}).save(box.policy)
    proc = launch(box, "json.dump(dict(os.environ), open(P['out'], 'w'))")
    env = report(box, proc)
    assert env["LABKIT_TEST_POLICY_VAR"] == "yes"


# -- resource limits ----------------------------------------------------------------------

def test_memory_cap(tmp_path):
    box = make_box(tmp_path, memory_bytes=512 * MiB, cpu_seconds=20)
    code = """
    r = {}
    small = bytearray(64 * 1024**2)  # well under the cap: works
    r["small"] = len(small)
    del small
    try:
        big = bytearray(1024**3)
        r["big"] = len(big)
    except MemoryError:
        r["big"] = "MemoryError"
    import resource
    r["rlimit_as"] = resource.getrlimit(resource.RLIMIT_AS)
    json.dump(r, open(P["out"], "w"))
    """
    proc = launch(box, code)
    r = report(box, proc)
    assert proc.returncode == 0, proc.stderr
    assert r["small"] == 64 * MiB
    assert r["big"] == "MemoryError"
    assert r["rlimit_as"] == [512 * MiB, 512 * MiB]


def test_cpu_cap_kills_a_busy_loop(tmp_path):
    box = make_box(tmp_path, cpu_seconds=1)
    code = """
    open(os.path.join(P["work"], "started"), "w").close()
    while True:
        pass
    """
    proc = launch(box, code, timeout=15)
    assert (box.work / "started").exists(), proc.stderr
    assert proc.returncode in (-signal.SIGXCPU, -signal.SIGKILL), proc.returncode


def test_file_size_cap(tmp_path):
    box = make_box(tmp_path, file_bytes=1 * MiB, cpu_seconds=20)
    code = """
    import signal
    r = {"sigxfsz": str(signal.getsignal(signal.SIGXFSZ))}
    try:
        with open(os.path.join(P["work"], "big.bin"), "wb") as fh:
            fh.write(b"x" * (2 * 1024**2))
        r["write"] = "ok"
    except OSError as exc:
        r["write"] = exc.errno
    json.dump(r, open(P["out"], "w"))
    """
    proc = launch(box, code)
    r = report(box, proc)
    assert proc.returncode == 0, proc.stderr
    # Python ignores SIGXFSZ, so the write fails with EFBIG instead of killing the kernel.
    assert r["sigxfsz"] == str(signal.SIG_IGN)
    assert r["write"] == errno.EFBIG
    assert (box.work / "big.bin").stat().st_size <= 1 * MiB


# -- misuse -------------------------------------------------------------------------------

def run_launcher(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "labkit.course.sandbox", *args],
                          capture_output=True, text=True, timeout=30)


def test_missing_policy_file_is_an_error(tmp_path):
    marker = tmp_path / "ran"
    proc = run_launcher(str(tmp_path / "nope.json"), "--", sys.executable, "-c",
                        f"open({str(marker)!r}, 'w')")
    assert proc.returncode != 0
    assert "labkit sandbox" in proc.stderr and "nope.json" in proc.stderr
    assert not marker.exists()


def test_unparsable_policy_is_an_error(tmp_path):
    bad = tmp_path / "policy.json"
    bad.write_text("{not json")
    marker = tmp_path / "ran"
    proc = run_launcher(str(bad), "--", sys.executable, "-c", f"open({str(marker)!r}, 'w')")
    assert proc.returncode != 0 and proc.stderr.strip()
    assert not marker.exists()


@pytest.mark.parametrize("shape", ["no-separator", "no-kernel", "nothing"])
def test_bad_command_line_prints_usage(tmp_path, shape):
    box = make_box(tmp_path)
    marker = tmp_path / "ran"
    kernel = [sys.executable, "-c", f"open({str(marker)!r}, 'w')"]
    args = {"no-separator": [str(box.policy), *kernel],
            "no-kernel": [str(box.policy), "--"],
            "nothing": []}[shape]
    proc = run_launcher(*args)
    assert proc.returncode != 0
    assert "usage: python -m labkit.course.sandbox POLICY.json -- KERNEL ARGV" in proc.stderr
    assert not marker.exists()


def test_only_an_allow_list_of_the_machine_exists_inside(tmp_path):
    """Not a block-list: course material anywhere else on the machine (another checkout,
    another course under /srv, this repository's own source notebooks) is simply absent."""
    other = Path(tempfile.mkdtemp(prefix="labkit-other-course-", dir="/srv"
                                  if os.access("/srv", os.W_OK) else "/var/lib"))
    home_file = Path.home() / "labkit-secret-unset"
    try:
        (other / "hidden.ipynb").write_text("BEGIN HIDDEN TESTS")
        home_file = Path.home() / f"labkit-secret-{uuid.uuid4().hex[:8]}"
        home_file.write_text("instructor token")
        box = make_box(tmp_path)
        targets = {"other": str(other / "hidden.ipynb"),
                   "repo_source": str(ROOT / "source"), "repo_labs": str(ROOT / "course"),
                   "home_file": str(home_file)}
        proc = launch(box, f"""
            T = {targets!r}
            seen = {{k: os.path.exists(v) for k, v in T.items()}}
            seen["root"] = sorted(os.listdir("/"))
            json.dump(seen, open(P["out"], "w"))
        """)
        seen = report(box, proc)
        assert not any(seen[k] for k in targets), seen
        allowed = {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "dev",
                   "proc", "tmp", "var"} | {Path(p).parts[1] for p in default_keep()}
        assert set(seen["root"]) <= allowed, seen["root"]
    finally:
        shutil.rmtree(other, ignore_errors=True)
        home_file.unlink(missing_ok=True)


def test_a_masked_file_reads_empty_and_the_hosts_dev_null_is_untouched(tmp_path):
    """The mask is a bind of /dev/null: nothing the launcher does may reach the host's one
    (a chmod of the masked path after the bind once left /dev/null at mode 0600)."""
    box = make_box(tmp_path, cpu_seconds=20)
    graded = box.work / "graded.ipynb"
    graded.write_text("hidden tests")
    policy = Policy.load(box.policy)
    Policy(**{**policy.__dict__, "mask": (str(graded),)}).save(box.policy)
    before = os.stat("/dev/null")
    code = """
    seen = open(P['work'] + '/graded.ipynb').read()
    try:
        os.chmod(P['work'] + '/graded.ipynb', 0o600)
        chmod = 'changed'
    except OSError as e:
        chmod = e.errno
    json.dump({'seen': seen, 'chmod': chmod}, open(P['out'], 'w'))
    """
    proc = launch(box, code)
    r = report(box, proc)
    after = os.stat("/dev/null")
    assert proc.returncode == 0, proc.stderr
    assert r["seen"] == ""                                    # masked inside
    assert r["chmod"] != "changed"                            # the kernel's uid owns nothing
    assert (after.st_mode, after.st_uid, after.st_rdev) == (
        before.st_mode, before.st_uid, before.st_rdev)
    assert graded.read_text() == "hidden tests"               # the real file, intact
    if os.geteuid() == 0:
        assert graded.stat().st_mode & 0o777 == 0o600         # and root's alone
