"""config/foxglove/recording.json: a Foxglove layout whose panels show what the recorder records."""
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import yaml

from comsim_core.robot.urdf import robot_description

ROOT = Path(__file__).resolve().parents[2]
LAYOUT = ROOT / 'config' / 'foxglove' / 'recording.json'
# Published by robot_state_publisher on ROS installs (not recorded by default: see the README).
ROBOT_STATE_TOPICS = {'/tf', '/tf_static', '/robot_description'}


def recorded_topics() -> dict[str, str]:
    params = yaml.safe_load((ROOT / 'config' / 'recorder.yaml').read_text())
    entries = params['recorder']['ros__parameters']['topics']
    return {e.split()[0]: e.split()[1] for e in entries}


def _panels(node):
    """Panel ids of a layout tree (a string, or a split with first/second)."""
    if isinstance(node, str):
        return [node]
    return _panels(node['first']) + _panels(node['second'])


def _topics(config) -> set[str]:
    text = json.dumps(config)
    return set(re.findall(r'"(/[A-Za-z0-9_/]+?)(?:\.[^"]*)?"', text))


def test_layout_is_a_foxglove_layout():
    layout = json.loads(LAYOUT.read_text())
    assert set(layout) >= {'configById', 'layout', 'globalVariables', 'userNodes',
                           'playbackConfig'}
    panels = _panels(layout['layout'])
    assert sorted(panels) == sorted(layout['configById']), 'every panel placed once'
    kinds = sorted(p.split('!')[0] for p in panels)
    assert kinds == ['3D', 'Image', 'Image', 'Plot', 'Plot']


def test_layout_shows_recorded_topics():
    layout = json.loads(LAYOUT.read_text())
    recorded = recorded_topics()
    config = layout['configById']
    images = {config[p]['imageMode']['imageTopic'] for p in config if p.startswith('Image!')}
    assert images == {t for t, kind in recorded.items() if kind == 'sensor_msgs/msg/Image'}
    for p in config:
        for topic in _topics(config[p]):
            if topic in ROBOT_STATE_TOPICS:
                continue
            assert topic in recorded, f'{p} shows {topic}, which the recorder does not record'


def test_joint_plots_follow_the_joint_state_convention():
    config = json.loads(LAYOUT.read_text())['configById']
    labels = {}
    for p in config:
        for path in config[p].get('paths', []):
            index = int(re.fullmatch(r'/joint_states\.position\[(\d+)\]', path['value'])[1])
            labels[index] = path['label']
    names = [j.get('name') for j in ET.fromstring(robot_description()).findall('joint')
             if j.get('type') not in ('fixed',) and j.find('mimic') is None]
    assert [labels[i] for i in sorted(labels)] == names  # joint1..joint6, gripper


def test_3d_panel_uses_robot_description_and_tf():
    panel = json.loads(LAYOUT.read_text())['configById']['3D!arm']
    urdf = [lay for lay in panel['layers'].values() if lay['layerId'] == 'foxglove.Urdf']
    assert urdf and urdf[0]['sourceType'] == 'topic'
    assert urdf[0]['topic'] == '/robot_description'
    assert {'/tf', '/tf_static'} <= set(panel['topics'])
    links = {lk.get('name') for lk in ET.fromstring(robot_description()).findall('link')}
    assert panel['followTf'] in links
