"""The MLP's training parts: dropout masks from the net's own generator, and Adam without
`torch.optim` (both give torch's results bit for bit; `tests/method/test_fit_speedups.py`).

On a CPU a net's masks come from a NumPy generator; on any other device (a GPU) from a
torch generator on that device, so no mask is drawn on the host and copied over at every
step (`mask_generator`)."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from sparseeval.consume.errors import SettingsError
from sparseeval.consume.scoring.inference import monotone_bounds


class Dropout(nn.Module):
    """Dropout whose masks come from the net's own generator, NumPy's or torch's.

    Each net draws from its own seeded generator, never from torch's global one, so
    ensemble members can train in parallel threads and stay reproducible. A NumPy
    generator (the CPU's: faster there than torch's CPU dropout) applies `p` at a
    resolution of 1/65,536; a torch generator draws the mask on its own device.
    """

    def __init__(self, p: float, rng: np.random.Generator | torch.Generator) -> None:
        super().__init__()
        self.p, self.rng = float(p), rng

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p <= 0:
            return x
        if isinstance(self.rng, torch.Generator):  # drawn where x is: no host copy, no sync
            keep = torch.empty_like(x).bernoulli_(1.0 - self.p, generator=self.rng)
            return x * keep.div_(1.0 - self.p)  # 4 kernels a step, forward and backward
        # The 16-bit draws of `rng.bytes(2 * n)` (which is these uint32s, little-endian, as
        # bytes), without its three copies: a tenth of an MLP's time went to them.
        words = uint32_draws(self.rng, (2 * x.numel() - 1) // 4 + 1)
        bits = words.astype("<u4", copy=False).view(np.uint16)[: x.numel()].reshape(x.shape)
        # A 0/1 float mask: the same products as a boolean one, without torch promoting
        # it on every multiply (forward and backward); dropout was half of an MLP's time.
        keep = torch.from_numpy((bits >= round(self.p * 65536)).astype(np.float32))
        return _MaskScale.apply(x, keep.to(x.device), 1.0 - self.p)


def mask_generator(seed: int, device: str | torch.device = "cpu"):
    """A net's dropout generator: NumPy's on the CPU, else a torch generator on `device`.

    Both are seeded by `seed`; the masks (and so the fits) of the two kinds differ.
    """
    device = torch_device(device)
    if device.type == "cpu":
        return np.random.default_rng(seed)
    return torch.Generator(device=device).manual_seed(seed)


def torch_device(device: str | torch.device) -> torch.device:
    """`device` as a torch device; one torch cannot use is a one-line SettingsError."""
    try:
        device = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise SettingsError(f"device must be 'cpu', 'cuda' or 'cuda:N', got {device!r}") from exc
    if device.type == "cuda" and (device.index or 0) >= torch.cuda.device_count():
        raise SettingsError(
            f"device {str(device)!r}: torch sees no such GPU here "
            f"({torch.cuda.device_count()} visible); use device 'cpu'"
        )
    return device


def uint32_draws(rng: np.random.Generator, n: int) -> np.ndarray:
    """`rng.integers(0, 2**32, n, dtype=np.uint32)`, the same numbers and generator state.

    For PCG64 with no half word pending and an even `n`, that is the raw 64-bit outputs
    read as pairs of 32-bit words (low half first): drawn so, at half the time.
    """
    bits = rng.bit_generator
    if n % 2 == 0 and isinstance(bits, np.random.PCG64) and not bits.state["has_uint32"]:
        return bits.random_raw(n // 2).astype("<u8", copy=False).view("<u4")
    return rng.integers(0, 2**32, size=n, dtype=np.uint32)


class MonotoneMix(nn.Module):
    """`consume.scoring.inference.monotone_mix` in torch: each unit clipped to its
    `monotone_bounds` (one clamp; the bounds kept per width and device). Training, the
    clamp is `_Clamp`: torch's own backward of a clamp between tensors took a quarter of
    an MLP's time."""

    def __init__(self) -> None:
        super().__init__()
        self._bounds: dict[tuple[int, str], tuple[torch.Tensor, torch.Tensor]] = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        key = (x.shape[-1], str(x.device))
        if key not in self._bounds:
            low, high = monotone_bounds(x.shape[-1])
            self._bounds[key] = tuple(torch.tensor(v, dtype=x.dtype, device=x.device)
                                      for v in (low, high))  # fmt: skip
        if torch.is_grad_enabled() and x.requires_grad:
            return _Clamp.apply(x, *self._bounds[key])
        return torch.clamp(x, *self._bounds[key])


class _Clamp(torch.autograd.Function):
    """`torch.clamp(x, low, high)` whose backward is one multiply by a 0/1 mask of the
    units left unclipped, saved in the forward pass (torch's backward recomputes it
    with two comparisons, an `and` and a `where`): the same gradients, bit for bit."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, low: torch.Tensor, high: torch.Tensor) -> torch.Tensor:
        out = torch.clamp(x, low, high)
        ctx.save_for_backward((out == x).to(x.dtype))
        return out

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (inside,) = ctx.saved_tensors
        return grad * inside, None, None


class _MaskScale(torch.autograd.Function):
    """`x * keep / scale` as one autograd node: the products of torch's two nodes, forward
    ((x * keep) / scale) and backward ((grad / scale) * keep), a temporary fewer each way."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, keep: torch.Tensor, scale: float) -> torch.Tensor:
        ctx.save_for_backward(keep)
        ctx.scale = scale
        return (x * keep).div_(scale)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (keep,) = ctx.saved_tensors
        return grad.div(ctx.scale).mul_(keep), None, None


class Adam:
    """`torch.optim.Adam` with its defaults, the same update op for op (its single-tensor
    CPU path), without the optimizer machinery: constructing the first `torch.optim`
    optimizer imports torch._dynamo (1.5 s CPU, once per process) and each step calls
    it twice.
    """

    def __init__(self, params, lr: float, weight_decay: float = 0.0) -> None:
        self.params, self.lr, self.weight_decay = list(params), lr, weight_decay
        self.betas, self.eps, self.steps = (0.9, 0.999), 1e-8, 0
        self.exp_avg = [
            torch.zeros_like(p, memory_format=torch.preserve_format) for p in self.params
        ]
        self.exp_avg_sq = [
            torch.zeros_like(p, memory_format=torch.preserve_format) for p in self.params
        ]

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        (beta1, beta2), self.steps = self.betas, self.steps + 1
        step = float(self.steps)  # torch keeps the count in a float32 tensor, read with .item()
        step_size = self.lr / (1 - beta1**step)
        bias_correction2_sqrt = (1 - beta2**step) ** 0.5
        grads = [p.grad for p in self.params]
        if self.weight_decay != 0:
            grads = torch._foreach_add(grads, self.params, alpha=self.weight_decay)
        # One call per op over every tensor (each the same per-tensor kernel on a CPU):
        # a tenth of a mini-batch step went to dispatching these ops one tensor at a time.
        torch._foreach_lerp_(self.exp_avg, grads, 1 - beta1)
        torch._foreach_mul_(self.exp_avg_sq, beta2)
        torch._foreach_addcmul_(self.exp_avg_sq, grads, grads, value=1 - beta2)
        denom = torch._foreach_sqrt(self.exp_avg_sq)
        torch._foreach_div_(denom, bias_correction2_sqrt)
        torch._foreach_add_(denom, self.eps)
        torch._foreach_addcdiv_(self.params, self.exp_avg, denom, value=-step_size)


__all__ = [
    "Adam",
    "Dropout",
    "MonotoneMix",
    "mask_generator",
    "torch_device",
    "uint32_draws",
]
