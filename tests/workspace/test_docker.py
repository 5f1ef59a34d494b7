"""docker/Dockerfile, read statically (no Docker engine here): it builds the workspace as the
README's ROS 2 install does (rosdep for the package.xml keys, pip for requirements/robot.txt,
colcon), robot.txt pins what lock.txt pins, and every package.xml key is one rosdep knows."""
from __future__ import annotations

import re
import shlex
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / 'scripts'))
import check_lock  # noqa: E402

DOCKERFILE = ROOT / 'docker' / 'Dockerfile'
ROBOT = ROOT / 'requirements' / 'robot.txt'
BASE = ROOT / 'requirements' / 'base.txt'
PACKAGES = sorted(p.parent for p in (ROOT / 'src').glob('*/package.xml'))

# The rosdep keys the package.xml files rely on: ROS packages of ros-base on Humble, Jazzy and
# Kilted (rosdistro's distribution.yaml), and system keys of rosdep/base.yaml and python.yaml.
ROSDEP_KEYS = {
    'ament_index_python', 'launch', 'launch_ros', 'rclpy', 'robot_state_publisher',
    'std_msgs', 'std_srvs', 'sensor_msgs', 'geometry_msgs', 'trajectory_msgs',
    'diagnostic_msgs', 'rosgraph_msgs',
    'python3-numpy', 'python3-yaml', 'python3-opencv', 'python3-pytest',
}
# Direct dependencies of the pip install (base.txt) that a ROS install gets elsewhere: the ROS
# wheels (the distro's packages), test tools, and what rosdep installs from apt.
FROM_ROSDEP = {'numpy': 'python3-numpy', 'pyyaml': 'python3-yaml',
               'opencv-python-headless': 'python3-opencv'}
TEST_ONLY = {'pytest', 'pytest-timeout'}


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined."""
    text = re.sub(r'\\\n', ' ', DOCKERFILE.read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith('#'):
            word, _, rest = line.partition(' ')
            out.append((word.upper(), rest.strip()))
    return out


def runs() -> list[str]:
    return [args for word, args in instructions() if word == 'RUN']


def index_of(pattern: str) -> int:
    [i] = [i for i, cmd in enumerate(runs()) if re.search(pattern, cmd)]
    return i


def names(path: Path, python: str) -> set[str]:
    return set(check_lock.pins_for(path, python))


def test_the_image_installs_the_readme_requirement_file():
    readme = (ROOT / 'README.md').read_text()
    [readme_file] = set(re.findall(r'pip install -r src/comsim/(requirements/\S+)', readme))
    pip = [cmd for cmd in runs() if 'pip install' in cmd]
    assert len(pip) == 1
    files = re.findall(r'-r\s+(\S+)', pip[0])
    assert files == [f'src/comsim/{readme_file}'] == ['src/comsim/requirements/robot.txt']
    copies = {tuple(shlex.split(args)) for word, args in instructions() if word == 'COPY'}
    assert ('requirements', 'src/comsim/requirements') in copies


def test_robot_txt_pins_what_the_lock_pins_on_every_python():
    for python in ('3.10', '3.11', '3.12'):
        robot = check_lock.pins_for(ROBOT, python)
        lock = check_lock.pins_for(check_lock.LOCK, python)
        assert robot, python
        for name, req in robot.items():
            assert name in lock, f'{name} is in robot.txt but not in lock.txt'
            assert str(req.specifier) == str(lock[name].specifier), (python, name)


def test_robot_txt_with_rosdep_covers_the_pip_install():
    """The image runs every node: each direct dependency of the pip install (base.txt) is in
    robot.txt, comes from rosdep, or is a ROS wheel (the distro's own package)."""
    for python in ('3.10', '3.11'):
        base = {n for n in names(BASE, python) if not n.startswith('ros-')} - TEST_ONLY
        assert base - set(FROM_ROSDEP) == names(ROBOT, python), python
    keys = package_keys()
    assert set(FROM_ROSDEP.values()) <= keys


def test_rosdep_then_pip_then_colcon():
    rosdep = index_of(r'rosdep install')
    assert re.search(r'rosdep update', runs()[rosdep])
    cmd = runs()[rosdep]
    for flag in ('--from-paths src', '--ignore-src', '-y'):
        assert flag in cmd, flag
    # After rosdep: pip keeps the distro's numpy, the one the ROS packages are built with.
    assert rosdep < index_of(r'pip install') < index_of(r'colcon build')
    copies = [shlex.split(args) for word, args in instructions() if word == 'COPY']
    # The checkout's layout under the workspace, so comsim_bringup's links (../../launch) hold.
    assert {(src, dst) for src, dst in copies} >= {
        ('src', 'src/comsim/src'), ('launch', 'src/comsim/launch'),
        ('config', 'src/comsim/config')}
    assert (ROOT / 'src' / 'comsim_bringup' / 'launch').resolve() == ROOT / 'launch'


def test_base_image_torch_variant_entrypoint_and_default_command():
    found = instructions()
    froms = [args for word, args in found if word == 'FROM']
    assert froms == ['ros:${ROS_DISTRO}-ros-base']
    args = {a.partition('=')[0]: a.partition('=')[2] for word, a in found
            if word == 'ARG' and '=' in a}     # defaults; re-declared after FROM without one
    assert args['ROS_DISTRO'] == 'jazzy' and args['TORCH'] == 'cpu'
    pip = runs()[index_of(r'pip install')]
    assert 'cpu)' in pip and 'cuda)' in pip and 'download.pytorch.org/whl/cpu' in pip
    assert re.search(r'\.\s+/ws/install/setup\.bash', DOCKERFILE.read_text())
    [cmd] = [a for word, a in found if word == 'CMD']
    assert cmd == '["ros2", "launch", "comsim_bringup", "record.launch.py"]'
    ignored = (ROOT / '.dockerignore').read_text().split()
    assert '.venv/' in ignored and '.git/' in ignored


def package_keys() -> set[str]:
    keys = set()
    for pkg in PACKAGES:
        root = ET.parse(pkg / 'package.xml').getroot()
        for tag in ('depend', 'build_depend', 'exec_depend', 'test_depend',
                    'build_export_depend'):
            keys |= {e.text.strip() for e in root.iter(tag)}
    return keys


def test_every_package_xml_key_is_a_rosdep_key_or_a_workspace_package():
    workspace = {ET.parse(p / 'package.xml').getroot().findtext('name') for p in PACKAGES}
    assert workspace == {p.name for p in PACKAGES}
    unknown = package_keys() - workspace - ROSDEP_KEYS
    assert not unknown, f'not rosdep keys: {sorted(unknown)} (rosdep install would fail)'


def test_the_readme_documents_the_build_args():
    readme = (ROOT / 'README.md').read_text()
    for text in ('--build-arg ROS_DISTRO=', '--build-arg TORCH=cuda', '--gpus all',
                 'rosdep install --from-paths src --ignore-src -y'):
        assert text in readme, text
