"""The box a student's kernel runs in while it is graded.

nbgrader starts the kernel with the grader's rights: student code could read the
gradebook and the hidden tests, other students' files, the instructor's tokens, write
anywhere and phone home. Here the kernel command is wrapped by ``python -m
labkit.course.sandbox POLICY -- <kernel argv>``, which execs Debian's **bubblewrap**
(``bwrap``, the sandbox Flatpak uses) around the kernel:

* new **PID** (with its own ``/proc``), **IPC**, **network**, UTS and cgroup namespaces:
  the kernel sees only its own processes, has no network at all, and every process it
  starts dies with the box (bwrap is the namespace's init; ``--die-with-parent`` ties the
  box to the grader);
* a **read-only allow-list root**: the OS and the Python installation and import paths;
  the course, other checkouts, other jobs and home folders do not exist (``hide`` names
  paths that must stay out even when an import path holds them);
* **no writable host folder**: the kernel's working folder (at the submission's path),
  ``/tmp``, ``/dev/shm`` and its socket folder are size-limited tmpfs mounts that vanish
  with the box. The submission's files are *copied* in from descriptors the launcher
  opened (never through a link), less the notebooks being graded (``mask``). Nothing the
  kernel writes reaches the disk the gradebook is on;
* the kernel talks to the grader over Unix sockets in its own tmpfs; the grader opens
  them through ``/proc/PID/root`` (bwrap reports PID in ``sandbox-info.json``) without
  following links and connects only through those descriptors
  (:mod:`labkit.course.sockets`): a kernel that swaps a socket for a link to a host
  socket redirects nothing;
* its own **user**: grading as root, a uid of the job's own (``uid``), dropped to by
  ``setpriv`` inside the box; otherwise an unprivileged user namespace, with further
  namespaces refused (``--disable-userns``);
* a **seccomp** filter (libseccomp through ``pyseccomp``) refusing the calls a kernel
  never needs: namespaces and mounts, ptrace and other processes' memory, kernel keyring,
  BPF, perf, io_uring, modules;
* **caps**: the job's cgroup (``cgroups``: memory, processes and CPU time (``cpus``) of
  the kernel as a whole, :mod:`labkit.course.cgroups`) and rlimits (address space, CPU
  seconds, file size, processes); without a CPU quota the kernel runs at a lower priority
  (``FALLBACK_NICE``: the grader's own work goes first, but kernels still share the CPU
  per process, so one that forks busy children takes more than its share); every other
  process of the box runs at ``STRAY_NICE`` under ``SCHED_IDLE`` (:func:`demote_strays`,
  by the grader), so the kernel's own children never starve it; a scrubbed environment
  (no tokens); stdout and stderr to ``/dev/null`` (or ``log_path``).

:func:`probe` says which of this works on the machine; grading refuses to run unisolated
unless told to (``--no-isolation``).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import resource
import shutil
import signal
import stat
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from labkit.course import cgroups
from labkit.course.sockets import BOX_IPC, INFO_FILE, box_pid

NOBODY = 65534
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
MAX_COPIED_FILES = 256                  # submission files copied into the box
FALLBACK_NICE = 10                      # the kernel's niceness where no cgroup caps its CPU

# Variables a kernel may inherit; everything else (tokens, credentials) is dropped. Not
# JPY_PARENT_PID: in its own PID namespace the kernel's parent is pid 1 (bwrap), which
# ipykernel's parent poller would read as "orphaned" and exit.
_ENV_KEEP = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "PYTHONWARNINGS", "PYTHONHASHSEED",
             "NBGRADER_EXECUTION", "PYDEVD_DISABLE_FILE_VALIDATION")
_DEFAULT_HIDE = ("/tmp", "/var/tmp", "/dev/shm")

# Namespace flags of clone(2); a kernel may fork, never make namespaces of its own.
_CLONE_NS_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000,
                   0x40000000, 0x00000080)
_DENIED_CALLS = (
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
    "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "open_tree",
    "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
    "name_to_handle_at", "open_by_handle_at", "fanotify_init", "quotactl", "acct",
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
    "reboot", "swapon", "swapoff", "syslog", "settimeofday", "clock_settime", "adjtimex",
    "clock_adjtime", "personality", "vhangup")


@dataclass(frozen=True)
class Policy:
    """What one kernel may see and use. Paths are absolute; sizes in bytes, times in s.

    ``workdir`` is the submission's folder: inside the box the same path is a tmpfs of
    ``scratch_bytes`` holding copies of its regular files, less ``mask``. ``ipc_dir`` is
    the grader's folder for the connection file and bwrap's report; the kernel never
    sees it. ``keep`` are visible read-only unless they hold a ``hide`` path.
    """

    workdir: str
    ipc_dir: str
    hide: tuple[str, ...] = ()
    keep: tuple[str, ...] = ()
    mask: tuple[str, ...] = ()   # files of workdir the kernel must not see
    uid: int = NOBODY            # the kernel's user when the grader is root
    memory_bytes: int = 3 * 1024**3
    cpu_seconds: int = 600
    cpus: float = 1.0                    # CPU time of the whole kernel, in cores (cgroups)
    file_bytes: int = 64 * 1024**2
    processes: int = 256
    scratch_bytes: int = 128 * 1024**2   # each writable tmpfs: workdir, /tmp, /dev/shm
    cgroups: tuple[str, ...] = ()        # cgroup folders the kernel joins (root only)
    log_path: str = ""                   # the kernel's stdout/stderr; "" is /dev/null
    isolate: bool = True
    env: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.uid <= 0:  # as root the kernel becomes this uid: never root itself
            raise ValueError(f"Policy.uid must be a positive, non-root uid, got {self.uid}")
        for name in ("memory_bytes", "cpu_seconds", "cpus", "file_bytes", "processes",
                     "scratch_bytes"):
            if getattr(self, name) <= 0:
                raise ValueError(f"Policy.{name} must be positive, got {getattr(self, name)}")

    def save(self, path: Path) -> Path:
        path.write_text(json.dumps(asdict(self), indent=1))
        return path

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Policy:
        raw = json.loads(Path(path).read_text())
        known = {f.name for f in fields(cls)}
        for key in ("hide", "keep", "mask", "cgroups"):
            raw[key] = tuple(raw.get(key, ()))
        return cls(**{k: v for k, v in raw.items() if k in known})


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


def bwrap() -> str | None:
    """The bubblewrap binary, or None where it is not installed."""
    return shutil.which("bwrap") or next(
        (p for p in ("/usr/bin/bwrap", "/bin/bwrap") if os.access(p, os.X_OK)), None)


def box_ip() -> str:
    """The ``ip`` of the kernel's connection file inside the box (transport ipc)."""
    return f"{BOX_IPC}/k"


def host_ip(ipc_dir: str | os.PathLike[str]) -> str | None:
    """The box's sockets seen from the host, ``/proc/PID/root`` + :func:`box_ip` (PID: the
    box's init as bwrap reported it); None until it has. For looking only: a connect
    through it follows links the kernel planted; the grader connects through
    :class:`labkit.course.sockets.PinnedSockets`."""
    pid = box_pid(ipc_dir)
    return None if pid is None else f"/proc/{pid}/root{box_ip()}"


def _under(path: str, roots: tuple[str, ...]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


# -- building the box ------------------------------------------------------------------------

class _Dirs:
    """Folders made inside the box before a mount point below them: bwrap would make
    them mode 0700 (root's), which the kernel's uid cannot cross."""

    def __init__(self) -> None:
        self.made: set[str] = {"/"}

    def parents(self, path: str) -> list[str]:
        args: list[str] = []
        for parent in reversed(Path(path).parents):
            if str(parent) not in self.made:
                self.made.add(str(parent))
                args += ["--perms", "0755", "--dir", str(parent)]
        return args


class _Fds:
    """Descriptors handed to bwrap (files copied into the box, its report, the filter)."""

    def __init__(self) -> None:
        self.fds: list[int] = []

    def add(self, fd: int) -> str:
        os.set_inheritable(fd, True)
        self.fds.append(fd)
        return str(fd)


def _memfd(name: str, data: bytes) -> int:
    fd = os.memfd_create(name, 0)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _system_args() -> list[str]:
    """The OS, read-only: binaries, libraries, /etc; a minimal /dev; the box's /proc."""
    args: list[str] = []
    for path in SYSTEM_PATHS:
        if os.path.islink(path):  # merged /usr: /bin -> usr/bin
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return [*args, "--proc", "/proc", "--dev", "/dev"]


def _keep_args(policy: Policy, dirs: _Dirs) -> list[str]:
    """The Python installation and import paths, read-only; never one that holds a
    hidden path (a course repository on sys.path), nor one inside a path already there."""
    hide = tuple(os.path.realpath(p) for p in policy.hide)
    exposed, args = list(SYSTEM_PATHS), []
    for path in sorted({os.path.realpath(p) for p in policy.keep}, key=len):
        if any(_under(h, (path,)) for h in hide) or _under(path, tuple(exposed)) \
                or not os.path.isdir(path):
            continue
        args += [*dirs.parents(path), "--ro-bind", path, path]
        exposed.append(path)
    return args


def _tmpfs(path: str, size: int, mode: str = "1777") -> list[str]:
    return ["--perms", mode, "--size", str(size), "--tmpfs", path]


def _workdir_args(policy: Policy, fds: _Fds, dirs: _Dirs) -> list[str]:
    """The kernel's working folder: a tmpfs at the submission's path holding copies of
    its regular files (opened without following links), less the masked notebooks."""
    work = os.path.realpath(policy.workdir)
    args = [*dirs.parents(work), *_tmpfs(work, policy.scratch_bytes, "0777")]
    masked = {os.path.realpath(p) for p in policy.mask}
    budget, count = policy.scratch_bytes // 2, 0
    for base, subdirs, files in os.walk(work):  # never follows a link to a folder
        rel = os.path.relpath(base, work)
        for name in sorted(subdirs):
            if not os.path.islink(os.path.join(base, name)):
                args += ["--perms", "0777", "--dir", os.path.normpath(f"{work}/{rel}/{name}")]
        for name in sorted(files):
            path = os.path.join(base, name)
            if path in masked or count >= MAX_COPIED_FILES:
                continue
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError:
                continue  # a link (ELOOP), a FIFO without writer, gone
            st = os.fstat(fd)
            if not (stat.S_ISREG(st.st_mode) and st.st_size <= budget):
                os.close(fd)
                continue
            budget -= st.st_size
            count += 1
            dest = os.path.normpath(f"{work}/{rel}/{name}")
            args += ["--perms", "0666", "--file", fds.add(fd), dest]
    return [*args, "--chdir", work]


def _connection_args(argv: list[str], fds: _Fds) -> tuple[list[str], list[str]]:
    """The kernel's connection file, copied into the box with the box's socket path;
    returns (bwrap arguments, the kernel argv pointing at the copy)."""
    for flag in ("-f", "--f"):
        if flag in argv[:-1]:
            at = argv.index(flag) + 1
            break
    else:
        return [], argv
    info = json.loads(Path(argv[at]).read_text())
    info.update(transport="ipc", ip=box_ip())
    inside = f"{BOX_IPC}/kernel.json"
    fd = _memfd("kernel.json", json.dumps(info).encode())
    return (["--perms", "0644", "--file", fds.add(fd), inside],
            [*argv[:at], inside, *argv[at + 1:]])


def seccomp_filter() -> bytes | None:
    """The BPF program refusing :data:`_DENIED_CALLS` (EPERM), namespace flags in clone
    and clone3 (ENOSYS, so libc falls back to clone); None without libseccomp."""
    try:
        import pyseccomp as sc
    except (ImportError, OSError):
        return None
    f = sc.SyscallFilter(defaction=sc.ALLOW)
    for call in _DENIED_CALLS:
        with contextlib.suppress(Exception):  # a call this architecture lacks
            f.add_rule(sc.ERRNO(errno.EPERM), call)
    for flag in _CLONE_NS_FLAGS:
        f.add_rule(sc.ERRNO(errno.EPERM), "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    f.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    fd = _memfd("seccomp", b"")
    with os.fdopen(os.dup(fd), "wb") as out:
        f.export_bpf(out)
    size = os.lseek(fd, 0, os.SEEK_END)
    data = os.pread(fd, size, 0)
    os.close(fd)
    return data


def bwrap_argv(policy: Policy, argv: list[str], fds: _Fds) -> tuple[list[str], str]:
    """The bwrap command line that boxes ``argv``, and the box's mode for the kernel's
    ``LABKIT_SANDBOX`` (``bwrap+uid`` as root, ``bwrap+user`` otherwise, ``+seccomp``,
    ``+cgroup``)."""
    binary = bwrap()
    if binary is None:
        raise OSError(errno.ENOENT, "bubblewrap (bwrap) is not installed: apt install "
                                    "bubblewrap, or grade with --no-isolation")
    root = os.geteuid() == 0
    args = [binary, "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
            "--unshare-cgroup-try", "--die-with-parent", "--new-session"]
    if root:  # no user namespace: the kernel becomes the job's own uid inside the box
        args += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
        inner = [shutil.which("setpriv") or "/usr/bin/setpriv", f"--reuid={policy.uid}",
                 f"--regid={policy.uid}", "--clear-groups", "--inh-caps=-all", "--"]
    else:
        args += ["--unshare-user", "--disable-userns"]
        inner = []
    dirs = _Dirs()
    dirs.made.update(("/tmp", "/dev", "/dev/shm", "/proc"))
    args += _system_args()  # then scratch /tmp: kept paths may lie below it (a CI clone)
    args += _tmpfs("/tmp", policy.scratch_bytes) + _tmpfs("/dev/shm", policy.scratch_bytes)
    args += _keep_args(policy, dirs)
    args += [*dirs.parents(BOX_IPC), *_tmpfs(BOX_IPC, 1024**2, "0777")]
    conn_args, argv = _connection_args(argv, fds)
    args += conn_args + _workdir_args(policy, fds, dirs)
    args += ["--remount-ro", "/dev", "--remount-ro", "/"]
    info = os.open(Path(policy.ipc_dir, INFO_FILE),
                   os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    args += ["--info-fd", fds.add(info)]
    mode = "bwrap+uid" if root else "bwrap+user"
    bpf = seccomp_filter()
    if bpf is not None:
        args += ["--seccomp", fds.add(_memfd("seccomp", bpf))]
        mode += "+seccomp"
    if policy.cgroups:
        mode += "+cgroup"
    return [*args, "--", *inner, *argv], mode


# -- kernel side ---------------------------------------------------------------------------

KERNEL_UID_BASE = 200_000  # kernels get unused uids from here (see fresh_uid)
KERNEL_UID_SPAN = 50_000_000
_GIVEN_UIDS: set[int] = set()


def fresh_uid() -> int:
    """A uid for one kernel that no user, subordinate-id range or process has, and that
    this process has not handed out before: drawn at random, so two runs or two courses
    on one machine do not share kernel uids (a daemon left by one cannot signal another).
    """
    import secrets

    for _ in range(1000):
        uid = KERNEL_UID_BASE + secrets.randbelow(KERNEL_UID_SPAN)
        if uid not in _GIVEN_UIDS and not uid_in_use(uid):
            _GIVEN_UIDS.add(uid)
            return uid
    raise OSError(errno.EAGAIN, "no unused uid found for a kernel")


def kernel_uids_given() -> frozenset[int]:
    """The kernel uids this process has handed out (to check none still runs a process)."""
    return frozenset(_GIVEN_UIDS)


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


STRAY_NICE = 19  # processes a kernel started: they get what the kernel leaves


def _ns_pid(pid: int) -> int | None:
    """``pid``'s number in its own (innermost) PID namespace."""
    with contextlib.suppress(OSError, ValueError, StopIteration):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("NSpid:"):
                return int(line.split()[-1])
    return None


def box_processes(init: int) -> tuple[int | None, list[int]]:
    """(the kernel, every other process of the box) below the box's init ``init`` (host
    pids). The kernel is the init's child of namespace pid 2 (bwrap's command); a
    daemon the kernel started is reparented to the init, so the walk starts there."""
    children: dict[int, list[int]] = {}
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            text = stat_file.read_text()
            ppid = int(text[text.rindex(")") + 2:].split()[1])
            children.setdefault(ppid, []).append(int(stat_file.parent.name))
    top = children.get(init, [])
    kernel = next((pid for pid in top if _ns_pid(pid) == 2), None)
    below, queue = [], list(top)
    while queue:
        pid = queue.pop()
        below.append(pid)
        queue += children.get(pid, [])
    return kernel, [pid for pid in below if pid != kernel]


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time ``pid`` has used (0.0 once it is gone)."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        text = Path(f"/proc/{pid}/stat").read_text()
        fields = text[text.rindex(")") + 2:].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return 0.0


def stray_count(init: int) -> int:
    """How many processes of box ``init`` live beside the kernel now. Honest cells start
    none; a look every fraction of a second sees children that outlive their cell
    whatever CPU the machine had to give them (unlike their CPU time or run state)."""
    return len(box_processes(init)[1])


def demote_strays(init: int, done: set[int]) -> float:
    """Run every process of box ``init`` but the kernel at :data:`STRAY_NICE` and under
    ``SCHED_IDLE`` (each of its threads; ``done``: pids already demoted, updated). Within
    the kernel's CPU quota the kernel then goes first: a cell that forked 120 busy
    children still answers, and the children run on what it leaves. Returns the CPU
    seconds those processes (the ones running now) have used: a kernel that leaves busy
    work behind shows there."""
    _, strays = box_processes(init)
    for pid in strays:
        if pid in done:
            continue
        with contextlib.suppress(OSError):
            for tid in os.listdir(f"/proc/{pid}/task"):
                with contextlib.suppress(OSError):
                    os.setpriority(os.PRIO_PROCESS, int(tid), STRAY_NICE)
                    # weight 3 where nice 19 is 15; without RLIMIT_NICE no way back
                    os.sched_setscheduler(int(tid), os.SCHED_IDLE, os.sched_param(0))
            done.add(pid)
    return sum(_cpu_seconds(pid) for pid in strays)


def _limits(policy: Policy) -> None:
    pairs = {resource.RLIMIT_AS: policy.memory_bytes,
             resource.RLIMIT_FSIZE: policy.file_bytes,
             resource.RLIMIT_CORE: 0,
             resource.RLIMIT_NICE: 0}  # no way back from the strays' nice and SCHED_IDLE
    for res, value in pairs.items():
        resource.setrlimit(res, (value, value))
    resource.setrlimit(resource.RLIMIT_CPU, (policy.cpu_seconds, policy.cpu_seconds + 5))
    # As root, NPROC counts the job uid's processes (its own); unprivileged, the grader's
    # user has processes of its own outside the box, which count too.
    nproc = policy.processes + (0 if os.geteuid() == 0 else len(processes_of(os.getuid())))
    resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
    if not (policy.isolate and cgroups.caps_cpu(policy.cgroups)):
        # No quota: the grader's own processes (and anything at normal priority) go first.
        # Kernels at this niceness still share the CPU per process, not per kernel.
        os.setpriority(os.PRIO_PROCESS, 0, FALLBACK_NICE)


def _close_others(keep: set[int]) -> None:
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd not in keep:
            with contextlib.suppress(OSError):
                os.close(fd)


def box_env(mode: str, extra: Mapping[str, str]) -> dict[str, str]:
    """The environment of a boxed kernel: the few variables it may inherit
    (:data:`_ENV_KEEP`), a home and ledger in its scratch, one thread per maths library,
    headless views (``LABKIT_HEADLESS=1``: no front end ever renders a grading kernel's
    widgets, issue 26) and the policy's own ``extra``."""
    env = {k: v for k, v in os.environ.items() if k in _ENV_KEEP}
    env.update({"HOME": "/tmp", "IPYTHONDIR": "/tmp/.ipython", "MPLCONFIGDIR": "/tmp",
                "LABKIT_LEDGER": "/tmp/labkit_ledger.json", "LABKIT_SANDBOX": mode,
                "LABKIT_HEADLESS": "1",
                "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                "MALLOC_ARENA_MAX": "2", **extra})
    return env


def launch(policy: Policy, argv: list[str]) -> None:
    """Enter the box described by ``policy`` and exec ``argv`` (never returns)."""
    fds = _Fds()
    if policy.isolate:
        command, mode = bwrap_argv(policy, argv, fds)
        if policy.cgroups:
            cgroups.join(policy.cgroups)
    else:
        command, mode = argv, "limits-only"
    env = box_env(mode, policy.env)
    out = (os.open(policy.log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW,
                   0o600) if policy.log_path else os.open(os.devnull, os.O_RDWR))
    _limits(policy)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(out, 1)
    os.dup2(out, 2)
    _close_others(set(fds.fds))
    # The box dies with its grader (bwrap's --die-with-parent does the same inside).
    import ctypes

    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if not policy.isolate:
        os.chdir(policy.workdir)
    os.execve(command[0], command, env)


def describe(mode: str) -> str:
    """A probe's mode in words, for the grading report (cgroups probed here as well)."""
    parts = ["bubblewrap: own PID, IPC and network namespaces", "read-only allow-list root",
             "tmpfs scratch only",
             "a uid of its own per kernel" if "+uid" in mode else "a user namespace"]
    if "+seccomp" in mode:
        parts.append("seccomp filter")
    layout, cpu = cgroups.probe_caps() if os.geteuid() == 0 else ("none", False)
    parts.append(f"cgroup {layout} memory and process caps" if layout != "none"
                 else "rlimits only (no cgroup)")
    parts.append("a CPU quota per kernel" if cpu else
                 f"no CPU quota (kernels at nice {FALLBACK_NICE})")
    return ", ".join(parts)


_PROBE_CHECK = """
import json, os, socket, sys
r = {"uid": os.getuid(), "mode": os.environ.get("LABKIT_SANDBOX"),
     "hidden": os.path.exists(sys.argv[1]), "pids": sorted(int(p) for p in os.listdir("/proc")
                                                           if p.isdigit())}
s = socket.socket()
s.settimeout(1)
try:
    s.connect(("1.1.1.1", 53))
    r["net"] = True
except OSError:
    r["net"] = False
open(os.path.join(os.getcwd(), "written"), "w").write("x")
print("LABKIT-PROBE " + json.dumps(r), flush=True)
"""


def probe(timeout: float = 20.0) -> tuple[bool, str]:
    """(isolation works here, the box's mode or why not). Runs the real launcher on a
    throwaway policy and checks what the boxed process saw."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="labkit-probe-") as tmp:
        work, ipc, secret = Path(tmp, "work"), Path(tmp, "ipc"), Path(tmp, "secret")
        for d in (work, ipc, secret):
            d.mkdir()
        (secret / "x").write_text("hidden")
        log = Path(tmp, "log")
        uid = fresh_uid() if os.geteuid() == 0 else NOBODY
        policy = Policy(workdir=str(work), ipc_dir=str(ipc), hide=default_hide(secret),
                        keep=default_keep(), cpu_seconds=30, uid=uid, log_path=str(log))
        path = policy.save(Path(tmp, "policy.json"))
        try:
            proc = subprocess.run([sys.executable, "-m", "labkit.course.sandbox", str(path),
                                   "--", sys.executable, "-I", "-c", _PROBE_CHECK,
                                   str(secret / "x")], capture_output=True, text=True,
                                  timeout=timeout)
        except subprocess.TimeoutExpired:
            return False, f"the probe did not finish in {timeout:g} s"
        text = log.read_text() if log.exists() else ""
        line = next((ln for ln in text.splitlines() if ln.startswith("LABKIT-PROBE ")), None)
        if line is None:
            why = (text.strip() or proc.stderr.strip()).splitlines()
            return False, (why or [f"exit status {proc.returncode}"])[-1]
        r = json.loads(line.split(" ", 1)[1])
        problems = [what for what, bad in (
            ("a hidden file is visible", r["hidden"]), ("the network is reachable", r["net"]),
            ("the host's processes are visible", len(r["pids"]) > 4),
            ("the kernel wrote to the host's folder", (work / "written").exists()))
            if bad]
        return (False, "; ".join(problems)) if problems else (True, r["mode"])


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 3 or args[1] != "--":
        sys.exit("usage: python -m labkit.course.sandbox POLICY.json -- KERNEL ARGV...")
    try:
        launch(Policy.load(args[0]), args[2:])
    except (OSError, ValueError) as exc:
        sys.exit(f"labkit sandbox: cannot isolate the kernel: {exc}")


if __name__ == "__main__":
    main()
