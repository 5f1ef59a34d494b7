"""The shared base every ComSim stage builds on: robot, camera, control, episodes, tasks, ROS."""
from setuptools import find_packages, setup

PACKAGE = 'comsim_core'

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
            'comsim-launch = comsim_core.ros.graph:main',
            'comsim-episode-runner = comsim_core.ros.episode_runner:main',
            'comsim-urdf = comsim_core.robot.urdf:main',
        ],
    },
)
