"""A stand-in for torch, for tests/torch/ctypes_path.sh: just enough of torch for a module that
tkc --emit=torch writes to import and to call its launcher through ctypes on a machine with
neither torch nor a GPU (tensors are host buffers; the launcher then stops at its tensor maps or
its first CUDA call, which is the point: the arguments got there)."""
import ctypes
class dtype:
    def __init__(self, n, size): self.n, self.itemsize = n, size
    def __repr__(self): return "torch." + self.n
bfloat16, float16, float32, int32 = dtype("bfloat16", 2), dtype("float16", 2), dtype("float32", 4), dtype("int32", 4)
strided = "strided"
class device:
    def __init__(self, type, index=0): self.type, self.index = type, index
    def __eq__(self, o): return isinstance(o, device) and (self.type, self.index) == (o.type, o.index)
    def __hash__(self): return hash((self.type, self.index))
    def __repr__(self): return "%s:%d" % (self.type, self.index)
class Tensor:
    def __init__(self, shape, dt, strides=None, dev=None, buf=None):
        self.shape, self.dtype = tuple(shape), dt
        self.layout = strided
        st, c = [], 1
        for s in reversed(shape): st.append(c); c *= s
        self._st = tuple(strides or reversed(st))
        self.device = dev or device("cuda", 0)
        self.is_cuda = self.device.type == "cuda"
        self._buf = buf or ctypes.create_string_buffer(max(1, c * dt.itemsize) + 64)
        self.requires_grad = False
    def dim(self): return len(self.shape)
    def stride(self, d=None): return self._st if d is None else self._st[d]
    def numel(self):
        n = 1
        for s in self.shape: n *= s
        return n
    def data_ptr(self): return (ctypes.addressof(self._buf) + 63) // 64 * 64
    def size(self, d): return self.shape[d]
def empty(shape, dtype=None, device=None): return Tensor(shape, dtype, dev=device)
class _Stream:
    cuda_stream = 0
class _Ctx:
    def __enter__(self): return self
    def __exit__(self, *a): return False
class cuda:
    @staticmethod
    def get_device_capability(i=0): return (9, 0)
    @staticmethod
    def get_device_name(i=0): return "fake"
    @staticmethod
    def current_stream(d=None): return _Stream()
    @staticmethod
    def device(d): return _Ctx()
    @staticmethod
    def current_device(): return 0
    @staticmethod
    def is_available(): return True
