"""Parameters over ROS: a parameter whose change cannot take effect is refused (read-only), a
dynamic one is range-checked and takes effect, and each says what it is (descriptor)."""
import pytest
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import DescribeParameters, SetParameters

pytestmark = pytest.mark.ros


def call(node, spin_until, srv, name, request):
    client = node.create_client(srv, name)
    assert client.wait_for_service(timeout_sec=60), name
    future = client.call_async(request)
    assert spin_until(node, future.done, 30)
    return future.result()


def double(name, value):
    return Parameter(name=name, value=ParameterValue(type=ParameterType.PARAMETER_DOUBLE,
                                                     double_value=value))


def test_read_only_refused_dynamic_checked_and_applied(start_node, ros_node, spin_until):
    proc = start_node('comsim-teleop', 'teleop_params', {'use_sim_time': False})
    res = call(ros_node, spin_until, SetParameters, '/teleop_params/set_parameters',
               SetParameters.Request(parameters=[double('rate_hz', 10.0),
                                                 double('velocity_scale', 0.3),
                                                 double('velocity_scale', 2.0)]))
    rate, ok, too_big = res.results
    assert not rate.successful and 'read-only' in rate.reason.lower()
    assert ok.successful, ok.reason
    assert not too_big.successful and 'out of range' in too_big.reason
    desc = call(ros_node, spin_until, DescribeParameters, '/teleop_params/describe_parameters',
                DescribeParameters.Request(names=['velocity_scale', 'rate_hz']))
    scale, rate_d = desc.descriptors
    assert 'velocity limits' in scale.description and not scale.read_only
    assert scale.floating_point_range[0].to_value == 1.0 and rate_d.read_only
    assert spin_until(ros_node, lambda: 'velocity_scale 0.3' in proc.log_path.read_text(), 10)
    assert proc.poll() is None


def test_an_out_of_range_value_in_a_params_file_is_one_line_naming_it(start_node):
    proc = start_node('comsim-teleop', 'teleop_bad', {'use_sim_time': False,
                                                      'velocity_scale': 3.0})
    assert proc.wait(timeout=60) == 2
    lines = [ln for ln in proc.log_path.read_text().splitlines() if ln.strip()]
    assert "parameter 'velocity_scale' must be in [0.01, 1], got 3.0" in lines[-1]
    assert 'teleop_bad.yaml' in lines[-1] and 'Traceback' not in proc.log_path.read_text()
