// C-ABI wrapper for ThunderKittens' decayed linear attention kernel
// (kernels/linear_attention/linear_attention.cu), cut out of TK's source (before its test main) into
// linear_attention_kernel.cuh by bench/tk/build.sh. Launch as TK's main does: grid (H, B), 256 threads,
// MAX_SHARED_MEMORY - 1024 bytes of dynamic shared memory, kernel argument N. The kernel accumulates
// into o with TMA store-add, so o must be zero first: with zero_output != 0 this function clears it
// on the stream before the launch (as TK's main does with cudaMemset before every launch).
// q, k, v, o: bf16 [B, H, N, 128], contiguous; slopes: fp32 [H]; N % 64 == 0.
// o_i = sum_{j <= i} exp(-slope_h (i - j)) (q_i . k_j) v_j (no scale).
#include "linear_attention_kernel.cuh"

extern "C" int tk_linear_attention(void *q, void *k, void *v, void *o, void *slopes, int B, int H, int N,
                                   int zero_output, cudaStream_t stream) {
    if (B <= 0 || H <= 0 || N <= 0 || N % 64) return -1;
    la_globals g = la_init((bf16 *)q, (bf16 *)k, (bf16 *)v, (bf16 *)o, (float *)slopes, B, H, N);
    unsigned long mem_size = kittens::MAX_SHARED_MEMORY - 1024;
    static bool attr = false;
    if (!attr) {
        cudaError_t e = cudaFuncSetAttribute(la_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, mem_size);
        if (e != cudaSuccess) return (int)e;
        attr = true;
    }
    if (zero_output) {
        cudaError_t e = cudaMemsetAsync(o, 0, (size_t)B * H * N * ATTN_D * sizeof(bf16), stream);
        if (e != cudaSuccess) return (int)e;
    }
    la_kernel<<<dim3(H, B), NUM_THREADS, mem_size, stream>>>(g, N);
    return (int)cudaGetLastError();
}
