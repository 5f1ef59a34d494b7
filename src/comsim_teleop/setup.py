"""Teleoperation sources, episode recording and crash recovery, and their ROS nodes."""
from setuptools import find_packages, setup

PACKAGE = 'comsim_teleop'

setup(
    name=PACKAGE,
    version='0.1.0',
    packages=find_packages(exclude=['test', 'tests']),
    package_data={'': ['assets/*', 'assets/**/*']},
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + PACKAGE]),
        ('share/' + PACKAGE, ['package.xml']),
    ],
    install_requires=['setuptools'],
    python_requires='>=3.10',
    zip_safe=False,
    maintainer='ComSim developers',
    description=__doc__,
    license='Apache-2.0',
    entry_points={
        'console_scripts': [
            'comsim-teleop = comsim_teleop.nodes.teleop_node:main',
            'comsim-recorder = comsim_teleop.nodes.recorder_node:main',
            'comsim-recover = comsim_teleop.recording.recover_cli:main',
        ],
    },
)
