"""Start a node graph described by a launch file's `NODES`, without `ros2 launch`.

`launch` and `launch_ros` are not pip-installable, so pip installs start the same graph from the
same description: each node becomes a child process with its params file, stopped together with
SIGINT (then SIGTERM, then SIGKILL) so recorders close their episodes cleanly.

    comsim-launch launch/record.launch.py [ARG:=VALUE ...] [--set NODE.PARAM:=VALUE ...]
    comsim-launch record.launch.py ...       # a shipped launch file, found like its configs

`build_graph` is the one reading of a launch file's `NODES` and arguments: `comsim-launch` runs
its specs as processes and, under `ros2 launch`, `launch_description` turns the same specs into
launch_ros Nodes, so both apply `namespace`, `params_file`, `remappings` and the rest alike.

A node of `NODES` is a dict: `package`, `executable`, `name`, `params` (files under the config
folder), and optionally `condition` (a launch argument that must be true), `from_arguments`
({parameter: launch argument}, applied when the argument is not empty), `remappings`
([(from, to)]), `robot_description_from` (a launch argument naming a URDF/MJCF file, '' the
ComSim arm: the node gets the URDF text as its `robot_description` parameter) and `optional`
(True: left out, with one line saying so, where its executable is not installed, as
robot_state_publisher on a pip install).
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path

from comsim_core.errors import EXIT_USAGE, UserError, cli_main
from comsim_core.paths import launch_file


def find_executable(name: str, package: str | None = None) -> str | None:
    """Where `ros2 run package name` looks (lib/<package> of a sourced ROS install), else a
    console script of this Python's environment (a venv need not be activated), else PATH."""
    dirs = [str(Path(sys.executable).parent), os.environ.get('PATH', '')]
    if package is not None:
        try:
            from ament_index_python.packages import get_package_prefix  # noqa: PLC0415

            dirs.insert(0, str(Path(get_package_prefix(package)) / 'lib' / package))
        except (ImportError, LookupError, OSError, ValueError):
            pass   # not a ROS install, or the package is not in it
    return shutil.which(name, path=os.pathsep.join(dirs))


@dataclass
class NodeSpec:
    package: str
    executable: str
    name: str
    params: list[Path]
    overrides: dict[str, str] = field(default_factory=dict)
    namespace: str = ''           # '' or an absolute namespace such as /arm1
    remappings: list[tuple[str, str]] = field(default_factory=list)   # (from, to) topic names

    def ros_args(self) -> list[str]:
        args = ['--ros-args', '-r', f'__node:={self.name}']
        if self.namespace:
            args += ['-r', f'__ns:={self.namespace}']
        for source, target in self.remappings:
            args += ['-r', f'{source}:={target}']
        for p in self.params:
            args += ['--params-file', str(p)]
        for key, value in self.overrides.items():
            args += ['-p', f'{key}:={value}']
        return args

    def command(self) -> list[str]:
        exe = find_executable(self.executable, self.package)
        if exe is None:
            raise UserError(
                f'executable {self.executable!r} of package {self.package!r} not found on PATH; '
                f'install the workspace (scripts/setup.sh) or source install/setup.bash')
        return [exe, *self.ros_args()]


class NodeGraph(list):
    """The node specs of a graph, plus `skipped`: {node name: why} for the optional nodes left
    out (their executable is not installed)."""

    def __init__(self, specs=(), skipped: dict[str, str] | None = None):
        super().__init__(specs)
        self.skipped = dict(skipped or {})


def load_launch_module(path: str | os.PathLike):
    given = Path(path)
    if not given.exists() and given.name == str(path):   # a bare name: a shipped launch file
        given = launch_file(given.name)
    path = given.resolve()
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
_NAMESPACE = re.compile(r'(/[A-Za-z_][A-Za-z0-9_]*)+')
# A topic name as a remapping rule takes it: relative (joint_states), absolute (/joint_states)
# or private (~/status); tokens of letters, digits and _ joined by single slashes.
_TOPIC = re.compile(r'(~/|/)?[A-Za-z_][A-Za-z0-9_]*(/[A-Za-z_][A-Za-z0-9_]*)*')

# Arguments every launch file declares; build_graph applies them to every node of the graph.
COMMON_ARGUMENTS = {
    'namespace': ('', 'put every node under this namespace (arm1: /arm1/teleop and its '
                      '~/ services); topic parameters that are absolute stay as they are'),
    'params_file': ('', 'a params file of yours, read after the shipped one by every node it '
                        'has a section for (its values win)'),
    'remappings': ('', 'topic remappings FROM:=TO, several separated by spaces, for every node '
                       '(NODE:FROM:=TO for one node), e.g. joint_states:=/arm1/joint_states'),
}
# Arguments naming a file or folder: checked to exist, passed on as absolute paths.
PATH_ARGUMENTS = ('params_file', 'checkpoint', 'robot_description')


def declared_arguments(module, path) -> dict[str, tuple[str, str]]:
    """A launch file's ``ARGUMENTS``: name -> (default, description), checked."""
    declared = dict(getattr(module, 'ARGUMENTS', {}))
    check_arguments(declared, path)
    return declared


def check_arguments(declared: dict, path) -> None:
    for name, entry in declared.items():
        if not (isinstance(entry, tuple) and len(entry) == 2
                and all(isinstance(x, str) for x in entry) and entry[1]):
            raise UserError(f'{path}: ARGUMENTS[{name!r}] must be (default, description) '
                            f'strings, got {entry!r}')
        ref = _REFERENCE.match(entry[0])
        if ref and ref.group(1) not in declared:
            raise UserError(f'{path}: ARGUMENTS[{name!r}] defaults to the unknown argument '
                            f'{ref.group(1)!r}')


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
                      overrides: dict[str, dict[str, str]] | None = None) -> NodeGraph:
    """Node specs of a launch file, with launch arguments and per-node parameter overrides."""
    module = load_launch_module(path)
    return build_graph(module.NODES, Path(module.CONFIG), declared_arguments(module, path),
                       arguments, overrides, where=path)


def build_graph(nodes: list[dict], config: Path, declared: dict[str, tuple[str, str]],
                arguments: dict[str, str] | None = None,
                overrides: dict[str, dict[str, str]] | None = None,
                where='launch file') -> NodeGraph:
    """Node specs from a launch file's parts. Launch arguments apply as `ros2 launch` would:
    ``use_sim_time`` and ``namespace`` on every node, ``params_file`` after each node's own
    params file, ``remappings`` after the node's own, a node's ``from_arguments`` {parameter:
    argument} when the argument is not empty; ``--set`` overrides (`overrides`) win over all of
    them. An `optional` node whose executable is not installed is left out (`skipped`)."""
    unknown = set(arguments or {}) - set(declared)
    if unknown:
        raise UserError(f'{where}: unknown launch argument(s) {", ".join(sorted(unknown))}; '
                        f'known: {", ".join(sorted(declared))}')
    args = resolve_arguments(declared, dict(arguments or {}))
    for name in PATH_ARGUMENTS:
        if args.get(name):
            args[name] = str(_existing_path(name, args[name]))
    namespace = _namespace(args.get('namespace', ''))
    user_params = _params_file(args['params_file']) if args.get('params_file') else None
    overrides = overrides or {}
    remaps = _remappings(args.get('remappings', ''), {n['name'] for n in nodes})
    specs = NodeGraph()
    for node in nodes:
        condition = node.get('condition')
        if condition and str(args[condition]).lower() not in ('true', '1', 'yes'):
            continue
        name = node['name']
        if node.get('optional') and find_executable(node['executable'],
                                                    node['package']) is None:
            package = node['package']
            specs.skipped[name] = (f'{node["executable"]} of package {package} is not '
                                   f'installed (optional; on a ROS install: apt install '
                                   f'ros-$ROS_DISTRO-{package.replace("_", "-")})')
            continue
        fqn = f'{namespace}/{name}'
        params = [Path(config) / p for p in node['params']]
        if user_params is not None and (user_params.section_for(f'/{name}') is not None
                                        or user_params.section_for(fqn) is not None):
            params.append(Path(user_params.path))
        if namespace:
            params = [namespaced_params(p, name, fqn) for p in params]
        node_overrides = dict(overrides.get(name, {}))
        if 'use_sim_time' in args:
            node_overrides.setdefault('use_sim_time', args['use_sim_time'])
        def argument(param: str, argument: str) -> str:
            if argument not in args:
                raise UserError(f'{where}: node {name!r} takes {param!r} from the undeclared '
                                f'launch argument {argument!r}')
            return args[argument]

        for param, arg in node.get('from_arguments', {}).items():
            if value := argument(param, arg):
                node_overrides.setdefault(param, value)
        if 'robot_description_from' in node:
            path = argument('robot_description', node['robot_description_from'])
            params.append(robot_description_params(path or None, fqn))
        rules = [*map(tuple, node.get('remappings', [])), *remaps.get('', []),
                 *remaps.get(name, [])]
        specs.append(NodeSpec(node['package'], node['executable'], name, params,
                              node_overrides, namespace, rules))
    names = {s.name for s in specs} | set(specs.skipped)
    bad = set(overrides) - names
    if bad:
        raise UserError(f'--set for node(s) not in the graph: {", ".join(sorted(bad))}; '
                        f'nodes: {", ".join(sorted(names))}')
    if user_params is not None and not any(
            user_params.section_for(f'/{n}') is not None
            or user_params.section_for(f'{namespace}/{n}') is not None for n in names):
        found = ', '.join(repr(k) for k in user_params.sections) or 'none'
        raise UserError(f'params_file {user_params.path}: no section for any node of this '
                        f'graph ({", ".join(sorted(names))}); sections found: {found}')
    return specs


def _remappings(value: str, nodes: set[str]) -> dict[str, list[tuple[str, str]]]:
    """The `remappings` argument: node name ('' for every node) -> [(from, to)]."""
    out: dict[str, list[tuple[str, str]]] = {}
    for rule in re.split(r'[\s,]+', value.strip()):
        if not rule:
            continue
        source, sep, target = rule.partition(':=')
        node, colon, source = source.rpartition(':') if ':' in source else ('', '', source)
        if not sep or not _TOPIC.fullmatch(source) or not _TOPIC.fullmatch(target) \
                or (colon and not node):
            raise UserError(f'launch argument remappings: {rule!r} must read FROM:=TO or '
                            f'NODE:FROM:=TO with topic names (joint_states:=/arm1/joint_states)')
        if node and node not in nodes:
            raise UserError(f'launch argument remappings: {rule!r} names the node {node!r}, '
                            f'not one of this launch file ({", ".join(sorted(nodes))})')
        out.setdefault(node, []).append((source, target))
    return out


def robot_description_params(path: str | None, fqn: str) -> Path:
    """A params file giving node `fqn` the URDF text of `path` (a URDF or MJCF file; None: the
    ComSim arm) as `robot_description`. A file, not `-p`: rcl reads a `-p` value as YAML."""
    import yaml  # noqa: PLC0415

    from comsim_core.robot.urdf import robot_description  # noqa: PLC0415 (imports mujoco)

    doc = {fqn: {'ros__parameters': {'robot_description': robot_description(path)}}}
    text = (f'# robot_description of {path or "the ComSim arm"} for {fqn}, written by '
            f'comsim-launch\n' + yaml.safe_dump(doc, sort_keys=False, width=1 << 16))
    return _temp_params(text, f'robot_description.{fqn.strip("/").replace("/", ".")}')


def _temp_params(text: str, stem: str) -> Path:
    """A generated params file named by its content, written once (atomically)."""
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    out = Path(tempfile.gettempdir()) / f'comsim-launch-{os.getuid()}' / f'{stem}.{digest}.yaml'
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(f'{out.name}.{os.getpid()}.tmp')
        tmp.write_text(text, encoding='utf8')
        os.replace(tmp, out)
    return out


def _existing_path(argument: str, value: str) -> Path:
    path = Path(value).expanduser()
    if not path.exists():
        raise UserError(f'launch argument {argument}:={value}: {path.resolve()} does not exist')
    return path.resolve()


def _namespace(value: str) -> str:
    """'' or the absolute form of a ROS namespace (arm1 -> /arm1)."""
    ns = ('/' + value.strip('/')) if value.strip('/') else ''
    if ns and not _NAMESPACE.fullmatch(ns):
        raise UserError(f'launch argument namespace:={value}: a namespace is names of '
                        f'letters, digits and _ joined by /, none starting with a digit '
                        f'(e.g. arm1, lab/arm1)')
    return ns


def _params_file(value: str):
    from comsim_core.ros.params import ParamsFile  # noqa: PLC0415 (imports rclpy)

    return ParamsFile(value)


def namespaced_params(path: Path, name: str, fqn: str) -> Path:
    """A copy of params file `path` with what applies to node `name` keyed by its namespaced
    name `fqn`: rcl applies a ``name:`` section only to the node outside any namespace (nav2
    rewrites its params files the same way). A file with no section for the node is returned
    as is, so the node names what is missing."""
    import yaml  # noqa: PLC0415

    from comsim_core.ros.params import ParamsFile  # noqa: PLC0415 (imports rclpy)

    pf = ParamsFile(str(path))
    plain, own = pf.section_for(f'/{name}'), pf.section_for(fqn)
    if plain is None and own is None:
        return path
    doc = {fqn: {'ros__parameters': _nest({**(plain or {}), **(own or {})})}}
    text = (f'# {path}: the parameters of {name} for {fqn}, written by comsim-launch\n'
            + yaml.safe_dump(doc, sort_keys=False))
    return _temp_params(text, f'{path.stem}.{fqn.strip("/").replace("/", ".")}')


def _nest(flat: dict) -> dict:
    """{'a.b': 1} -> {'a': {'b': 1}}: a params file's nesting back from ParamsFile's keys."""
    out: dict = {}
    for key, value in flat.items():
        *parents, leaf = key.split('.')
        d = out
        for p in parents:
            d = d.setdefault(p, {})
        d[leaf] = value
    return out


def launch_description(nodes: list[dict], config: Path,
                       arguments: dict[str, tuple[str, str]]):
    """The `ros2 launch` form of a launch file: its arguments declared with their descriptions,
    then, once their values are known, one launch_ros Node per spec of `build_graph`, the
    function `comsim-launch` runs. Imports `launch` here: it exists only on ROS installs."""
    from launch import LaunchDescription  # noqa: PLC0415
    from launch.actions import DeclareLaunchArgument, LogInfo, OpaqueFunction  # noqa: PLC0415
    from launch.substitutions import LaunchConfiguration  # noqa: PLC0415
    from launch_ros.actions import Node  # noqa: PLC0415

    check_arguments(arguments, 'launch file')

    def start(context):
        values = {name: LaunchConfiguration(name).perform(context) for name in arguments}
        graph = build_graph(nodes, config, arguments, values)
        return [*(LogInfo(msg=skipped_line(name, why)) for name, why in graph.skipped.items()),
                *(Node(package=s.package, executable=s.executable, name=s.name,
                       namespace=s.namespace or None,
                       parameters=[*map(str, s.params),
                                   *([typed_overrides(s.overrides)] if s.overrides else [])],
                       remappings=s.remappings or None, output='screen', emulate_tty=True)
                  for s in graph)]

    actions: list = []
    for name, (default, description) in arguments.items():
        ref = _REFERENCE.match(default)
        actions.append(DeclareLaunchArgument(
            name, default_value=LaunchConfiguration(ref.group(1)) if ref else default,
            description=description))
    actions.append(OpaqueFunction(function=start))
    return LaunchDescription(actions)


def typed_overrides(overrides: dict[str, str]) -> dict:
    """Parameter overrides typed as `-p NAME:=VALUE` types them (YAML: 'false' is a bool, '25'
    an int): launch_ros keeps a str value a string, and `use_sim_time` must be a bool."""
    import yaml  # noqa: PLC0415

    out: dict = {}
    for key, value in overrides.items():
        try:
            loaded = yaml.safe_load(value)
        except yaml.YAMLError:
            loaded = value
        scalar = (bool, int, float, str)
        uniform = (isinstance(loaded, list) and loaded and type(loaded[0]) in scalar
                   and all(type(x) is type(loaded[0]) for x in loaded))
        out[key] = loaded if type(loaded) in scalar or uniform else value
    return out


def skipped_line(name: str, why: str) -> str:
    return f'{name} not started: {why}'


class NodeExitedError(UserError):
    """Nodes that stopped on a user mistake (exit code 2); the message carries their reason."""


def _stop_with_parent() -> None:
    """In a node's process before it runs (Linux): SIGTERM when the launcher dies, even by
    SIGKILL or the OOM killer, which no handler of the launcher's own can catch; the nodes sit
    in sessions of their own, so nothing else would stop them."""
    import ctypes  # noqa: PLC0415

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, int(signal.SIGTERM), 0, 0, 0)


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
                env=self.env, start_new_session=True,
                preexec_fn=_stop_with_parent if sys.platform.startswith('linux') else None)
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


def show_arguments(path) -> str:
    """The launch arguments as `ros2 launch --show-args` lists them."""
    declared = declared_arguments(load_launch_module(path), path)
    lines = ['Arguments (pass arguments as \'<name>:=<value>\'):']
    for name, (default, description) in declared.items():
        ref = _REFERENCE.match(default)
        shown = f"LaunchConfig('{ref.group(1)}')" if ref else f"'{default}'"
        lines += ['', f"    '{name}':", *textwrap.wrap(description, 96, initial_indent=' ' * 8,
                                                       subsequent_indent=' ' * 8),
                  f'        (default: {shown})']
    return '\n'.join(lines)


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
    parser.add_argument('launch_file', help='a launch file, or the name of a shipped one '
                        '(record.launch.py)')
    parser.add_argument('arguments', nargs='*', help='launch arguments ARG:=VALUE')
    parser.add_argument('--set', action='append', default=[],
                        help='parameter override NODE.PARAM:=VALUE')
    parser.add_argument('--log-dir', type=Path)
    parser.add_argument('-s', '--show-args', action='store_true',
                        help='list the launch arguments with defaults and descriptions, and exit')
    ns = parser.parse_args(argv)
    if ns.show_args:
        print(show_arguments(ns.launch_file))
        return 0
    overrides: dict[str, dict[str, str]] = {}
    for key, value in _parse_assignments(ns.set, '--set').items():
        node, _, param = key.partition('.')
        overrides.setdefault(node, {})[param] = value
    specs = graph_from_launch(ns.launch_file, _parse_assignments(ns.arguments, 'argument'),
                              overrides)
    # SIGTERM (docker stop, systemd, a supervisor) stops the graph as Ctrl-C does: without
    # this the interpreter dies at once and the child nodes, in sessions of their own, live on.
    # SIGINT explicitly too: a process started from a script's background job inherits SIGINT
    # ignored, and would then never stop on it.
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)
    graph = Graph(specs, ns.log_dir).start()
    print(f'started {", ".join(s.name for s in specs)}; Ctrl-C or SIGTERM stops them',
          flush=True)
    for name, why in specs.skipped.items():
        print(skipped_line(name, why), flush=True)
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
