"""A whole pipeline stage of vLLM 0.19's piecewise-compiled Llama, as Inductor compiles it with a
symbolic row count, and its live bytes when the generated code runs.

What it shows: the peak of the forward the profile run plans (docs/engines.md, "The PP 2 gap").
vLLM compiles the model once for a range of row counts (`compile_ranges_endpoints` up to
max_num_batched_tokens, `dynamic_shapes="from_graph"`, compilation/compiler_interface.py), so
every piece sees a symbolic row count `s0`, not 8192. The stage here is traced with `s0` (hint
8192), split as compilation/backends.py `split_graph` splits it (each run of splitting ops, the
KV-cache update and the attention, one submodule; `keep_original_order`), every other piece
compiled by Inductor for a CUDA device with an H100's properties (no GPU needed: the CUDA queries
are answered with an H100's facts, and no Triton kernel is compiled), then the split graph is run
with its variables freed after their last use, as FX's generated code frees them, each compiled
piece executing its generated wrapper on meta tensors (kernels are no-ops). Every buffer the
wrappers allocate is counted from allocation until its storage dies.

The layer is written as vLLM 0.19's native ops are under Inductor (custom_ops = ["none"]):
RMSNorm.forward_static (the residual add in float32), SiluAndMul.forward_native,
RotaryEmbedding.forward_static (neox style), Attention.forward's torch.empty output and the
splitting ops unified_kv_cache_update and unified_attention_with_output (here `exp::kv_update` and
`exp::attn`, which allocate nothing, as in the profile run).

Run (needs torch 2.10 and triton 3.6 from PyPI, no GPU):
    python -m venv venv && venv/bin/pip install torch==2.10.0 numpy
    venv/bin/python docs/experiments/inductor_stage.py [rows hidden ffn heads kv_heads head_dim layers vocab]
    DT=float32 venv/bin/python docs/experiments/inductor_stage.py

Measured 2026-12-06 (three layers; the peak is the first MLP piece's SiLU-and-mul output):
    Llama-3.1-8B (8192 4096 14336 32 8 128 3 128256)      864 MiB
    Qwen2.5-7B   (8192 3584 18944 28 4 128 3 152064)     1056 MiB
    Llama-3.1-8B in float32                              1728 MiB
These are the engine profile's planned forwards less the cuBLAS workspace and the autotuning
L2 flush (946, 1138 and 1810 MiB planned). With the symbolic row count Inductor frees the gate_up
input after gate_up (`del buf2`), where a static 8192 keeps it for down_proj's output (`# reuse`):
the 64 MiB the static compile adds is not in vLLM's forward.
"""

import collections
import contextlib
import os
import re
import sys
import weakref

import torch
import torch._C
import torch._inductor.config as inductor_config
import torch._inductor.graph as inductor_graph
import torch._inductor.select_algorithm as select_algorithm
import torch._subclasses.fake_tensor as fake_tensor
import torch.nn.functional as F
import torch.utils._triton as torch_triton
from torch._dynamo.source import ConstantSource
from torch._guards import TracingContext, tracing
from torch._inductor.compile_fx import compile_fx_inner
from torch._inductor.decomposition import select_decomp_table
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.proxy_tensor import make_fx
from torch.fx.experimental.symbolic_shapes import ShapeEnv
from torch.fx.passes.split_module import split_module
from triton.backends.compiler import GPUTarget
from triton.backends.nvidia.compiler import CUDABackend

# vLLM 0.19's Inductor settings (config/compilation.py: combo kernels for torch >= 2.9; their
# benchmarking would run kernels, so it is off here).
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
torch.cuda._DeviceGuard = _NoDevice
torch.cuda.set_device = lambda *a, **k: None
torch.cuda.current_stream = lambda *a, **k: None
torch_triton.triton_backend = lambda: CUDABackend(GPUTarget("cuda", 90, 32))
torch_triton.triton_hash_with_backend = lambda: "no-gpu"
fake_tensor.init_gpu_context = lambda device: None

# Llama-3.1-8B's stage of three layers at the profile run's 8192 rows, or another shape from the
# command line: rows hidden ffn heads kv_heads head_dim layers vocab.
DEFAULTS = [8192, 4096, 14336, 32, 8, 128, 3, 128256]
T, H, I, NH, NKV, D, L, V = ([int(v) for v in sys.argv[1:]] + DEFAULTS[len(sys.argv) - 1 :])[:8]
DT = getattr(torch, os.environ.get("DT", "bfloat16"))
MAX_POSITIONS = 131072
MIB = 1 << 20

# The splitting ops, allocating nothing (the profile run's attention returns its zeroed output).
LIB = torch.library.Library("exp", "DEF")
LIB.define("kv_update(Tensor k, Tensor v) -> Tensor")
LIB.define("attn(Tensor q, Tensor k, Tensor v, Tensor(a!) out, Tensor dep) -> ()")
for key in ("CompositeExplicitAutograd", "Meta"):
    LIB.impl("kv_update", lambda k, v: torch.empty(0, device=k.device, dtype=k.dtype), key)
    LIB.impl("attn", lambda q, k, v, out, dep: None, key)
SPLITTING = {torch.ops.exp.kv_update.default, torch.ops.exp.attn.default}


def rms_norm(x, weight, residual=None, eps=1e-5):
    orig = x.dtype
    x = x.to(torch.float32)
    if residual is not None:
        x = x + residual
        residual = x.to(orig)
    variance = x.pow(2).mean(dim=-1, keepdim=True)
    x = (x * torch.rsqrt(variance + eps)).to(orig) * weight
    return x if residual is None else (x, residual)


def rotary(x, cos, sin):
    shape = x.shape
    x = x.view(x.shape[0], -1, D)
    c, s = cos.unsqueeze(-2).to(x.dtype), sin.unsqueeze(-2).to(x.dtype)
    x1, x2 = torch.chunk(x, 2, dim=-1)
    return torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), dim=-1).reshape(shape)


def stage(input_ids, positions, embed, cache, *weights):
    """The first pipeline stage: the embedding and L decoder layers, returning the hidden
    states and the residual (IntermediateTensors)."""
    h = F.embedding(input_ids, embed)
    residual = None
    for layer in range(L):
        wqkv, wo, wgu, wd, n1, n2 = weights[6 * layer : 6 * layer + 6]
        if residual is None:
            residual, h = h, rms_norm(h, n1)
        else:
            h, residual = rms_norm(h, n1, residual)
        q, k, v = F.linear(h, wqkv).split([NH * D, NKV * D, NKV * D], dim=-1)
        cos, sin = cache.index_select(0, positions.flatten()).chunk(2, dim=-1)
        q, k = rotary(q, cos, sin), rotary(k, cos, sin)
        out = torch.empty((q.shape[0], NH * D), dtype=q.dtype, device=q.device)
        q, out = q.view(-1, NH, D), out.view(-1, NH, D)
        k, v = k.view(-1, NKV, D), v.view(-1, NKV, D)
        torch.ops.exp.attn(q, k, v, out, torch.ops.exp.kv_update(k, v))
        h, residual = rms_norm(F.linear(out.view(-1, NH * D), wo), n2, residual)
        gate_up = F.linear(h, wgu)
        d = gate_up.shape[-1] // 2
        h = F.linear(F.silu(gate_up[..., :d]) * gate_up[..., d:], wd)
    return h, residual


def to_cuda(graph):
    for node in graph.graph.nodes:
        if str(node.kwargs.get("device", "")) == "meta":
            node.kwargs = {**node.kwargs, "device": torch.device("cuda", 0)}
    graph.recompile()


def split_stage():
    """The stage traced with a symbolic row count, split as vLLM's split_graph splits it."""
    shape_env = ShapeEnv()
    mode = FakeTensorMode(shape_env=shape_env)
    rows = shape_env.create_symintnode(shape_env.create_symbol(T, ConstantSource("s0")), hint=T)
    with mode:
        meta = lambda *shape, dtype=DT: torch.empty(*shape, dtype=dtype, device="meta")  # noqa: E731
        inputs = [meta(rows, dtype=torch.int64), meta(rows, dtype=torch.int64)]
        inputs += [meta(V, H), meta(MAX_POSITIONS, D)]
        for _ in range(L):
            inputs += [meta((NH + 2 * NKV) * D, H), meta(H, NH * D), meta(2 * I, H)]
            inputs += [meta(H, I), meta(H), meta(H)]
        graph = make_fx(stage, decomposition_table=select_decomp_table())(*inputs)
    to_cuda(graph)
    piece, part = 0, {}
    for node in graph.graph.nodes:
        if node.op not in ("placeholder", "output"):
            splitting = node.op == "call_function" and node.target in SPLITTING
            if splitting and piece % 2 == 0:
                piece += 1
            elif not splitting and piece % 2 == 1:
                piece += 1
            part[node] = piece
    return mode, split_module(graph, None, lambda n: part[n], keep_original_order=True)


def generated_wrappers(mode, split):
    """Inductor's generated wrapper code of every piece that is not a splitting op."""
    captured = {}
    codegen = inductor_graph.GraphLowering.codegen

    def keep(self, *args, **kwargs):
        result = codegen(self, *args, **kwargs)
        captured["code"] = result[0].value if hasattr(result[0], "value") else str(result[0])
        return result

    inductor_graph.GraphLowering.codegen = keep
    codes = {}
    for name, sub in split.named_children():
        first = next(n for n in sub.graph.nodes if n.op != "placeholder")
        if first.op == "call_function" and first.target in SPLITTING:
            continue
        to_cuda(sub)
        with mode:
            inputs = [
                torch.empty_strided(v.shape, v.stride(), dtype=v.dtype, device="cuda")
                if isinstance(v, torch.Tensor)
                else v
                for v in (n.meta["val"] for n in sub.graph.nodes if n.op == "placeholder")
            ]
        captured.clear()
        with tracing(TracingContext(mode)), mode:
            try:
                compile_fx_inner(sub, inputs)
            except Exception:  # Triton cannot compile without a driver; the code is made
                if "code" not in captured:
                    raise
        codes[name] = captured["code"]
    return codes


class Live:
    """The bytes the wrappers' buffers hold, from allocation until their storage dies."""

    def __init__(self):
        self.bytes, self.peak, self.where, self.piece, self.launches = 0, 0, "", "", []

    def allocate(self, size, stride, dtype):
        t = torch.empty_strided(size, stride, dtype=dtype, device="meta")
        n = t.untyped_storage().nbytes()
        self.bytes += n
        weakref.finalize(t.untyped_storage(), self.free, n)
        self.note(f"{self.piece} allocates {tuple(size)}")
        return t

    def free(self, n):
        self.bytes -= n

    def note(self, what):
        if self.bytes > self.peak:
            self.peak, self.where = self.bytes, what

    def launch(self, kernel):
        self.launches.append((self.bytes, f"{self.piece} {kernel}"))
        self.note(f"{self.piece} {kernel}")


def runnable(name, code, live):
    """A piece's generated wrapper with no-op kernels and meta buffers, called as vLLM calls
    it: with a copy of the argument list, which the wrapper clears."""

    class Kernel:
        def __init__(self, kernel, *args, **kwargs):
            self.kernel = kernel

        def run(self, *args, **kwargs):
            live.launch(self.kernel)

    code = code.replace("async_compile = AsyncCompile()", "async_compile = None")
    code = re.sub(r"async_compile\.triton\(", "Kernel(", code)
    code = code.replace("async_compile.wait(globals())", "pass")
    namespace = {"__name__": name, "Kernel": Kernel}
    exec(compile(code, name, "exec"), namespace)
    namespace["empty_strided_cuda"] = live.allocate
    namespace["get_raw_stream"] = lambda *args: None
    call = namespace["call"]

    def run(*args):
        live.piece = name
        return call(list(args))

    return run


def run_split(split, codes, live):
    """The split graph as FX's generated code runs it: each value dropped after its last use."""

    def mm(a, b, out=None):
        live.launch(f"mm -> {tuple(out.shape)}")
        return out

    select_algorithm.extern_kernels.mm = mm
    runners = {name: runnable(name, code, live) for name, code in codes.items()}
    last_use = {}
    for node in split.graph.nodes:
        for used in node.all_input_nodes:
            last_use[used] = node
    env = {}
    for node in split.graph.nodes:
        args = [env[a] if isinstance(a, torch.fx.Node) else a for a in node.args]
        if node.op == "placeholder":
            v = node.meta["val"]
            env[node] = (
                torch.empty_strided([int(x) for x in v.shape], [int(x) for x in v.stride()], dtype=v.dtype, device="meta")
                if isinstance(v, torch.Tensor)
                else int(v)
            )
        elif node.op == "call_module":
            live.piece = node.target
            env[node] = runners.get(node.target, getattr(split, node.target))(*args)
        elif node.op == "call_function":
            env[node] = node.target(*args)
        for used in node.all_input_nodes:
            if last_use.get(used) is node:
                del env[used]


if __name__ == "__main__":
    mode, split = split_stage()
    live = Live()
    run_split(split, generated_wrappers(mode, split), live)
    for bytes_, what in live.launches:
        print(f"{bytes_ / MIB:8.0f} MiB live  {what}")
    print(f"peak {live.peak / MIB:.0f} MiB at {live.where}")
