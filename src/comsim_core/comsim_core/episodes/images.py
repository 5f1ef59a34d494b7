"""The one image decoder: a sensor_msgs Image or CompressedImage → RGB uint8 (H, W, 3).

Every stage that turns a camera message into pixels calls ``decode_rgb``: the episode reader
(training, twin, neural simulator), the policy node on the robot and the bench lab's ground
truth, so a frame reads the same in training and on the robot. It takes rclpy messages and
rosbags messages alike (both have ``encoding``/``height``/``width``/``step``/``is_bigendian``/
``data``, or ``format``/``data``) and leans on ``rosbags-image`` (not cv_bridge, which is broken
here with numpy 2 and OpenCV 5) for the encoding table, byte order and colour conversions
(OpenCV's). What this module adds: row padding (``step`` > width × pixel size, which rosbags
does not handle), a size check, a fresh array every time, and one-line errors.

Supported raw encodings:

* colour: ``rgb8``, ``bgr8``, ``rgba8``, ``bgra8`` (alpha dropped); ``8UC3`` is read as BGR (the
  OpenCV convention of the node that published an untyped 3-channel Mat);
* grey: ``mono8`` and ``8UC1``, the grey value copied to all three channels;
* 16 bit: ``mono16``, ``rgb16``, ``bgr16``, ``rgba16``, ``bgra16`` scaled to 8 bit
  (``v * 255 / 65535``), either byte order (``is_bigendian``);
* Bayer mosaics ``bayer_{rggb,bggr,gbrg,grbg}{8,16}`` (demosaiced bilinearly) and YUV 4:2:2
  (``uyvy``/``yuv422``, ``yuyv``/``yuv422_yuy2``).

Refused, with the encoding named: depth and other generic data (``16UC1``, ``32FC1``, ``8UC2``...:
no colour meaning, so not a policy's camera input), ``nv12``/``nv21`` (``height`` does not cover
the chroma plane in rosbags-image's reading) and anything else. Compressed images: whatever
OpenCV decodes (JPEG, PNG, also grey or 16-bit PNG); ``compressedDepth`` is refused.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from .errors import CorruptImageError, WrongEncodingError

# The encodings decode_rgb reads (lower case), each with the rosbags-image encoding it is read
# as: itself, except the generic OpenCV types given a colour meaning.
ENCODINGS: dict[str, str] = {
    **{e: e for e in ('rgb8', 'bgr8', 'rgba8', 'bgra8', 'mono8',
                      'mono16', 'rgb16', 'bgr16', 'rgba16', 'bgra16',
                      'bayer_rggb8', 'bayer_bggr8', 'bayer_gbrg8', 'bayer_grbg8',
                      'bayer_rggb16', 'bayer_bggr16', 'bayer_gbrg16', 'bayer_grbg16',
                      'uyvy', 'yuv422', 'yuyv', 'yuv422_yuy2')},
    '8uc1': 'mono8',
    '8uc3': 'bgr8',   # OpenCV convention: an untyped 3-channel Mat is BGR
}
_DEPTH = ('16uc1', '32fc1', '16sc1', '32sc1', '64fc1')


def stamp_ns(header: Any) -> int:
    """A std_msgs/Header stamp as integer nanoseconds."""
    return int(header.stamp.sec) * 1_000_000_000 + int(header.stamp.nanosec)


def is_compressed(msg: Any) -> bool:
    """A sensor_msgs/CompressedImage (it has ``format``; an Image has ``encoding``)."""
    return hasattr(msg, 'format') and not hasattr(msg, 'encoding')


def decode_rgb(msg: Any, where: object = 'image') -> np.ndarray:
    """A sensor_msgs/msg/Image or CompressedImage as a fresh RGB uint8 array (H, W, 3).

    ``where`` (a topic, or ``episode:topic``) starts every error message. Raises
    ``WrongEncodingError`` for an encoding or format it does not read and ``CorruptImageError``
    for data that does not fit its header or does not decode; both are one line.
    """
    if is_compressed(msg):
        return _decode_compressed(msg, where)
    return _decode_raw(msg, where)


def _bytes(data: Any) -> np.ndarray:
    """A message's ``data`` (rclpy: array.array or bytes; rosbags: a numpy array) as uint8."""
    if isinstance(data, np.ndarray):
        return data.reshape(-1).view(np.uint8)
    return np.frombuffer(data, dtype=np.uint8)


def _decode_raw(msg: Any, where: object) -> np.ndarray:
    from rosbags.image import image_to_cvimage  # noqa: PLC0415 - needs cv2
    from rosbags.image.image import to_cvtype  # noqa: PLC0415

    given = str(msg.encoding)
    encoding = ENCODINGS.get(given.lower())
    if encoding is None:
        why = ('depth or generic data has no colour meaning' if given.lower() in _DEPTH
               or given[:1].isdigit() else 'unknown to the decoder')
        raise WrongEncodingError(
            f'{where}: image encoding {given!r} is not supported ({why}); supported: '
            f'{", ".join(sorted(ENCODINGS))}')
    _, _, typestr, channels = to_cvtype(encoding)
    h, w, step = int(msg.height), int(msg.width), int(msg.step)
    row = w * channels * np.dtype(typestr).itemsize
    data = _bytes(msg.data)
    if h <= 0 or w <= 0 or step < row or step * h != data.size:
        raise CorruptImageError(
            f'{where}: image {w}x{h} {given} step {step}: expected step*height = {step * h} '
            f'bytes with step >= {row}, got {data.size} bytes')
    if step != row:  # padded rows: keep each row's pixels
        data = np.ascontiguousarray(data.reshape(h, step)[:, :row]).reshape(-1)
    compact = SimpleNamespace(encoding=encoding, height=h, width=w, step=row,
                              is_bigendian=bool(msg.is_bigendian), data=data)
    try:
        rgb = image_to_cvimage(compact, 'rgb8')
    except Exception as exc:  # rosbags' ImageError, cv2.error (odd sizes for YUV or Bayer)
        raise CorruptImageError(f'{where}: image {w}x{h} {given} does not convert to RGB: '
                                f'{_first_line(exc)}') from exc
    return _fresh(rgb, data)


def _decode_compressed(msg: Any, where: object) -> np.ndarray:
    from rosbags.image import compressed_image_to_cvimage  # noqa: PLC0415 - needs cv2

    fmt = str(msg.format)
    if 'compresseddepth' in fmt.lower().replace(' ', ''):
        raise WrongEncodingError(f'{where}: compressed image format {fmt!r} is not supported '
                                 f'(depth has no colour meaning); supported: jpeg, png')
    data = _bytes(msg.data)
    if data.size == 0:
        raise CorruptImageError(f'{where}: compressed image ({fmt!r}) holds no data')
    try:
        rgb = compressed_image_to_cvimage(SimpleNamespace(format=fmt, data=data), 'rgb8')
    except Exception as exc:  # rosbags asserts on undecodable bytes; cv2.error
        raise CorruptImageError(f'{where}: cannot decode compressed image ({fmt!r}, '
                                f'{data.size} bytes): not a JPEG or PNG OpenCV can read') from exc
    if rgb is None or rgb.ndim != 3 or rgb.shape[2] != 3:
        raise CorruptImageError(f'{where}: compressed image ({fmt!r}) decoded to shape '
                                f'{getattr(rgb, "shape", None)}, not an RGB image')
    return _fresh(rgb, data)


def _fresh(rgb: np.ndarray, source: np.ndarray) -> np.ndarray:
    """uint8 (H, W, 3), C-contiguous, never a view of the message's buffer (messages are
    reused by their owners; a view would change under the caller)."""
    rgb = np.asarray(rgb, dtype=np.uint8)
    if np.may_share_memory(rgb, source) or not rgb.flags.c_contiguous:
        rgb = np.array(rgb, order='C', copy=True)
    return rgb


def _first_line(exc: BaseException) -> str:
    """An exception's text on one line (OpenCV's span several)."""
    return ' '.join(str(exc).split()) or type(exc).__name__
