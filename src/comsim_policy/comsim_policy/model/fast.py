"""``FastSampler``: the policy's DDIM sampling with the same weights and maths, fewer slow ops.

Profiled on the 2-core CPU (one torch thread, default config, batch 1): the UNet's Conv1d layers
were ~75 % of a chunk. At batch 1 PyTorch runs them through ``_slow_conv2d_forward`` (oneDNN is
skipped for one sample with a 1-row kernel), ~10 GFLOP/s. Written as im2col + ``F.linear``
against a weight matrix packed once (rows = output channels, columns = tap-major inputs) MKL
runs the same products 3-4x faster. Likewise every FiLM layer's scale and bias depend only on
(diffusion step, observation), so they are computed for all DDIM steps in one batched call per
layer at the start of a chunk instead of once per step. Nothing else changes: GroupNorm, Mish,
the encoders and the diffusers scheduler are the model's own modules, so results equal
``DiffusionPolicyModel.sample`` up to float rounding (summation order), which
``tests/policy/test_dp_fast_sampler.py`` checks.

Inference only (no autograd). Packed weights are rebuilt when any UNet parameter changes
(``load_state_dict``, ``.to``), so a runner can never sample with stale copies.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

from .policy import DiffusionPolicyModel
from .unet1d import ConditionalUnet1D, Conv1dBlock, FiLMResBlock


class PackedConv1d:
    """A Conv1d / ConvTranspose1d (groups 1, dilation 1) as im2col + one matrix product.

    A transposed convolution is the stride-1 convolution of the zero-stuffed input with the
    flipped, transposed kernel, so both share one code path.
    """

    def __init__(self, conv: nn.Conv1d | nn.ConvTranspose1d) -> None:
        if conv.groups != 1 or conv.dilation[0] != 1 or conv.padding_mode != 'zeros':
            raise ValueError(f'PackedConv1d supports groups=1, dilation=1, zero padding: {conv}')
        w = conv.weight.detach()
        k = w.shape[-1]
        self.transposed = isinstance(conv, nn.ConvTranspose1d)
        if self.transposed:
            if conv.output_padding[0] != 0:
                raise ValueError(f'PackedConv1d: output_padding is not supported: {conv}')
            self.up = conv.stride[0]
            self.stride = 1
            self.pad = k - 1 - conv.padding[0]
            w = w.flip(-1).transpose(0, 1)          # (cout, cin, k)
        else:
            self.up = 1
            self.stride = conv.stride[0]
            self.pad = conv.padding[0]
        self.k = k
        self.c_in = w.shape[1]
        # (cout, k * cin), tap-major: column j * cin + c multiplies input channel c at tap j
        self.weight = w.permute(0, 2, 1).reshape(w.shape[0], -1).contiguous()
        self.bias = None if conv.bias is None else conv.bias.detach()

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """(B, cin, T) -> (B, cout, T')."""
        b = x.shape[0]
        xt = x.transpose(1, 2)                      # (B, T, cin)
        if self.up > 1:
            t = xt.shape[1]
            z = xt.new_zeros(b, (t - 1) * self.up + 1, self.c_in)
            z[:, ::self.up] = xt
            xt = z
        if self.pad:
            xt = F.pad(xt, (0, 0, self.pad, self.pad))
        if self.k == 1 and self.stride == 1:
            cols = xt
        else:                                       # (B, T', cin, k) -> (B, T', k * cin)
            cols = xt.unfold(1, self.k, self.stride).transpose(2, 3).reshape(b, -1,
                                                                             self.k * self.c_in)
        return F.linear(cols, self.weight, self.bias).transpose(1, 2)


class FastSampler:
    """``sample`` = ``DiffusionPolicyModel.sample`` for an eval-mode model, faster on CPU."""

    def __init__(self, model: DiffusionPolicyModel) -> None:
        self.model = model
        self._key: tuple | None = None
        self._convs: dict[int, PackedConv1d] = {}

    # ------------------------------------------------------------------ packing
    def _weights_key(self) -> tuple:
        return tuple((p.data_ptr(), p._version) for p in self.model.unet.parameters())

    def _pack(self) -> None:
        key = self._weights_key()
        if key == self._key:
            return
        self._convs = {id(m): PackedConv1d(m) for m in self.model.unet.modules()
                       if isinstance(m, nn.Conv1d | nn.ConvTranspose1d)}
        self._key = key

    # ------------------------------------------------------------------ UNet pieces
    def _conv(self, m: nn.Module, x: torch.Tensor) -> torch.Tensor:
        if isinstance(m, nn.Identity):
            return x
        return self._convs[id(m)](x)

    def _block(self, blk: Conv1dBlock, x: torch.Tensor) -> torch.Tensor:
        conv, norm, act = blk.block
        return act(norm(self._conv(conv, x)))

    def _res(self, blk: FiLMResBlock, x: torch.Tensor, film: torch.Tensor) -> torch.Tensor:
        h = self._block(blk.block1, x)
        scale, bias = film.unsqueeze(-1).chunk(2, dim=1)
        h = self._block(blk.block2, h * scale + bias)
        return h + self._conv(blk.skip, x)

    def film_tables(self, unet: ConditionalUnet1D, timesteps: torch.Tensor,
                    cond: torch.Tensor | None, batch: int) -> list[torch.Tensor]:
        """Per FiLM block (in forward order): (steps, B, 2 * channels) for every DDIM step."""
        s = timesteps.shape[0]
        c = unet.step_encoder(timesteps.reshape(-1))                 # (S, E)
        c = c[:, None].expand(s, batch, c.shape[-1])
        if cond is not None:
            c = torch.cat([c, cond[None].expand(s, *cond.shape)], dim=-1)
        c = c.reshape(s * batch, -1)
        return [blk.film(c).reshape(s, batch, -1) for blk in _film_blocks(unet)]

    def unet(self, unet: ConditionalUnet1D, sample: torch.Tensor, films: list[torch.Tensor]
             ) -> torch.Tensor:
        """``unet(sample, t, cond)`` with FiLM rows for this step precomputed (``films``)."""
        x = sample.transpose(1, 2)
        it = iter(films)
        skips = []
        for res1, res2, down in unet.down:
            x = self._res(res2, self._res(res1, x, next(it)), next(it))
            skips.append(x)
            x = self._conv(down, x)
        for res in unet.mid:
            x = self._res(res, x, next(it))
        for res1, res2, up in unet.up:
            x = torch.cat([x, skips.pop()], dim=1)
            x = self._conv(up, self._res(res2, self._res(res1, x, next(it)), next(it)))
        block, out = unet.final
        return self._conv(out, self._block(block, x)).transpose(1, 2)

    # ------------------------------------------------------------------ sampling
    @torch.inference_mode()
    def sample(self, images: dict[str, torch.Tensor], state: torch.Tensor, scheduler,
               generator: torch.Generator | None = None,
               cond: torch.Tensor | None = None) -> torch.Tensor:
        """Same contract as ``DiffusionPolicyModel.sample``; ``cond`` skips the encoders."""
        model = self.model
        self._pack()
        if cond is None:
            cond = model.encode(images, state)
        shape = (state.shape[0], model.config.horizon, model.config.action_dim)
        x = torch.randn(shape, generator=generator, device=generator.device
                        if generator is not None else state.device).to(state.device)
        timesteps = scheduler.timesteps.to(x.device)
        tables = self.film_tables(model.unet, timesteps, cond, shape[0])
        for i, t in enumerate(scheduler.timesteps):
            eps = self.unet(model.unet, x, [tab[i] for tab in tables])
            x = scheduler.step(eps, t, x, generator=generator).prev_sample
        return model.normalizer.action.unnormalize(x)


def _film_blocks(unet: ConditionalUnet1D) -> list[FiLMResBlock]:
    """FiLM blocks in the order ``ConditionalUnet1D.forward`` applies them."""
    blocks: list[FiLMResBlock] = []
    for res1, res2, _ in unet.down:
        blocks += [res1, res2]
    blocks += list(unet.mid)
    for res1, res2, _ in unet.up:
        blocks += [res1, res2]
    return blocks
