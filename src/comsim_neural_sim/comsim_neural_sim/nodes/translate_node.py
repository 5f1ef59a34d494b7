"""Translate node: a sim episode in, pseudo-real frames out (offline translation).

Translates the sim episode given by param ``episode`` with the checkpoint ``checkpoint``,
writes the pseudo-real episode under ``out_dir`` (when set) and publishes each translated frame
on ``<topic_prefix>/<cam>/image_raw`` with the sim frame's original header stamp, at
``rate_hz``. The work lives in ``comsim_neural_sim.translate`` (no ROS there).
"""
from __future__ import annotations

from pathlib import Path

from rclpy.node import Node
from sensor_msgs.msg import Image

from comsim_core.paths import resolve_config_path
from comsim_core.ros.messages import IMAGE_QOS, image_msg
from comsim_core.ros.params import declare_parameters
from comsim_core.ros.run import run_node
from comsim_neural_sim.sampling.translate import translate_frames
from comsim_neural_sim.translate.episode import read_sim_episode

DEFAULTS = {
    'episode': '',                      # sim episode directory (recording layout)
    'checkpoint': '',                   # neural-sim checkpoint directory
    'out_dir': '',                      # write the pseudo-real episode here ('' = do not)
    'publish': True,                    # publish translated frames
    'topic_prefix': '/pseudo_real/cameras',
    'rate_hz': 10.0,
    'loop': False,
    'w_action': 1.0,
    'w_sim': 1.0,
    'steps': 10,
    'seed': 0,
    'mode': 'composed',
}


class TranslateNode(Node):
    def __init__(self):
        super().__init__('translate')
        self.p = declare_parameters(self, DEFAULTS)
        if not self.p.episode or not self.p.checkpoint:
            raise ValueError('translate: set the parameters episode (a sim episode directory) '
                             'and checkpoint (a neural-sim checkpoint directory)')
        if self.p.rate_hz <= 0:
            raise ValueError(f'translate: rate_hz must be > 0, got {self.p.rate_hz}')
        from comsim_neural_sim.sampling.pipeline import NeuralSimPipeline  # noqa: PLC0415
        ckpt = resolve_config_path(self.p.checkpoint)
        pipe = NeuralSimPipeline.from_pretrained(ckpt)
        ep_path = resolve_config_path(self.p.episode)
        weights = {'w_action': self.p.w_action, 'w_sim': self.p.w_sim,
                   'w_joint': self.p.w_action}
        if self.p.out_dir:
            from comsim_neural_sim.translate import translate_episode  # noqa: PLC0415
            out = translate_episode(ep_path, pipe, Path(self.p.out_dir),
                                    weights, self.p.steps, self.p.seed, self.p.mode,
                                    checkpoint=ckpt)
            self.get_logger().info(f'translate: wrote {out}')
        sim = read_sim_episode(ep_path, pipe.config.command_topic)
        self.frames = {}
        for topic, (stamps, _) in sim.images.items():
            gen = translate_frames(pipe, [sim], topic, weights, self.p.steps, self.p.seed,
                                   self.p.mode, pipe.config.sim_detail)[0]
            cam = topic.split('/')[-2]
            self.frames[cam] = (stamps, gen)
        self.pubs = {cam: self.create_publisher(Image, f'{self.p.topic_prefix}/{cam}/image_raw',
                                                IMAGE_QOS) for cam in self.frames}
        self.index = 0
        self.length = max(len(s) for s, _ in self.frames.values())
        self.timer = self.create_timer(1.0 / self.p.rate_hz, self._tick)
        self.get_logger().info(f'translate: {ep_path.name}: {self.length} frames x '
                               f'{len(self.frames)} cameras -> {self.p.topic_prefix}/<cam>')

    def _tick(self) -> None:
        if not self.p.publish:
            return
        if self.index >= self.length:
            if not self.p.loop:
                return
            self.index = 0
        for cam, (stamps, gen) in self.frames.items():
            if self.index < len(stamps):
                msg = image_msg(gen[self.index], 0.0, f'{cam}_optical_frame')
                t = int(stamps[self.index])
                msg.header.stamp.sec, msg.header.stamp.nanosec = t // 10**9, t % 10**9
                self.pubs[cam].publish(msg)
        self.index += 1


def main(args=None):
    return run_node(TranslateNode, args)


if __name__ == '__main__':
    main()
