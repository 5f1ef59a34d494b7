"""Image decoding to RGB uint8."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import TS, image_raw

from comsim_core.episodes import CorruptEpisodeError, WrongEncodingError
from comsim_core.episodes.images import image_to_rgb


def _msg(raw: bytes) -> object:
    return TS.deserialize_cdr(raw, 'sensor_msgs/msg/Image')


@pytest.mark.parametrize('enc', ['rgb8', 'bgr8', 'rgba8', 'bgra8'])
def test_color_encodings_give_rgb(enc: str) -> None:
    img = image_to_rgb(_msg(image_raw(0, h=4, w=5, encoding=enc, value=10, step_pad=3)))
    assert img.shape == (4, 5, 3) and img.dtype == np.uint8
    assert img[0, 0].tolist() == [10, 11, 12] and img[1:].max() == 0


def test_mono8() -> None:
    img = image_to_rgb(_msg(image_raw(0, encoding='mono8', value=77)))
    assert img.shape == (6, 8, 3) and img[0, 0].tolist() == [77, 77, 77]


def test_unsupported_encoding_and_bad_size() -> None:
    with pytest.raises(WrongEncodingError, match=r"'16UC1'.*supported: \['8uc1'"):
        image_to_rgb(_msg(image_raw(0, encoding='16UC1')))
    msg = _msg(image_raw(0))
    msg.height = 7
    with pytest.raises(CorruptEpisodeError, match='step\\*height'):
        image_to_rgb(msg)
