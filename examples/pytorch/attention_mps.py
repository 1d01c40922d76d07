"""Run an mfagen kernel from PyTorch on Apple GPUs and compare with SDPA.

APPLE ONLY, NOT RUN where mfagen is developed (no Apple GPU or MPS there).
Needs PyTorch >= 2.6 (torch.mps.compile_shader) on macOS with an Apple GPU.

    mfagen generate examples/pytorch/attention.json -o kernels/
    python examples/pytorch/attention_mps.py kernels/

The generated kernel binds q, k, v, out, lse, params at buffers 0..5 in that
order, which is the order compile_shader passes arguments. The params struct
(AttentionParams in the .metal file) is packed here with struct.pack.
"""
import json
import math
import pathlib
import struct
import sys

import torch
import torch.nn.functional as F


def params_bytes(batch, heads_q, heads_kv, seq_q, seq_k, head_dim, head_dim_v, scale):
    """The forward kernel's AttentionParams without optional features: 14 ulong strides
    (q, k, v, out as batch/head/row, lse as batch/head) then 5 uints and scale*log2(e)."""
    q = (heads_q * seq_q * head_dim, seq_q * head_dim, head_dim)
    k = (heads_kv * seq_k * head_dim, seq_k * head_dim, head_dim)
    v = (heads_kv * seq_k * head_dim_v, seq_k * head_dim_v, head_dim_v)
    o = (heads_q * seq_q * head_dim_v, seq_q * head_dim_v, head_dim_v)
    lse = (heads_q * seq_q, seq_q)
    data = struct.pack("<14Q", *q, *k, *v, *o, *lse)
    data += struct.pack("<5If", batch, heads_q, heads_kv, seq_q, seq_k, scale * math.log2(math.e))
    return data + b"\0" * (-len(data) % 8)


def main(kernel_dir):
    manifest = json.loads((pathlib.Path(kernel_dir) / "manifest.json").read_text())
    kernel = manifest["kernels"][0]
    spec, dispatch = kernel["spec"], kernel["dispatch"]
    assert spec["kind"] == "forward" and spec["mask"] == "none", "this example drives plain forward kernels"
    lib = torch.mps.compile_shader((pathlib.Path(kernel_dir) / kernel["file"]).read_text())
    run = getattr(lib, kernel["name"])

    batch, heads_q, heads_kv, seq_q, seq_k = 1, 8, 2, 300, 300
    d, dv = spec["head_dim"], spec["head_dim_v"]
    dtype = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}[spec["dtype"]]
    q = torch.randn(batch, heads_q, seq_q, d, device="mps", dtype=dtype)
    k = torch.randn(batch, heads_kv, seq_k, d, device="mps", dtype=dtype)
    v = torch.randn(batch, heads_kv, seq_k, dv, device="mps", dtype=dtype)
    out = torch.empty(batch, heads_q, seq_q, dv, device="mps", dtype=dtype)
    lse = torch.empty(batch, heads_q, seq_q, device="mps", dtype=torch.float32)
    params = torch.frombuffer(bytearray(params_bytes(batch, heads_q, heads_kv, seq_q, seq_k, d, dv,
                                                     1 / math.sqrt(d))), dtype=torch.uint8).to("mps")

    block_q, threads = dispatch["block_q"], dispatch["threads_per_threadgroup"]
    groups = (math.ceil(seq_q / block_q), heads_q, batch)
    # compile_shader counts threads over the whole grid: threadgroups x threads per threadgroup.
    run(q, k, v, out, lse, params, threads=(groups[0] * threads, groups[1], groups[2]), group_size=(threads, 1, 1))

    causal = spec["causal"] != "none"
    ref = F.scaled_dot_product_attention(q.float(), k.repeat_interleave(heads_q // heads_kv, 1).float(),
                                         v.repeat_interleave(heads_q // heads_kv, 1).float(), is_causal=causal)
    print(kernel["name"], "max |out - SDPA(float32)| =", (out.float() - ref).abs().max().item())


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "kernels")
