"""Neural simulator: action- and sim-conditioned video diffusion."""
from setuptools import find_packages, setup

PACKAGE = 'comsim_neural_sim'

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
            'comsim-neural-sim-train = comsim_neural_sim.training.train:main',
            'comsim-neural-sim-translate = comsim_neural_sim.nodes.translate_node:main',
            'comsim-translate-episodes = comsim_neural_sim.translate.cli:main',
            'comsim-neural-sim-ablation = comsim_neural_sim.evaluation.ablation:main',
        ],
    },
)
