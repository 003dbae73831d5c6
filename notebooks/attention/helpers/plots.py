"""The course's figures: attention heatmaps and the scaling story, in a consistent style."""
from __future__ import annotations

import matplotlib.pyplot as plt
import torch


def attention_heatmap(weights: torch.Tensor, queries: list[str], keys: list[str], title: str = "", ax=None):
    """Draw one matrix of attention weights, queries down the side and keys along the top."""
    if ax is None:
        _, ax = plt.subplots(figsize=(0.55 * len(keys) + 2, 0.5 * len(queries) + 1.2))
    w = weights.detach().double().cpu()
    ax.imshow(w, cmap="Blues", vmin=0, vmax=1)
    ax.set_xticks(range(len(keys)), keys, rotation=45, ha="right")
    ax.set_yticks(range(len(queries)), queries)
    ax.set_xlabel("key (attended to)")
    ax.set_ylabel("query")
    for i in range(w.shape[0]):
        for j in range(w.shape[1]):
            ax.text(j, i, f"{w[i, j]:.2f}", ha="center", va="center", fontsize=7,
                    color="white" if w[i, j] > 0.6 else "black")
    if title:
        ax.set_title(title)
    return ax


def scaling_figure(variance_rows: list[dict], sharpness_rows: list[dict]):
    """Three panels against d_k: score variance, largest softmax weight, gradient size."""
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.4))
    d_v = [r["d_k"] for r in variance_rows]
    axes[0].plot(d_v, [r["var_raw"] for r in variance_rows], "o-", label="q·k")
    axes[0].plot(d_v, [r["var_scaled"] for r in variance_rows], "s-", label="q·k / √d_k")
    axes[0].set_yscale("log")
    axes[0].set_title("variance of the scores")
    d_s = [r["d_k"] for r in sharpness_rows]
    for key, title, ax in (("max_weight", "largest softmax weight", axes[1]),
                           ("grad_norm", "gradient through softmax", axes[2])):
        ax.plot(d_s, [r[f"{key}_raw"] for r in sharpness_rows], "o-", label="unscaled")
        ax.plot(d_s, [r[f"{key}_scaled"] for r in sharpness_rows], "s-", label="scaled by 1/√d_k")
        ax.set_title(title)
    axes[2].set_yscale("log")
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_xlabel("d_k")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    return fig
