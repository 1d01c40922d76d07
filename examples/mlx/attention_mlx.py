"""Run an mfagen kernel from MLX with mx.fast.metal_kernel.

APPLE ONLY, NOT RUN where mfagen is developed (no Apple GPU or MLX there).

    mfagen generate examples/mlx/attention.json -o kernels/
    python examples/mlx/attention_mlx.py kernels/

mx.fast.metal_kernel takes a kernel *body* and writes the signature itself,
so this example splits the generated file: everything before the kernel is
the `header`; the kernel's body is the `source`, after binding the names the
generated body uses (group, thread_index, simdgroup, lane, params) to MLX's
attribute names and inputs.
"""
import json
import math
import pathlib
import sys

import mlx.core as mx

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "pytorch"))
from attention_mps import params_bytes  # noqa: E402  (the same AttentionParams packing)


def split_kernel(text, name):
    start = text.index(f"kernel void {name}(")
    header = text[:start].replace("#include <metal_stdlib>", "")
    body_start = text.index(") {", start) + 3
    body = text[body_start:text.rindex("}")]
    prologue = (
        "  const uint3 group = threadgroup_position_in_grid;\n"
        "  const uint thread_index = thread_index_in_threadgroup;\n"
        "  const uint simdgroup = simdgroup_index_in_threadgroup;\n"
        "  const uint lane = thread_index_in_simdgroup;\n"
        "  const device AttentionParams& params = *reinterpret_cast<const device AttentionParams*>(params_raw);\n"
    )
    return header, prologue + body


def main(kernel_dir):
    manifest = json.loads((pathlib.Path(kernel_dir) / "manifest.json").read_text())
    kernel = manifest["kernels"][0]
    spec, dispatch = kernel["spec"], kernel["dispatch"]
    header, source = split_kernel((pathlib.Path(kernel_dir) / kernel["file"]).read_text(), kernel["name"])
    attention = mx.fast.metal_kernel(name=kernel["name"], input_names=["q", "k", "v", "params_raw"],
                                     output_names=["out", "lse"], header=header, source=source,
                                     ensure_row_contiguous=True)
    batch, heads_q, heads_kv, seq_q, seq_k = 1, 8, 2, 256, 256
    d, dv = spec["head_dim"], spec["head_dim_v"]
    q = mx.random.normal((batch, heads_q, seq_q, d)).astype(mx.float16)
    k = mx.random.normal((batch, heads_kv, seq_k, d)).astype(mx.float16)
    v = mx.random.normal((batch, heads_kv, seq_k, dv)).astype(mx.float16)
    params = mx.array(list(params_bytes(batch, heads_q, heads_kv, seq_q, seq_k, d, dv, 1 / math.sqrt(d))),
                      dtype=mx.uint8)
    threads = dispatch["threads_per_threadgroup"]
    groups = (math.ceil(seq_q / dispatch["block_q"]), heads_q, batch)
    out, lse = attention(inputs=[q, k, v, params], grid=(groups[0] * threads, groups[1], groups[2]),
                         threadgroup=(threads, 1, 1), output_shapes=[(batch, heads_q, seq_q, dv), (batch, heads_q, seq_q)],
                         output_dtypes=[mx.float16, mx.float32])
    ref = mx.fast.scaled_dot_product_attention(q, k, v, scale=1 / math.sqrt(d), mask="causal")
    print(kernel["name"], "max |out - mx.fast.sdpa| =", mx.abs(out.astype(mx.float32) - ref.astype(mx.float32)).max().item())


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "kernels")
