"""Diffusion Policy training and closed-loop deployment."""
from setuptools import find_packages, setup

PACKAGE = 'comsim_policy'

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
            'comsim-policy = comsim_policy.nodes.policy_node:main',
            'comsim-policy-train = comsim_policy.training.train:main',
            'comsim-policy-eval = comsim_policy.evaluation.cli:main',
        ],
    },
)
