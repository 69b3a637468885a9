// tkc_ptx.cuh - the inline-PTX helpers that tkc's generated kernels call: shared-memory
// addresses, mbarriers, TMA loads and stores, wgmma synchronisation and descriptors, setmaxnreg,
// named barriers, stmatrix, fast math, atomic adds (red.global.add), the host-side tensor-map
// encoder and the launcher's clearing of zeroed outputs.
// tkc embeds this file in its binary and copies the fragments a kernel uses (each starts at a
// "// @fragment NAME" line) into the generated .cu, inside an anonymous namespace, so several
// generated files link together. The file also compiles on its own (tests/compile).
// Facts and encodings: ../shared/docs/hopper-primer.md (PTX ISA 9.0, checked on an H200).

// @fragment prelude
#include <atomic>
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>
#include <stdint.h>

#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ != 900 || !defined(__CUDA_ARCH_FEAT_SM90_ALL))
#error "tkc kernels use wgmma and setmaxnreg: compile with -gencode=arch=compute_90a,code=sm_90a"
#endif

#define TKC_DEVICE __device__ __forceinline__
#define TKC_INF __int_as_float(0x7f800000)

// @fragment smem
// The dynamic shared-memory base rounded up to 1024 B (the 128B swizzle period); the launcher
// asks for 1 KiB of slack to pay for it.
TKC_DEVICE unsigned char *tkc_align_smem(unsigned char *p) {
    return (unsigned char *)(((uintptr_t)p + 1023) & ~(uintptr_t)1023);
}
TKC_DEVICE uint32_t tkc_smem_addr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }
// ceiling division in 64 bits: a + b - 1 must not wrap for a near 2^31 (the launcher accepts
// dimensions up to 2^31 - 1), or a grid extent comes out negative and the kernel does nothing
TKC_DEVICE int tkc_cdiv(int a, int b) { return (int)(((long long)a + b - 1) / b); }

// @fragment mbarrier
// mbarriers: an 8-byte phase counter in shared memory. A phase completes when the expected
// arrivals have arrived and the expected transaction bytes have landed.
TKC_DEVICE void tkc_mbar_init(uint32_t bar, int count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
TKC_DEVICE void tkc_mbar_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
TKC_DEVICE void tkc_mbar_arrive(uint32_t bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
TKC_DEVICE void tkc_mbar_expect_tx(uint32_t bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
// Waits until the phase with the given parity has completed (parity 1 on a fresh barrier
// returns at once: it names the phase "before" the first).
TKC_DEVICE void tkc_mbar_wait(uint32_t bar, int parity) {
    uint32_t done;
    do {
        asm volatile(
            "{\n\t.reg .pred p;\n\t"
            "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
            "selp.b32 %0, 1, 0, p;\n\t}"
            : "=r"(done)
            : "r"(bar), "r"(parity)
            : "memory");
    } while (!done);
}

// @fragment tma_load
// TMA tile loads: global (through a tensor map) -> shared, completing on an mbarrier.
// Coordinates are element indices, innermost dimension first.
TKC_DEVICE void tkc_tma_load_2d(uint32_t dst, const CUtensorMap *map, int c0, int c1, uint32_t bar) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(dst),
        "l"((uint64_t)map), "r"(c0), "r"(c1), "r"(bar)
        : "memory");
}
TKC_DEVICE void tkc_tma_load_3d(uint32_t dst, const CUtensorMap *map, int c0, int c1, int c2, uint32_t bar) {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(dst),
        "l"((uint64_t)map), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
        : "memory");
}
TKC_DEVICE void tkc_tma_load_4d(uint32_t dst, const CUtensorMap *map, int c0, int c1, int c2, int c3, uint32_t bar) {
    asm volatile(
        "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];" ::"r"(dst),
        "l"((uint64_t)map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar)
        : "memory");
}
TKC_DEVICE void tkc_tma_prefetch_map(const CUtensorMap *map) {
    asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)map) : "memory");
}

// @fragment tma_load_1d
// TMA loads of a 1-d box (a vector from a rank-1 tensor), completing on an mbarrier.
TKC_DEVICE void tkc_tma_load_1d(uint32_t dst, const CUtensorMap *map, int c0, uint32_t bar) {
    asm volatile("cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2}], [%3];" ::"r"(dst),
                 "l"((uint64_t)map), "r"(c0), "r"(bar)
                 : "memory");
}
// the same box multicast into the blocks of a cluster in mask (with a cluster of blocks)
TKC_DEVICE void tkc_tma_load_1d_mc(uint32_t dst, const CUtensorMap *map, int c0, uint32_t bar, uint16_t mask) {
    asm volatile(
        "cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%2}], [%3], %4;" ::"r"(dst),
        "l"((uint64_t)map), "r"(c0), "r"(bar), "h"(mask)
        : "memory");
}

// @fragment cluster
// Thread-block clusters: a block's rank in its cluster, cluster-wide barriers, arrivals on a
// peer block's mbarrier, and TMA loads multicast into every block of a mask.
TKC_DEVICE uint32_t tkc_cluster_rank() {
    uint32_t r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
TKC_DEVICE void tkc_cluster_sync() {
    asm volatile("barrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;" ::: "memory");
}
// arrive on the mbarrier at the same shared-memory offset in block `rank` of the cluster. The
// default .release.cta is enough: the arrival says "my reads of the stage are done" (the wgmma
// that read it has been waited for), and nothing this thread wrote is read by the peer. The
// .release.cluster form orders every prior memory access at cluster scope and made the
// consumers of a clustered attention kernel 25% slower on the H200 (bench/RESULTS.md, run 56).
TKC_DEVICE void tkc_mbar_arrive_cluster(uint32_t bar, uint32_t rank) {
    uint32_t remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(bar), "r"(rank));
    asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(remote) : "memory");
}
TKC_DEVICE void tkc_tma_load_2d_mc(uint32_t dst, const CUtensorMap *map, int c0, int c1, uint32_t bar, uint16_t mask) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(dst),
        "l"((uint64_t)map), "r"(c0), "r"(c1), "r"(bar), "h"(mask)
        : "memory");
}
TKC_DEVICE void tkc_tma_load_3d_mc(uint32_t dst, const CUtensorMap *map, int c0, int c1, int c2, uint32_t bar, uint16_t mask) {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%2, %3, %4}], [%5], %6;" ::"r"(dst),
        "l"((uint64_t)map), "r"(c0), "r"(c1), "r"(c2), "r"(bar), "h"(mask)
        : "memory");
}
TKC_DEVICE void tkc_tma_load_4d_mc(uint32_t dst, const CUtensorMap *map, int c0, int c1, int c2, int c3, uint32_t bar, uint16_t mask) {
    asm volatile(
        "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%2, %3, %4, %5}], [%6], %7;" ::"r"(dst),
        "l"((uint64_t)map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar), "h"(mask)
        : "memory");
}

// @fragment tma_store
// TMA tile stores: shared -> global. Out-of-bounds parts of the box are clipped. Each thread
// that issues stores tracks them as bulk groups.
TKC_DEVICE void tkc_tma_store_2d(const CUtensorMap *map, int c0, int c1, uint32_t src) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];" ::"l"((uint64_t)map),
                 "r"(c0), "r"(c1), "r"(src)
                 : "memory");
}
TKC_DEVICE void tkc_tma_store_3d(const CUtensorMap *map, int c0, int c1, int c2, uint32_t src) {
    asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%1, %2, %3}], [%4];" ::"l"((uint64_t)map),
                 "r"(c0), "r"(c1), "r"(c2), "r"(src)
                 : "memory");
}
TKC_DEVICE void tkc_tma_store_4d(const CUtensorMap *map, int c0, int c1, int c2, int c3, uint32_t src) {
    asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%1, %2, %3, %4}], [%5];" ::"l"((uint64_t)map),
                 "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(src)
                 : "memory");
}
TKC_DEVICE void tkc_bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
// at most N of this thread's bulk groups may still be reading shared memory
template <int N> TKC_DEVICE void tkc_bulk_wait_read() {
    asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}
// at most N of this thread's bulk groups may still be incomplete
template <int N> TKC_DEVICE void tkc_bulk_wait() { asm volatile("cp.async.bulk.wait_group %0;" ::"n"(N) : "memory"); }

// @fragment proxy_fence
// Orders this thread's ordinary (generic-proxy) shared-memory accesses with the async proxy's (TMA,
// wgmma): writes before it are visible to TMA stores and wgmma reads after it, and reads before it
// (ldmatrix of a ring stage) are done before a TMA load that refills the stage once the release
// after it is seen (without it such a refill can land under the reads: bench/RESULTS.md, run 179).
TKC_DEVICE void tkc_fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

// @fragment grid_dep
// Programmatic dependent launch: a kernel launched with the programmatic-stream-serialization
// attribute may start before the kernel queued before it on the stream has ended, once every block
// of that kernel has called tkc_grid_dep_launch() (or exited). tkc_grid_dep_wait() returns when the
// grids it depends on have ended and their writes are visible; both do nothing in a plain launch.
TKC_DEVICE void tkc_grid_dep_launch() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }
TKC_DEVICE void tkc_grid_dep_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }

// @fragment tma_reduce
// TMA reduce-adds: global += shared, element by element, atomically per element; the element
// type is the tensor map's. Out-of-bounds parts of the box are clipped.
TKC_DEVICE void tkc_tma_add_2d(const CUtensorMap *map, int c0, int c1, uint32_t src) {
    asm volatile("cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group [%0, {%1, %2}], [%3];" ::"l"(
                     (uint64_t)map),
                 "r"(c0), "r"(c1), "r"(src)
                 : "memory");
}
TKC_DEVICE void tkc_tma_add_3d(const CUtensorMap *map, int c0, int c1, int c2, uint32_t src) {
    asm volatile("cp.reduce.async.bulk.tensor.3d.global.shared::cta.add.tile.bulk_group [%0, {%1, %2, %3}], [%4];" ::"l"(
                     (uint64_t)map),
                 "r"(c0), "r"(c1), "r"(c2), "r"(src)
                 : "memory");
}
TKC_DEVICE void tkc_tma_add_4d(const CUtensorMap *map, int c0, int c1, int c2, int c3, uint32_t src) {
    asm volatile("cp.reduce.async.bulk.tensor.4d.global.shared::cta.add.tile.bulk_group [%0, {%1, %2, %3, %4}], [%5];" ::"l"(
                     (uint64_t)map),
                 "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(src)
                 : "memory");
}

// @fragment wgmma_sync
// wgmma ordering: fence before a product whose registers were touched, commit closes a group,
// wait_group<N> returns when at most N groups are in flight.
TKC_DEVICE void tkc_wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
TKC_DEVICE void tkc_wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N> TKC_DEVICE void tkc_wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
// Pins values in registers at this point, so the compiler neither moves nor reuses the
// registers an asynchronous product reads or writes (no instruction is generated).
TKC_DEVICE void tkc_pin(float &x) { asm volatile("" : "+f"(x)::"memory"); }
TKC_DEVICE void tkc_pin(uint32_t &x) { asm volatile("" : "+r"(x)::"memory"); }
// A shared-memory matrix descriptor (see src/hopper.h for the bit layout).
TKC_DEVICE uint64_t tkc_desc(uint32_t smem_addr, uint32_t lbo, uint32_t sbo, uint32_t mode) {
    return (uint64_t)((smem_addr & 0x3FFFFu) >> 4) | ((uint64_t)((lbo >> 4) & 0x3FFFu) << 16) |
           ((uint64_t)((sbo >> 4) & 0x3FFFu) << 32) | ((uint64_t)mode << 62);
}

// @fragment setmaxnreg
// Moves registers between warpgroups: the producer gives some up, the consumers take them.
template <int N> TKC_DEVICE void tkc_setmaxnreg_dec() {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N));
}
template <int N> TKC_DEVICE void tkc_setmaxnreg_inc() {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N));
}

// @fragment named_barrier
// Named barriers 1..15 (0 is __syncthreads); the thread count is a multiple of 32.
TKC_DEVICE void tkc_bar_sync(int id, int threads) {
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
TKC_DEVICE void tkc_bar_arrive(int id, int threads) {
    asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// @fragment shared_f32
// Single elements of shared memory, by shared-space address: fp32 stores and loads (the scratch of
// column reductions) and loads of 16-bit elements widened to fp32 (shared vectors).
TKC_DEVICE void tkc_st_shared_f32(uint32_t addr, float v) {
    asm volatile("st.shared.f32 [%0], %1;" ::"r"(addr), "f"(v) : "memory");
}
TKC_DEVICE float tkc_ld_shared_f32(uint32_t addr) {
    float v;
    asm volatile("ld.shared.f32 %0, [%1];" : "=f"(v) : "r"(addr) : "memory");
    return v;
}
TKC_DEVICE float tkc_ld_shared_bf16(uint32_t addr) {
    unsigned short v;
    asm volatile("ld.shared.u16 %0, [%1];" : "=h"(v) : "r"(addr) : "memory");
    return __bfloat162float(__ushort_as_bfloat16(v));
}
TKC_DEVICE float tkc_ld_shared_fp16(uint32_t addr) {
    unsigned short v;
    asm volatile("ld.shared.u16 %0, [%1];" : "=h"(v) : "r"(addr) : "memory");
    return __half2float(__ushort_as_half(v));
}

// @fragment stmatrix
// Each lane of a warp gives one 16-byte row address; lane l's register i holds row l/4,
// columns 2(l%4) and 2(l%4)+1 of 8x8 matrix i.
TKC_DEVICE void tkc_stmatrix_x4(uint32_t addr, uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3) {
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared::cta.b16 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(r0), "r"(r1),
                 "r"(r2), "r"(r3)
                 : "memory");
}

// @fragment ldmatrix
// Lane l gives the 16-byte row address of row l % 8 of 8x8 matrix l / 8; register i receives
// row l/4, columns 2(l%4) and 2(l%4)+1 of matrix i (the layout stmatrix writes).
TKC_DEVICE void tkc_ldmatrix_x4(uint32_t addr, uint32_t &r0, uint32_t &r1, uint32_t &r2, uint32_t &r3) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared::cta.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr)
                 : "memory");
}

// @fragment shared_v2
// Two neighbouring fp32 values from or to shared memory (8-byte aligned).
TKC_DEVICE void tkc_lds_v2(uint32_t addr, float &x, float &y) {
    asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];" : "=f"(x), "=f"(y) : "r"(addr) : "memory");
}
TKC_DEVICE void tkc_sts_v2(uint32_t addr, float x, float y) {
    asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(addr), "f"(x), "f"(y) : "memory");
}

// @fragment math
// Fast math on fp32 values and 16-bit packing.
TKC_DEVICE float tkc_exp2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
TKC_DEVICE uint32_t tkc_pack_bf16(float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&v);
}
TKC_DEVICE uint32_t tkc_pack_fp16(float lo, float hi) {
    __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&v);
}
TKC_DEVICE float tkc_bf16_lo(uint32_t v) { return __uint_as_float(v << 16); }
TKC_DEVICE float tkc_bf16_hi(uint32_t v) { return __uint_as_float(v & 0xFFFF0000u); }
TKC_DEVICE float tkc_fp16_lo(uint32_t v) { return __half2float(__ushort_as_half((unsigned short)(v & 0xFFFFu))); }
TKC_DEVICE float tkc_fp16_hi(uint32_t v) { return __half2float(__ushort_as_half((unsigned short)(v >> 16))); }
TKC_DEVICE float tkc_round_bf16(float x) { return __bfloat162float(__float2bfloat16_rn(x)); }
TKC_DEVICE float tkc_round_fp16(float x) { return __half2float(__float2half_rn(x)); }

// @fragment red
// Atomic adds into global memory from registers (`G[...] += x`): red.global.add, which returns
// nothing, so the thread does not wait for the memory system. The v2 form (sm_90) adds two
// adjacent fp32 elements at an 8-byte aligned address in one instruction. The 16-bit forms
// round the value to the element type first (an add in bf16 / fp16 precision at the address).
TKC_DEVICE void tkc_red_add_f32(float *p, float v) {
    asm volatile("red.global.add.f32 [%0], %1;" ::"l"(p), "f"(v) : "memory");
}
TKC_DEVICE void tkc_red_add_v2_f32(float *p, float v0, float v1) {
    asm volatile("red.global.add.v2.f32 [%0], {%1, %2};" ::"l"(p), "f"(v0), "f"(v1) : "memory");
}
// 16-bit elements (sm_90 for bf16): one element, or two adjacent ones packed in 32 bits at a
// 4-byte aligned address (tkc_pack_bf16 / tkc_pack_fp16 of the math fragment)
TKC_DEVICE void tkc_red_add_bf16(__nv_bfloat16 *p, float v) {
    const unsigned short h = __bfloat16_as_ushort(__float2bfloat16_rn(v));
    asm volatile("red.global.add.noftz.bf16 [%0], %1;" ::"l"(p), "h"(h) : "memory");
}
TKC_DEVICE void tkc_red_add_bf16x2(__nv_bfloat16 *p, uint32_t v) {
    asm volatile("red.global.add.noftz.bf16x2 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
TKC_DEVICE void tkc_red_add_fp16(__half *p, float v) {
    const unsigned short h = __half_as_ushort(__float2half_rn(v));
    asm volatile("red.global.add.noftz.f16 [%0], %1;" ::"l"(p), "h"(h) : "memory");
}
TKC_DEVICE void tkc_red_add_fp16x2(__half *p, uint32_t v) {
    asm volatile("red.global.add.noftz.f16x2 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// @fragment rows_edge
// A rowwise tile's chunk of 8 consecutive columns that the 16-byte path cannot move (a row or
// columns outside the tensor, or strides without 16-byte vectors), element by element with bounds
// checks, out of line: the common path keeps its registers. p + ro is the row's first element, gc
// the chunk's first column, st the column stride; elements outside the tensor read as 0 and are
// not written. 16-bit elements travel as their bits (bf16 and fp16 alike), packed in pairs.
__device__ __noinline__ uint4 tkc_rows_load8_16(const void *p, long long ro, long long gc, long long st, long long cols,
                                                bool row_in) {
    const unsigned short *q = static_cast<const unsigned short *>(p) + ro;
    uint32_t w[4];
    for (int j = 0; j < 4; ++j) {
        const long long c0 = gc + 2 * j, c1 = c0 + 1;
        const uint32_t lo = row_in && c0 >= 0 && c0 < cols ? q[c0 * st] : 0u;
        const uint32_t hi = row_in && c1 >= 0 && c1 < cols ? q[c1 * st] : 0u;
        w[j] = lo | (hi << 16);
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
}
__device__ __noinline__ float4 tkc_rows_load4_32(const float *p, long long ro, long long gc, long long st, long long cols,
                                                 bool row_in) {
    float v[4];
    for (int j = 0; j < 4; ++j) v[j] = row_in && gc + j >= 0 && gc + j < cols ? p[ro + (gc + j) * st] : 0.f;
    return make_float4(v[0], v[1], v[2], v[3]);
}
__device__ __noinline__ void tkc_rows_store8_16(void *p, long long ro, long long gc, long long st, long long cols, bool row_in,
                                                uint4 v) {
    if (!row_in) return;
    unsigned short *q = static_cast<unsigned short *>(p) + ro;
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
    for (int j = 0; j < 8; ++j)
        if (gc + j >= 0 && gc + j < cols) q[(gc + j) * st] = (unsigned short)(w[j / 2] >> (16 * (j & 1)));
}
__device__ __noinline__ void tkc_rows_store4_32(float *p, long long ro, long long gc, long long st, long long cols, bool row_in,
                                                float4 v) {
    if (!row_in) return;
    const float w[4] = {v.x, v.y, v.z, v.w};
    for (int j = 0; j < 4; ++j)
        if (gc + j >= 0 && gc + j < cols) p[ro + (gc + j) * st] = w[j];
}

// @fragment zero
// Host side: clears the `zeroed` outputs of a kernel on the stream before it runs, with one kernel
// for all that are contiguous (16 bytes a store; the first and last bytes outside the 16-byte
// aligned middle one a thread; a row of blocks per tensor) and one for each view with other strides
// (a zero to each element through the strides, so nothing outside the view is touched). Each
// clearing kernel lets the next kernel launch as it starts (tkc_grid_dep_launch): the launcher
// launches the kernel that adds into the outputs programmatically after them, so its launch and its
// blocks' start overlap the clearing, and it waits for the cleared bytes (tkc_grid_dep_wait). The
// strided kernel sees 4 dimensions d0..d3 and strides s0..s3 (elements, outermost first; a tensor of
// lower rank is padded in front with size-1 dimensions); elem is 2 or 4 bytes.
struct tkc_zero_arg {
    void *p;
    const int64_t *dims, *st;  // rank entries, outermost first (the launcher's checked dimensions and strides)
    int rank, elem;
};
struct tkc_zero_spans {
    unsigned char *p[8];
    long long bytes[8];
};
__global__ void tkc_zero_bytes_kernel(const __grid_constant__ tkc_zero_spans s) {  // indexed in place: no local copy
    tkc_grid_dep_launch();
    unsigned char *const p = s.p[blockIdx.y];
    const long long bytes = s.bytes[blockIdx.y];
    const uintptr_t a = (uintptr_t)p, b = (a + 15) & ~(uintptr_t)15;
    const long long head = (long long)(b - a) < bytes ? (long long)(b - a) : bytes, body = (bytes - head) / 16,
                    tail = head + 16 * body;
    const long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    uint4 *q = reinterpret_cast<uint4 *>(p + head);
    for (long long i = t; i < body; i += (long long)gridDim.x * blockDim.x) q[i] = make_uint4(0u, 0u, 0u, 0u);
    if (t < head) p[t] = 0;
    if (t < bytes - tail) p[tail + t] = 0;
}
__global__ void tkc_zero_kernel(unsigned char *p, long long n, int elem, long long d1, long long d2, long long d3,
                                long long s0, long long s1, long long s2, long long s3) {
    tkc_grid_dep_launch();
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        const long long i3 = i % d3, r3 = i / d3, i2 = r3 % d2, r2 = r3 / d2, i1 = r2 % d1, i0 = r2 / d1;
        const long long off = i0 * s0 + i1 * s1 + i2 * s2 + i3 * s3;
        if (elem == 2) reinterpret_cast<unsigned short *>(p)[off] = 0;
        else reinterpret_cast<unsigned int *>(p)[off] = 0u;
    }
}
static bool tkc_zero(const tkc_zero_arg *z, int n, cudaStream_t stream) {
    tkc_zero_spans spans = {};
    int nspans = 0;
    long long most = 0;  // the largest contiguous tensor's 16-byte stores
    for (int k = 0; k < n; ++k) {
        long long count = 1, c = 1;
        bool contiguous = true;
        for (int d = z[k].rank - 1; d >= 0; --d) {
            contiguous &= z[k].dims[d] == 1 || z[k].st[d] == c;
            c *= z[k].dims[d];
            count *= z[k].dims[d];
        }
        if (contiguous && nspans < 8) {
            spans.p[nspans] = static_cast<unsigned char *>(z[k].p);
            spans.bytes[nspans] = count * z[k].elem;
            if (spans.bytes[nspans] / 16 > most) most = spans.bytes[nspans] / 16;
            nspans++;
            continue;
        }
        // a view through its strides (or a ninth contiguous tensor: the same kernel serves)
        long long d4[4] = {1, 1, 1, 1}, s4[4] = {0, 0, 0, 0};
        for (int i = 0; i < z[k].rank; ++i) d4[4 - z[k].rank + i] = z[k].dims[i], s4[4 - z[k].rank + i] = z[k].st[i];
        const long long blocks = (count + 255) / 256 < 4096 ? (count + 255) / 256 : 4096;
        tkc_zero_kernel<<<(unsigned)blocks, 256, 0, stream>>>(static_cast<unsigned char *>(z[k].p), count, z[k].elem, d4[1],
                                                             d4[2], d4[3], s4[0], s4[1], s4[2], s4[3]);
        if (cudaGetLastError() != cudaSuccess) return false;
    }
    if (nspans) {
        const long long blocks = (most + 255) / 256;
        tkc_zero_bytes_kernel<<<dim3((unsigned)(blocks < 1 ? 1 : blocks < 4096 ? blocks : 4096), (unsigned)nspans), 256, 0,
                                stream>>>(spans);
        if (cudaGetLastError() != cudaSuccess) return false;
    }
    return true;
}

// @fragment scratch
// Host side: an entry's scratch tensor. Device memory allocated on the stream where the entry
// declares it and freed on the stream when its C++ block ends, after the kernels queued on the
// stream that use it (stream order, so the launcher never waits for the GPU).
struct tkc_scratch {
    void *p = nullptr;
    cudaStream_t s;
    tkc_scratch(size_t bytes, cudaStream_t st, cudaError_t *err) : s(st) {
        *err = cudaMallocAsync(&p, bytes, st);
        if (*err != cudaSuccess) p = nullptr;
    }
    ~tkc_scratch() {
        if (p) cudaFreeAsync(p, s);
    }
    tkc_scratch(const tkc_scratch &) = delete;
    tkc_scratch &operator=(const tkc_scratch &) = delete;
};
// the bytes of a contiguous tensor of these dimensions, false when they do not fit in a size_t
static bool tkc_scratch_bytes(size_t *bytes, const int64_t *dims, int rank, size_t elem) {
    size_t n = elem;
    for (int d = 0; d < rank; ++d)
        if (dims[d] < 1 || __builtin_mul_overflow(n, (size_t)dims[d], &n)) return false;
    *bytes = n;
    return true;
}

// @fragment host
// Host side: the tensor-map encoder comes from the driver through the runtime, so programs
// need not link libcuda.
static PFN_cuTensorMapEncodeTiled_v12000 tkc_encode_tiled() {
    static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
    if (!fn) {
        void *p = nullptr;
        cudaDriverEntryPointQueryResult q;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q) != cudaSuccess ||
            q != cudaDriverEntryPointSuccess || !p)
            return nullptr;
        fn = (PFN_cuTensorMapEncodeTiled_v12000)p;
    }
    return fn;
}
// dims and box innermost first; strides in bytes for dims 1..rank-1
static bool tkc_make_map(CUtensorMap *map, CUtensorMapDataType type, int rank, const void *ptr, const uint64_t *dims,
                         const uint64_t *strides, const uint32_t *box, int swizzle) {
    PFN_cuTensorMapEncodeTiled_v12000 enc = tkc_encode_tiled();
    if (!enc) return false;
    const uint32_t elem_strides[5] = {1, 1, 1, 1, 1};
    CUresult r = enc(map, type, (cuuint32_t)rank, const_cast<void *>(ptr), dims, strides, box, elem_strides,
                     CU_TENSOR_MAP_INTERLEAVE_NONE, (CUtensorMapSwizzle)swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                     CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return r == CUDA_SUCCESS;
}

// @fragment launch_pdl
// Host side: launches kernel k, grid blocks of threads threads with smem bytes of dynamic shared
// memory, on stream s; with pdl the launch may start before the kernel queued before it ends
// (programmatic stream serialization; k waits for that grid: tkc_grid_dep_wait).
template <typename... P, typename... A>
static cudaError_t tkc_launch_pdl(void (*k)(P...), unsigned grid, int threads, int smem, cudaStream_t s, bool pdl, A... args) {
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.gridDim = dim3(grid);
    cfg.blockDim = dim3((unsigned)threads);
    cfg.dynamicSmemBytes = (size_t)smem;
    cfg.stream = s;
    cfg.attrs = attr;
    cfg.numAttrs = pdl ? 1 : 0;
    return cudaLaunchKernelEx(&cfg, k, args...);
}

// @fragment stage
// A tensor TMA cannot use where it lies (its address, or a row pitch, not a 16-byte multiple; its
// last stride 1) goes through a copy with padded rows: a buffer from the stream-ordered allocator,
// rows of the tensor's last dimension rounded up to 16 bytes, leading dimensions packed. The
// launcher copies the tensor in before the kernel when the kernel reads it, back after when it
// writes it (tkc_unstage), and frees the buffer on the stream when it returns (tkc_staged's
// destructor), so the copies and the kernel run in stream order and nothing waits on the host.
struct tkc_staged {
    void *buf = nullptr;
    cudaStream_t stream = nullptr;
    void *user = nullptr;   // the caller's tensor: where the results go back
    int64_t st[4] = {};     // and its strides (tensors have at most 4 dimensions: sema.c)
    const int64_t *dims = nullptr;
    int rank = 0, elem = 0;
    ~tkc_staged() {
        if (buf) cudaFreeAsync(buf, stream);
    }
};
// How TMA takes a tensor (st: element strides, the last 1): 0 as it lies, 1 through a padded copy,
// -1 not at all (a copy needs rows that do not overlap).
static int tkc_tma_layout(const void *p, const int64_t *st, const int64_t *dims, int rank, int elem) {
    bool ready = (uintptr_t)p % 16 == 0;
    for (int d = 0; d + 1 < rank; ++d)
        if ((st[d] * elem) % 16 || st[d] * elem >= (1LL << 40)) ready = false;
    if (ready) return 0;
    return rank > 1 && dims[rank - 2] > 1 && st[rank - 2] < dims[rank - 1] ? -1 : 1;
}
// The padded copy's row pitch in elements: the last dimension rounded up to 16 bytes.
static int64_t tkc_stage_pitch(const int64_t *dims, int rank, int elem) {
    return (dims[rank - 1] * elem + 15) / 16 * 16 / elem;
}
// Copies every row between the tensor (ptr, its strides st) and the padded copy (buf): to the
// copy when in, else back. One 2-D copy per matrix of the two innermost dimensions, or one for
// all when the tensor's rows are evenly spaced.
static cudaError_t tkc_stage_rows(void *buf, void *ptr, const int64_t *st, const int64_t *dims, int rank, int elem, bool in,
                                  cudaStream_t s) {
    const int64_t pitch = tkc_stage_pitch(dims, rank, elem), width = dims[rank - 1] * elem;
    int64_t rows = rank > 1 ? dims[rank - 2] : 1, mats = 1;
    for (int d = 0; d + 2 < rank; ++d) mats *= dims[d];
    const int64_t tpitch = rank > 1 ? st[rank - 2] : dims[rank - 1];
    bool even = true;  // the tensor's rows evenly spaced: every leading stride the packed one
    for (int d = rank - 3; d >= 0 && even; --d) even = st[d] == st[d + 1] * dims[d + 1];
    if (even) rows *= mats, mats = 1;
    for (int64_t m = 0; m < mats; ++m) {
        int64_t off = 0, rem = m;  // the matrix's first element in the tensor
        for (int d = rank - 3; d >= 0; --d) off += rem % dims[d] * st[d], rem /= dims[d];
        char *b = static_cast<char *>(buf) + (size_t)(m * rows * pitch * elem), *t = static_cast<char *>(ptr) + (size_t)(off * elem);
        cudaError_t e = in ? cudaMemcpy2DAsync(b, (size_t)(pitch * elem), t, (size_t)(tpitch * elem), (size_t)width, (size_t)rows,
                                               cudaMemcpyDeviceToDevice, s)
                           : cudaMemcpy2DAsync(t, (size_t)(tpitch * elem), b, (size_t)(pitch * elem), (size_t)width, (size_t)rows,
                                               cudaMemcpyDeviceToDevice, s);
        if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
}
// Makes the padded copy of a tensor (its strides st, which become the copy's; the caller's are
// kept in sg for tkc_unstage) and, when copy_in, fills it: returns the CUDA error of the allocation
// or the copy.
static cudaError_t tkc_stage(tkc_staged *sg, const void *ptr, int64_t *st, const int64_t *dims, int rank, int elem,
                             bool copy_in, cudaStream_t s) {
    const int64_t pitch = tkc_stage_pitch(dims, rank, elem);
    int64_t rows = 1;
    for (int d = 0; d + 1 < rank; ++d) rows *= dims[d];
    sg->stream = s, sg->user = const_cast<void *>(ptr), sg->dims = dims, sg->rank = rank, sg->elem = elem;
    for (int d = 0; d < rank; ++d) sg->st[d] = st[d];
    cudaError_t e = cudaMallocAsync(&sg->buf, (size_t)(rows * pitch * elem), s);
    if (e != cudaSuccess) {
        sg->buf = nullptr;
        return e;
    }
    // what the kernel reads is copied in; what it only writes starts zeroed (the copy back then reads
    // defined bytes, and compute-sanitizer's initcheck, which does not see TMA's bulk stores, agrees)
    e = copy_in ? tkc_stage_rows(sg->buf, sg->user, st, dims, rank, elem, true, s)
                : cudaMemsetAsync(sg->buf, 0, (size_t)(rows * pitch * elem), s);
    if (e != cudaSuccess) return e;
    int64_t c = pitch;  // the copy's strides: rows of pitch elements, leading dimensions packed
    st[rank - 1] = 1;
    for (int d = rank - 2; d >= 0; --d) st[d] = c, c *= dims[d];
    return cudaSuccess;
}
// The results of a staged output back where the caller's tensor lies (nothing to do when it was
// used in place).
static cudaError_t tkc_unstage(const tkc_staged *sg) {
    return sg->buf ? tkc_stage_rows(sg->buf, sg->user, sg->st, sg->dims, sg->rank, sg->elem, false, sg->stream) : cudaSuccess;
}
