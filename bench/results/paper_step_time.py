"""Seconds per full-batch step of the paper's MLP (k-128-64-32-1), one thread.

python bench/results/paper_step_time.py
"""

import time

import numpy as np
import torch

from sparseeval.method.paper import ZeroOneMLP

STEPS = 10 * 2000 + 20000  # 10 refinement rounds and the final MLP at most


def step(net, opt, x, t) -> None:
    opt.zero_grad()
    torch.mean((net(x).squeeze(1) - t) ** 2).backward()
    opt.step()


torch.set_num_threads(1)
for rows, k in ((3680, 50), (4600, 100)):
    net = ZeroOneMLP().build(k)
    x = torch.from_numpy((np.random.default_rng(0).random((rows, k)) < 0.5).astype(np.float32))
    t = torch.rand(rows)
    opt = torch.optim.Adam(net.parameters(), lr=5e-4)
    net.train()
    for _ in range(20):
        step(net, opt, x, t)
    start, n = time.perf_counter(), 300
    for _ in range(n):
        step(net, opt, x, t)
    s = (time.perf_counter() - start) / n
    print(f"{rows} x {k}: {1000 * s:.2f} ms/step -> {STEPS} steps = {STEPS * s:.0f} s")
