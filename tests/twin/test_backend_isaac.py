"""IsaacTwin: needs Isaac Sim on an RTX GPU; here we check it fails clearly and is wired up."""
import numpy as np
import pytest

from comsim_twin.backends import BackendUnavailableError, make_backend
from comsim_twin.backends.isaac_backend import UNAVAILABLE, isaac_available

needs_isaac = pytest.mark.skipif(not isaac_available(), reason=UNAVAILABLE)


@pytest.mark.skipif(isaac_available(), reason='Isaac Sim is installed here')
def test_missing_isaac_raises_a_clear_error():
    with pytest.raises(BackendUnavailableError, match='Use backend: mujoco'):
        make_backend('isaac')


@needs_isaac
def test_isaac_twin_kinematics_and_render():
    from comsim_twin.scene import TwinCamera, TwinScene
    K = np.array([[200.0, 0.0, 80.0], [0.0, 200.0, 60.0], [0.0, 0.0, 1.0]])
    T = np.eye(4)
    T[:3, 3] = [1.0, 0.0, 0.6]
    twin = make_backend('isaac')
    try:
        twin.build(TwinScene(cameras={'cam': TwinCamera('cam', 160, 120, K, np.zeros(5), T)}))
        q = twin.joint_positions()
        twin.set_joint_positions(q)
        np.testing.assert_allclose(twin.joint_positions(), q, atol=1e-3)
        assert twin.render('cam').shape == (120, 160, 3)
    finally:
        twin.close()
