"""A stand-in for torch, for tests/tutorial/tutorial.sh only: just enough of torch's surface for
the module `tkc --emit=torch` writes to import, to run the argument checks a CPU machine runs
(tensors on the CPU: their type, dtype, rank, shape and device) and to build with tkc_build()
(torch.utils.cpp_extension.load, which here compiles nothing). The messages the tutorial shows
come from the module's own checks; check_module.py (tests/torch/) runs them against the real
torch where it is installed, and bench/torch_check.py runs the extension on the GPU machine.
"""


class dtype:
    def __init__(self, name, itemsize):
        self.name, self.itemsize = name, itemsize

    def __repr__(self):
        return "torch." + self.name


bfloat16 = dtype("bfloat16", 2)
float16 = dtype("float16", 2)
float32 = dtype("float32", 4)
int32 = dtype("int32", 4)


class layout:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "torch." + self.name


strided = layout("strided")


class device:
    def __init__(self, type, index=None):
        if ":" in type:
            type, index = type.split(":")[0], int(type.split(":")[1])
        self.type, self.index = type, index

    def __eq__(self, other):
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self):
        return hash((self.type, self.index))

    def __repr__(self):
        return self.type if self.index is None else "%s:%d" % (self.type, self.index)


class Tensor:
    """A tensor without data: a shape, a dtype, and the CPU."""

    def __init__(self, shape, dtype):
        self.shape, self.dtype = tuple(shape), dtype
        self.device, self.layout = device("cpu"), strided

    def dim(self):
        return len(self.shape)

    def float(self):
        return Tensor(self.shape, float32)

    def __getitem__(self, index):
        if not isinstance(index, slice):
            raise TypeError("the torch stand-in of tests/tutorial/ slices only the first dimension")
        return Tensor((len(range(*index.indices(self.shape[0]))),) + self.shape[1:], self.dtype)


def randn(*size, dtype=float32):
    return Tensor(size, dtype)
