// C-ABI wrapper for ThunderKittens' FFT convolution kernel (kernels/fftconv/fftconv_pc.cu), cut out of
// TK's source into fftconv_kernel.cuh by bench/tk/build.sh (with its N = 1024 head-indexing fix). As
// TK's dispatch_fft_conv and launch<SEQ>: N = 4096 takes the 4096 kernel, anything else the 1024 one;
// a persistent grid of 132 blocks, NUM_THREADS_v threads, MAX_SHARED_MEMORY - 1024 bytes.
// u, o: bf16 [B, H, N1, N1] (N1 = sqrt(N)); kf, kf_imag: bf16 [H, 64, 64]; f, finv, tw, twinv (real and
// imag): bf16 [64, 64] (for N = 1024 the 32 x 32 factors placed as TK's Python module does). The kernel
// computes the circular convolution of length N (an FFT of size N).
#include "fftconv_kernel.cuh"

template <int SEQ> static int tk_launch(typename fft_template<SEQ>::layout::globals G, cudaStream_t stream) {
    using fftst = fft_template<SEQ>;
    unsigned long mem_size = (MAX_SHARED_MEMORY - 1024);
    static bool attr = false;
    if (!attr) {
        cudaError_t e = cudaFuncSetAttribute(prototype::lcsf::kernel<fftst>,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize, mem_size);
        if (e != cudaSuccess) return (int)e;
        attr = true;
    }
    dim3 grid(132);
    dim3 block(prototype::detail::NUM_THREADS_v<fftst>);
    prototype::lcsf::kernel<fftst><<<grid, block, mem_size, stream>>>(G);
    return (int)cudaGetLastError();
}

extern "C" int tk_fftconv(void *u, void *kf, void *kf_imag, void *f, void *f_imag, void *finv, void *finv_imag,
                          void *tw, void *tw_imag, void *twinv, void *twinv_imag, void *o, int B, int H, int N,
                          int N1, cudaStream_t stream) {
    if (B <= 0 || H <= 0 || !(N == 1024 || N == 4096) || N1 * N1 != N) return -1;
    bf16 *p[12] = {(bf16 *)u, (bf16 *)kf, (bf16 *)kf_imag, (bf16 *)f, (bf16 *)f_imag, (bf16 *)finv,
                   (bf16 *)finv_imag, (bf16 *)tw, (bf16 *)tw_imag, (bf16 *)twinv, (bf16 *)twinv_imag, (bf16 *)o};
    if (N == 4096)
        return tk_launch<4096>(setup_templates<4096>(p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9],
                                                     p[10], p[11], B, H, N, N1), stream);
    return tk_launch<1024>(setup_templates<1024>(p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9],
                                                 p[10], p[11], B, H, N, N1), stream);
}
