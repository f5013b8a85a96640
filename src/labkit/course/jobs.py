"""What a grading run copies and keeps on disk: a submission's files, bounded and walked
without following links, and the run folders a later run may sweep.

A collected submission is whatever the student's folder held: nbgrader's submit and
collect pass through FIFOs, sockets, names that are not UTF-8 and sparse files of any
size. :func:`scan` walks it once (never through a link) and says, entry by entry, what is
copied and what is skipped and why; :func:`copy_submission` streams the copied files into
a job folder and :func:`fingerprint` hashes exactly the same entries, so a hostile file
costs its own submission a finding, never the run its memory, disk or life.

Run folders live in a state folder only this grader can write (:func:`state_dir`), and a
run folder is swept as stale (:func:`sweep_stale_runs`) only on what this grader wrote in
it: its host, its pid *and* that process's start time and boot id (a reused pid, or a
run of another host sharing the course folder, is not stale), and the kernel uids it
handed out; only those uids (inside labkit's kernel-uid range) are killed and only cgroups
``labkit-<uid>`` under labkit's own cgroup parents removed.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
import shutil
import socket
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from labkit.course.submission import Finding

# nbgrader's own CourseDirectory.max_file_size is 100000 KB: `nbgrader submit` and
# `collect` leave bigger files out, so a bigger file never came through an honest submit.
MAX_FILE_BYTES = 100_000 * 1024
# Everything copied from one submission: a notebook (20 MB at most, see
# submission.MAX_NOTEBOOK_BYTES) and its small companions fit many times over; a job
# folder never holds more, however many files are planted beside the notebook.
MAX_TOTAL_BYTES = 256 * 1024**2
# Files and folders walked per submission (a release has a handful; nbgrader's own
# CourseDirectory.max_dir_size walk is not bounded by count).
MAX_ENTRIES = 2000
MAX_SKIP_FINDINGS = 20   # one finding per skipped entry up to this, then one summary
CHUNK = 1024 * 1024      # copy and hash in chunks: memory stays flat for any file size

RUN_PREFIX = "run-"
RUN_FILE = "run.json"    # what the run wrote about itself: pid, start time, boot, uids
MAX_RUN_FILE_BYTES = 1024 * 1024


@dataclass(frozen=True)
class Entry:
    """One entry of a submission: ``rel`` its POSIX path inside it; ``skip`` why it is
    left out ("" when copied); ``flag`` whether that looks hostile; ``size`` in bytes."""

    rel: str
    path: str
    is_dir: bool
    size: int = 0
    skip: str = ""
    flag: bool = False


def shown(rel: str) -> str:
    """A path as people can read it: bytes that are not UTF-8 as ``\\xNN`` escapes."""
    return os.fsencode(rel).decode("utf-8", "backslashreplace")


def _utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # a surrogate-escaped byte of a non-UTF-8 name
        return False
    return True


def _judge(entry: os.DirEntry[str], rel: str, total: int) -> Entry:
    """What to do with one directory entry (never following a link)."""
    if not _utf8(entry.name):
        return Entry(rel, entry.path, False, skip="its name is not valid UTF-8")
    try:
        st = entry.stat(follow_symlinks=False)
    except OSError as exc:
        return Entry(rel, entry.path, False, skip=f"it cannot be read ({exc.strerror})")
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        return Entry(rel, entry.path, True)
    if not stat.S_ISREG(mode):
        kind = ("a link" if stat.S_ISLNK(mode) else "a FIFO" if stat.S_ISFIFO(mode)
                else "a socket" if stat.S_ISSOCK(mode) else "a device or special file")
        return Entry(rel, entry.path, False, skip=f"it is {kind}", flag=True)
    if st.st_size > MAX_FILE_BYTES:
        return Entry(rel, entry.path, False, st.st_size, flag=True, skip=(
            f"it is {st.st_size / 1e6:.0f} MB (limit {MAX_FILE_BYTES / 1e6:.0f} MB per file)"))
    if total + st.st_size > MAX_TOTAL_BYTES:
        return Entry(rel, entry.path, False, st.st_size, flag=True, skip=(
            f"the submission's files pass {MAX_TOTAL_BYTES / 1e6:.0f} MB with it"))
    return Entry(rel, entry.path, False, st.st_size)


def scan(base: Path) -> Iterator[Entry]:
    """Every entry under ``base``, folders before their contents, in name order (by
    bytes); at most :data:`MAX_ENTRIES`, then one skipped entry saying how many more."""
    total = count = 0
    stack = [(str(base), "")]
    while stack:
        folder, prefix = stack.pop()
        try:
            with os.scandir(folder) as it:  # never more than the cap held in memory
                entries = sorted(itertools.islice(it, MAX_ENTRIES + 1 - count),
                                 key=lambda e: os.fsencode(e.name))
        except OSError:
            continue
        subdirs = []
        for entry in entries:
            count += 1
            if count > MAX_ENTRIES:
                yield Entry("the rest of the submission", folder, False, flag=True, skip=(
                    f"it has more than {MAX_ENTRIES} files and folders"))
                return
            found = _judge(entry, prefix + entry.name, total)
            total += found.size if not found.skip else 0
            yield found
            if found.is_dir:
                subdirs.append((found.path, found.rel + "/"))
        stack.extend(reversed(subdirs))


def _stream(path: str, size: int) -> Iterator[bytes]:
    """The first ``size`` bytes of the regular file at ``path``, chunk by chunk, opened
    without following a link; stops early if it shrank, never reads past ``size``."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb", buffering=0) as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise OSError(f"{path} is no longer a regular file")
        left = size
        while left > 0:
            chunk = f.read(min(CHUNK, left))
            if not chunk:
                return
            left -= len(chunk)
            yield chunk


def _findings(skipped: list[Entry]) -> list[Finding]:
    found = [Finding("file-skipped", f"{shown(e.rel)} was not copied for grading: {e.skip}",
                     flag=e.flag) for e in skipped[:MAX_SKIP_FINDINGS]]
    if len(skipped) > MAX_SKIP_FINDINGS:
        rest = skipped[MAX_SKIP_FINDINGS:]
        found.append(Finding("file-skipped", f"{len(rest)} more entries were not copied "
                             "for grading", flag=any(e.flag for e in rest)))
    return found


def copy_submission(src: Path, dest: Path) -> list[Finding]:
    """Copy the regular files and folders of ``src`` into ``dest`` (made here), streamed;
    one ``file-skipped`` finding per entry left out."""
    dest.mkdir(parents=True)
    skipped: list[Entry] = []
    for entry in scan(src):
        target = dest / entry.rel
        if entry.skip:
            skipped.append(entry)
        elif entry.is_dir:
            target.mkdir()
        else:
            try:
                with open(target, "xb") as out:
                    for chunk in _stream(entry.path, entry.size):
                        out.write(chunk)
            except OSError as exc:
                target.unlink(missing_ok=True)
                skipped.append(Entry(entry.rel, entry.path, False, skip=(
                    f"it could not be read ({exc.strerror or exc})"), flag=True))
    return _findings(skipped)


def fingerprint(version: str, *bases: Path) -> str:
    """Hash of what decides a grade: the grader ``version`` and, in each of ``bases``,
    exactly what :func:`copy_submission` copies (each skipped entry by name and reason)."""
    h = hashlib.sha256(version.encode())
    for base in bases:
        h.update(b"\0base\0")
        for entry in scan(base):
            name = os.fsencode(entry.rel)
            if entry.skip:
                h.update(b"\0skip\0" + name + b"\0" + entry.skip.encode())
            elif entry.is_dir:
                h.update(b"\0dir\0" + name)
            else:
                h.update(b"\0file\0" + name + b"\0" + str(entry.size).encode() + b"\0")
                with contextlib.suppress(OSError):
                    for chunk in _stream(entry.path, entry.size):
                        h.update(chunk)
    return h.hexdigest()


# -- the run folders and the stale-run sweep --------------------------------------------------

def private_dir(path: Path) -> Path:
    """``path`` as a folder of this user's only (made mode 0700 if missing; a mode other
    users could use is repaired); refused when it is a link or another user's."""
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700)
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise PermissionError(f"{path} must be a folder, not a link or a file: remove it")
    if st.st_uid != os.geteuid():
        raise PermissionError(f"{path} belongs to uid {st.st_uid}, not to this grader "
                              f"(uid {os.geteuid()}): remove it")
    if stat.S_IMODE(st.st_mode) != 0o700:
        os.chmod(path, 0o700, follow_symlinks=False)
    return path


def state_dir(root: Path) -> Path:
    """The course's run folders: ``<root>/.labkit/runs``, this grader's only (0700, its
    own, not a link). Only this grader writes there, and a sweep reads only what it owns,
    so whoever else can write ``.labkit`` (the course's owner) cannot plant a run."""
    (root / ".labkit").mkdir(exist_ok=True)
    return private_dir(root / ".labkit" / "runs")


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _start_time(pid: int) -> str:
    """When process ``pid`` started (clock ticks since boot), "" when it is gone."""
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    fields = stat_line.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else ""


def start_run(state: Path) -> Path:
    """A fresh run folder (0700) in ``state``, with its owner record: made under a name
    the sweep does not read and renamed once the record is in, so a sweep by another
    grader sharing ``state`` (Dask workers on one machine) never takes it for a run
    killed before it could write one."""
    staging = Path(tempfile.mkdtemp(prefix=f".{RUN_PREFIX}", dir=state))
    record_run(staging, ())
    run_dir = state / staging.name[1:]
    os.rename(staging, run_dir)
    return run_dir


def record_run(run_dir: Path, uids: tuple[int, ...] | list[int]) -> None:
    """Write (atomically) who runs in ``run_dir`` and the kernel uids it handed out:
    call it before any kernel of those uids starts."""
    pid = os.getpid()
    payload = {"pid": pid, "start": _start_time(pid), "boot": _boot_id(),
               "host": socket.gethostname(), "uids": sorted(set(uids))}
    tmp = run_dir / f".{RUN_FILE}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(payload, fh)
    os.replace(tmp, run_dir / RUN_FILE)


def _read_record(run_dir: Path) -> dict | None:
    """The run's own record, when the folder and the file are this grader's (0700 folder,
    a regular file, not links) and readable; else None (the folder is left alone)."""
    try:
        st = os.lstat(run_dir)
        if (not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid()
                or stat.S_IMODE(st.st_mode) != 0o700):
            return None
        if not os.path.lexists(run_dir / RUN_FILE):
            return {}  # killed before it wrote its record: it started no kernel
        fd = os.open(run_dir / RUN_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as fh:
            fst = os.fstat(fh.fileno())
            if not stat.S_ISREG(fst.st_mode) or fst.st_uid != os.geteuid():
                return None
            record = json.loads(fh.read(MAX_RUN_FILE_BYTES))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _alive(record: dict) -> bool:
    """The process that wrote ``record`` still runs: same boot, same pid, same start."""
    pid = record.get("pid")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    return (record.get("boot") == _boot_id() and bool(record.get("start"))
            and record.get("start") == _start_time(pid))


def kernel_uids(record: dict) -> list[int]:
    """The uids of a run's record that labkit could have given a kernel."""
    from labkit.course.sandbox import KERNEL_UID_BASE, KERNEL_UID_SPAN

    uids = record.get("uids")
    return [u for u in uids if isinstance(u, int) and not isinstance(u, bool)
            and KERNEL_UID_BASE <= u < KERNEL_UID_BASE + KERNEL_UID_SPAN] if isinstance(
        uids, list) else []


def _cage_parents() -> list[Path]:
    """Where :func:`labkit.course.cgroups.make_cage` puts cages: this grader's own cgroup
    in each mounted hierarchy (v1 memory, pids, cpu...; the v2 unified one)."""
    from labkit.course import cgroups

    own = cgroups._own_cgroups()
    parents = []
    for mount, fs, opts in cgroups._mountinfo():
        keys = [""] if fs == "cgroup2" else sorted(opts & set(own))
        if keys and keys[0] in own:
            parents.append(Path(mount + own[keys[0]]))
    return parents


def end_kernels(uids: list[int]) -> None:
    """Kill the processes of each kernel uid and remove its cgroup ``labkit-<uid>``
    under the cgroup parents labkit makes cages in (never a path read from a file)."""
    from labkit.course import cgroups
    from labkit.course.sandbox import kill_user

    parents = _cage_parents()
    for uid in uids:
        folders = tuple(str(p / f"labkit-{uid}") for p in parents
                        if (p / f"labkit-{uid}").is_dir())
        cage = cgroups.Cage(folders, "") if folders else None
        if cage is not None:
            cgroups.kill(cage)
        kill_user(uid)
        if cage is not None:
            cgroups.remove(cage)


def sweep_stale_runs(state: Path) -> list[Path]:
    """Remove the run folders in ``state`` whose grader is gone (a run killed before it
    could clean up), after ending the kernels it recorded; returns those removed."""
    removed = []
    for run_dir in sorted(state.glob(f"{RUN_PREFIX}*")):
        record = _read_record(run_dir)
        if record is None or _alive(record) or record.get("host", socket.gethostname()) != (
                socket.gethostname()):
            continue  # not ours, still running, or another host's (a shared course folder)
        end_kernels(kernel_uids(record))
        shutil.rmtree(run_dir, ignore_errors=True)
        removed.append(run_dir)
    return removed
