"""Simulated bench lab: a MuJoCo stand-in for a real arm and cameras, hidden realism profile."""
from setuptools import find_packages, setup

PACKAGE = 'comsim_bench_lab'

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
            'comsim-bench-lab = comsim_bench_lab.node:main',
            'comsim-calibration-capture = comsim_bench_lab.calibration_rig:main',
            'comsim-bench-lab-ground-truth = comsim_bench_lab.ground_truth:main',
        ],
    },
)
