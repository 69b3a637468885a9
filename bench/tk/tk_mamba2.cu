// C-ABI wrapper for ThunderKittens' Mamba-2 kernel (kernels/mamba2/mamba2.cu), cut out of TK's source
// into mamba2_kernel.cuh by bench/tk/build.sh. Layouts and launch as TK's dispatch_mamba2: Q = C and
// K = B of the one group, bf16 [B, 1, N, 64]; V = X (x dt), O = y: bf16 [B, H, N, 64]; A = A dt: fp32
// [B, H, N]; all contiguous; a persistent grid of 132 blocks, NUM_THREADS_v threads,
// MAX_SHARED_MEMORY_v bytes of dynamic shared memory. d_state and head dim 64, N % 64 == 0, H even.
#include "mamba2_kernel.cuh"

extern "C" int tk_mamba2(void *q, void *k, void *v, void *o, void *a, int B, int H, int N, cudaStream_t stream) {
    if (B <= 0 || H <= 0 || H % 2 || N <= 0 || N % 64) return -1;
    using L = mamba2_fwd_template::layout;
    L::q_global Qg((bf16 *)q, B, 1, N, nullptr);
    L::k_global Kg((bf16 *)k, B, 1, N, nullptr);
    L::a_global Ag((float *)a, B, H, nullptr, N);
    L::v_global Vg((bf16 *)v, B, H, N, nullptr);
    L::o_global Og((bf16 *)o, B, H, N, nullptr);
    L::globals globals = {Qg, Kg, Vg, Og, Ag};
    unsigned long mem_size = kittens::prototype::detail::MAX_SHARED_MEMORY_v<mamba2_fwd_template>;
    static bool attr = false;
    if (!attr) {
        cudaError_t e = cudaFuncSetAttribute(prototype::lcsf::kernel<mamba2_fwd_template>,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize, mem_size);
        if (e != cudaSuccess) return (int)e;
        attr = true;
    }
    dim3 grid(132, 1, 1);
    constexpr int BLOCK_SIZE = prototype::detail::NUM_THREADS_v<mamba2_fwd_template>;
    prototype::lcsf::kernel<mamba2_fwd_template><<<grid, BLOCK_SIZE, mem_size, stream>>>(globals);
    return (int)cudaGetLastError();
}
