"""PSNR and Gaussian-window SSIM against closed forms; side-by-side picture layout."""
import numpy as np
import pytest

from comsim_core.metrics import abs_diff, comparison_row, psnr, ssim, stack_rows


def test_psnr_matches_its_definition():
    a = np.zeros((20, 30, 3), np.uint8)
    b = np.full((20, 30, 3), 10, np.uint8)
    assert psnr(a, b) == pytest.approx(10 * np.log10(255 ** 2 / 100.0))
    assert psnr(a, a) == float('inf')


def test_ssim_of_constant_images_is_the_luminance_term():
    # Zero variance everywhere: SSIM = (2 mu_a mu_b + C1) / (mu_a^2 + mu_b^2 + C1).
    a = np.full((32, 32), 100.0)
    b = np.full((32, 32), 140.0)
    c1 = (0.01 * 255) ** 2
    expected = (2 * 100 * 140 + c1) / (100 ** 2 + 140 ** 2 + c1)
    assert ssim(a, b) == pytest.approx(expected, rel=1e-9)
    assert ssim(a, a) == pytest.approx(1.0)


def test_ssim_falls_as_noise_grows_and_is_symmetric():
    rng = np.random.default_rng(0)
    ramp = np.linspace(30, 220, 64)[None, :, None]
    img = np.broadcast_to(ramp, (48, 64, 3)).astype(np.uint8)
    scores = []
    for sigma in (2.0, 10.0, 40.0):
        noisy = np.clip(img + rng.normal(0, sigma, img.shape), 0, 255).astype(np.uint8)
        scores.append(ssim(img, noisy))
        assert ssim(img, noisy) == pytest.approx(ssim(noisy, img))
    assert 1.0 > scores[0] > scores[1] > scores[2] > 0.0


def test_structure_change_with_equal_statistics_is_caught_by_ssim():
    # Same pixel values, shuffled: PSNR sees large errors, SSIM sees lost structure.
    x = np.tile(np.linspace(0, 255, 64), (48, 1)).astype(np.uint8)
    shuffled = np.random.default_rng(1).permutation(x.ravel()).reshape(x.shape)
    assert ssim(x, shuffled) < 0.2


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match='differ in shape'):
        psnr(np.zeros((4, 4)), np.zeros((4, 5)))
    with pytest.raises(ValueError, match='at least 11x11'):
        ssim(np.zeros((8, 8)), np.zeros((8, 8)))


def test_comparison_row_is_real_twin_diff():
    real = np.full((12, 10, 3), 200, np.uint8)
    twin = np.full((12, 10, 3), 50, np.uint8)
    row = comparison_row(real, twin, gap=2)
    assert row.shape == (12, 10 * 3 + 2 * 2, 3)
    assert (row[:, :10] == 200).all() and (row[:, 12:22] == 50).all()
    assert (row[:, 24:] == 150).all()
    assert (abs_diff(twin, real) == 150).all()
    sheet = stack_rows([row, row[:, :20]], gap=3)
    assert sheet.shape == (12 * 2 + 3, row.shape[1], 3)
