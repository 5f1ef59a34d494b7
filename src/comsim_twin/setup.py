"""Digital twin of the lab: calibration, alignment, replay, rule-based generation."""
from setuptools import find_packages, setup

PACKAGE = 'comsim_twin'

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
            'comsim-calibrate = comsim_twin.calibration.cli:main',
            'comsim-align = comsim_twin.alignment.cli:main',
            'comsim-twin-replay = comsim_twin.replay.cli:main',
            'comsim-twin-generate = comsim_twin.generation.cli:main',
            'comsim-twin = comsim_twin.nodes.twin_node:main',
        ],
    },
)
