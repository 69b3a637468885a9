/* emit_launch.c - the extern "C" host launcher of each kernel: validates its arguments, builds
 * the TMA tensor maps and launches. Part of the CUDA emitter (emit_int.h). */
#include "emit_int.h"

void kernel_params(Em *e, StrBuf *b, bool decl) {
    const PlanKernel *pk = e->pk;
    const SemaKernel *sk = e->sk;
    bool first = true;
#define SEP() (first ? (first = false, "") : ", ")
    for (int i = 0; i < pk->maps.n; i++) {
        if (decl) sb_printf(b, "%sconst __grid_constant__ CUtensorMap %s", SEP(), pk->maps.v[i].name);
        else sb_printf(b, "%s%s", SEP(), pk->maps.v[i].name);
    }
    for (int i = 0; i < sk->args.n; i++) {
        const Arg *a = sk->args.v[i];
        if (!a->ts.ndims) continue;
        const char *t = a->ts.dt == DT_BF16 ? "__nv_bfloat16" : a->ts.dt == DT_FP16 ? "__half" : a->ts.dt == DT_FP32 ? "float" : "int";
        if (decl) sb_printf(b, "%s%s%s *__restrict__ %s", SEP(), a->mode == ARG_IN ? "const " : "", t, a->name);
        else sb_printf(b, "%s(%s%s *)%s", SEP(), a->mode == ARG_IN ? "const " : "", t, a->name);
        if (!pk->arg_strides.v[i]) continue;
        for (int d = 0; d < a->ts.ndims; d++) {
            if (decl) sb_printf(b, "%sconst long long %s_st%d", SEP(), a->name, d);
            else sb_printf(b, "%s%s_st[%d]", SEP(), a->name, d);
        }
    }
    for (int i = 0; i < sk->dims.n; i++) {
        if (decl) sb_printf(b, "%sconst int %s", SEP(), sk->dims.v[i]->name);
        else sb_printf(b, "%s(int)%s", SEP(), sk->dims.v[i]->name);
    }
    for (int i = 0; i < sk->scalars.n; i++) {
        const Symbol *y = sk->scalars.v[i];
        if (decl) sb_printf(b, "%sconst %s %s", SEP(), y->ty.kind == TY_FLOAT ? "float" : "int", y->name);
        else sb_printf(b, "%s%s", SEP(), y->name);
    }
#undef SEP
}

/* ---- the host launcher ---------------------------------------------------------------------------- */

static const char *cu_dtype(DType d) {
    switch (d) {
    case DT_BF16: return "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16";
    case DT_FP16: return "CU_TENSOR_MAP_DATA_TYPE_FLOAT16";
    case DT_FP32: return "CU_TENSOR_MAP_DATA_TYPE_FLOAT32";
    default: return "CU_TENSOR_MAP_DATA_TYPE_INT32";
    }
}

void emit_sm_count(Em *e, const char *who) {
    L("int device = 0;");
    L("if ((tkc_%s_cuda = cudaGetDevice(&device)) != cudaSuccess || device < 0) return TKC_ERR_LAUNCH;", who);
    L("int sms = device < 64 ? sm_count[device].load(std::memory_order_relaxed) : 0;");
    L("if (!sms && (tkc_%s_cuda = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device)) != cudaSuccess)",
      who);
    L("    return TKC_ERR_LAUNCH;");
    L("if (device < 64) sm_count[device].store(sms, std::memory_order_relaxed);");
}

/* a kernel an entry launches programmatically has its launcher's body in tkc_NAME_launch(...,
 * pdl); the public launcher calls it with pdl = false */
static void emit_public_launcher(Em *e, const KernelApi *api) {
    const PlanKernel *pk = e->pk;
    if (!pk->pdl_entry) return;
    StrBuf sig, names;
    sb_init(&sig);
    sb_init(&names);
    api_c_params(&sig, api);
    api_call_args(&names, api);
    L("%sint tkc_%s(%s) {", e->ns ? "" : "extern \"C\" ", pk->name, sig.s);
    L("    return tkc_%s_launch(%s, false);", pk->name, names.s);
    L("}");
    sb_free(&sig);
    sb_free(&names);
}

void emit_launcher(Em *e) {
    const PlanKernel *pk = e->pk;
    const SemaKernel *sk = e->sk;
    need(e, "tkc_ptx.cuh", "host");
    const KernelApi *api = api_of(e->a, pk);
    StrBuf sig;
    sb_init(&sig);
    api_c_params(&sig, api);
    L("// Launches %s on stream. Strides count elements, one per dimension (NULL: contiguous); tensors", pk->name);
    L("// that TMA moves need a last stride of 1, and go through a padded copy where their address or a");
    L("// row pitch is not a 16-byte multiple. Every argument is checked first: returns TKC_OK or a");
    L("// TKC_ERR_* code.");
    L("// the CUDA error of the last launch of tkc_%s() on this thread that returned TKC_ERR_LAUNCH", pk->name);
    L("static thread_local cudaError_t tkc_%s_cuda = cudaSuccess;", pk->name);
    const char *ext = e->ns ? "" : "extern \"C\" ";
    L("%sconst char *tkc_%s_error(void) { return cudaGetErrorString(tkc_%s_cuda); }", ext, pk->name, pk->name);
    if (pk->pdl_entry) {
        L("// The launcher's body; an entry passes pdl = true to launch the kernel right after another of its");
        L("// kernels, allowed to start before that one ends (programmatic dependent launch: the plan's notes).");
        L("static int tkc_%s_launch(%s, bool tkc_pdl) {", pk->name, sig.s);
    } else {
        L("%sint tkc_%s(%s) {", ext, pk->name, sig.s);
    }
    sb_free(&sig);
    IN();
    for (int i = 0; i < sk->dims.n; i++)
        L("if (%s < 1 || %s > 2147483647LL) return TKC_ERR_DIM;", sk->dims.v[i]->name, sk->dims.v[i]->name);
    for (int i = 0; i < pk->requires.n; i++)
        L("if (!(%s)) return TKC_ERR_REQUIRE;  // require %s", scalar_str(e, pk->requires.v[i], true),
          px_str(e->a, pk->requires.v[i]));
    for (int i = 0; i < api->params.n; i++) {
        const ApiParam *a = &api->params.v[i];
        if (a->kind != API_TENSOR) continue;
        int r = a->rank, eb = dtype_bytes[a->dt];
        bool tma = a->tma;
        StrBuf dims, shape;
        sb_init(&dims);
        sb_init(&shape);
        for (int d = 0; d < r; d++) {
            sb_printf(&dims, "%s(int64_t)%s", d ? ", " : "", scalar_str(e, a->dims[d].expr, true));
            sb_printf(&shape, "%s%s", d ? ", " : "", px_str(e->a, a->dims[d].expr));
        }
        L("// %s: %s %s[%s]%s", a->name, argmode_name[a->mode], dtype_name[a->dt], shape.s,
          tma ? ", moved by TMA: rows contiguous; staged where not 16-byte aligned" : ", accessed by threads");
        L("if (!%s) return TKC_ERR_NULL;", a->name);
        L("if ((uintptr_t)%s %% %d) return TKC_ERR_ALIGN;", a->name, eb);
        L("const int64_t %s_dims[%d] = {%s};", a->name, r, dims.s);
        sb_free(&dims);
        sb_free(&shape);
        L("int64_t %s_st[%d];", a->name, r);
        if (!tma) {
            L("if (!tkc_strides(%s_st, %s_strides, %s_dims, %d)) return TKC_ERR_STRIDE;", a->name, a->name, a->name, r);
            continue;
        }
        need(e, "tkc_ptx.cuh", "stage");
        L("if (!tkc_strides(%s_st, %s_strides, %s_dims, %d) || %s_st[%d] != 1) return TKC_ERR_STRIDE;", a->name, a->name,
          a->name, r, a->name, r - 1);
        L("const int %s_staged = tkc_tma_layout(%s, %s_st, %s_dims, %d, %d);  // 1: through a padded copy", a->name, a->name,
          a->name, a->name, r, eb);
        L("if (%s_staged < 0) return TKC_ERR_STRIDE;  // rows that overlap: no copy", a->name);
    }
    StrBuf nt;
    sb_init(&nt);
    for (int i = 0; i < sk->axes.n; i++) sb_printf(&nt, "%s(long long)%s", i ? " * " : "", scalar_str(e, pk->extents.v[i], true));
    L("const long long tiles = %s;", nt.s);
    sb_free(&nt);
    L("if (tiles < 1 || tiles > 2147483647LL) return TKC_ERR_DIM;");
    bool staging = false, copy_back = false;
    for (int i = 0; i < api->params.n; i++) {
        const ApiParam *a = &api->params.v[i];
        if (a->kind != API_TENSOR || !a->tma) continue;
        if (!staging) L("// tensors TMA cannot take where they lie go through padded copies (freed on the stream at return)");
        staging = true;
        int r = a->rank;
        bool reads = a->mode != ARG_OUT;
        copy_back |= a->mode != ARG_IN;
        L("tkc_staged %s_copy;", a->name);
        L("if (%s_staged) {", a->name);
        IN();
        L("if ((tkc_%s_cuda = tkc_stage(&%s_copy, %s, %s_st, %s_dims, %d, %d, %s, (cudaStream_t)stream)) != cudaSuccess)", pk->name,
          a->name, a->name, a->name, a->name, r, dtype_bytes[a->dt], reads ? "true" : "false");
        L("    return TKC_ERR_LAUNCH;");
        L("%s = %s_copy.buf;", a->name, a->name);
        OUT();
        L("}");
    }
    L("// tensor maps");
    for (int i = 0; i < pk->maps.n; i++) {
        const PlanMap *m = &pk->maps.v[i];
        const Arg *a = m->arg;
        int r = m->rank;
        StrBuf dims, str, box;
        sb_init(&dims);
        sb_init(&str);
        sb_init(&box);
        for (int d = 0; d < r; d++) {
            sb_printf(&dims, "%s(uint64_t)%s_dims[%d]", d ? ", " : "", a->name, r - 1 - d);
            sb_printf(&box, "%s%d", d ? ", " : "", m->box[d]);
        }
        for (int d = 1; d < r; d++) sb_printf(&str, "%s(uint64_t)%s_st[%d] * %d", d > 1 ? ", " : "", a->name, r - 1 - d, dtype_bytes[a->ts.dt]);
        L("CUtensorMap %s;", m->name);
        L("{");
        IN();
        L("const uint64_t dims[%d] = {%s};", r, dims.s);
        if (r > 1) L("const uint64_t strides[%d] = {%s};", r - 1, str.s);
        else L("const uint64_t strides[1] = {0};");
        L("const uint32_t box[%d] = {%s};", r, box.s);
        L("if (!tkc_make_map(&%s, %s, %d, %s, dims, strides, box, %d)) return TKC_ERR_TENSOR_MAP;", m->name, cu_dtype(a->ts.dt), r,
          a->name, swizzle_tma_enum(m->swz));
        OUT();
        L("}");
        sb_free(&dims);
        sb_free(&str);
        sb_free(&box);
    }
    L("// per device, once: the SM count and the kernel's shared-memory opt-in (safe across host threads)");
    L("static std::atomic<int> sm_count[64], smem_ready[64];");
    emit_sm_count(e, pk->name);
    L("if (device >= 64 || !smem_ready[device].load(std::memory_order_relaxed)) {");
    IN();
    L("if ((tkc_%s_cuda = cudaFuncSetAttribute(tkc_%s_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, %d)) != cudaSuccess)",
      pk->name, pk->name, pk->smem_total);
    L("    return TKC_ERR_LAUNCH;");
    L("if (device < 64) smem_ready[device].store(1, std::memory_order_relaxed);");
    OUT();
    L("}");
    if (pk->zeroed.n) {
        need(e, "tkc_ptx.cuh", "zero");
        need(e, "tkc_ptx.cuh", "grid_dep");
        StrBuf names, zs;
        sb_init(&names);
        sb_init(&zs);
        for (int i = 0; i < pk->zeroed.n; i++) {
            const Arg *a = pk->zeroed.v[i];
            sb_printf(&names, "%s%s", i ? (i + 1 == pk->zeroed.n ? " and " : ", ") : "", a->name);
            sb_printf(&zs, "%s{%s, %s_dims, %s_st, %d, %d}", i ? ", " : "", a->name, a->name, a->name, a->ts.ndims,
                      dtype_bytes[a->ts.dt]);
        }
        L("// %s %s zeroed: cleared on the stream before the kernel runs (one clearing kernel for the contiguous ones)",
          names.s, pk->zeroed.n > 1 ? "are" : "is");
        L("const tkc_zero_arg tkc_zeroed[%d] = {%s};", pk->zeroed.n, zs.s);
        L("if (!tkc_zero(tkc_zeroed, %d, (cudaStream_t)stream)) {", pk->zeroed.n);
        L("    tkc_%s_cuda = cudaGetLastError();", pk->name);
        L("    return TKC_ERR_LAUNCH;");
        L("}");
        sb_free(&names);
        sb_free(&zs);
    }
    StrBuf args;
    sb_init(&args);
    kernel_params(e, &args, false);
    if (pk->cluster > 1) {
        int c = pk->cluster;
        L("cudaLaunchConfig_t cfg = {};");
        L("cudaLaunchAttribute attr[%d];", pk->pdl_wait ? 2 : 1);
        L("attr[0].id = cudaLaunchAttributeClusterDimension;");
        L("attr[0].val.clusterDim.x = %d;", c);
        L("attr[0].val.clusterDim.y = 1;");
        L("attr[0].val.clusterDim.z = 1;");
        if (pk->pdl_wait) {
            L("attr[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;  // %s",
              pk->pdl_after_clear ? "after the clearing kernel" : "with tkc_pdl (numAttrs below)");
            L("attr[1].val.programmaticStreamSerializationAllowed = 1;");
        }
        L("cfg.blockDim = dim3(%d);", pk->threads);
        L("cfg.dynamicSmemBytes = %d;", pk->smem_total);
        L("cfg.stream = (cudaStream_t)stream;");
        L("cfg.attrs = attr;");
        L("cfg.numAttrs = %s;", !pk->pdl_wait ? "1" : pk->pdl_after_clear ? "2" : "tkc_pdl ? 2 : 1");
        const PExpr *cx = pk->extents.v[pk->cluster_axis];
        L("const long long units = tkc_h_cdiv(%s, %d) * (tiles / (%s));  // work tiles, one per cluster",
          scalar_str(e, cx, true), c, scalar_str(e, cx, true));
        if (pk->persistent) {
            L("cfg.gridDim = dim3((unsigned)(units * %d));", c);
            L("// how many clusters fit on the device at once, asked once per device");
            L("static std::atomic<int> cluster_count[64];");
            L("int clusters = device < 64 ? cluster_count[device].load(std::memory_order_relaxed) : 0;");
            L("if (!clusters) {");
            IN();
            L("if (cudaOccupancyMaxActiveClusters(&clusters, tkc_%s_kernel, &cfg) != cudaSuccess || clusters < 1)", pk->name);
            L("    clusters = sms / %d;", c);
            L("if (device < 64) cluster_count[device].store(clusters, std::memory_order_relaxed);");
            OUT();
            L("}");
            L("cfg.gridDim = dim3((unsigned)((units < clusters ? units : clusters) * %d));  // persistent: one block per SM", c);
        } else {
            L("cfg.gridDim = dim3((unsigned)(units * %d));  // one cluster per work tile", c);
        }
        L("(void)sms;");
        L("if ((tkc_%s_cuda = cudaLaunchKernelEx(&cfg, tkc_%s_kernel, %s)) != cudaSuccess) return TKC_ERR_LAUNCH;", pk->name,
          pk->name, args.s);
    } else {
        /* a persistent grid starts as many blocks as the SMs hold at once: blocks_per_sm of them each */
        const int n = plan_persistent_per_sm(pk);
        const char *slots = n > 1 ? arena_printf(e->a, "sms * %d", n) : "sms";
        const char *per = n > 1 ? arena_printf(e->a, "%d blocks per SM", n) : "one block per SM";
        if (pk->paired)
            L("const unsigned grid = (unsigned)((tiles + 1) / 2 < %s ? (tiles + 1) / 2 : %s);  // persistent, tiles in pairs: %s",
              slots, slots, per);
        else if (pk->persistent) L("const unsigned grid = (unsigned)(tiles < %s ? tiles : %s);  // persistent: %s", slots, slots, per);
        else L("const unsigned grid = (unsigned)tiles;  // one block per work tile");
        if (pk->pdl_wait) {
            need(e, "tkc_ptx.cuh", "launch_pdl");
            if (pk->pdl_after_clear) L("// programmatically after the clearing kernel, which lets it launch as it starts");
            L("if ((tkc_%s_cuda = tkc_launch_pdl(tkc_%s_kernel, grid, %d, %d, (cudaStream_t)stream, %s, %s)) != cudaSuccess)",
              pk->name, pk->name, pk->threads, pk->smem_total, pk->pdl_after_clear ? "true" : "tkc_pdl", args.s);
            L("    return TKC_ERR_LAUNCH;");
        } else {
            L("tkc_%s_kernel<<<grid, %d, %d, (cudaStream_t)stream>>>(%s);", pk->name, pk->threads, pk->smem_total, args.s);
        }
    }
    sb_free(&args);
    if (!copy_back) {
        L("return (tkc_%s_cuda = cudaGetLastError()) == cudaSuccess ? TKC_OK : TKC_ERR_LAUNCH;", pk->name);
        OUT();
        L("}");
        emit_public_launcher(e, api);
        return;
    }
    L("if ((tkc_%s_cuda = cudaGetLastError()) != cudaSuccess) return TKC_ERR_LAUNCH;", pk->name);
    for (int i = 0; i < api->params.n; i++) {
        const ApiParam *a = &api->params.v[i];
        if (a->kind != API_TENSOR || !a->tma || a->mode == ARG_IN) continue;
        L("if ((tkc_%s_cuda = tkc_unstage(&%s_copy)) != cudaSuccess) return TKC_ERR_LAUNCH;  // %s's results where the caller's lies",
          pk->name, a->name, a->name);
    }
    L("return TKC_OK;");
    OUT();
    L("}");
    emit_public_launcher(e, api);
}
