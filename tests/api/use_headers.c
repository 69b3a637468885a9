/* use_headers.c - a C (or C++) program that uses the generated headers the way a client would:
 * every header twice and all of them together (include guards, TKC_STREAM_T, TKC_STATUS_CODES,
 * TKC_STATUS_STRING), the declarations as typed function pointers, and tkc_status_string.
 * Alone, it defines stubs of the launchers with the parameter types written out by hand, which
 * must agree with the declarations. With -DTKC_API_LINKED it is linked against the nvcc-compiled
 * .cu files instead and calls each launcher with arguments that break one documented rule at a
 * time, checking the status code; every such call returns before the launcher touches CUDA, so
 * no GPU is needed.
 * Build: cc -std=c99 -pedantic -Wall -Wextra -Werror -I<dir with gemm.h attn_fwd.h two.h> */
#include "gemm.h"
#include "attn_fwd.h"
#include "two.h"
#include "gemm.h"
#include "attn_fwd.h"
#include "two.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* the signatures the headers document, spelled out by hand */
typedef int (*gemm_fn)(const void *, const int64_t *, const void *, const int64_t *, void *, const int64_t *, int64_t,
                       int64_t, int64_t, tkc_stream_t);
typedef int (*attn_fn)(const void *, const int64_t *, const void *, const int64_t *, const void *, const int64_t *,
                       void *, const int64_t *, void *, const int64_t *, int64_t, int64_t, int64_t, int64_t, float,
                       tkc_stream_t);
typedef int (*scaled_gemm_fn)(const void *, const int64_t *, const void *, const int64_t *, void *, const int64_t *,
                              int64_t, int64_t, int64_t, float, tkc_stream_t);
typedef int (*rows_fn)(const void *, const int64_t *, const void *, const int64_t *, void *, const int64_t *, void *,
                       const int64_t *, int64_t, int64_t, float, int32_t, tkc_stream_t);

static int failures;

static void expect(const char *what, int got, int want) {
    if (got == want) return;
    printf("FAIL %s: got %d (%s), expected %d (%s)\n", what, got, tkc_status_string(got), want, tkc_status_string(want));
    failures++;
}

#ifndef TKC_API_LINKED
/* Stub definitions with the parameter types written out by hand: a definition whose types differ
 * from the header's declaration is an error (as C, and as C++ under extern "C"). */
#ifdef __cplusplus
extern "C" {
#endif
int tkc_gemm(const void *A, const int64_t *A_strides, const void *B, const int64_t *B_strides, void *C,
             const int64_t *C_strides, int64_t M, int64_t K, int64_t N, tkc_stream_t stream) {
    (void)A, (void)A_strides, (void)B, (void)B_strides, (void)C, (void)C_strides, (void)M, (void)K, (void)N;
    (void)stream;
    return 42;
}
int tkc_attn_fwd(const void *Q, const int64_t *Q_strides, const void *K, const int64_t *K_strides, const void *V,
                 const int64_t *V_strides, void *O, const int64_t *O_strides, void *L, const int64_t *L_strides,
                 int64_t B, int64_t H, int64_t N, int64_t HKV, float scale, tkc_stream_t stream) {
    (void)Q, (void)Q_strides, (void)K, (void)K_strides, (void)V, (void)V_strides, (void)O, (void)O_strides, (void)L;
    (void)L_strides, (void)B, (void)H, (void)N, (void)HKV, (void)scale, (void)stream;
    return 42;
}
int tkc_scaled_gemm(const void *A, const int64_t *A_strides, const void *B, const int64_t *B_strides, void *C,
                    const int64_t *C_strides, int64_t M, int64_t K, int64_t N, float alpha, tkc_stream_t stream) {
    (void)A, (void)A_strides, (void)B, (void)B_strides, (void)C, (void)C_strides, (void)M, (void)K, (void)N;
    (void)alpha, (void)stream;
    return 42;
}
int tkc_rows(const void *Q, const int64_t *Q_strides, const void *Bias, const int64_t *Bias_strides, void *O,
             const int64_t *O_strides, void *Lse, const int64_t *Lse_strides, int64_t B, int64_t N, float scale,
             int32_t window, tkc_stream_t stream) {
    (void)Q, (void)Q_strides, (void)Bias, (void)Bias_strides, (void)O, (void)O_strides, (void)Lse, (void)Lse_strides;
    (void)B, (void)N, (void)scale, (void)window, (void)stream;
    return 42;
}
#ifdef __cplusplus
}
#endif

static void launchers(void) {
    expect("stub tkc_gemm", tkc_gemm(NULL, NULL, NULL, NULL, NULL, NULL, 1, 1, 1, NULL), 42);
}
#else
static uint64_t storage[64];

/* a host address with the given alignment (and no more than that when odd is set); never
 * dereferenced: the calls below fail their checks first */
static void *at(unsigned align, int odd) {
    uintptr_t p = ((uintptr_t)storage + 63) & ~(uintptr_t)63;
    return (void *)(p + (odd ? align : 0));
}

static void launchers(void) {
    void *ok = at(16, 0), *off8 = at(8, 1), *off2 = at(2, 1), *off1 = at(1, 1);
    const int64_t pitch_odd[2] = {65, 1};   /* 65 bf16 = 130 bytes: not a 16-byte pitch, so staged */
    const int64_t overlap[2] = {30, 1};     /* rows of 64 elements 30 apart: staging cannot copy them */
    const int64_t last_bad[2] = {128, 2};   /* TMA needs the last stride to be 1 */
    const int64_t zero[2] = {0, 1};         /* strides must be >= 1 */
    expect("gemm: M = 0", tkc_gemm(ok, NULL, ok, NULL, ok, NULL, 0, 64, 64, NULL), TKC_ERR_DIM);
    expect("gemm: N = 2^31", tkc_gemm(ok, NULL, ok, NULL, ok, NULL, 64, 64, 2147483648LL, NULL), TKC_ERR_DIM);
    expect("gemm: A null", tkc_gemm(NULL, NULL, ok, NULL, ok, NULL, 64, 64, 64, NULL), TKC_ERR_NULL);
    expect("gemm: C null", tkc_gemm(ok, NULL, ok, NULL, NULL, NULL, 64, 64, 64, NULL), TKC_ERR_NULL);
    /* a TMA tensor whose base or pitch breaks the 16-byte rule is staged through a padded copy: the
     * launcher gets past its checks and fails at the copy's allocation (no GPU here), not at them */
    expect("gemm: B 8-byte aligned (staged)", tkc_gemm(ok, NULL, off8, NULL, ok, NULL, 64, 64, 64, NULL), TKC_ERR_LAUNCH);
    expect("gemm: A pitch 130 bytes (staged)", tkc_gemm(ok, pitch_odd, ok, NULL, ok, NULL, 64, 64, 64, NULL), TKC_ERR_LAUNCH);
    expect("gemm: K = 12 (rows of 24 bytes, staged)", tkc_gemm(ok, NULL, ok, NULL, ok, NULL, 64, 12, 64, NULL), TKC_ERR_LAUNCH);
    expect("gemm: B 1-byte aligned", tkc_gemm(ok, NULL, off1, NULL, ok, NULL, 64, 64, 64, NULL), TKC_ERR_ALIGN);
    expect("gemm: A rows overlap", tkc_gemm(ok, overlap, ok, NULL, ok, NULL, 64, 64, 64, NULL), TKC_ERR_STRIDE);
    expect("gemm: B last stride 2", tkc_gemm(ok, NULL, ok, last_bad, ok, NULL, 64, 64, 64, NULL), TKC_ERR_STRIDE);
    expect("gemm: C stride 0", tkc_gemm(ok, NULL, ok, NULL, ok, zero, 64, 64, 64, NULL), TKC_ERR_STRIDE);
    /* attn_fwd: require H % HKV == 0; L is accessed by threads (4-byte alignment) */
    expect("attn_fwd: H % HKV != 0",
           tkc_attn_fwd(ok, NULL, ok, NULL, ok, NULL, ok, NULL, ok, NULL, 1, 4, 128, 3, 1.0f, NULL), TKC_ERR_REQUIRE);
    expect("attn_fwd: L 2-byte aligned",
           tkc_attn_fwd(ok, NULL, ok, NULL, ok, NULL, ok, NULL, off2, NULL, 1, 4, 128, 2, 1.0f, NULL), TKC_ERR_ALIGN);
    expect("attn_fwd: HKV = 0",
           tkc_attn_fwd(ok, NULL, ok, NULL, ok, NULL, ok, NULL, ok, NULL, 1, 4, 128, 0, 1.0f, NULL), TKC_ERR_DIM);
    /* two.tk */
    expect("scaled_gemm: K % 8 != 0", tkc_scaled_gemm(ok, NULL, ok, NULL, ok, NULL, 64, 12, 64, 2.0f, NULL),
           TKC_ERR_REQUIRE);
    expect("rows: Q null", tkc_rows(NULL, NULL, ok, NULL, ok, NULL, ok, NULL, 2, 128, 1.0f, 128, NULL), TKC_ERR_NULL);
    expect("rows: Bias 2-byte aligned", tkc_rows(ok, NULL, off2, NULL, ok, NULL, ok, NULL, 2, 128, 1.0f, 128, NULL),
           TKC_ERR_ALIGN);
}
#endif

int main(void) {
    static const char *const names[] = {"TKC_OK",         "TKC_ERR_NULL",    "TKC_ERR_ALIGN",      "TKC_ERR_DIM",
                                        "TKC_ERR_STRIDE", "TKC_ERR_REQUIRE", "TKC_ERR_TENSOR_MAP", "TKC_ERR_LAUNCH"};
    const int codes[] = {TKC_OK,         TKC_ERR_NULL,    TKC_ERR_ALIGN,      TKC_ERR_DIM,
                         TKC_ERR_STRIDE, TKC_ERR_REQUIRE, TKC_ERR_TENSOR_MAP, TKC_ERR_LAUNCH};
    int i;
    /* the declarations have exactly these types */
    gemm_fn g = tkc_gemm;
    attn_fn a = tkc_attn_fwd;
    scaled_gemm_fn s = tkc_scaled_gemm;
    rows_fn r = tkc_rows;
    (void)g;
    (void)a;
    (void)s;
    (void)r;
    for (i = 0; i < (int)(sizeof codes / sizeof codes[0]); i++) {
        const char *t = tkc_status_string(codes[i]);
        size_t n = strlen(names[i]);
        expect(names[i], codes[i], i);
        if (strncmp(t, names[i], n) || strncmp(t + n, ": ", 2) || !t[n + 2]) {
            printf("FAIL tkc_status_string(%d) = \"%s\"\n", codes[i], t);
            failures++;
        }
    }
    if (strcmp(tkc_status_string(99), "unknown tkc status code")) {
        printf("FAIL tkc_status_string(99) = \"%s\"\n", tkc_status_string(99));
        failures++;
    }
    launchers();
    printf("%s: %d failures\n", failures ? "FAIL" : "ok", failures);
    return failures ? 1 : 0;
}
