"""Bring-up of the ComSim graphs: the launch files and the configs that they and the nodes read.

`launch` and `config` here are links to the checkout's top-level folders, so `colcon build`
(with or without --symlink-install) and `pip install` install the same files into
share/comsim_bringup/ while the top-level folders stay where users find them.
"""
import os
from glob import glob

from setuptools import find_packages, setup

PACKAGE = 'comsim_bringup'
SHARE = 'share/' + PACKAGE


def tree(folder: str) -> list[tuple[str, list[str]]]:
    """data_files entries for every file under `folder`, each subfolder kept."""
    entries = []
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=True):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(('.', '__')))
        files = sorted(os.path.join(dirpath, f) for f in filenames if not f.startswith('.'))
        if files:
            entries.append((os.path.join(SHARE, dirpath), files))
    return entries


setup(
    name=PACKAGE,
    version='0.1.0',
    packages=find_packages(exclude=['test', 'tests']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + PACKAGE]),
        (SHARE, ['package.xml']),
        (SHARE + '/launch', sorted(glob('launch/*.launch.py'))),
        *tree('config'),
    ],
    install_requires=['setuptools'],
    python_requires='>=3.10',
    zip_safe=False,
    maintainer='ComSim developers',
    description=__doc__.splitlines()[0],
    license='Apache-2.0',
)
