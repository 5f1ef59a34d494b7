"""The one image decoder (``decode_rgb``): every supported encoding against a known RGB array,
as rosbags messages (the reader's, decoded from CDR) and rclpy messages (the policy node's),
with padded rows and both byte orders; compressed JPEG/PNG; one-line errors."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from conftest import TS, image_raw
from sensor_msgs.msg import CompressedImage as RclpyCompressed
from sensor_msgs.msg import Image as RclpyImage

from comsim_core.episodes import CorruptImageError, WrongEncodingError
from comsim_core.episodes.images import ENCODINGS, decode_rgb
from fixtures.cdr import header

H, W = 6, 8
RNG = np.random.default_rng(0)
RGB = RNG.integers(0, 256, (H, W, 3), dtype=np.uint8)
GREY = RNG.integers(0, 256, (H, W), dtype=np.uint8)
FLAT = np.broadcast_to(np.array([200, 100, 30], np.uint8), (H, W, 3))  # Bayer: exact when flat


def _yuv422(rgb: np.ndarray, order: str) -> tuple[np.ndarray, np.ndarray]:
    """(packed bytes (H, W, 2), the RGB they stand for): pixel pairs share their chroma, so the
    known image is made of equal pairs; BT.601 limited range (Y 16-235), as cameras send it."""
    pairs = np.repeat(rgb[:, ::2], 2, axis=1)
    r, g, b = (pairs[..., k].astype(float) for k in range(3))
    y = np.rint(16 + (65.481 * r + 128.553 * g + 24.966 * b) / 255).astype(np.uint8)
    u = np.rint(128 + (-37.797 * r - 74.203 * g + 112.0 * b) / 255).astype(np.uint8)[:, ::2]
    v = np.rint(128 + (112.0 * r - 93.786 * g - 18.214 * b) / 255).astype(np.uint8)[:, ::2]
    packed = np.empty((rgb.shape[0], rgb.shape[1], 2), np.uint8)
    if order == 'uyvy':
        packed[:, ::2, 0], packed[:, 1::2, 0] = u, v
        packed[..., 1] = y
    else:  # yuyv
        packed[..., 0] = y
        packed[:, ::2, 1], packed[:, 1::2, 1] = u, v
    return packed, pairs


def _bayer(rgb: np.ndarray, pattern: str) -> np.ndarray:
    """One channel per pixel, `pattern` (e.g. 'rggb') over each 2x2 block."""
    idx = {'r': 0, 'g': 1, 'b': 2}
    out = np.empty(rgb.shape[:2], rgb.dtype)
    for k, (dy, dx) in enumerate([(0, 0), (0, 1), (1, 0), (1, 1)]):
        out[dy::2, dx::2] = rgb[dy::2, dx::2, idx[pattern[k]]]
    return out


def _to16(a: np.ndarray) -> np.ndarray:
    """8-bit v as a 16-bit value that scales back to v (v*257 plus less than half a level),
    its two bytes unequal, so reading the wrong byte order shows."""
    wide = a.astype(np.int64) * 257
    extra = RNG.integers(1, 128, a.shape)
    return np.minimum(wide + extra, 65535).astype(np.uint16)


# encoding -> (pixels as the encoding stores them (H, W[, C]), the RGB they must decode to,
# absolute tolerance)
CASES: dict[str, tuple[np.ndarray, np.ndarray, int]] = {
    'rgb8': (RGB, RGB, 0),
    'bgr8': (RGB[..., ::-1], RGB, 0),
    'rgba8': (np.dstack([RGB, np.full((H, W), 7, np.uint8)]), RGB, 0),
    'bgra8': (np.dstack([RGB[..., ::-1], np.full((H, W), 7, np.uint8)]), RGB, 0),
    'mono8': (GREY, np.dstack([GREY] * 3), 0),
    '8UC1': (GREY, np.dstack([GREY] * 3), 0),
    '8UC3': (RGB[..., ::-1], RGB, 0),
    'mono16': (_to16(GREY), np.dstack([GREY] * 3), 0),
    'rgb16': (_to16(RGB), RGB, 0),
    'bgr16': (_to16(RGB[..., ::-1]), RGB, 0),
    'rgba16': (np.dstack([_to16(RGB), np.full((H, W), 9, np.uint16)]), RGB, 0),
    'bgra16': (np.dstack([_to16(RGB[..., ::-1]), np.full((H, W), 9, np.uint16)]), RGB, 0),
    **{f'bayer_{p}8': (_bayer(FLAT, p), FLAT, 0) for p in ('rggb', 'bggr', 'gbrg', 'grbg')},
    **{f'bayer_{p}16': (_to16(_bayer(FLAT, p)), FLAT, 0)
       for p in ('rggb', 'bggr', 'gbrg', 'grbg')},
    **{enc: (*_yuv422(RGB, 'uyvy'), 2) for enc in ('uyvy', 'yuv422')},
    **{enc: (*_yuv422(RGB, 'yuyv'), 2) for enc in ('yuyv', 'yuv422_yuy2')},
}


def _row_bytes(pixels: np.ndarray, bigendian: bool) -> np.ndarray:
    """(H, row bytes) as the message holds them."""
    if pixels.dtype == np.uint16:
        pixels = pixels.astype('>u2' if bigendian else '<u2')
    return np.ascontiguousarray(pixels).reshape(pixels.shape[0], -1).view(np.uint8)


def _image(kind: str, encoding: str, pixels: np.ndarray, pad: int = 0,
           bigendian: bool = False):
    rows = _row_bytes(pixels, bigendian)
    h, row = rows.shape
    data = np.zeros((h, row + pad), np.uint8)
    data[:, :row] = rows
    data[:, row:] = 0xAB                      # padding must never leak into the pixels
    fields = dict(height=h, width=pixels.shape[1], encoding=encoding,
                  is_bigendian=int(bigendian), step=row + pad)
    if kind == 'rclpy':
        msg = RclpyImage(**fields)
        msg.data = data.tobytes()
        return msg
    raw = TS.serialize_cdr(TS.types['sensor_msgs/msg/Image'](header=header(0), **fields,
                                                             data=data.reshape(-1)),
                           'sensor_msgs/msg/Image')
    return TS.deserialize_cdr(raw, 'sensor_msgs/msg/Image')


def test_every_supported_encoding_is_tested():
    assert {e.lower() for e in CASES} == set(ENCODINGS)


@pytest.mark.parametrize('kind', ['rosbags', 'rclpy'])
@pytest.mark.parametrize('pad', [0, 5])
@pytest.mark.parametrize('encoding', sorted(CASES))
def test_encoding_round_trips(encoding, pad, kind):
    pixels, want, tol = CASES[encoding]
    orders = [False, True] if pixels.dtype == np.uint16 else [False]
    for bigendian in orders:
        msg = _image(kind, encoding, pixels, pad, bigendian)
        got = decode_rgb(msg, '/cam')
        assert got.shape == (H, W, 3) and got.dtype == np.uint8 and got.flags.c_contiguous
        diff = np.abs(got.astype(int) - want.astype(int)).max()
        assert diff <= tol, (encoding, pad, kind, bigendian, diff)


def test_big_endian_flag_is_honoured():
    """The same bytes read with the other byte order are a different image."""
    msg = _image('rclpy', 'mono16', _to16(GREY), bigendian=True)
    msg.is_bigendian = 0
    assert not np.array_equal(decode_rgb(msg)[..., 0], GREY)


def test_the_result_is_a_fresh_array():
    """rgb8 needs no conversion, yet the array must not be a view of the message buffer."""
    msg = _image('rosbags', 'rgb8', RGB)
    msg.data = msg.data.copy()         # rosbags hands out read-only arrays; make it writable
    got = decode_rgb(msg)
    msg.data[:] = 0
    np.testing.assert_array_equal(got, RGB)


@pytest.mark.parametrize('ext,tol', [('.png', 0), ('.jpg', 12)])
@pytest.mark.parametrize('kind', ['rosbags', 'rclpy'])
def test_compressed_images_decode(ext, tol, kind):
    smooth = np.clip(np.add.outer(np.arange(48) * 3, np.arange(64) * 2), 0, 255).astype(np.uint8)
    rgb = np.dstack([smooth, smooth[::-1], np.full_like(smooth, 90)])
    ok, buf = cv2.imencode(ext, rgb[..., ::-1])     # OpenCV encodes BGR
    assert ok
    fmt = 'rgb8; jpeg compressed bgr8' if ext == '.jpg' else 'png'
    if kind == 'rclpy':
        msg = RclpyCompressed(format=fmt)
        msg.data = buf.tobytes()
    else:
        raw = TS.serialize_cdr(TS.types['sensor_msgs/msg/CompressedImage'](
            header=header(0), format=fmt, data=buf.reshape(-1)), 'sensor_msgs/msg/CompressedImage')
        msg = TS.deserialize_cdr(raw, 'sensor_msgs/msg/CompressedImage')
    got = decode_rgb(msg, '/cam/compressed')
    assert got.shape == rgb.shape and got.dtype == np.uint8
    assert np.abs(got.astype(int) - rgb.astype(int)).mean() <= tol / 4
    assert np.abs(got.astype(int) - rgb.astype(int)).max() <= tol


def test_grey_png_decodes_to_grey_rgb():
    ok, buf = cv2.imencode('.png', GREY)
    got = decode_rgb(RclpyCompressed(format='png', data=buf.tobytes()))
    np.testing.assert_array_equal(got, np.dstack([GREY] * 3))


@pytest.mark.parametrize('encoding', ['16UC1', '32FC1', 'nv12', 'weird'])
def test_unsupported_encoding_is_one_line_naming_it(encoding):
    msg = _image('rclpy', 'rgb8', RGB)
    msg.encoding = encoding
    with pytest.raises(WrongEncodingError) as info:
        decode_rgb(msg, '/cameras/front/image_raw')
    text = str(info.value)
    assert '\n' not in text
    assert text.startswith(f"/cameras/front/image_raw: image encoding '{encoding}' is not "
                           'supported')
    assert 'supported: 8uc1, 8uc3, bayer_bggr16' in text
    if encoding in ('16UC1', '32FC1'):
        assert 'depth or generic data' in text


def test_reader_message_with_a_depth_encoding(tmp_path):
    with pytest.raises(WrongEncodingError, match=r"'16UC1' is not supported"):
        decode_rgb(TS.deserialize_cdr(image_raw(0, encoding='16UC1'), 'sensor_msgs/msg/Image'))


def test_bad_sizes_and_undecodable_data_are_one_line():
    msg = _image('rosbags', 'rgb8', RGB)
    msg.height = 7
    with pytest.raises(CorruptImageError, match=r'^ep:/cam: image 8x7 rgb8 step 24: expected '
                       r'step\*height = 168 bytes with step >= 24, got 144 bytes$'):
        decode_rgb(msg, 'ep:/cam')
    msg = _image('rclpy', 'rgb8', RGB)
    msg.step = 20
    with pytest.raises(CorruptImageError, match='step >= 24'):
        decode_rgb(msg)
    for data in (b'', b'not a jpeg at all'):
        with pytest.raises(CorruptImageError) as info:
            decode_rgb(RclpyCompressed(format='jpeg', data=data), '/cam/compressed')
        assert '\n' not in str(info.value) and '/cam/compressed' in str(info.value)
    with pytest.raises(WrongEncodingError, match='compressedDepth'):
        decode_rgb(RclpyCompressed(format='16UC1; compressedDepth png', data=b'x'))
