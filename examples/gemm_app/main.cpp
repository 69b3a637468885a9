// main.cpp - gemm_app: C = A @ B on the GPU with the kernel tkc generated from matmul.tk,
// compared with a CPU reference on small sizes (one of them ragged, one with a padded row pitch).
// Exit status: 0 all checks pass, 1 a mismatch or an error, 2 no usable GPU (an H100/H200, sm_90).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "matmul.h"  // tkc --emit=header, written by tkc_add_kernel(... HEADERS)

#define CUDA_CHECK(call)                                                                               \
    do {                                                                                               \
        cudaError_t e_ = (call);                                                                       \
        if (e_ != cudaSuccess) {                                                                       \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            return false;                                                                              \
        }                                                                                              \
    } while (0)

// bf16 <-> float on the host (round to nearest even; the inputs here are finite)
static uint16_t to_bf16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
static float from_bf16(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

static uint32_t rng = 12345u;
static float uniform() {  // [-1, 1)
    rng = rng * 1664525u + 1013904223u;
    return (float)(rng >> 8) / 8388608.0f - 1.0f;
}

// One check: A is M x K with row pitch lda >= K (elements), B is K x N, C is M x N, contiguous.
static bool check(int64_t M, int64_t N, int64_t K, int64_t lda) {
    std::vector<uint16_t> a((size_t)(M * lda)), b((size_t)(K * N)), c((size_t)(M * N));
    for (auto &x : a) x = to_bf16(uniform());
    for (auto &x : b) x = to_bf16(uniform());

    void *dA = nullptr, *dB = nullptr, *dC = nullptr;
    CUDA_CHECK(cudaMalloc(&dA, a.size() * 2));
    CUDA_CHECK(cudaMalloc(&dB, b.size() * 2));
    CUDA_CHECK(cudaMalloc(&dC, c.size() * 2));
    CUDA_CHECK(cudaMemcpy(dA, a.data(), a.size() * 2, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dB, b.data(), b.size() * 2, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(dC, 0xff, c.size() * 2));  // NaNs: a tile the kernel misses shows up

    const int64_t a_strides[2] = {lda, 1};  // NULL would mean contiguous
    int st = tkc_matmul(dA, lda == K ? nullptr : a_strides, dB, nullptr, dC, nullptr, M, K, N, /*stream=*/nullptr);
    if (st != TKC_OK) {
        std::fprintf(stderr, "tkc_matmul(M=%lld, N=%lld, K=%lld): %s (%d)\n", (long long)M, (long long)N,
                     (long long)K, tkc_status_string(st), st);
        return false;
    }
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemcpy(c.data(), dC, c.size() * 2, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaFree(dA));
    CUDA_CHECK(cudaFree(dB));
    CUDA_CHECK(cudaFree(dC));

    double worst = 0;
    int64_t bad = 0;
    std::vector<float> row((size_t)N);
    for (int64_t i = 0; i < M; i++) {
        std::fill(row.begin(), row.end(), 0.0f);
        for (int64_t k = 0; k < K; k++) {
            float x = from_bf16(a[(size_t)(i * lda + k)]);
            const uint16_t *brow = &b[(size_t)(k * N)];
            for (int64_t j = 0; j < N; j++) row[(size_t)j] += x * from_bf16(brow[j]);
        }
        for (int64_t j = 0; j < N; j++) {
            double ref = row[(size_t)j], got = from_bf16(c[(size_t)(i * N + j)]);
            double err = std::fabs(got - ref);
            if (!(err <= 1e-2 + 1e-2 * std::fabs(ref))) {  // bf16 output: about 4e-3 relative
                if (bad++ < 5)
                    std::fprintf(stderr, "  C[%lld, %lld] = %g, expected %g\n", (long long)i, (long long)j, got, ref);
            }
            if (err > worst || std::isnan(err)) worst = err;
        }
    }
    std::printf("M=%-4lld N=%-4lld K=%-4lld lda=%-4lld max |error| %.3g  %s\n", (long long)M, (long long)N,
                (long long)K, (long long)lda, worst, bad ? "MISMATCH" : "ok");
    if (bad) std::fprintf(stderr, "  %lld of %lld elements differ\n", (long long)bad, (long long)(M * N));
    return bad == 0;
}

int main() {
    // the launcher checks its arguments before touching the GPU
    int st = tkc_matmul(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 64, 64, 64, nullptr);
    if (st != TKC_ERR_NULL) {
        std::fprintf(stderr, "tkc_matmul(NULL, ...) returned %s, expected TKC_ERR_NULL\n", tkc_status_string(st));
        return 1;
    }

    int device = 0;
    cudaDeviceProp prop;
    if (cudaGetDevice(&device) != cudaSuccess || cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
        std::fprintf(stderr, "gemm_app: no CUDA device\n");
        return 2;
    }
    if (prop.major != 9 || prop.minor != 0) {
        std::fprintf(stderr, "gemm_app: %s is sm_%d%d; the kernel is built for sm_90a (H100/H200)\n", prop.name,
                     prop.major, prop.minor);
        return 2;
    }
    std::printf("%s\n", prop.name);

    bool ok = check(256, 512, 384, 384);  // whole tiles
    ok = check(200, 136, 72, 72) && ok;   // ragged in every dimension
    ok = check(320, 256, 128, 192) && ok; // A rows 192 elements apart (strides {192, 1})
    std::printf("%s\n", ok ? "all checks passed" : "FAILED");
    return ok ? 0 : 1;
}
