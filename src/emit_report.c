/* emit_report.c - the plan explained: JSON for tools (tkc --emit=report, here) and prose for a
 * person (tkc --explain, emit_explain.c). Both print the same facts from the verified plan and the
 * KernelApi (the helpers here, shared through report_int.h): the launcher, roles and register
 * split (with the arithmetic), the register estimate, the grid, the pipeline, the shared-memory
 * map against the 232,448-byte limit, the barriers with their arrival counts and byte counts, the
 * load groups, TMA maps, staged stores and the decisions.
 * Invariant: the output depends only on the plan, the program and the source file's name: same
 * input, same bytes. JSON keys come in a fixed order. Nothing here decides anything. */
#include <inttypes.h>

#include "report_int.h"

/* ---- facts both outputs share ---------------------------------------------------------------- */

const char *order_name(OrderKind o) {
    return o == ORDER_SUPER_M ? "super_m" : o == ORDER_SUPER_N ? "super_n" : "row_major";
}

char *stmt_str(Arena *a, const PStmt *st) {
    StrBuf b;
    sb_init(&b);
    plan_stmt_text(&b, st);
    char *s = arena_strdup(a, b.s ? b.s : "");
    sb_free(&b);
    return s;
}

/* the register tile arithmetic, when it can be shown: rows per warpgroup x cols x bytes / 512 */
bool reg_tile_arith(const PlanKernel *pk, const PlanReg *r, int *rows_wg, int *cols, int *bytes, int *cplx) {
    const Type *t = &r->sym->ty;
    if (t->kind != TY_TILE || pk->consumers < 1) return false;
    *rows_wg = t->per_wg ? t->rows : t->rows / pk->consumers;
    *cols = t->cols;
    *bytes = dtype_bytes[t->dt];
    *cplx = t->complex ? 2 : 1;
    return *cplx * *rows_wg * *cols * *bytes / (4 * 128) == r->regs;
}

void collect_mmas(Arena *a, MmaRefs *out, const POpList *ops, const char *where) {
    for (int i = 0; i < ops->n; i++) {
        const POp *o = ops->v[i];
        if (o->kind == POP_MMA) {
            bool seen = false;
            for (int k = 0; k < out->n; k++) seen |= out->v[k].m == o->mma;
            if (!seen) {
                MmaRef r = {o->mma, o->st, where, o->prev};
                vec_push(a, out, r);
            }
        }
        collect_mmas(a, out, &o->then_ops, where);
        collect_mmas(a, out, &o->else_ops, where);
    }
}

/* every product once, where it is issued: setup, the steady step, finish */
MmaRefs all_mmas(Arena *a, const PlanKernel *pk) {
    MmaRefs mm = {0};
    collect_mmas(a, &mm, &pk->setup_ops, "setup");
    collect_mmas(a, &mm, &pk->compute_ops, "step");
    collect_mmas(a, &mm, &pk->finish_ops, "finish");
    return mm;
}

int barrier_bytes(const PlanKernel *pk) {
    int nb = 0;
    for (int i = 0; i < pk->bars.n; i++) nb += 8 * pk->bars.v[i].copies;
    return nb;
}

/* the shared tiles' bytes, every copy counted */
int buffers_bytes(const PlanKernel *pk) {
    int n = 0;
    for (int i = 0; i < pk->bufs.n; i++) n += pk->bufs.v[i].bytes * pk->bufs.v[i].copies;
    return n;
}

/* the group whose full (or empty) barrier is bar, or -1 */
int group_of_barrier(const PlanKernel *pk, int bar, bool *is_full) {
    for (int g = 0; g < pk->groups.n; g++) {
        if (pk->groups.v[g].full == bar) {
            *is_full = true;
            return g;
        }
        if (pk->groups.v[g].empty == bar) {
            *is_full = false;
            return g;
        }
    }
    return -1;
}

/* ---- a small JSON writer: pretty-printed, two spaces per level -------------------------------- */

typedef struct Json {
    StrBuf *b;
    int depth;
    bool had[64];       /* a value was written at this depth (a comma is due) */
    bool after_key;
} Json;

static void j_escaped(StrBuf *b, const char *s) {
    sb_putc(b, '"');
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        switch (*c) {
        case '"': sb_puts(b, "\\\""); break;
        case '\\': sb_puts(b, "\\\\"); break;
        case '\n': sb_puts(b, "\\n"); break;
        case '\t': sb_puts(b, "\\t"); break;
        case '\r': sb_puts(b, "\\r"); break;
        default:
            if (*c < 0x20 || *c == 0x7f) sb_printf(b, "\\u%04x", *c);
            else sb_putc(b, (char)*c);
        }
    }
    sb_putc(b, '"');
}

static void j_pre(Json *j) {
    if (j->after_key) {
        j->after_key = false;
        return;
    }
    if (!j->depth) return;
    if (j->had[j->depth]) sb_putc(j->b, ',');
    sb_putc(j->b, '\n');
    for (int i = 0; i < j->depth; i++) sb_puts(j->b, "  ");
    j->had[j->depth] = true;
}

static void j_open(Json *j, char c) {
    j_pre(j);
    sb_putc(j->b, c);
    j->depth++;
    j->had[j->depth] = false;
}

static void j_close(Json *j, char c) {
    bool any = j->had[j->depth];
    j->depth--;
    if (any) {
        sb_putc(j->b, '\n');
        for (int i = 0; i < j->depth; i++) sb_puts(j->b, "  ");
    }
    sb_putc(j->b, c);
}

static void j_key(Json *j, const char *k) {
    j_pre(j);
    j_escaped(j->b, k);
    sb_puts(j->b, ": ");
    j->after_key = true;
}

static void j_str(Json *j, const char *s) {
    j_pre(j);
    if (s) j_escaped(j->b, s);
    else sb_puts(j->b, "null");
}
static void j_int(Json *j, int64_t v) {
    j_pre(j);
    sb_printf(j->b, "%" PRId64, v);
}
static void j_bool(Json *j, bool v) {
    j_pre(j);
    sb_puts(j->b, v ? "true" : "false");
}
static void j_null(Json *j) {
    j_pre(j);
    sb_puts(j->b, "null");
}
/* a short list of integers on one line */
static void j_ints(Json *j, const int *v, int n) {
    j_pre(j);
    sb_putc(j->b, '[');
    for (int i = 0; i < n; i++) sb_printf(j->b, "%s%d", i ? ", " : "", v[i]);
    sb_putc(j->b, ']');
}

static void jk_str(Json *j, const char *k, const char *s) { j_key(j, k); j_str(j, s); }
static void jk_int(Json *j, const char *k, int64_t v) { j_key(j, k); j_int(j, v); }
static void jk_bool(Json *j, const char *k, bool v) { j_key(j, k); j_bool(j, v); }
static void jk_obj(Json *j, const char *k) { j_key(j, k); j_open(j, '{'); }
static void jk_arr(Json *j, const char *k) { j_key(j, k); j_open(j, '['); }

/* ---- --emit=report ------------------------------------------------------------------------------ */

static void report_launcher(Json *j, Arena *a, const KernelApi *k) {
    StrBuf sig;
    sb_init(&sig);
    api_c_params(&sig, k);
    jk_obj(j, "launcher");
    jk_str(j, "function", k->fn);
    char *decl = arena_printf(a, "int %s(%s)", k->fn, sig.s ? sig.s : "");
    sb_free(&sig);
    jk_str(j, "declaration", decl);
    jk_str(j, "returns", "int");
    jk_arr(j, "params");
    for (int i = 0; i < k->params.n; i++) {
        const ApiParam *p = &k->params.v[i];
        j_open(j, '{');
        switch (p->kind) {
        case API_TENSOR: {
            jk_str(j, "kind", "tensor");
            jk_str(j, "name", p->name);
            jk_str(j, "c_type", p->mode == ARG_IN ? "const void *" : "void *");
            jk_str(j, "mode", argmode_name[p->mode]);
            jk_str(j, "dtype", dtype_name[p->dt]);
            jk_int(j, "element_bytes", dtype_bytes[p->dt]);
            jk_int(j, "rank", p->rank);
            jk_arr(j, "shape");
            for (int d = 0; d < p->rank; d++) {
                j_open(j, '{');
                if (p->dims[d].name) {
                    jk_str(j, "text", p->dims[d].name);
                    jk_bool(j, "runtime", true);
                } else {
                    jk_str(j, "text", px_str(a, p->dims[d].expr));
                    jk_bool(j, "runtime", false);
                    jk_int(j, "value", p->dims[d].value);
                }
                j_close(j, '}');
            }
            j_close(j, ']');
            jk_str(j, "strides_param", arena_printf(a, "%s_strides", p->name));
            jk_bool(j, "tma", p->tma);
            jk_int(j, "base_alignment", p->tma ? 16 : dtype_bytes[p->dt]);
            jk_bool(j, "last_stride_1", p->tma);
            jk_int(j, "row_pitch_multiple_bytes", p->tma ? 16 : dtype_bytes[p->dt]);
            jk_bool(j, "zeroed", p->zeroed);
            break;
        }
        case API_DIM:
            jk_str(j, "kind", "dim");
            jk_str(j, "name", p->name);
            jk_str(j, "c_type", "int64_t");
            jk_int(j, "min", 1);
            jk_int(j, "max", 2147483647);
            break;
        case API_SCALAR:
            jk_str(j, "kind", "scalar");
            jk_str(j, "name", p->name);
            jk_str(j, "c_type", p->is_float ? "float" : "int32_t");
            jk_str(j, "dtype", p->is_float ? "fp32" : "i32");
            break;
        }
        j_close(j, '}');
    }
    j_open(j, '{');
    jk_str(j, "kind", "stream");
    jk_str(j, "name", "stream");
    jk_str(j, "c_type", "tkc_stream_t");
    j_close(j, '}');
    j_close(j, ']');
    jk_arr(j, "requires");
    for (int i = 0; i < k->requires.n; i++) j_str(j, px_str(a, k->requires.v[i]));
    j_close(j, ']');
    j_close(j, '}');
}

/* the kernels an entry's steps launch, in order (both branches of an if decided at run time);
 * pdl_only: those launched programmatically (pass_pdl.c) */
static void entry_calls(Json *j, const PESteps *l, bool pdl_only) {
    for (int i = 0; i < l->n; i++) {
        if (l->v[i]->kind == PE_CALL && (!pdl_only || l->v[i]->pdl)) j_str(j, l->v[i]->name);
        if (l->v[i]->kind == PE_IF) {
            entry_calls(j, &l->v[i]->then_s, pdl_only);
            entry_calls(j, &l->v[i]->else_s, pdl_only);
        }
    }
}

static void report_entry(Json *j, Arena *a, const PlanEntry *pe) {
    j_open(j, '{');
    jk_str(j, "name", pe->name);
    report_launcher(j, a, api_of_entry(a, pe));
    jk_arr(j, "launches");
    entry_calls(j, &pe->body, false);
    j_close(j, ']');
    jk_arr(j, "programmatic_launches");
    entry_calls(j, &pe->body, true);
    j_close(j, ']');
    jk_int(j, "scratch_tensors", pe->nscratch);
    jk_arr(j, "decisions");
    for (int i = 0; i < pe->notes.n; i++) j_str(j, pe->notes.v[i]);
    j_close(j, ']');
    j_close(j, '}');
}

static void report_kernel(Json *j, Arena *a, const PlanKernel *pk) {
    const SemaKernel *sk = pk->sk;
    j_open(j, '{');
    jk_str(j, "name", pk->name);
    report_launcher(j, a, api_of(a, pk));

    /* roles and registers */
    int dp, dc;
    reg_split_default(pk->consumers, &dp, &dc);
    int used = 128 * (pk->producer_regs + pk->consumers * pk->consumer_regs);
    jk_obj(j, "roles");
    jk_int(j, "threads", pk->threads);
    jk_int(j, "warpgroups", pk->consumers + 1);
    jk_int(j, "producer_warpgroup", 0);
    jk_int(j, "consumers", pk->consumers);
    jk_int(j, "producer_registers", pk->producer_regs);
    jk_int(j, "consumer_registers", pk->consumer_regs);
    jk_obj(j, "register_split");
    jk_str(j, "why", pk->split_why);
    jk_int(j, "default_producer", dp);
    jk_int(j, "default_consumer", dc);
    jk_int(j, "producer_total", 128 * pk->producer_regs);
    jk_int(j, "consumers_total", 128 * pk->consumers * pk->consumer_regs);
    jk_int(j, "used", used);
    jk_int(j, "register_file", REG_FILE);
    jk_str(j, "arithmetic", arena_printf(a, "128 x %d + %d x 128 x %d = %d of %d", pk->producer_regs, pk->consumers,
                                         pk->consumer_regs, used, REG_FILE));
    j_close(j, '}');
    j_close(j, '}');

    jk_obj(j, "registers");
    jk_int(j, "estimate", pk->reg_estimate);
    jk_int(j, "limit", pk->consumer_regs);
    jk_arr(j, "parts");
    for (int i = 0; i < pk->regs.n; i++) {
        const PlanReg *r = &pk->regs.v[i];
        if (r->sym->kind == SYM_LET) continue;
        j_open(j, '{');
        jk_str(j, "name", r->sym->name);
        jk_int(j, "registers", r->regs);
        j_close(j, '}');
    }
    j_close(j, ']');
    jk_int(j, "temporaries_peak", pk->reg_lets);
    jk_int(j, "overhead", pk->reg_overhead);
    j_close(j, '}');

    MmaRefs mm = all_mmas(a, pk);
    jk_arr(j, "products");
    for (int i = 0; i < mm.n; i++) {
        const PlanMma *m = mm.v[i].m;
        int inst_n, count;
        plan_mma_shape(m, &inst_n, &count);
        j_open(j, '{');
        jk_str(j, "statement", stmt_str(a, mm.v[i].st));
        jk_str(j, "where", mm.v[i].where);
        jk_int(j, "m", m->m);
        jk_int(j, "n", m->n);
        jk_int(j, "k", m->k);
        jk_int(j, "rows_per_warpgroup", m->wg_m);
        jk_str(j, "instruction", arena_printf(a, "wgmma m64n%dk16", inst_n));
        jk_int(j, "instructions_per_warpgroup", count);
        jk_str(j, "a", m->a_reg ? "registers" : plan_major_name(m->a.mn_major, 'A'));
        jk_str(j, "b", plan_major_name(m->b.mn_major, 'B'));
        jk_bool(j, "deferred", m->deferred);
        jk_bool(j, "zero_first", m->zero_first);
        j_close(j, '}');
    }
    j_close(j, ']');

    /* grid */
    jk_obj(j, "grid");
    jk_arr(j, "axes");
    for (int i = 0; i < sk->axes.n; i++) {
        j_open(j, '{');
        jk_str(j, "name", sk->axes.v[i]->name);
        jk_str(j, "extent", ast_expr_str(a, sk->axes.v[i]->extent));
        jk_bool(j, "reversed", sk->axes.v[i]->reversed);
        jk_bool(j, "folded", sk->axes.v[i]->folded);
        j_close(j, '}');
    }
    j_close(j, ']');
    jk_bool(j, "persistent", pk->persistent);
    jk_int(j, "tiles_per_turn", pk->paired ? 2 : 1);
    jk_str(j, "order", order_name(pk->order));
    j_key(j, "order_group");
    if (pk->order == ORDER_ROW_MAJOR) j_null(j);
    else j_int(j, pk->order_group);
    jk_obj(j, "cluster");
    jk_int(j, "size", pk->cluster);
    j_key(j, "axis");
    if (pk->cluster > 1 && sk->axes.n) j_str(j, sk->axes.v[pk->cluster_axis]->name);
    else j_null(j);
    j_close(j, '}');
    jk_obj(j, "programmatic_launch");
    jk_bool(j, "waits", pk->pdl_wait);
    jk_bool(j, "lets_next_start", pk->pdl_trigger);
    j_close(j, '}');
    j_close(j, '}');

    /* pipeline */
    j_key(j, "pipeline");
    if (sk->pipe) {
        j_open(j, '{');
        jk_str(j, "variable", sk->loopvar ? sk->loopvar->name : sk->pipe->u.pipe.var);
        jk_str(j, "trips", ast_expr_str(a, sk->pipe->u.pipe.trips));
        jk_int(j, "stages", pk->stages);
        jk_bool(j, "overlap", pk->overlap);
        jk_bool(j, "pingpong", pk->pingpong);
        jk_bool(j, "lookahead", pk->lookahead);
        j_key(j, "no_lookahead");
        if (pk->no_lookahead) j_str(j, pk->no_lookahead);
        else j_null(j);
        jk_bool(j, "early_setup_release", pk->early_setup_release);
        jk_bool(j, "staging", sk->staging);
        jk_int(j, "setup_stages", pk->setup_stages);
        j_key(j, "narrow_tail");
        if (pk->tail) {
            const PlanTail *t = pk->tail;
            j_open(j, '{');
            jk_str(j, "tile", t->s->name);
            jk_int(j, "columns", t->cols);
            jk_str(j, "live", arena_printf(a, "%s - %s", px_str(a, t->bound), px_str(a, t->jw)));
            j_close(j, '}');
        } else {
            j_null(j);
        }
        j_key(j, "no_narrow_tail");
        if (pk->no_tail) j_str(j, pk->no_tail);
        else j_null(j);
        j_key(j, "lazy_sums");  /* per_row sums kept as per-lane partials until finish */
        j_open(j, '[');
        for (int i = 0; i < pk->lazy_sums.n; i++) j_str(j, pk->lazy_sums.v[i]->name);
        j_close(j, ']');
        j_close(j, '}');
    } else {
        j_null(j);
    }

    /* shared memory */
    int payload = buffers_bytes(pk);
    int nb = barrier_bytes(pk);
    jk_obj(j, "shared_memory");
    jk_arr(j, "buffers");
    for (int i = 0; i < pk->bufs.n; i++) {
        const PlanBuf *b = &pk->bufs.v[i];
        j_open(j, '{');
        jk_str(j, "name", b->name);
        jk_str(j, "kind", bufkind_name[b->kind]);
        jk_str(j, "dtype", dtype_name[b->dt]);
        j_key(j, "shape");
        if (b->is_vec) j_ints(j, &b->cols, 1);
        else {
            int sh[2] = {b->rows, b->cols};
            j_ints(j, sh, 2);
        }
        jk_str(j, "swizzle", swizzle_name(b->swz));
        jk_int(j, "atom_cols", b->atom_cols);
        jk_int(j, "atoms", b->natoms);
        jk_int(j, "bytes", b->bytes);
        jk_int(j, "copies", b->copies);
        jk_int(j, "total_bytes", (int64_t)b->bytes * b->copies);
        jk_int(j, "offset", b->offset);
        jk_int(j, "alignment", b->align);
        j_key(j, "group");
        if (b->group >= 0 && b->group < pk->groups.n) j_str(j, pk->groups.v[b->group].name);
        else j_null(j);
        j_close(j, '}');
    }
    j_close(j, ']');
    jk_int(j, "buffers_bytes", payload);
    jk_int(j, "padding_bytes", pk->smem_used - payload - nb);
    j_key(j, "barriers_offset");
    if (pk->bars.n) j_int(j, pk->bars.v[0].offset);
    else j_null(j);
    jk_int(j, "barriers_bytes", nb);
    jk_int(j, "used", pk->smem_used);
    jk_int(j, "base_alignment_slack", SMEM_SLACK);
    jk_int(j, "total", pk->smem_total);
    jk_int(j, "limit", SMEM_LIMIT);
    jk_int(j, "headroom", SMEM_LIMIT - pk->smem_total);
    j_key(j, "staging");
    if (pk->staging_buf >= 0) {
        j_open(j, '{');
        jk_str(j, "buffer", pk->bufs.v[pk->staging_buf].name);
        jk_int(j, "per_warpgroup", pk->staging_per_wg);
        j_close(j, '}');
    } else {
        j_null(j);
    }
    j_close(j, '}');

    /* barriers */
    jk_arr(j, "barriers");
    for (int i = 0; i < pk->bars.n; i++) {
        const PlanBarrier *pb = &pk->bars.v[i];
        bool full = false;
        int g = group_of_barrier(pk, i, &full);
        j_open(j, '{');
        jk_str(j, "name", pb->name);
        jk_int(j, "copies", pb->copies);
        jk_int(j, "count", pb->count);
        jk_int(j, "tx_bytes", pb->tx_bytes);
        jk_int(j, "offset", pb->offset);
        j_key(j, "group");
        if (g >= 0) j_str(j, pk->groups.v[g].name);
        else j_null(j);
        j_key(j, "role");
        if (g >= 0) j_str(j, full ? "full" : "empty");
        else j_null(j);
        jk_str(j, "purpose", pb->why);
        j_close(j, '}');
    }
    j_close(j, ']');

    /* load groups */
    jk_arr(j, "load_groups");
    for (int g = 0; g < pk->groups.n; g++) {
        const PlanGroup *pg = &pk->groups.v[g];
        j_open(j, '{');
        jk_str(j, "name", pg->name);
        jk_str(j, "when", pg->once ? "per_work_tile" : "per_step");
        jk_str(j, "full", pk->bars.v[pg->full].name);
        jk_str(j, "empty", pk->bars.v[pg->empty].name);
        jk_int(j, "bytes", pg->bytes);
        jk_bool(j, "multicast", pg->multicast);
        jk_arr(j, "buffers");
        for (int i = 0; i < pg->bufs.n; i++) j_str(j, pk->bufs.v[pg->bufs.v[i]].name);
        j_close(j, ']');
        jk_arr(j, "loads");
        for (int i = 0; i < pg->loads.n; i++) {
            const PlanLoad *pl = &pg->loads.v[i];
            j_open(j, '{');
            jk_str(j, "statement", stmt_str(a, pl->st));
            jk_str(j, "buffer", pk->bufs.v[pl->buf].name);
            jk_str(j, "map", pk->maps.v[pl->map].name);
            jk_int(j, "boxes", pk->bufs.v[pl->buf].natoms);
            jk_bool(j, "multicast", pl->multicast);
            j_close(j, '}');
        }
        j_close(j, ']');
        j_close(j, '}');
    }
    j_close(j, ']');

    /* TMA maps */
    jk_arr(j, "tma_maps");
    for (int i = 0; i < pk->maps.n; i++) {
        const PlanMap *m = &pk->maps.v[i];
        j_open(j, '{');
        jk_str(j, "name", m->name);
        jk_str(j, "tensor", m->tensor->name);
        jk_str(j, "dtype", dtype_name[m->tensor->ty.dt]);
        jk_int(j, "rank", m->rank);
        j_key(j, "box");
        j_ints(j, m->box, m->rank);
        jk_str(j, "box_order", "innermost first");
        jk_str(j, "swizzle", swizzle_name(m->swz));
        jk_bool(j, "store", m->store);
        j_close(j, '}');
    }
    j_close(j, ']');

    /* staged stores */
    jk_arr(j, "staged_stores");
    for (int i = 0; i < pk->stores.n; i++) {
        const PlanStore *ps = &pk->stores.v[i];
        if (ps->path != SP_STAGED) continue;
        j_open(j, '{');
        jk_str(j, "statement", stmt_str(a, ps->st));
        jk_str(j, "map", pk->maps.v[ps->map].name);
        int ch[2] = {ps->chunk_rows, ps->chunk_cols};
        j_key(j, "chunk");
        j_ints(j, ch, 2);
        j_close(j, '}');
    }
    j_close(j, ']');

    /* every store's path, and the named barriers with their ids */
    jk_arr(j, "stores");
    for (int i = 0; i < pk->stores.n; i++) {
        const PlanStore *ps = &pk->stores.v[i];
        j_open(j, '{');
        jk_str(j, "statement", stmt_str(a, ps->st));
        jk_str(j, "block", block_name[ps->block]);
        jk_str(j, "path", storepath_name[ps->path]);
        j_close(j, '}');
    }
    j_close(j, ']');
    jk_arr(j, "named_barriers");
    for (int i = 0; i < pk->nbars.n; i++) {
        const PlanNamedBar *nbar = &pk->nbars.v[i];
        j_open(j, '{');
        jk_str(j, "name", nbar->name);
        jk_int(j, "id", nbar->id);
        jk_int(j, "ids", nbar->ids);
        jk_int(j, "threads", nbar->threads);
        j_close(j, '}');
    }
    j_close(j, ']');

    jk_arr(j, "decisions");
    for (int i = 0; i < pk->notes.n; i++) j_str(j, pk->notes.v[i]);
    j_close(j, ']');
    j_close(j, '}');
}

char *emit_report(Arena *a, const Plan *p, const Program *prog, const EmitOptions *o) {
    StrBuf b;
    sb_init(&b);
    Json j = {.b = &b};
    j_open(&j, '{');
    jk_str(&j, "tkc_version", o->tkc_version);
    jk_str(&j, "source", path_base(o->source_path));
    jk_arr(&j, "params");
    for (int i = 0; i < prog->params.n; i++) {
        const Param *pa = prog->params.v[i];
        j_open(&j, '{');
        jk_str(&j, "name", pa->name);
        jk_int(&j, "value", pa->sym ? pa->sym->cval : 0);
        jk_bool(&j, "overridden", pa->overridden);
        j_close(&j, '}');
    }
    j_close(&j, ']');
    jk_obj(&j, "limits");
    jk_int(&j, "shared_memory", SMEM_LIMIT);
    jk_int(&j, "shared_memory_base_slack", SMEM_SLACK);
    jk_int(&j, "register_file", REG_FILE);
    j_close(&j, '}');
    jk_arr(&j, "status_codes");
#define X(name, v, m)                                                                                                  \
    j_open(&j, '{');                                                                                                   \
    jk_str(&j, "name", #name);                                                                                         \
    jk_int(&j, "value", v);                                                                                            \
    jk_str(&j, "meaning", m);                                                                                          \
    j_close(&j, '}');
    TK_STATUS(X)
#undef X
    j_close(&j, ']');
    jk_arr(&j, "kernels");
    for (int i = 0; i < p->kernels.n; i++) report_kernel(&j, a, p->kernels.v[i]);
    j_close(&j, ']');
    jk_arr(&j, "entries");
    for (int i = 0; i < p->entries.n; i++) report_entry(&j, a, p->entries.v[i]);
    j_close(&j, ']');
    j_close(&j, '}');
    sb_putc(&b, '\n');
    return sb_take(&b);
}
