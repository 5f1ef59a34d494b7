"""``NeuralSimTransformer``: a video DiT that denoises the real clip given the twin's clip and
the commanded actions.

Visual dynamics (the sim clip) enter as extra input channels, as diffusers' image-to-video
models (CogVideoX-I2V, Wan-I2V) concatenate their image latents; control dynamics (the actions)
enter per frame through adaLN modulation and as cross-attention tokens. Each condition has a
per-sample keep flag so one network gives the unconditional, action-only, sim-only and joint
scores that compositional guidance combines.

A per-pixel skip path (a 1x1x1 convolution of the inputs, scaled per channel by the timestep)
is added to the patch head: noise is incompressible, so a token of ``width_dim`` numbers cannot
carry a ``patch² x channels`` noise patch through the transformer. Without the skip a small
model could not even return its input at t = T (the noise prediction error floored at ~0.4).
With ``skip_kernel`` > 1 the skip also has a small per-frame convolution stack: local and
translation-equivariant, so what it learns about an object's look on the paired demos' layouts
(sim colour and edges -> the lab's) applies wherever the object lies, where the patch tokens
carry a position embedding and only ever saw the demos' region.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from diffusers.configuration_utils import ConfigMixin, register_to_config
from diffusers.models.embeddings import TimestepEmbedding, Timesteps
from diffusers.models.modeling_utils import ModelMixin
from diffusers.utils import BaseOutput
from torch import nn

from ..errors import InputShapeError
from .block import NeuralSimBlock
from .embeddings import ActionEncoder, sincos_3d


@dataclass
class NeuralSimTransformerOutput(BaseOutput):
    """``sample``: the prediction (noise or flow velocity), shaped like the input clip."""

    sample: torch.Tensor


class NeuralSimTransformer(ModelMixin, ConfigMixin):
    """Clips are (B, F, C, H, W) in the model's space; actions (B, F, A); keep flags (B,)."""

    _supports_gradient_checkpointing = False

    @register_to_config
    def __init__(self, frames: int = 8, channels: int = 3, height: int = 32, width: int = 40,
                 action_dim: int = 7, width_dim: int = 64, depth: int = 4, heads: int = 4,
                 patch_size: int = 4, patch_size_t: int = 1, cameras: int = 1,
                 skip_from: str = 'noisy', skip_kernel: int = 1,
                 skip_channels: int = 16) -> None:
        super().__init__()
        p, pt, dim = patch_size, patch_size_t, width_dim
        self.grid = (frames // pt, height // p, width // p)
        in_ch = 3 * channels + 2  # noisy, sim, context, sim flag, context flag
        self.patch = nn.Conv3d(in_ch, dim, kernel_size=(pt, p, p), stride=(pt, p, p))
        self.register_buffer('pos', sincos_3d(*self.grid, dim), persistent=False)
        self.time_proj = Timesteps(dim, flip_sin_to_cos=True, downscale_freq_shift=0)
        self.time_embed = TimestepEmbedding(dim, dim)
        self.actions = ActionEncoder(action_dim * pt, dim, self.grid[0])
        # one network for every camera: which one is a learned offset of the timestep embedding
        self.camera_embed = nn.Embedding(cameras, dim)
        nn.init.zeros_(self.camera_embed.weight)
        self.blocks = nn.ModuleList(NeuralSimBlock(dim, heads) for _ in range(depth))
        self.norm_out = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        self.ada_out = nn.Linear(dim, 2 * dim)
        self.proj_out = nn.Linear(dim, pt * p * p * channels)
        for lin in (self.ada_out, self.proj_out):
            nn.init.zeros_(lin.weight)
            nn.init.zeros_(lin.bias)
        # Pixel skip, a per-pixel linear map at full resolution. ``noisy``: the identity on the
        # noisy channels, gated shut at init. ``sim`` (x0 prediction): the identity on the sim
        # frame, gated open, so the network starts by predicting the sim frame itself and
        # learns only the residual to the real look: the sim video's layout (where objects
        # are) survives the patch tokens, which alone blur a 3 px object away.
        if skip_from not in ('noisy', 'sim'):
            raise ValueError(f"skip_from must be 'noisy' or 'sim', got {skip_from!r}")
        self.skip = nn.Conv3d(in_ch, channels, kernel_size=1)
        first = 0 if skip_from == 'noisy' else channels
        with torch.no_grad():
            self.skip.weight.zero_()
            self.skip.bias.zero_()
            self.skip.weight[:, first:first + channels, 0, 0, 0] = torch.eye(channels)
        # Local refinement (skip_kernel > 1): two k x k convolutions per frame, the last layer
        # zero-initialised so a fresh model is the 1x1 skip above.
        self.skip_local = None
        if skip_kernel > 1:
            k, c_mid = skip_kernel, skip_channels
            self.skip_local = nn.Sequential(
                nn.Conv2d(in_ch, c_mid, k, padding=k // 2), nn.SiLU(),
                nn.Conv2d(c_mid, c_mid, k, padding=k // 2), nn.SiLU(),
                nn.Conv2d(c_mid, channels, kernel_size=1))
            nn.init.zeros_(self.skip_local[-1].weight)
            nn.init.zeros_(self.skip_local[-1].bias)
        self.skip_gate = nn.Linear(dim, channels)
        nn.init.zeros_(self.skip_gate.weight)
        nn.init.constant_(self.skip_gate.bias, 0.0 if skip_from == 'noisy' else 1.0)

    def check_inputs(self, sample: torch.Tensor, actions: torch.Tensor) -> None:
        """Raise ``InputShapeError`` when a clip or action array does not fit this model."""
        c = self.config
        want = (c.frames, c.channels, c.height, c.width)
        if sample.ndim != 5 or tuple(sample.shape[1:]) != want:
            raise InputShapeError(f'clip shape {tuple(sample.shape)} does not match the model '
                                  f'(B, frames, channels, height, width) = (B, *{want})')
        if actions.ndim != 3 or tuple(actions.shape[1:]) != (c.frames, c.action_dim):
            raise InputShapeError(f'actions shape {tuple(actions.shape)} does not match the '
                                  f'model (B, frames, action_dim) = (B, {c.frames}, '
                                  f'{c.action_dim})')
        if actions.shape[0] != sample.shape[0]:
            raise InputShapeError(f'batch of actions ({actions.shape[0]}) differs from the '
                                  f'batch of clips ({sample.shape[0]})')

    def forward(self, sample: torch.Tensor, timestep: torch.Tensor, sim: torch.Tensor,
                actions: torch.Tensor, sim_keep: torch.Tensor | None = None,
                action_keep: torch.Tensor | None = None, context: torch.Tensor | None = None,
                context_mask: torch.Tensor | None = None, camera: torch.Tensor | None = None,
                return_dict: bool = True) -> NeuralSimTransformerOutput | tuple[torch.Tensor]:
        """Predict noise/velocity for ``sample`` at ``timestep``.

        ``sim_keep``/``action_keep`` (B,) are 1 where the condition is given and 0 where it is
        dropped (default: all given). ``context`` holds known frames where ``context_mask``
        (B, F) is 1, e.g. the last generated frames of the previous window. ``camera`` (B,)
        indexes the config's cameras (default 0).
        """
        self.check_inputs(sample, actions)
        if sim.shape != sample.shape:
            raise InputShapeError(f'sim clip shape {tuple(sim.shape)} differs from the clip '
                                  f'shape {tuple(sample.shape)}')
        b, f, ch, h, w = sample.shape
        dtype, dev = sample.dtype, sample.device
        ones = torch.ones(b, device=dev, dtype=dtype)
        sim_keep = ones if sim_keep is None else sim_keep.to(dev, dtype)
        action_keep = ones if action_keep is None else action_keep.to(dev, dtype)
        if context is None:
            context = torch.zeros_like(sample)
            context_mask = torch.zeros(b, f, device=dev, dtype=dtype)
        elif context_mask is None or context.shape != sample.shape or context_mask.shape != (b, f):
            raise InputShapeError('context must be shaped like the clip, with a (B, frames) mask')
        cm = context_mask.to(dev, dtype).view(b, f, 1, 1, 1)
        sk = sim_keep.view(b, 1, 1, 1, 1)
        x = torch.cat([sample, sim * sk, context * cm, sk.expand(b, f, 1, h, w),
                       cm.expand(b, f, 1, h, w)], dim=2)
        x = x.permute(0, 2, 1, 3, 4)  # (B, C, F, H, W)
        tokens = self.patch(x)  # (B, D, F', h', w')
        gt, gh, gw = self.grid
        tokens = tokens.flatten(2).transpose(1, 2) + self.pos.to(dtype)[None]

        pt = self.config.patch_size_t
        act = self.actions(actions.reshape(b, gt, pt * self.config.action_dim), action_keep)
        t_emb = self.time_embed(self.time_proj(timestep.to(dev).reshape(-1).expand(b)).to(dtype))
        cam = (torch.zeros(b, dtype=torch.long, device=dev) if camera is None
               else camera.to(dev, torch.long).reshape(b))
        if cam.numel() and (cam.min() < 0 or cam.max() >= self.config.cameras):
            raise InputShapeError(f'camera index {cam.tolist()} out of range: the model knows '
                                  f'{self.config.cameras} camera(s)')
        t_emb = t_emb + self.camera_embed(cam).to(dtype)
        gate = self.skip_gate(nn.functional.silu(t_emb)).view(b, 1, ch, 1, 1)
        cond = (t_emb[:, None] + act).repeat_interleave(gh * gw, dim=1)  # (B, N, D)
        for block in self.blocks:
            tokens = block(tokens, cond, act)
        shift, scale = self.ada_out(nn.functional.silu(cond)).chunk(2, dim=-1)
        out = self.proj_out(self.norm_out(tokens) * (1 + scale) + shift)
        p = self.config.patch_size
        out = out.view(b, gt, gh, gw, pt, p, p, ch).permute(0, 1, 4, 7, 2, 5, 3, 6)
        skip = self.skip(x).transpose(1, 2)   # (B, F, C, H, W)
        if self.skip_local is not None:        # per frame: frames folded into the batch
            # channels-last: the CPU convolutions run about twice as fast
            frames = x.transpose(1, 2).reshape(b * f, -1, h, w).contiguous(
                memory_format=torch.channels_last)
            local = self.skip_local(frames).contiguous().view(b, f, ch, h, w)
            skip = skip + local
        out = out.reshape(b, f, ch, h, w) + gate * skip
        return NeuralSimTransformerOutput(sample=out) if return_dict else (out,)
