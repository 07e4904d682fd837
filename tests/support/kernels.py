"""The kernels a run started: what the sweep's and the fork server's tests look for when they check nothing is left."""
from __future__ import annotations

import psutil


def kernel_processes(root: psutil.Process) -> list[psutil.Process]:
    """Descendants of ``root`` that are kernels or the kernel template (forked kernels keep its command line)."""
    found = []
    for child in root.children(recursive=True):
        try:
            line = " ".join(child.cmdline())
        except psutil.Error:
            continue
        if "ipykernel" in line or "_template_main" in line:
            found.append(child)
    return found


def alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
