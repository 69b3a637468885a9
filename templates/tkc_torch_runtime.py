# @tkc begin docstring
"""tkc_torch_runtime.py - the template of the Python module `tkc --emit=torch` writes.

tkc embeds this file when it is built (templates/embed.c, CMakeLists.txt) and writes it out as
DIR/<stem>.py (src/emit_torch.c): every line as it is here, except the regions that start at a
line "# @tkc begin NAME" and end at the line "# @tkc end NAME". Each region, its two marker
lines included, is replaced by what tkc generates for NAME from the .tk file:

    docstring   this docstring: the module's kernels, their signatures and params
    all         __all__: the kernels' functions, then the module's own names
    params      tkc_params, the compile-time params
    status      the entries of TKC_STATUS, the launchers' status codes (api.h)
    extension   _TKC_NAME, the build's name, and _TKC_SOURCES, its sources (the kernels' .cu, which
                tkc_build() compiles with nvcc and calls through ctypes, and the C++ binding,
                built instead when TKC_TORCH_EXTENSION=cpp)
    kernels     per kernel a _TkcKernel description and the function that runs it

Everything outside the regions is shared by every module, so it is written here, as Python.
The stand-ins inside the regions make this file a valid module by itself (with no kernels):
tests/torch/emit_torch.sh compiles it, and each module tkc writes, with python3 -m py_compile.
"""
# @tkc end docstring

import ctypes as _tkc_ctypes
import numbers as _tkc_numbers
import os as _tkc_os
import shutil as _tkc_shutil
import subprocess as _tkc_subprocess
import threading as _tkc_threading

import torch as _tkc_torch

# @tkc begin all
__all__ = ["tkc_build", "tkc_params", "TkcError", "TKC_STATUS"]
# @tkc end all

# the compile-time params the kernels were generated with
# @tkc begin params
tkc_params = {}
# @tkc end params

# the launchers' status codes: {code: (name, meaning)}
TKC_STATUS = {
# @tkc begin status
    0: ("TKC_OK", "success"),
# @tkc end status
}

# @tkc begin extension
_TKC_NAME = "tkc_template_000000000000"  # the extension: stem and a hash of its sources
_TKC_SOURCES = ("template_kernels.cu", "template_binding.cpp")
# @tkc end extension

# ---- the runtime every tkc torch module shares ---------------------------------------------

_tkc_ext = None
_tkc_lock = _tkc_threading.Lock()
_tkc_capability = {}


class TkcError(RuntimeError):
    """A launcher returned a TKC_ERR_* status this module cannot pin on one argument."""

    def __init__(self, message, status):
        super().__init__(message)
        self.status = status
        self.status_name = TKC_STATUS.get(status, ("TKC_ERR_UNKNOWN", ""))[0]


def tkc_build(verbose=False):
    """Builds (or loads the cached build of) the kernels and returns them.

    By default the launchers of <stem>_kernels.cu are compiled by nvcc alone into a shared library
    that this module calls through ctypes (no C++ against torch's headers: the first use costs one
    nvcc run). TKC_TORCH_EXTENSION=cpp builds the C++ extension of <stem>_binding.cpp instead
    (torch.utils.cpp_extension). Either goes into TKC_TORCH_BUILD_DIR/<name> if that variable is
    set, else _build/<name> beside this file, else (neither writable) a directory under the user's
    cache (the C++ extension: torch's default extension cache). verbose, or TKC_TORCH_VERBOSE=1,
    shows the compiler's output. nvcc is $TKC_NVCC, else $CUDA_HOME/bin/nvcc (torch's CUDA_HOME),
    else the one on PATH.
    """
    global _tkc_ext
    with _tkc_lock:
        if _tkc_ext is not None:
            return _tkc_ext
        verbose = bool(verbose or _tkc_os.environ.get("TKC_TORCH_VERBOSE"))
        here = _tkc_os.path.dirname(_tkc_os.path.abspath(__file__))
        root = _tkc_os.environ.get("TKC_TORCH_BUILD_DIR") or _tkc_os.path.join(here, "_build")
        build_dir = _tkc_os.path.join(root, _TKC_NAME)
        try:
            _tkc_os.makedirs(build_dir, exist_ok=True)
            probe = _tkc_os.path.join(build_dir, ".tkc_write_probe")
            with open(probe, "w"):
                pass
            _tkc_os.remove(probe)
        except OSError:
            build_dir = None
        if _tkc_os.environ.get("TKC_TORCH_EXTENSION", "") == "cpp":
            from torch.utils.cpp_extension import load
            _tkc_ext = load(
                name=_TKC_NAME,
                sources=[_tkc_os.path.join(here, s) for s in _TKC_SOURCES],
                extra_cflags=["-O3"],
                extra_cuda_cflags=["-O3", "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a"],
                build_directory=build_dir,  # None: torch's default cache, keyed by the extension's name
                verbose=verbose,
            )
            return _tkc_ext
        if build_dir is None:
            build_dir = _tkc_os.path.join(_tkc_os.path.expanduser("~"), ".cache", "tkc_torch", _TKC_NAME)
            _tkc_os.makedirs(build_dir, exist_ok=True)
        cu = [_tkc_os.path.join(here, s) for s in _TKC_SOURCES if s.endswith("_kernels.cu")][0]
        _tkc_ext = _TkcLib(_tkc_compile(cu, _tkc_os.path.join(build_dir, _TKC_NAME + ".so"), verbose))
        return _tkc_ext


def _tkc_nvcc():
    """The nvcc that builds the kernels: $TKC_NVCC, $CUDA_HOME/bin/nvcc (torch's CUDA_HOME), PATH."""
    if _tkc_os.environ.get("TKC_NVCC"):
        return _tkc_os.environ["TKC_NVCC"]
    try:
        from torch.utils.cpp_extension import CUDA_HOME
    except Exception:  # an install without the extension tools
        CUDA_HOME = None
    for home in (CUDA_HOME, _tkc_os.environ.get("CUDA_HOME"), _tkc_os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home and _tkc_os.path.exists(_tkc_os.path.join(home, "bin", "nvcc")):
            return _tkc_os.path.join(home, "bin", "nvcc")
    nvcc = _tkc_shutil.which("nvcc")
    if not nvcc:
        raise RuntimeError("tkc: no nvcc to build the kernels with: set TKC_NVCC or CUDA_HOME, or put nvcc on PATH")
    return nvcc


def _tkc_compile(cu, so, verbose):
    """so built from cu by nvcc, unless a build of these sources is there (the name holds their hash);
    several processes may build at once: each writes its own file and renames it into place."""
    if _tkc_os.path.exists(so):
        return so
    tmp = "%s.%d.tmp" % (so, _tkc_os.getpid())
    cmd = [_tkc_nvcc(), "-O3", "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a", "-Xcompiler", "-fPIC",
           "-shared", "-o", tmp, cu]
    if verbose:
        print(" ".join(cmd), flush=True)
    r = _tkc_subprocess.run(cmd, capture_output=not verbose, text=True)
    if r.returncode:
        try:
            _tkc_os.remove(tmp)
        except OSError:
            pass
        raise RuntimeError("tkc: building %s failed (nvcc exit %d):\n%s" % (cu, r.returncode, (r.stderr or "")[-4000:]))
    _tkc_os.replace(tmp, so)
    return so


class _TkcLib:
    """The launchers of a build of <stem>_kernels.cu, called through ctypes: each takes the same
    arguments as its C++ binding (tensors, then dimensions, then scalars) and returns the status."""

    def __init__(self, path):
        self.path = path
        self.lib = _tkc_ctypes.CDLL(path)
        self._fns = {}

    def error(self, name):
        f = getattr(self.lib, "tkc_%s_error" % name)
        f.restype = _tkc_ctypes.c_char_p
        return f().decode(errors="replace")

    def call(self, k, tensors, dims, scalars, dev):
        fn = self._fns.get(k.name)
        if fn is None:
            fn = self._fns[k.name] = getattr(self.lib, "tkc_" + k.name)
            fn.restype = _tkc_ctypes.c_int
        args, keep = [], []
        for a, t in tensors:
            st = (_tkc_ctypes.c_int64 * max(1, t.dim()))(*_tkc_strides(a, t))
            keep.append(st)
            args += [_tkc_ctypes.c_void_p(t.data_ptr()), st]
        args += [_tkc_ctypes.c_int64(v) for v in dims]
        for a, v in scalars:
            args.append(_tkc_ctypes.c_float(v) if a.dt == "fp32" else _tkc_ctypes.c_int32(v))
        with _tkc_torch.cuda.device(dev):
            args.append(_tkc_ctypes.c_void_p(_tkc_torch.cuda.current_stream(dev).cuda_stream))
            return fn(*args)


class _TkcTensor:
    __slots__ = ("name", "mode", "dt", "shape", "tma", "zeroed")

    def __init__(self, name, mode, dt, shape, tma, zeroed=False):
        self.name, self.mode, self.dt, self.shape, self.tma, self.zeroed = name, mode, dt, shape, tma, zeroed


class _TkcScalar:
    __slots__ = ("name", "dt")
    mode = "scalar"

    def __init__(self, name, dt):
        self.name, self.dt = name, dt


class _TkcKernel:
    __slots__ = ("name", "signature", "args", "dims", "requires")

    def __init__(self, name, signature, args, dims, requires):
        self.name, self.signature, self.args, self.dims, self.requires = name, signature, args, dims, requires


# .tk dtype -> (torch dtype, bytes per element)
_TKC_DTYPES = {
    "bf16": (_tkc_torch.bfloat16, 2),
    "fp16": (_tkc_torch.float16, 2),
    "fp32": (_tkc_torch.float32, 4),
    "i32": (_tkc_torch.int32, 4),
}


def _tkc_decl(a):
    """'bf16[M, K]' for a tensor spec."""
    return "%s[%s]" % (a.dt, ", ".join(d if isinstance(d, str) else d[1] for d in a.shape))


def _tkc_tensor(fn, a, t):
    """Checks what can be checked without a GPU: type, layout, dtype, rank."""
    if not isinstance(t, _tkc_torch.Tensor):
        raise TypeError("%s: %s must be a torch.Tensor (%s), got %s" % (fn, a.name, _tkc_decl(a), type(t).__name__))
    if t.layout != _tkc_torch.strided:
        raise TypeError("%s: %s must be a dense (strided) tensor, got layout %s" % (fn, a.name, t.layout))
    want = _TKC_DTYPES[a.dt][0]
    if t.dtype != want:
        raise TypeError("%s: %s must have dtype %s (%s), got %s" % (fn, a.name, want, _tkc_decl(a), t.dtype))
    if t.dim() != len(a.shape):
        raise ValueError("%s: %s must be a %d-d tensor %s, got shape %s"
                         % (fn, a.name, len(a.shape), _tkc_decl(a), tuple(t.shape)))


def _tkc_scalar(fn, a, v):
    if a.dt == "fp32":
        if isinstance(v, bool) or not isinstance(v, _tkc_numbers.Real):
            raise TypeError("%s: %s must be a float (fp32 scalar), got %s" % (fn, a.name, type(v).__name__))
        return float(v)
    if isinstance(v, bool) or not isinstance(v, _tkc_numbers.Integral):
        raise TypeError("%s: %s must be an int (%s scalar), got %s" % (fn, a.name, a.dt, type(v).__name__))
    if not -2**31 <= int(v) < 2**31:
        raise ValueError("%s: %s must fit in 32 bits (%s scalar), got %d" % (fn, a.name, a.dt, int(v)))
    return int(v)


def _tkc_check_device(fn, named, default=None):
    """All tensors on one CUDA device, and that device an sm_90 GPU; returns the device."""
    dev = None
    first = None
    for name, t in named:
        if t.device.type != "cuda":
            raise ValueError("%s: %s must be a CUDA tensor, got a tensor on %s (move it with %s.cuda())"
                             % (fn, name, t.device, name))
        if dev is None:
            dev, first = t.device, name
        elif t.device != dev:
            raise ValueError("%s: all tensors must be on one device: %s is on %s, %s is on %s"
                             % (fn, first, dev, name, t.device))
    if dev is None:
        dev = _tkc_torch.device(default if default is not None else "cuda")
        if dev.type != "cuda":
            raise ValueError("%s: device must be a CUDA device, got %s" % (fn, dev))
    idx = dev.index if dev.index is not None else _tkc_torch.cuda.current_device()
    cap = _tkc_capability.get(idx)
    if cap is None:
        cap = _tkc_capability[idx] = _tkc_torch.cuda.get_device_capability(idx)
    if cap != (9, 0):
        raise RuntimeError("%s: cuda:%d (%s) is sm_%d%d; tkc kernels use wgmma and TMA and run only on sm_90 "
                           "(Hopper: H100, H200, GH200)"
                           % (fn, idx, _tkc_torch.cuda.get_device_name(idx), cap[0], cap[1]))
    return _tkc_torch.device("cuda", idx)


def _tkc_strides(a, t):
    """The strides the C++ binding passes for t (a size-1 dimension is never stepped over, so
    its stride is replaced by one TMA accepts), for messages."""
    n = len(a.shape)
    q = 16 // _TKC_DTYPES[a.dt][1]
    out = [0] * n
    span = 1
    for d in range(n - 1, -1, -1):
        size, st = t.shape[d], t.stride(d)
        if size == 1:
            st = 1 if d == n - 1 else span
            if a.tma and d != n - 1:
                st = (st + q - 1) // q * q
        out[d] = st
        span = max(span, st * size)
    return out


def _tkc_layout_error(fn, k, tensors):
    """The first tensor whose address or strides the launcher cannot use, explained; or None."""
    for a, t in tensors:
        e = _TKC_DTYPES[a.dt][1]
        st = _tkc_strides(a, t)
        shape = tuple(t.shape)
        role = "%s (the output %s, allocated contiguous)" % (a.name, _tkc_decl(a)) if a.mode == "out" else a.name
        if a.tma:
            # TMA moves it: where its address or a row pitch is not a 16-byte multiple the launcher
            # stages it through a padded copy, so only element alignment, a last stride of 1 and rows
            # that do not overlap are required
            ptr = t.data_ptr()
            if ptr % e:
                return ("%s: %s is not aligned to its element size (%d bytes): pass %s.contiguous()"
                        % (fn, role, e, a.name))
            n = len(shape)
            if n and shape[-1] > 1 and st[-1] != 1:
                return ("%s: %s is moved by TMA, which needs its last dimension contiguous (stride 1); got strides "
                        "%s for shape %s: pass %s.contiguous()" % (fn, role, tuple(st), shape, a.name))
            bad = [d for d in range(n) if shape[d] > 1 and st[d] < 1]
            if bad:
                return ("%s: %s needs positive strides, got %s for shape %s (a broadcast view, from expand?): "
                        "pass %s.contiguous()" % (fn, role, tuple(st), shape, a.name))
            if n > 1 and shape[-2] > 1 and st[-2] < shape[-1]:
                return ("%s: %s has rows that overlap (strides %s for shape %s), which the launcher cannot copy "
                        "into the padded rows TMA needs: pass %s.contiguous()" % (fn, role, tuple(st), shape, a.name))
        else:
            ptr = t.data_ptr()
            if ptr % e:
                return ("%s: %s is not aligned to its element size (%d bytes): pass %s.contiguous()"
                        % (fn, role, e, a.name))
            bad = [d for d in range(len(shape)) if shape[d] > 1 and st[d] < 1]
            if bad:
                return ("%s: %s needs positive strides, got %s for shape %s (a broadcast view, from expand?): "
                        "pass %s.contiguous()" % (fn, role, tuple(st), shape, a.name))
    return None


# torch.library: each kernel as a custom op tkc_<hash>::<kernel> (torch 2.4 and later), with a fake
# implementation that makes the outputs from the inputs' shapes, so torch.compile traces a call as
# one op rather than breaking the graph. Kernels with a dimension no input's shape gives (it comes
# as a keyword) and calls with keywords run directly.
_tkc_ops = {}


def _tkc_register(k):
    lib = getattr(_tkc_torch, "library", None)
    if lib is None or not hasattr(lib, "custom_op"):
        return None
    ins = [a for a in k.args if a.mode != "out"]
    known = set()
    for a in ins:
        if a.mode != "scalar":
            known.update(d for d in a.shape if isinstance(d, str))
    if any(d not in known for d in k.dims):
        return None
    outs = [a for a in k.args if a.mode == "out"]
    params = ", ".join("%s: %s" % (a.name, "float" if a.mode == "scalar" and a.dt == "fp32" else
                                    "int" if a.mode == "scalar" else "_tkc_torch.Tensor") for a in ins)
    ret = ("None" if not outs else "_tkc_torch.Tensor" if len(outs) == 1 else
           "tuple[%s]" % ", ".join(["_tkc_torch.Tensor"] * len(outs)))
    names = ", ".join(a.name for a in ins)
    src = ("def _impl(%s) -> %s:\n    return _tkc_launch(_k, (%s%s), {})\n" % (params, ret, names, "," if len(ins) == 1 else "")
           + "def _fake(%s) -> %s:\n    return _tkc_fake(_k, (%s%s))\n" % (params, ret, names, "," if len(ins) == 1 else ""))
    env = {"_tkc_torch": _tkc_torch, "_tkc_launch": _tkc_launch, "_tkc_fake": _tkc_fake, "_k": k}
    exec(src, env)
    ns = "tkc_" + _TKC_NAME.rsplit("_", 1)[-1]
    mutates = tuple(a.name for a in ins if a.mode == "inout")
    try:
        op = lib.custom_op("%s::%s" % (ns, k.name), mutates_args=mutates)(env["_impl"])
        op.register_fake(env["_fake"])
    except Exception:  # an older torch, or a name registered twice: call the launcher directly
        return None
    return op


def _tkc_tma_ready(a, t):
    """An input tensor whose last dimension is not contiguous (a transposed view) as a copy whose
    rows are padded to 16 bytes: the launcher refuses such a tensor, though it is a legal one. Other
    layouts TMA cannot take as they lie (a row pitch or base not a multiple of 16 bytes) the
    launcher moves through a padded copy itself."""
    e = _TKC_DTYPES[a.dt][1]
    if t.dim() == 0 or t.numel() == 0 or t.stride(-1) == 1 or t.shape[-1] == 1:
        return t
    q = 16 // e
    shape = list(t.shape)
    buf = _tkc_torch.empty(shape[:-1] + [(shape[-1] + q - 1) // q * q], dtype=t.dtype, device=t.device)
    buf = buf[..., :shape[-1]]
    buf.copy_(t)
    return buf


def _tkc_fake(k, values):
    """The outputs a call would make, from the inputs' shapes (on their device, or a fake one)."""
    it = iter(values)
    dims, dev = {}, None
    for a in k.args:
        if a.mode == "out":
            continue
        v = next(it)
        if a.mode == "scalar":
            continue
        dev = v.device if dev is None else dev
        for i, d in enumerate(a.shape):
            if isinstance(d, str):
                dims.setdefault(d, v.shape[i])
    outs = [_tkc_torch.empty([dims[d] if isinstance(d, str) else d[0] for d in a.shape], dtype=_TKC_DTYPES[a.dt][0],
                             device=dev) for a in k.args if a.mode == "out"]
    if not outs:
        return None
    return outs[0] if len(outs) == 1 else tuple(outs)


# (forward, (backward kernels, ...)) from the .tk's `grad` declarations
_tkc_grads = []


def _tkc_register_grad(fwd, chain, specs):
    """Makes the op of kernel fwd differentiable: its backward runs the chain's kernels in order,
    their arguments bound by name (sema_grad.c): fwd's inputs and outputs, d<output> (the gradient
    that arrives for an output; zeros when none does), then the outputs of earlier chain kernels;
    the chain's d<input> outputs are the gradients of fwd's inputs, in the inputs' dtypes."""
    op = _tkc_ops.get(fwd)
    if op is None or not hasattr(op, "register_autograd"):
        return
    kf, kc = specs[fwd], [specs[n] for n in chain]
    ins = [a for a in kf.args if a.mode != "out"]
    tins = [a for a in ins if a.mode != "scalar"]
    outs = [a for a in kf.args if a.mode == "out"]
    made = set(a.name for k in kc for a in k.args if a.mode == "out")

    def setup_context(ctx, inputs, output):
        outv = output if isinstance(output, tuple) else (output,)
        ctx.tkc_scalars = dict((a.name, v) for a, v in zip(ins, inputs) if a.mode == "scalar")
        ctx.save_for_backward(*([v for a, v in zip(ins, inputs) if a.mode != "scalar"] + list(outv)))

    def backward(ctx, *grads):
        saved = ctx.saved_tensors
        env = dict(ctx.tkc_scalars)
        for a, t in zip(tins, saved[:len(tins)]):
            env[a.name] = t
        for a, t, g in zip(outs, saved[len(tins):], grads):
            env[a.name] = t
            env["d" + a.name] = g.contiguous() if g is not None else _tkc_torch.zeros_like(t)
        for k in kc:
            res = _tkc_run(k, tuple(env[a.name] for a in k.args if a.mode != "out"), {})
            kouts = [a for a in k.args if a.mode == "out"]
            for a, t in zip(kouts, res if isinstance(res, tuple) else (res,)):
                env[a.name] = t
        return tuple(env["d" + a.name].to(env[a.name].dtype) if a.mode != "scalar" and "d" + a.name in made else None
                     for a in ins)

    op.register_autograd(backward, setup_context=setup_context)


def _tkc_register_all(names):
    specs = {}
    for v in list(names.values()):
        if isinstance(v, _TkcKernel):
            specs[v.name] = v
            op = _tkc_register(v)
            if op is not None:
                _tkc_ops[v.name] = op
    for fwd, chain in _tkc_grads:
        _tkc_register_grad(fwd, chain, specs)


def _tkc_run(k, values, kw, device=None):
    """A kernel's call: through its torch.library op when it has one (torch.compile sees one op),
    else the launcher directly."""
    op = _tkc_ops.get(k.name)
    if op is not None and not kw and device is None:
        compiling = getattr(getattr(_tkc_torch, "compiler", None), "is_compiling", lambda: False)()
        if not compiling:  # this module's TypeError for a wrong argument, not the op schema's RuntimeError
            ins = [a for a in k.args if a.mode != "out"]
            if len(values) == len(ins):
                for a, v in zip(ins, values):
                    if a.mode == "scalar":
                        _tkc_scalar(k.name + "()", a, v)
                    elif not isinstance(v, _tkc_torch.Tensor):
                        _tkc_tensor(k.name + "()", a, v)
        return op(*values)
    return _tkc_launch(k, values, kw, device)


def _tkc_launch(k, values, kw, device=None):
    fn = k.name + "()"
    given, scalars = [], {}
    it = iter(values)
    for a in k.args:
        if a.mode == "scalar":
            scalars[a.name] = _tkc_scalar(fn, a, next(it))
        elif a.mode != "out":
            t = next(it)
            _tkc_tensor(fn, a, t)
            if a.mode == "in" and a.tma and t.is_cuda:
                t = _tkc_tma_ready(a, t)
            given.append((a, t))
    # run-time dimensions: from keywords, then from the shapes, in .tk order
    dims, origin = {}, {}
    for name, v in kw.items():
        if isinstance(v, bool) or not isinstance(v, _tkc_numbers.Integral):
            raise TypeError("%s: %s must be an int (a run-time dimension), got %s" % (fn, name, type(v).__name__))
        dims[name], origin[name] = int(v), "the argument " + name
    for a, t in given:
        for i, d in enumerate(a.shape):
            got = t.shape[i]
            if isinstance(d, str):
                if d not in dims:
                    dims[d], origin[d] = got, "%s.shape[%d]" % (a.name, i)
                elif dims[d] != got:
                    raise ValueError("%s: %s.shape[%d] is %d, but %s = %d from %s (%s is %s, got shape %s)"
                                     % (fn, a.name, i, got, d, dims[d], origin[d], a.name, _tkc_decl(a),
                                        tuple(t.shape)))
            elif got != d[0]:
                if d[1] == str(d[0]):
                    fixed = "%d (fixed in the .tk)" % d[0]
                else:
                    fixed = ("%s = %d, a compile-time param (tkc -D %s=%d generates a module for %d)"
                             % (d[1], d[0], d[1], got, got))
                raise ValueError("%s: %s.shape[%d] must be %s; got %d (%s is %s)"
                                 % (fn, a.name, i, fixed, got, a.name, _tkc_decl(a)))
    for d in k.dims:
        if not 1 <= dims[d] <= 2**31 - 1:
            raise ValueError("%s: %s = %d (from %s); tkc kernels need every dimension in [1, 2^31 - 1]"
                             % (fn, d, dims[d], origin[d]))
    dev = _tkc_check_device(fn, [(a.name, t) for a, t in given], device)
    # outputs, then the call in the launcher's order: tensors, dimensions, scalars
    by_name = dict((a.name, t) for a, t in given)
    tensors, outs = [], []
    for a in k.args:
        if a.mode == "scalar":
            continue
        if a.mode == "out":
            shape = [dims[d] if isinstance(d, str) else d[0] for d in a.shape]
            t = _tkc_torch.empty(shape, dtype=_TKC_DTYPES[a.dt][0], device=dev)
            outs.append(t)
        else:
            t = by_name[a.name]
        tensors.append((a, t))
    ext = _tkc_ext if _tkc_ext is not None else tkc_build()
    if isinstance(ext, _TkcLib):
        status = ext.call(k, tensors, [dims[d] for d in k.dims],
                          [(a, scalars[a.name]) for a in k.args if a.mode == "scalar"], dev)
    else:
        status = getattr(ext, k.name)(*([t for _, t in tensors] + [dims[d] for d in k.dims] +
                                        [scalars[a.name] for a in k.args if a.mode == "scalar"]))
    if status:
        _tkc_raise(fn, k, status, tensors, dims)
    if not outs:
        return None
    return outs[0] if len(outs) == 1 else tuple(outs)


def _tkc_raise(fn, k, status, tensors, dims):
    name, meaning = TKC_STATUS.get(status, ("TKC_ERR_UNKNOWN", "an unknown status"))
    shown = ", ".join("%s=%d" % (d, dims[d]) for d in k.dims)
    if name in ("TKC_ERR_STRIDE", "TKC_ERR_ALIGN"):
        msg = _tkc_layout_error(fn, k, tensors)
        raise ValueError(msg or "%s: the launcher returned %s (%s); tensors TMA moves need element-aligned data "
                         "pointers, a last stride of 1 and rows that do not overlap: pass .contiguous() tensors"
                         % (fn, name, meaning))
    if name == "TKC_ERR_REQUIRE":
        raise ValueError("%s: the kernel requires %s; got %s (%s)" % (fn, " and ".join(k.requires), shown, name))
    if name == "TKC_ERR_DIM":
        raise ValueError("%s: the launcher rejected the dimensions %s: %s (%s)" % (fn, shown, meaning, name))
    hint = ""
    if name == "TKC_ERR_LAUNCH":
        cuda = ""
        ext = _tkc_ext if _tkc_ext is not None else None
        if isinstance(ext, _TkcLib):
            cuda = " (CUDA: %s)" % ext.error(k.name)
        elif ext is not None and hasattr(ext, k.name + "_error"):
            cuda = " (CUDA: %s)" % getattr(ext, k.name + "_error")()
        hint = "%s; run with CUDA_LAUNCH_BLOCKING=1 to find the failing call" % cuda
    raise TkcError("%s: the launcher returned %s (%d): %s%s" % (fn, name, status, meaning, hint), status)
# @tkc begin kernels
# @tkc end kernels

# every kernel above as a torch.library op (_tkc_register)
_tkc_register_all(globals())
