"""The grading kernel's entry point: ``ipykernel_launcher`` without the debugger.

ipykernel imports debugpy at start-up for its debugger (about 50 ms of CPU of the kernel's
0.23 s of start-up); a graded run is never debugged. With ``debugpy`` unimportable the
kernel starts exactly as ``python -m ipykernel_launcher`` does, only without it.
:class:`labkit.course.execution.SandboxKernelManager` starts kernels through it.
"""

from __future__ import annotations

import sys
from pathlib import Path


def main() -> None:
    sys.modules["debugpy"] = None  # type: ignore[assignment]  # import debugpy: ImportError
    if sys.path and (sys.path[0] == "" or Path(sys.path[0]) == Path.cwd()):
        del sys.path[0]  # as ipykernel_launcher: added back by the shell's init_path()
    from ipykernel import kernelapp

    kernelapp.launch_new_instance()


if __name__ == "__main__":
    main()
