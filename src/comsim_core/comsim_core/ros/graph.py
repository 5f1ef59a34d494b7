"""Start a node graph described by a launch file's `NODES`, without `ros2 launch`.

`launch` and `launch_ros` are not pip-installable, so pip installs start the same graph from the
same description: each node becomes a child process with its params file, stopped together with
SIGINT (then SIGTERM, then SIGKILL) so recorders close their episodes cleanly.

    comsim-launch launch/record.launch.py [ARG:=VALUE ...] [--set NODE.PARAM:=VALUE ...]
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from comsim_core.errors import EXIT_USAGE, UserError, cli_main


def find_executable(name: str) -> str | None:
    """A console script of this Python's environment first (a venv need not be activated)."""
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get('PATH', '')])
    return shutil.which(name, path=path)


@dataclass
class NodeSpec:
    package: str
    executable: str
    name: str
    params: list[Path]
    overrides: dict[str, str] = field(default_factory=dict)

    def command(self) -> list[str]:
        exe = find_executable(self.executable)
        if exe is None:
            raise UserError(
                f'executable {self.executable!r} of package {self.package!r} not found on PATH; '
                f'install the workspace (scripts/setup.sh) or source install/setup.bash')
        cmd = [exe, '--ros-args', '-r', f'__node:={self.name}']
        for p in self.params:
            cmd += ['--params-file', str(p)]
        for key, value in self.overrides.items():
            cmd += ['-p', f'{key}:={value}']
        return cmd


def load_launch_module(path: str | os.PathLike):
    path = Path(path).resolve()
    if not path.exists():
        raise UserError(f'launch file {path} not found')
    spec = importlib.util.spec_from_file_location(path.stem.replace('.', '_'), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for attr in ('NODES', 'CONFIG'):
        if not hasattr(module, attr):
            raise UserError(f'{path} has no {attr}: not a ComSim launch file')
    return module


# A launch argument's default may name another argument, as the launch frontend writes it:
# `use_sim_time` defaults to `$(var bench_lab)` (sim time exactly when the bench lab runs).
_REFERENCE = re.compile(r'^\$\(var (\w+)\)$')


def declared_arguments(module, path) -> dict[str, tuple[str, str]]:
    """A launch file's ``ARGUMENTS``: name -> (default, description), checked."""
    declared = dict(getattr(module, 'ARGUMENTS', {}))
    for name, entry in declared.items():
        if not (isinstance(entry, tuple) and len(entry) == 2
                and all(isinstance(x, str) for x in entry) and entry[1]):
            raise UserError(f'{path}: ARGUMENTS[{name!r}] must be (default, description) '
                            f'strings, got {entry!r}')
        ref = _REFERENCE.match(entry[0])
        if ref and ref.group(1) not in declared:
            raise UserError(f'{path}: ARGUMENTS[{name!r}] defaults to the unknown argument '
                            f'{ref.group(1)!r}')
    return declared


def resolve_arguments(declared: dict[str, tuple[str, str]], given: dict[str, str]
                      ) -> dict[str, str]:
    """Every argument's value: given, else its default (a `$(var X)` default is X's value)."""
    values = {k: given.get(k, d) for k, (d, _) in declared.items()}
    for name in values:
        seen = {name}
        while (ref := _REFERENCE.match(values[name])) and ref.group(1) not in seen:
            seen.add(ref.group(1))
            values[name] = values[ref.group(1)]
    return values


def graph_from_launch(path, arguments: dict[str, str] | None = None,
                      overrides: dict[str, dict[str, str]] | None = None) -> list[NodeSpec]:
    """Node specs of a launch file, with launch arguments and per-node parameter overrides.
    A ``use_sim_time`` argument becomes every node's parameter (``--set`` wins)."""
    module = load_launch_module(path)
    declared = declared_arguments(module, path)
    unknown = set(arguments or {}) - set(declared)
    if unknown:
        raise UserError(f'{path}: unknown launch argument(s) {", ".join(sorted(unknown))}; '
                        f'known: {", ".join(sorted(declared))}')
    args = resolve_arguments(declared, dict(arguments or {}))
    overrides = overrides or {}
    specs = []
    for node in module.NODES:
        condition = node.get('condition')
        if condition and str(args[condition]).lower() not in ('true', '1', 'yes'):
            continue
        params = [Path(module.CONFIG) / p for p in node['params']]
        node_overrides = dict(overrides.get(node['name'], {}))
        if 'use_sim_time' in args:
            node_overrides.setdefault('use_sim_time', args['use_sim_time'])
        specs.append(NodeSpec(node['package'], node['executable'], node['name'], params,
                              node_overrides))
    names = {s.name for s in specs}
    bad = set(overrides) - names
    if bad:
        raise UserError(f'--set for node(s) not in the graph: {", ".join(sorted(bad))}; '
                        f'nodes: {", ".join(sorted(names))}')
    return specs


def launch_description(nodes: list[dict], config: Path,
                       arguments: dict[str, tuple[str, str]]):
    """The `ros2 launch` form of a launch file's `NODES`: one launch_ros Node per entry, each
    with its params files, ``use_sim_time`` from its launch argument and an optional
    launch-argument condition. Imports `launch` here because it exists only on ROS installs."""
    from launch import LaunchDescription
    from launch.actions import DeclareLaunchArgument
    from launch.conditions import IfCondition
    from launch.substitutions import LaunchConfiguration
    from launch_ros.actions import Node
    from launch_ros.parameter_descriptions import ParameterValue

    actions = []
    for name, (default, description) in arguments.items():
        ref = _REFERENCE.match(default)
        actions.append(DeclareLaunchArgument(
            name, default_value=LaunchConfiguration(ref.group(1)) if ref else default,
            description=description))
    for spec in nodes:
        condition = spec.get('condition')
        params: list = [str(Path(config) / p) for p in spec['params']]
        if 'use_sim_time' in arguments:
            params.append({'use_sim_time': ParameterValue(LaunchConfiguration('use_sim_time'),
                                                          value_type=bool)})
        actions.append(Node(
            package=spec['package'], executable=spec['executable'], name=spec['name'],
            parameters=params, output='screen', emulate_tty=True,
            condition=IfCondition(LaunchConfiguration(condition)) if condition else None))
    return LaunchDescription(actions)


class NodeExitedError(UserError):
    """Nodes that stopped on a user mistake (exit code 2); the message carries their reason."""


class Graph:
    """Child processes of one graph; a context manager that always stops them."""

    def __init__(self, specs: list[NodeSpec], log_dir: Path | None = None, env=None):
        self.specs = specs
        self.log_dir = log_dir
        self.env = env
        self.procs: dict[str, subprocess.Popen] = {}

    def start(self) -> 'Graph':
        if self.log_dir is not None:
            self.log_dir.mkdir(parents=True, exist_ok=True)
        for spec in self.specs:
            out = (open(self.log_dir / f'{spec.name}.log', 'wb')
                   if self.log_dir is not None else None)
            self.procs[spec.name] = subprocess.Popen(
                spec.command(), stdout=out, stderr=subprocess.STDOUT if out else None,
                env=self.env, start_new_session=True)
        return self

    def check_alive(self) -> None:
        """Raise if a node has exited, with its code and the last error line of its log."""
        dead = {n: p.returncode for n, p in self.procs.items() if p.poll() is not None}
        if dead:
            why = '; '.join(f'{n} (exit {code}{self._reason(n)})' for n, code in dead.items())
            where = f' (logs in {self.log_dir})' if self.log_dir else ''
            error = NodeExitedError if set(dead.values()) == {EXIT_USAGE} else RuntimeError
            raise error(f'node(s) exited early: {why}{where}')

    def _reason(self, name: str) -> str:
        if self.log_dir is None:
            return ''
        try:
            lines = (self.log_dir / f'{name}.log').read_text(errors='replace').splitlines()
        except OSError:
            return ''
        lines = [ln.strip() for ln in lines if ln.strip()]
        errors = [ln for ln in lines if re.search(r'error|exception|fatal', ln, re.IGNORECASE)]
        last = (errors or lines or [''])[-1]
        return f': {last}' if last else ''

    def stop(self, timeout: float = 15.0) -> dict[str, int]:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
            for proc in self.procs.values():
                if proc.poll() is None:
                    proc.send_signal(sig)
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and any(p.poll() is None
                                                      for p in self.procs.values()):
                time.sleep(0.05)
            if all(p.poll() is not None for p in self.procs.values()):
                break
        return {n: p.returncode for n, p in self.procs.items()}

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def _parse_assignments(items, what):
    out = {}
    for item in items:
        if ':=' not in item:
            raise UserError(f'{what} {item!r} must read KEY:=VALUE')
        k, v = item.split(':=', 1)
        out[k] = v
    return out


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


@cli_main('comsim-launch')
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('launch_file')
    parser.add_argument('arguments', nargs='*', help='launch arguments ARG:=VALUE')
    parser.add_argument('--set', action='append', default=[],
                        help='parameter override NODE.PARAM:=VALUE')
    parser.add_argument('--log-dir', type=Path)
    ns = parser.parse_args(argv)
    overrides: dict[str, dict[str, str]] = {}
    for key, value in _parse_assignments(ns.set, '--set').items():
        node, _, param = key.partition('.')
        overrides.setdefault(node, {})[param] = value
    specs = graph_from_launch(ns.launch_file, _parse_assignments(ns.arguments, 'argument'),
                              overrides)
    # SIGTERM (docker stop, systemd, a supervisor) stops the graph as Ctrl-C does: without
    # this the interpreter dies at once and the child nodes, in sessions of their own, live on.
    signal.signal(signal.SIGTERM, _interrupt)
    graph = Graph(specs, ns.log_dir).start()
    print(f'started {", ".join(s.name for s in specs)}; Ctrl-C or SIGTERM stops them',
          flush=True)
    try:
        while True:
            graph.check_alive()
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    except NodeExitedError:
        graph.stop()
        raise
    except RuntimeError as exc:
        print(exc, file=sys.stderr)
        graph.stop()
        return 1
    codes = graph.stop()
    print(f'stopped: {codes}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
