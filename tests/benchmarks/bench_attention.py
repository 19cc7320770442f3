"""Side-by-side speed and memory of the chapter's batched attention.

Run with `make bench-attention`. For each (B, T) at width 768 with 12 heads
it prints, measured in one run with the contenders interleaved:

- explicit / torch: BatchedMultiHeadAttention with weights against
  nn.MultiheadAttention(need_weights=True, average_attn_weights=False).
  Target <= 1.0.
- fused / bare: our need_weights=False path against a bare layer around
  F.scaled_dot_product_attention. Target <= 1.05.
- the extra peak memory (resident set) of one forward pass of each, each
  measured in a fresh process so that no contender reuses memory another
  one freed.

Ratios are of median times; below 1.0 means ours is faster.
"""

import statistics
import subprocess
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.benchmark import Timer

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "book"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from record import recorded  # noqa: E402

from mhabook.layers.all_heads import (  # noqa: E402
    AttentionConfig,
    BatchedMultiHeadAttention,
    torch_from_batched,
)

SHAPES = [(1, 13), (1, 128), (8, 128), (1, 512), (8, 512)]
HIDDEN, HEADS = 768, 12
ROUNDS = 7


class BareSDPA(nn.Module):
    """The least a layer around F.scaled_dot_product_attention can do."""

    def __init__(self, batched):
        super().__init__()
        self.qkv, self.out, self.h = batched.qkv, batched.output_linear, HEADS

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (
            self.qkv(x)
            .view(B, T, 3, self.h, C // self.h)
            .permute(2, 0, 3, 1, 4)
        )
        y = F.scaled_dot_product_attention(q, k, v)
        return self.out(y.transpose(1, 2).reshape(B, T, C))


def rss_kib(field):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def extra_peak_mib(fn):
    """Peak resident memory of one call above what was resident before."""
    Path("/proc/self/clear_refs").write_text("5")  # reset the peak (VmHWM)
    before = rss_kib("VmRSS")
    fn()
    return (rss_kib("VmHWM") - before) / 1024


def contenders():
    torch.manual_seed(0)
    ours = BatchedMultiHeadAttention(AttentionConfig(HIDDEN, HEADS)).eval()
    reference = torch_from_batched(ours).eval()
    bare = BareSDPA(ours).eval()
    return {
        "explicit": ours,
        "torch": lambda x: reference(
            x, x, x, need_weights=True, average_attn_weights=False
        ),
        "fused": lambda x: ours(x, need_weights=False),
        "bare": bare,
    }


def peak_in_fresh_process(name, batch, tokens):
    run = subprocess.run(
        [sys.executable, __file__, "--peak", name, str(batch), str(tokens)],
        check=True,
        capture_output=True,
        text=True,
    )
    return float(run.stdout)


def median_seconds(fn, min_run_time):
    timer = Timer("fn()", globals={"fn": fn})
    return timer.blocked_autorange(min_run_time=min_run_time).median


def compare(a, b, min_run_time):
    """Median of interleaved rounds, so drift hits both contenders."""
    ta, tb = [], []
    for _ in range(ROUNDS):
        ta.append(median_seconds(a, min_run_time))
        tb.append(median_seconds(b, min_run_time))
    return statistics.median(ta), statistics.median(tb)


def main():
    runs = contenders()
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads; "
        f"width {HIDDEN}, {HEADS} heads; median of {ROUNDS} rounds"
    )
    print(
        f"{'B':>2} {'T':>4} | {'explicit ms':>11} {'torch ms':>9} "
        f"{'ratio':>6} | {'fused ms':>9} {'bare ms':>8} {'ratio':>6} | "
        f"peak MiB: {'explicit':>8} {'torch':>6} {'fused':>6} {'bare':>6}"
    )
    for B, T in SHAPES:
        x = torch.randn(B, T, HIDDEN)
        budget = 0.05 if B * T < 1000 else 0.2
        with torch.inference_mode():
            explicit, torch_ms = compare(
                lambda x=x: runs["explicit"](x),
                lambda x=x: runs["torch"](x),
                budget,
            )
            fused, bare_ms = compare(
                lambda x=x: runs["fused"](x),
                lambda x=x: runs["bare"](x),
                budget,
            )
        peaks = {name: peak_in_fresh_process(name, B, T) for name in runs}
        print(
            f"{B:>2} {T:>4} | {explicit * 1e3:>11.3f} "
            f"{torch_ms * 1e3:>9.3f} {explicit / torch_ms:>6.2f} | "
            f"{fused * 1e3:>9.3f} {bare_ms * 1e3:>8.3f} "
            f"{fused / bare_ms:>6.2f} | "
            f"{'':>9} {peaks['explicit']:>8.1f} {peaks['torch']:>6.1f} "
            f"{peaks['fused']:>6.1f} {peaks['bare']:>6.1f}"
        )


def peak(name, batch, tokens):
    """Child process: print the extra peak MiB of one call of `name`."""
    fn = contenders()[name]
    x = torch.randn(batch, tokens, HIDDEN)
    with torch.inference_mode():
        print(extra_peak_mib(lambda: fn(x)))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--peak"]:
        peak(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        with recorded(
            "Batched attention against PyTorch (`make bench-attention`)",
            markdown=False,
        ):
            main()
