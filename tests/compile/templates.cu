// templates.cu - compiles templates/tkc_ptx.cuh, templates/wgmma.cuh and templates/tkc_philox.cuh on
// their own, without tkc, and instantiates their wrappers the way generated kernels call them (built
// by tests/nvcc_check.sh). The kernels are never launched: they only have to pass nvcc and ptxas for
// sm_90a without spills.
#include "tkc_ptx.cuh"
#include "wgmma.cuh"
#include "tkc_philox.cuh"

// one producer warpgroup and two consumer warpgroups, as in generated/gemm.cu
__global__ void __launch_bounds__(384, 1)
    tkc_templates_probe(const __grid_constant__ CUtensorMap tm2, const __grid_constant__ CUtensorMap tm4, float *out) {
    extern __shared__ __align__(1024) unsigned char tkc_smem_raw[];
    unsigned char *smem = tkc_align_smem(tkc_smem_raw);
    const uint32_t a_smem = tkc_smem_addr(smem);            // A: 128 x 64 bf16, 128B swizzle
    const uint32_t b_smem = a_smem + 16384;                 // B: 64 x 256 bf16, four atom columns
    const uint32_t staging = b_smem + 32768;                // 64 x 64 bf16 per consumer warpgroup
    const uint32_t full = staging + 2 * 8192, empty = full + 8;
    const int wg = threadIdx.x / 128, wg_thread = threadIdx.x % 128, lane = threadIdx.x % 32;
    if (threadIdx.x == 0) {
        tkc_mbar_init(full, 1);
        tkc_mbar_init(empty, 2);
        tkc_mbar_init_fence();
    }
    __syncthreads();
    if (wg == 0) {
        tkc_setmaxnreg_dec<40>();
        if (threadIdx.x == 0) {
            tkc_tma_prefetch_map(&tm2);
            tkc_mbar_wait(empty, 1);
            tkc_mbar_expect_tx(full, 16384 + 32768);
            tkc_tma_load_2d(a_smem, &tm2, 0, blockIdx.x * 128, full);
            tkc_tma_load_3d(b_smem, &tm4, 0, 0, blockIdx.y, full);
            tkc_tma_load_4d(b_smem + 8192, &tm4, 64, 0, blockIdx.y, 0, full);
        }
        return;
    }
    tkc_setmaxnreg_inc<232>();
    const int cwg = wg - 1;
    float acc[128];
    tkc_mbar_wait(full, 0);
    tkc_wgmma_fence();
    const uint64_t da = tkc_desc(a_smem + (uint32_t)cwg * 8192, 16, 1024, 1);   // A: K-major
    const uint64_t db = tkc_desc(b_smem, 8192, 1024, 1);                        // B: N-major
    tkc_wgmma_m64n256k16_ss_bf16<0, 1, 1>(&acc[0], da + 0, db + 0, 0);
    tkc_wgmma_m64n256k16_ss_bf16<0, 1, 1>(&acc[0], da + 2, db + 128, 1);
    tkc_wgmma_m64n256k16_ss_bf16<0, 1, 1>(&acc[0], da + 4, db + 256, 1);
    tkc_wgmma_m64n256k16_ss_bf16<0, 1, 1>(&acc[0], da + 6, db + 384, 1);
    tkc_wgmma_commit();
    tkc_wgmma_wait<0>();
    for (int i = 0; i < 128; ++i) tkc_pin(acc[i]);
    if (wg_thread == 0) tkc_mbar_arrive(empty);
    // a register A operand (RS form), fp16, and a transposed shared A (SS, tA = 1), 64 wide
    float o[32];
    uint32_t a0 = tkc_pack_fp16(acc[0], acc[1]), a1 = tkc_pack_fp16(acc[2], acc[3]);
    uint32_t a2 = tkc_pack_fp16(acc[4], acc[5]), a3 = tkc_pack_fp16(acc[6], acc[7]);
    tkc_pin(a0);
    tkc_wgmma_fence();
    tkc_wgmma_m64n64k16_rs_fp16<1, 1>(&o[0], a0, a1, a2, a3, db, 0);
    tkc_wgmma_m64n64k16_ss_fp16<1, 1, -1>(&o[0], da, db, 1);
    tkc_wgmma_m64n16k16_rs_bf16<0, 1>(&o[0], a0, a1, a2, a3, db, 1);
    tkc_wgmma_commit();
    tkc_wgmma_wait<0>();
    for (int i = 0; i < 32; ++i) tkc_pin(o[i]);
    // epilogue: stmatrix into the warpgroup's staging chunk, proxy fence, named barrier, TMA store
    const uint32_t buf = staging + (uint32_t)cwg * 8192;
    const int w = wg_thread / 32, mi = lane / 8, row = 16 * w + lane % 8 + 8 * (mi & 1), col = 8 * (mi >> 1);
    const uint32_t addr = buf + row * 128 + ((((col % 64) / 8) ^ (row & 7)) << 4);
    tkc_stmatrix_x4(addr, tkc_pack_bf16(o[0], o[1]), tkc_pack_bf16(o[2], o[3]), tkc_pack_bf16(o[4], o[5]),
                    tkc_pack_bf16(o[6], o[7]));
    tkc_fence_proxy_async();
    tkc_bar_sync(1 + cwg, 128);
    if (wg_thread == 0) {
        tkc_tma_store_2d(&tm2, 64 * cwg, blockIdx.x * 128, buf);
        tkc_tma_store_3d(&tm4, 0, 64 * cwg, blockIdx.y, buf);
        tkc_tma_store_4d(&tm4, 0, 64 * cwg, blockIdx.y, 0, buf);
        tkc_bulk_commit();
        tkc_bulk_wait_read<0>();
        tkc_bulk_wait<0>();
    }
    tkc_bar_arrive(3, 256);
    float r = tkc_exp2(o[8]) + tkc_bf16_lo(a0) + tkc_bf16_hi(a1) + tkc_fp16_lo(a2) + tkc_fp16_hi(a3);
    r += tkc_round_bf16(o[9]) + tkc_round_fp16(o[10]) + (float)tkc_cdiv(threadIdx.x, 7);
    out[blockIdx.x * 256 + threadIdx.x - 128] = r + (r > 0.f ? TKC_INF : 0.f);
    tkc_red_add_f32(out + threadIdx.x, r);                      // atomic adds from registers
    tkc_red_add_v2_f32(out + 2 * (threadIdx.x / 2), o[11], o[12]);
    tkc_red_add_bf16x2(reinterpret_cast<__nv_bfloat16 *>(out) + 2 * threadIdx.x, tkc_pack_bf16(o[13], o[14]));
    tkc_red_add_bf16(reinterpret_cast<__nv_bfloat16 *>(out) + 1, o[15]);
    tkc_red_add_fp16x2(reinterpret_cast<__half *>(out) + 2 * threadIdx.x, tkc_pack_fp16(o[16], o[17]));
    tkc_red_add_fp16(reinterpret_cast<__half *>(out) + 1, o[18]);
}

// the host side: encode a tensor map the way the launchers do (never called here)
extern "C" int tkc_templates_probe_map(void *ptr) {
    CUtensorMap map;
    const uint64_t dims[2] = {64, 128}, strides[1] = {128};
    const uint32_t box[2] = {64, 64};
    return tkc_make_map(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, ptr, dims, strides, box, 3) ? 0 : 1;
}

// the host side: clear zeroed outputs the way the launchers do, a view and a contiguous tensor
// (never called here)
extern "C" int tkc_templates_probe_zero(void *ptr, void *ptr2, cudaStream_t stream) {
    const int64_t dims[2] = {64, 128}, st[2] = {256, 1}, st2[2] = {128, 1};
    const tkc_zero_arg z[2] = {{ptr, dims, st, 2, 4}, {ptr2, dims, st2, 2, 2}};
    return tkc_zero(z, 2, stream) ? 0 : 1;
}

// dropout's generator (tkc_philox.cuh): one Philox call per four consecutive elements, the
// integer threshold compare, the fp32 scale of kept elements
__global__ void tkc_philox_probe(const __nv_bfloat16 *x, __nv_bfloat16 *y, uint64_t seed, float p, long long n) {
    const long long g = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (4 * g >= n) return;
    uint32_t w[4];
    tkc_philox_group(seed, (uint64_t)g, w);
    const uint32_t t = tkc_philox_threshold(p);
    const float scale = 1.0f / (1.0f - p);
    for (int j = 0; j < 4; j++)
        if (4 * g + j < n) y[4 * g + j] = __float2bfloat16((w[j] >> 8) >= t ? __bfloat162float(x[4 * g + j]) * scale : 0.0f);
    if (g == 0) {
        float u[4];
        tkc_philox_uniform4(seed, (uint64_t)n, u);
        y[0] = __float2bfloat16(u[0] + u[3] + tkc_philox_uniform(seed, (uint64_t)n - 1));
    }
}

// keep(): eight elements a call at 16 bits each, and one element alone
__global__ void tkc_keep_probe(const __nv_bfloat16 *x, __nv_bfloat16 *y, uint64_t seed, float p, long long n) {
    const long long g = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (8 * g >= n) return;
    const uint32_t t = tkc_philox_threshold16(p);
    for (int k = 0; k < 8; k++)
        if (8 * g + k < n) y[8 * g + k] = tkc_philox_keep_gk(seed, (uint64_t)g, k, t) ? x[8 * g + k] : __float2bfloat16(0.0f);
    if (g == 0) y[0] = __float2bfloat16((float)tkc_philox_keep(seed, (uint64_t)n - 1, t));
}
