// C-ABI wrapper for ThunderKittens' Based kernel (kernels/based/linear_attn.cu). The kernel and its
// globals come from based_kernel.cuh, which bench/tk/build.sh cuts out of TK's source at build time
// (TK's code is not in this repository). Launch as TK's dispatch_based does: grid (H, B), 128 threads,
// 98000 bytes of dynamic shared memory; here on the caller's stream, without its device syncs.
// q, k: bf16 [B, H, N, 16], v, o: bf16 [B, H, N, 64], contiguous; kv_a2 [B, H, 256, 64],
// kv_a1 [B, H, 64, 16], kv_a0 [B, H, 1, 64] bf16 (the recurrent states TK writes). N % 64 == 0.
// o is the numerator sum_j (1 + s + s^2/2) v_j (TK does not normalise).
#include "based_kernel.cuh"

extern "C" int tk_based(void *q, void *k, void *v, void *o, void *kv_a2, void *kv_a1, void *kv_a0,
                        int B, int H, int N, cudaStream_t stream) {
    if (B <= 0 || H <= 0 || N <= 0 || N % 64) return -1;
    based_globals g = based_init((bf16 *)q, (bf16 *)k, (bf16 *)v, (bf16 *)o, (bf16 *)kv_a2, (bf16 *)kv_a1,
                                 (bf16 *)kv_a0, B, H, N);
    unsigned long mem_size = 98000;
    static bool attr = false;
    if (!attr) {
        cudaError_t e = cudaFuncSetAttribute(based_linear_attention, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             mem_size);
        if (e != cudaSuccess) return (int)e;
        attr = true;
    }
    dim3 grid(H, B);
    based_linear_attention<<<grid, NUM_THREADS, mem_size, stream>>>(g);
    return (int)cudaGetLastError();
}
