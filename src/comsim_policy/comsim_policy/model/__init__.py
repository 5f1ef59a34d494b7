"""Networks: 1-D temporal UNet, image encoder, and the policy that ties them together."""

from .policy import DiffusionPolicyModel
from .unet1d import ConditionalUnet1D
from .vision import ResNetEncoder

__all__ = ['ConditionalUnet1D', 'DiffusionPolicyModel', 'ResNetEncoder']
