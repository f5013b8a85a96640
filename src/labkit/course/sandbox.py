"""The box a student's kernel runs in while it is graded.

nbgrader starts the kernel with the grader's rights: student code could read the
gradebook and the hidden tests, other students' files, the instructor's tokens, write
anywhere and phone home. Here the kernel command is wrapped by ``python -m
labkit.course.sandbox POLICY -- <kernel argv>``, which before exec'ing the kernel

* enters new **mount and network namespaces**: no network at all (the kernel talks to the
  grader over Unix sockets, ``transport="ipc"``), and ``pivot_root``s into a fresh root
  built from an allow-list: the OS (read-only), the Python installation and import paths
  (read-only), the submission's own folder and the kernel's socket folder (writable),
  empty ``/tmp``. The course, other checkouts, other jobs, home folders do not exist;
  ``hide`` names paths that must stay out even when an import path holds them;
* drops to an unprivileged user of its own (``uid``, when the grader is root; when it is
  not, a second user namespace locks the mounts) and marks itself non-dumpable;
* sets resource limits: address space (memory), CPU seconds, file size, processes;
* scrubs the environment (no tokens), closes stdin/stdout/stderr, and asks the OS to kill
  the kernel when the grader dies (``PR_SET_PDEATHSIG``).

:func:`probe` says which of this works on the machine; grading refuses to run unisolated
unless told to (``--no-isolation``).
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import signal
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT = 1, 2, 4, 32
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
MNT_DETACH = 2
NOBODY = 65534
_SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}.get(os.uname().machine, 155)
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")

# Variables a kernel may inherit; everything else (tokens, credentials) is dropped.
_ENV_KEEP = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "PYTHONWARNINGS", "PYTHONHASHSEED",
             "NBGRADER_EXECUTION", "JPY_PARENT_PID", "PYDEVD_DISABLE_FILE_VALIDATION")
_DEFAULT_HIDE = ("/tmp", "/var/tmp", "/dev/shm")


@dataclass(frozen=True)
class Policy:
    """What one kernel may see and use. Paths are absolute; sizes in bytes, times in s.

    ``workdir`` (the submission's folder) and ``ipc_dir`` (the kernel's sockets and
    connection file) are writable; ``keep`` are visible read-only unless they hold a
    ``hide`` path; nothing else outside the OS exists for the kernel.
    """

    workdir: str
    ipc_dir: str
    hide: tuple[str, ...] = ()
    keep: tuple[str, ...] = ()
    mask: tuple[str, ...] = ()   # files inside workdir the kernel must not read
    uid: int = NOBODY            # the kernel's user when the grader is root
    root_dir: str = ""           # where the kernel's root is built (default: beside ipc_dir)
    memory_bytes: int = 3 * 1024**3
    cpu_seconds: int = 600
    file_bytes: int = 64 * 1024**2
    processes: int = 256
    isolate: bool = True
    env: dict[str, str] = field(default_factory=dict)

    def save(self, path: Path) -> Path:
        path.write_text(json.dumps(asdict(self), indent=1))
        return path

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Policy:
        raw = json.loads(Path(path).read_text())
        for key in ("hide", "keep", "mask"):
            raw[key] = tuple(raw.get(key, ()))
        return cls(**raw)


def default_hide(*extra: str | os.PathLike[str]) -> tuple[str, ...]:
    """Scratch space and the grader's home, plus ``extra`` (course root, jobs folder)."""
    home = os.path.expanduser("~")
    paths = [*_DEFAULT_HIDE, *(str(Path(p).resolve()) for p in extra)]
    if home not in ("/", ""):
        paths.append(home)
    return tuple(dict.fromkeys(paths))


def default_keep() -> tuple[str, ...]:
    """The Python installation and every import path: the kernel needs them to start."""
    cwd = os.getcwd()
    paths = {sys.prefix, sys.base_prefix, *(p for p in sys.path if p not in ("", ".", cwd))}
    return tuple(sorted(str(Path(p).resolve()) for p in paths if p and Path(p).is_dir()))


# -- kernel side ---------------------------------------------------------------------------

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong,
                        ctypes.c_char_p)
_libc.unshare.argtypes = (ctypes.c_int,)
_libc.prctl.argtypes = (ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                        ctypes.c_ulong)
_libc.umount2.argtypes = (ctypes.c_char_p, ctypes.c_int)


def _check(rc: int, what: str) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int,
           data: str | None = None) -> None:
    def enc(text: str | None) -> bytes | None:
        return text.encode() if text is not None else None

    _check(_libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)),
           f"mount {target}")


def _write(path: str, text: str) -> None:
    with open(path, "w") as fh:
        fh.write(text)


def _under(path: str, roots: tuple[str, ...]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def _bind(source: str, target: str, *, writable: bool = False) -> None:
    """Bind ``source`` at ``target`` (created as needed); read-only unless ``writable``."""
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "a"):
            pass
    _mount(source, target, None, MS_BIND | MS_REC)
    if not writable:
        _mount(None, target, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID)


def _expose_system(new: str) -> None:
    """The OS the kernel needs, read-only: binaries, libraries, /etc, a minimal /dev, /proc."""
    for path in SYSTEM_PATHS:
        if os.path.islink(path):  # merged /usr: /bin -> usr/bin
            os.symlink(os.readlink(path), new + path)
        elif os.path.isdir(path):
            _bind(path, new + path)
    os.makedirs(new + "/dev", exist_ok=True)
    _mount("tmpfs", new + "/dev", "tmpfs", MS_NOSUID, "size=64k,mode=755")
    for name in ("null", "zero", "full", "random", "urandom"):
        _bind(f"/dev/{name}", f"{new}/dev/{name}", writable=True)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                         ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):
        os.symlink(target, f"{new}/dev/{name}")
    _bind("/proc", new + "/proc")
    for path in ("/tmp", "/var/tmp", "/dev/shm"):
        os.makedirs(new + path, exist_ok=True)
        _mount("tmpfs", new + path, "tmpfs", MS_NOSUID | MS_NODEV, "size=256m,mode=1777")


def _enter_namespaces(policy: Policy) -> str:
    """Unshare, build a root that holds only what the kernel needs, pivot into it.

    An allow-list, not a block-list: the new root has the OS (read-only), the Python
    installation and import paths (read-only), the submission folder and the socket
    folder (writable), empty ``/tmp``. Nothing else on the machine exists for the kernel:
    not the course, not other courses or checkouts, not other jobs, not home folders.
    """
    root = os.geteuid() == 0
    uid, gid = os.getuid(), os.getgid()
    if root:
        _check(_libc.unshare(CLONE_NEWNS | CLONE_NEWNET), "unshare")
    else:
        _check(_libc.unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET), "unshare")
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"0 {uid} 1")
        _write("/proc/self/gid_map", f"0 {gid} 1")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)

    new = os.path.realpath(policy.root_dir or policy.ipc_dir.rstrip("/") + "-root")
    os.makedirs(new, exist_ok=True)
    _mount("tmpfs", new, "tmpfs", MS_NOSUID | MS_NODEV, "size=16m,mode=755")
    _expose_system(new)
    hide = tuple(os.path.realpath(p) for p in policy.hide)
    exposed = list(SYSTEM_PATHS)
    for path in sorted({os.path.realpath(p) for p in policy.keep}, key=len):
        # never a path that holds a hidden one (a course repository on sys.path), nor
        # one inside a path already there
        if any(_under(h, (path,)) for h in hide) or _under(path, tuple(exposed)) \
                or not os.path.isdir(path):
            continue
        _bind(path, new + path)
        exposed.append(path)
    for path in (policy.workdir, policy.ipc_dir):
        real = os.path.realpath(path)
        _bind(real, new + real, writable=True)

    os.chdir(new)
    _check(_libc.syscall(_SYS_PIVOT_ROOT, b".", b"."), "pivot_root")
    _check(_libc.umount2(b".", MNT_DETACH), "detach the old root")
    os.chdir("/")
    # The notebook being graded sits in the kernel's own folder *with* its hidden tests
    # (nbgrader restores them before executing): the kernel sees an empty file instead.
    for path in policy.mask:
        if os.path.isfile(path):
            _mount("/dev/null", path, None, MS_BIND)
    if root:
        return "namespaces+nobody" if policy.uid == NOBODY else "namespaces+uid"
    # Lock the mounts: in a child user namespace they can no longer be unmounted.
    _check(_libc.unshare(CLONE_NEWUSER | CLONE_NEWNS), "unshare (lock)")
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid} 0 1")
    _write("/proc/self/gid_map", f"{gid} 0 1")
    return "namespaces+user"


def uid_in_use(uid: int) -> bool:
    """A user of that number exists, owns a subordinate-id range, or runs a process."""
    import pwd

    try:
        pwd.getpwuid(uid)
        return True
    except KeyError:
        pass
    for table in ("/etc/subuid", "/etc/subgid"):
        try:
            rows = Path(table).read_text().split()
        except OSError:
            continue
        for row in rows:
            parts = row.split(":")
            if (len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit()
                    and int(parts[1]) <= uid < int(parts[1]) + int(parts[2])):
                return True
    return bool(processes_of(uid))


def processes_of(uid: int) -> list[int]:
    """Pids whose real or effective uid is ``uid`` (read from /proc); zombies, which can
    no longer act and wait only for their parent to reap them, are left out."""
    pids = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":", 1) for line in status.read_text().splitlines()
                          if ":" in line)
            real, effective = fields["Uid"].split()[:2]
            if uid in (int(real), int(effective)) and fields["State"].split()[0] not in "ZX":
                pids.append(int(status.parent.name))
        except (OSError, ValueError, KeyError, IndexError):
            continue
    return pids


def kill_user(uid: int, rounds: int = 5) -> int:
    """SIGKILL every process of ``uid`` (a kernel's daemons and forks included): a child
    takes that uid and calls ``kill(-1)``, which reaches all of them at once. Root only;
    returns how many were still running before the last round (0: none left)."""
    if os.geteuid() != 0 or uid in (0, NOBODY):
        return 0
    left = 0
    for _ in range(rounds):
        left = len(processes_of(uid))
        if not left:
            return 0
        pid = os.fork()
        if pid == 0:  # the child: become the user, signal everything it owns, vanish
            try:
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
                os.kill(-1, signal.SIGKILL)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
    return len(processes_of(uid))


def _limits(policy: Policy) -> None:
    pairs = {resource.RLIMIT_AS: policy.memory_bytes,
             resource.RLIMIT_FSIZE: policy.file_bytes,
             resource.RLIMIT_CORE: 0}
    for res, value in pairs.items():
        resource.setrlimit(res, (value, value))
    resource.setrlimit(resource.RLIMIT_CPU, (policy.cpu_seconds, policy.cpu_seconds + 5))
    if os.geteuid() == 0:  # NPROC counts the target user's processes: only meaningful as nobody
        resource.setrlimit(resource.RLIMIT_NPROC, (policy.processes, policy.processes))


def _connection_file(argv: list[str]) -> str | None:
    for flag in ("-f", "--f"):
        if flag in argv[:-1]:
            return argv[argv.index(flag) + 1]
    return None


def _hand_over(policy: Policy, argv: list[str]) -> None:
    """Give the kernel's uid its folders and files; masked files stay root's, mode 0600.

    Runs in the host's mount namespace, before any mask is mounted, so every path here is
    the real file (never a bind of /dev/null). Symlinks are not followed (``lchown``).
    """
    conn = _connection_file(argv)
    for path in (policy.ipc_dir, policy.workdir, *([conn] if conn else [])):
        os.chown(path, policy.uid, policy.uid)
    os.chmod(policy.ipc_dir, 0o700)
    masked = {os.path.realpath(p) for p in policy.mask}
    for base, dirs, files in os.walk(policy.workdir):
        for name in dirs + files:
            path = os.path.join(base, name)
            if os.path.realpath(path) in masked:
                if not os.path.islink(path):
                    os.chmod(path, 0o600)  # root's, unreadable to the kernel even unmasked
            else:
                os.lchown(path, policy.uid, policy.uid)


def launch(policy: Policy, argv: list[str]) -> None:
    """Enter the box described by ``policy`` and exec ``argv`` (never returns)."""
    # Grading as root, the kernel runs as a uid of its own: hand it its folders *before*
    # the masks are mounted -- afterwards a masked path is a bind of the host's /dev/null,
    # and a chmod there would change the host's /dev/null.
    dropped = policy.isolate and os.geteuid() == 0
    if dropped:
        _hand_over(policy, argv)
    mode = _enter_namespaces(policy) if policy.isolate else "limits-only"
    env = {k: v for k, v in os.environ.items() if k in _ENV_KEEP}
    env.update({"HOME": "/tmp", "IPYTHONDIR": "/tmp/.ipython", "MPLCONFIGDIR": "/tmp",
                "LABKIT_LEDGER": "/tmp/labkit_ledger.json", "LABKIT_SANDBOX": mode,
                "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                "MALLOC_ARENA_MAX": "2", **policy.env})
    _limits(policy)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    if dropped:
        os.setgroups([])
        os.setgid(policy.uid)
        os.setuid(policy.uid)
    # Set last: a change of credentials clears it. The kernel dies with its grader.
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    os.chdir(policy.workdir)
    os.closerange(3, 1 << 16)
    os.execve(argv[0], _non_dumpable(argv), env)


def _non_dumpable(argv: list[str]) -> list[str]:
    """``python -m mod ARGS`` -> the same, first marking the process non-dumpable, so no
    other kernel (same uid in the unprivileged mode) can read its /proc entries."""
    if len(argv) >= 3 and argv[1] == "-m":
        boot = (f"import ctypes, runpy; ctypes.CDLL(None).prctl({PR_SET_DUMPABLE}, 0, 0, 0, 0); "
                f"runpy.run_module({argv[2]!r}, run_name='__main__', alter_sys=True)")
        return [argv[0], "-c", boot, *argv[3:]]
    return argv


def probe(timeout: float = 20.0) -> tuple[bool, str]:
    """(isolation works here, why not). Runs the real launcher on a throwaway policy."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="labkit-probe-") as tmp:
        work, ipc, secret = Path(tmp, "work"), Path(tmp, "ipc"), Path(tmp, "secret")
        for d in (work, ipc, secret):
            d.mkdir()
        (secret / "x").write_text("hidden")
        policy = Policy(workdir=str(work), ipc_dir=str(ipc), hide=default_hide(secret),
                        keep=default_keep(), cpu_seconds=30)
        path = policy.save(Path(tmp, "policy.json"))
        check = ("import os, socket, pathlib, sys\n"
                 f"assert not pathlib.Path({str(secret / 'x')!r}).exists(), 'hidden file visible'\n"
                 "s = socket.socket()\ns.settimeout(1)\n"
                 "try:\n    s.connect(('1.1.1.1', 53))\n    net = True\n"
                 "except OSError:\n    net = False\n"
                 "assert not net, 'network reachable'\n"
                 f"pathlib.Path({str(work / 'ok')!r}).write_text(os.environ['LABKIT_SANDBOX'])\n")
        proc = subprocess.run([sys.executable, "-m", "labkit.course.sandbox", str(path), "--",
                               sys.executable, "-c", check], capture_output=True, text=True,
                              timeout=timeout)
        ok = (work / "ok").exists()
        if ok:
            return True, (work / "ok").read_text()
        why = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        return False, why


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 3 or args[1] != "--":
        sys.exit("usage: python -m labkit.course.sandbox POLICY.json -- KERNEL ARGV...")
    try:
        launch(Policy.load(args[0]), args[2:])
    except OSError as exc:
        sys.exit(f"labkit sandbox: cannot isolate the kernel: {exc}")


if __name__ == "__main__":
    main()
