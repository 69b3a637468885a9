// C-ABI wrapper for ThunderKittens' Hedgehog kernel (kernels/hedgehog/hedgehog.cu), cut out of TK's
// source into hedgehog_kernel.cuh by bench/tk/build.sh. Launch as TK's dispatch_hedgehog does:
// grid (H, B), 256 threads, MAX_SHARED_MEMORY - 1024 bytes of dynamic shared memory, kernel argument N.
// q, k, v, o: bf16 [B, H, N, 128]; qmap, kmap: bf16 [H, 128, 64]; alphas, betas: fp32 [H];
// kv_state: fp32 [B, H, 128, 128]; k_state: fp32 [B, H, 1, 128]; all contiguous; N % 64 == 0.
#include "hedgehog_kernel.cuh"

extern "C" int tk_hedgehog(void *q, void *k, void *v, void *o, void *qmap, void *kmap, void *k_state,
                           void *kv_state, void *alphas, void *betas, int B, int H, int N, cudaStream_t stream) {
    if (B <= 0 || H <= 0 || N <= 0 || N % 64) return -1;
    hedgehog_globals g = hedgehog_init((bf16 *)q, (bf16 *)k, (bf16 *)v, (bf16 *)o, (bf16 *)qmap, (bf16 *)kmap,
                                       (float *)k_state, (float *)kv_state, (float *)alphas, (float *)betas,
                                       B, H, N);
    unsigned long mem_size = kittens::MAX_SHARED_MEMORY - 1024;
    static bool attr = false;
    if (!attr) {
        cudaError_t e = cudaFuncSetAttribute(hedgehog_linear_attention_smd,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize, mem_size);
        if (e != cudaSuccess) return (int)e;
        attr = true;
    }
    dim3 grid(H, B);
    hedgehog_linear_attention_smd<<<grid, NUM_THREADS, mem_size, stream>>>(g, N);
    return (int)cudaGetLastError();
}
