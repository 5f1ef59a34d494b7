"""What every bench result records besides its numbers: the command that produced it and the
machine it ran on. These machines are shared and noisy, so the load average is part of it."""
from __future__ import annotations

import os
import platform
import shlex
import sys
import time
from typing import Any


def command() -> str:
    """The command line as run, quoted so that it can be pasted back into a shell."""
    return shlex.join([sys.executable, *sys.argv])


def machine(**extra: Any) -> dict[str, Any]:
    """Platform, CPUs, Python, load average (1/5/15 min, at the time of the call) and date;
    ``extra`` adds what the bench depends on (library versions, GL backend...)."""
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = None
    return {'platform': platform.platform(), 'processor': platform.processor(),
            'cpus': os.cpu_count(), 'python': platform.python_version(), 'load_average': load,
            'date': time.strftime('%Y-%m-%d %H:%M:%S %Z'), **extra}


def torch_machine(**extra: Any) -> dict[str, Any]:
    """``machine`` plus torch's version, CPU threads and GPU (None on CPU)."""
    import torch  # noqa: PLC0415 - only the torch benches pay for the import

    gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else None
    return machine(torch=torch.__version__, threads=torch.get_num_threads(), gpu=gpu, **extra)
