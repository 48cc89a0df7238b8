"""Inductor's generated code for one piece of vLLM 0.19's piecewise-compiled Llama forward.

What it shows: the buffers torch 2.10's Inductor allocates and frees for the piece that runs
between two attention ops (o_proj, the fused add + RMSNorm, gate_up, SiLU-and-mul, down_proj,
add + RMSNorm, qkv_proj, the rotary kernels and the attention output buffer), generated for a
CUDA device with an H100's properties, and the live bytes after each line of the generated
`call`, with the piece's inputs held by the caller throughout (vLLM's wrappers keep the
argument tuple, docs/engines.md). No GPU is needed: the CUDA queries Inductor makes while
generating code are answered with an H100's facts, and the script stops when Triton would
compile the first kernel (no driver), after the code is generated.

The layer is written as vLLM 0.19's native ops are (custom_ops = ["none"] under Inductor):
RMSNorm.forward_static (the residual add in float32), SiluAndMul.forward_native,
RotaryEmbedding.forward_static (neox style), Attention.forward's torch.empty output.
Inductor's settings are vLLM's (combo_kernels on); benchmark_combo_kernel is off because it
would run kernels (the group it would benchmark is printed).

Run (needs torch 2.10 and triton 3.6 from PyPI, no GPU):
    python -m venv venv && venv/bin/pip install torch==2.10.0
    venv/bin/python docs/experiments/inductor_piece.py

Measured 2026-12-05 (docs/engines.md, "The PP 2 gap"): at Llama-3.1-8B's shape and 8192 rows the
piece's peak is 928 MiB, at the SiLU-and-mul kernel: the caller's 128 MiB of inputs, the o_proj
output (64), the gate_up input (64), gate_up (448) and the SiLU-and-mul output (224). The gate_up
input is dead there, but Inductor's wrapper keeps it for down_proj's output of the same size
(codegen/wrapper.py AllocateLine.plan, `# reuse`), which it does only when its own peak estimate
allows (should_reuse_buffer): at Qwen2.5-7B's shape (8192 3584 18944 28 4 128) it frees it, and
the peak is the 1056 MiB the engine profile's rule gives.
"""

import collections
import contextlib
import re
import sys

import torch
import torch._C
import torch._inductor.config as inductor_config
import torch._inductor.scheduler as scheduler
import torch._subclasses.fake_tensor as fake_tensor
import torch.nn.functional as F
import torch.utils._triton as torch_triton
from torch._guards import TracingContext, tracing
from torch._inductor.compile_fx import compile_fx_inner
from torch._inductor.decomposition import select_decomp_table
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.proxy_tensor import make_fx
from triton.backends.compiler import GPUTarget
from triton.backends.nvidia.compiler import CUDABackend

# vLLM 0.19's Inductor settings (config/compilation.py: combo kernels for torch >= 2.9).
inductor_config.combo_kernels = True
inductor_config.benchmark_combo_kernel = False
inductor_config.compile_threads = 1

# An H100 SXM5 as torch.cuda reports it, for code generation only.
Props = collections.namedtuple(
    "Props",
    "name major minor total_memory multi_processor_count L2_cache_size warp_size "
    "max_threads_per_multi_processor regs_per_multiprocessor "
    "shared_memory_per_block_optin gcnArchName",
)
H100 = Props("NVIDIA H100 80GB HBM3", 9, 0, 85032697856, 132, 52428800, 32, 2048, 65536, 232448, "")


class _NoDevice(contextlib.nullcontext):
    def __init__(self, *args, **kwargs):
        super().__init__()


torch.cuda.is_available = lambda: True
torch.cuda.get_device_properties = lambda *a, **k: H100
torch.cuda._get_device_properties = lambda *a: H100
torch.cuda.get_device_capability = lambda *a, **k: (9, 0)
torch.cuda.current_device = lambda: 0
torch.cuda.device_count = lambda: 1
torch._C._cuda_getDeviceCount = lambda: 1
torch.cuda.get_rng_state = lambda *a, **k: torch.zeros(16, dtype=torch.uint8)
torch.cuda.set_rng_state = lambda *a, **k: None
torch.cuda.synchronize = lambda *a, **k: None
torch.cuda._lazy_init = lambda: None
torch.cuda.device = _NoDevice
torch.cuda.set_device = lambda *a, **k: None
torch.cuda.current_stream = lambda *a, **k: None
torch_triton.triton_backend = lambda: CUDABackend(GPUTarget("cuda", 90, 32))
torch_triton.triton_hash_with_backend = lambda: "no-gpu"
fake_tensor.init_gpu_context = lambda device: None

# Llama-3.1-8B at TP 1 and the profile run's 8192 rows, or another shape from the command line:
# rows hidden intermediate heads kv_heads head_dim.
T, H, I, NH, NKV, D = (int(v) for v in (sys.argv[1:7] or (8192, 4096, 14336, 32, 8, 128)))
DT = torch.bfloat16


def rms_norm(x, weight, residual, eps=1e-5):
    orig = x.dtype
    x = x.to(torch.float32)
    x = x + residual
    residual = x.to(orig)
    variance = x.pow(2).mean(dim=-1, keepdim=True)
    x = x * torch.rsqrt(variance + eps)
    return x.to(orig) * weight, residual


def rotary(positions, q, k, cache):
    cos, sin = cache.index_select(0, positions).chunk(2, dim=-1)

    def apply(x, heads):
        x = x.view(-1, heads, D)
        c, s = cos.unsqueeze(-2).to(x.dtype), sin.unsqueeze(-2).to(x.dtype)
        x1, x2 = torch.chunk(x, 2, dim=-1)
        return torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), dim=-1).reshape(-1, heads * D)

    return apply(q, NH), apply(k, NKV)


def piece(attn_out, residual, positions, wo, n1, wgu, wd, n2, wqkv, cache):
    h = F.linear(attn_out, wo)
    h, residual = rms_norm(h, n1, residual)
    gate_up = F.linear(h, wgu)
    d = gate_up.shape[-1] // 2
    h = F.linear(F.silu(gate_up[..., :d]) * gate_up[..., d:], wd)
    h, residual = rms_norm(h, n2, residual)
    q, k, v = F.linear(h, wqkv).split([NH * D, NKV * D, NKV * D], dim=-1)
    q, k = rotary(positions, q, k, cache)
    out = torch.empty((q.shape[0], NH * D), dtype=q.dtype, device=q.device)
    return q.view(-1, NH, D), k.view(-1, NKV, D), v.view(-1, NKV, D), out.view(-1, NH, D), residual


def meta(*shape, dtype=DT):
    return torch.empty(*shape, dtype=dtype, device="meta")


INPUTS = [
    meta(T, H), meta(T, H), meta(T, dtype=torch.int64), meta(H, H), meta(H), meta(2 * I, H),
    meta(H, I), meta(H), meta((NH + 2 * NKV) * D, H), meta(131072, D),
]
HELD = ["attn_out_1", "residual_1"]  # the activations among the inputs, held by the caller


def generated_code():
    graph = make_fx(piece, decomposition_table=select_decomp_table())(*INPUTS)
    for node in graph.graph.nodes:
        if str(node.kwargs.get("device", "")) == "meta":
            node.kwargs = {**node.kwargs, "device": torch.device("cuda", 0)}
    graph.recompile()
    mode = FakeTensorMode()
    with mode:
        inputs = [torch.empty_strided(a.shape, a.stride(), dtype=a.dtype, device="cuda") for a in INPUTS]
    captured = {}
    import torch._inductor.graph as inductor_graph

    original = inductor_graph.GraphLowering.codegen

    def keep(self, *args, **kwargs):
        result = original(self, *args, **kwargs)
        captured["code"] = result[0].value if hasattr(result[0], "value") else str(result[0])
        return result

    inductor_graph.GraphLowering.codegen = keep
    original_combo = scheduler.Scheduler.speedup_by_combo_kernel

    def report(self, nodes):
        print("combo-kernel group:", [[n.get_name() for n in s.get_nodes()] for s in nodes])
        return original_combo(self, nodes)

    scheduler.Scheduler.speedup_by_combo_kernel = report
    with tracing(TracingContext(mode)), mode:
        try:
            compile_fx_inner(graph, inputs)
        except Exception as error:  # Triton cannot compile without a driver; the code is made
            if "code" not in captured:
                raise
            print(f"(stopped after code generation: {type(error).__name__})")
    return captured["code"]


def liveness(code):
    body = code[code.index("def call(self, args):"):]
    body = body[: body.index("runner = Runner")]
    dtype_bytes = {"torch.bfloat16": 2, "torch.float32": 4, "torch.int64": 8}
    sizes = {name: T * H * 2 for name in HELD}
    live, peak = sum(sizes.values()), 0
    mib = 1 << 20
    for line in body.splitlines():
        line = line.strip()
        alloc = re.match(r"(buf\d+) = empty_strided_cuda\(\(([^)]*)\), \([^)]*\), (torch\.\w+)\)", line)
        if alloc:
            dims = [int(x) for x in alloc.group(2).split(",") if x.strip()]
            size = dtype_bytes[alloc.group(3)]
            for dim in dims:
                size *= dim
            sizes[alloc.group(1)] = size
            live += size
        reuse = re.match(r"(buf\d+) = (?:reinterpret_tensor\()?(buf\d+).*; del (buf\d+)\s+# reuse", line)
        if reuse:
            sizes[reuse.group(1)] = sizes.pop(reuse.group(3))
        for freed in re.findall(r"\bdel (buf\d+)\b", line):
            if freed in sizes and not reuse:
                live -= sizes.pop(freed)
        if line.startswith(("extern_kernels", "triton_")):
            peak = max(peak, live)
            print(f"{live / mib:8.0f} MiB live  {line[:100]}")
    print(f"peak {peak / mib:.0f} MiB (inputs held: {', '.join(HELD)})")


if __name__ == "__main__":
    liveness(generated_code())
