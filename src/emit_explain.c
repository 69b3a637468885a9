/* emit_explain.c - tkc --explain: the facts of tkc --emit=report (emit_report.c, report_int.h)
 * as prose for a person, in wrapped paragraphs under headings: the launcher, roles, grid,
 * pipeline, shared memory, barriers, maps and stores of each kernel.
 * Invariant: the output depends only on the plan, the program and the source file's name: same
 * input, same bytes. Nothing here decides anything. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "report_int.h"

/* ---- --explain ------------------------------------------------------------------------------------ */

enum { WIDTH = 100 };

/* Short .tk text never breaks across lines: its spaces become '\x01' (see para). Longer text
 * may, so that no line has to run past WIDTH. */
static const char *nbx(Arena *a, const char *s) {
    if (strlen(s) > 40) return s;
    char *t = arena_strdup(a, s);
    for (char *c = t; *c; c++)
        if (*c == ' ') *c = '\x01';
    return t;
}
static const char *ex(Arena *a, const Expr *e) { return nbx(a, ast_expr_str(a, e)); }
static const char *pex(Arena *a, const PExpr *e) { return nbx(a, px_str(a, e)); }
static const char *stmt_nb(Arena *a, const PStmt *st) { return nbx(a, stmt_str(a, st)); }

/* A paragraph wrapped at WIDTH columns: every line starts with indent spaces, continuation lines
 * with hang more. '\x01' is a space that never breaks. */
static void para(StrBuf *b, int indent, int hang, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void para(StrBuf *b, int indent, int hang, const char *fmt, ...) {
    StrBuf t;
    sb_init(&t);
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(&t, fmt, ap);
    va_end(ap);
    sb_wrap(b, "", indent, hang, WIDTH, false, t.s ? t.s : "");
    sb_free(&t);
}

static void heading(StrBuf *b, const char *title) {
    sb_blank(b);
    sb_printf(b, "%s\n", title);
}

/* "a, b and c" */
static void join_and(StrBuf *b, const char *const *v, int n) {
    for (int i = 0; i < n; i++) sb_printf(b, "%s%s", i == 0 ? "" : i == n - 1 ? " and " : ", ", v[i]);
}

static const char *plural(int n, const char *one, const char *many) { return n == 1 ? one : many; }

static void explain_launcher(StrBuf *b, Arena *a, const PlanKernel *pk) {
    const KernelApi *k = api_of(a, pk);
    heading(b, "Launcher");
    StrBuf sig;
    sb_init(&sig);
    api_c_params(&sig, k);
    /* the declaration, wrapped only between parameters */
    for (size_t i = 0; i < sig.len; i++)
        if (i > 0 && sig.s[i] == ' ' && sig.s[i - 1] != ',') sig.s[i] = '\x01';
    para(b, 2, 4, "int %s(%s)", k->fn, sig.s ? sig.s : "");
    sb_free(&sig);
    for (int i = 0; i < k->params.n; i++) {
        const ApiParam *p = &k->params.v[i];
        if (p->kind != API_TENSOR) continue;
        StrBuf shape;
        sb_init(&shape);
        for (int d = 0; d < p->rank; d++) {
            if (d) sb_puts(&shape, ", ");
            if (p->dims[d].name) sb_puts(&shape, p->dims[d].name);
            else if (p->dims[d].expr->kind != PX_INT) {
                px_print(&shape, p->dims[d].expr);
                sb_printf(&shape, "\x01=\x01%" PRId64, p->dims[d].value);
            } else sb_printf(&shape, "%" PRId64, p->dims[d].value);
        }
        const char *role = p->mode == ARG_IN ? "an input" : p->mode == ARG_OUT ? "an output" : "read and written";
        const char *verb = p->mode == ARG_IN ? "read" : p->mode == ARG_OUT ? "written" : "read and written";
        if (p->tma)
            para(b, 2, 2, "- %s (%s, %s) is moved by TMA: its last stride must be 1; where its base or another stride "
                          "is not a multiple of 16 bytes, the launcher moves it through a copy with padded rows.",
                 p->name, role, nbx(a, arena_printf(a, "%s[%s]", dtype_name[p->dt], shape.s)));
        else
            para(b, 2, 2, "- %s (%s, %s) is %s directly by the kernel's threads, not by TMA: its base must be aligned "
                          "to one element (%d bytes); any strides work.",
                 p->name, role, nbx(a, arena_printf(a, "%s[%s]", dtype_name[p->dt], shape.s)), verb, dtype_bytes[p->dt]);
        if (p->zeroed)
            para(b, 4, 0, "%s is zeroed: the launcher clears it on the stream before the kernel runs, with a small kernel "
                          "(16-byte stores when its strides are contiguous, else zeros written through them) after which "
                          "it launches the kernel programmatically.",
                 p->name);
        sb_free(&shape);
    }
    const char **names = ARENA_NEW_N(a, const char *, k->params.n);
    int nd = 0, ns = 0;
    for (int i = 0; i < k->params.n; i++)
        if (k->params.v[i].kind == API_DIM) names[nd++] = k->params.v[i].name;
    if (nd) {
        StrBuf l;
        sb_init(&l);
        join_and(&l, names, nd);
        para(b, 2, 2, "- %s %s run-time %s, each 1 .. 2^31 - 1.", l.s, nd == 1 ? "is a" : "are",
             plural(nd, "dimension", "dimensions"));
        sb_free(&l);
    }
    for (int i = 0; i < k->params.n; i++)
        if (k->params.v[i].kind == API_SCALAR) names[ns++] = k->params.v[i].name;
    if (ns) {
        StrBuf l;
        sb_init(&l);
        join_and(&l, names, ns);
        para(b, 2, 2, "- %s %s %s, passed by value.", l.s, ns == 1 ? "is a" : "are", plural(ns, "scalar", "scalars"));
        sb_free(&l);
    }
    for (int i = 0; i < k->requires.n; i++)
        para(b, 2, 2, "- It checks 'require %s' and returns TKC_ERR_REQUIRE when it does not hold.",
             pex(a, k->requires.v[i]));
    para(b, 2, 2, "- It checks every argument before launching on the stream, and returns TKC_OK or a TKC_ERR_* code "
                  "(tkc --emit=header lists them).");
}

/* the producer/consumer setmaxnreg split and why */
static void explain_split(StrBuf *b, Arena *a, const PlanKernel *pk) {
    int c = pk->consumers;
    int dp, dc;
    reg_split_default(pk->consumers, &dp, &dc);
    int prod = 128 * pk->producer_regs, cons = 128 * c * pk->consumer_regs;
    const char *reason;
    if (!strcmp(pk->split_why, "program"))
        reason = "set in the .tk (producer_regs / consumer_regs)";
    else if (!strcmp(pk->split_why, "heavy_consumers"))
        reason = arena_printf(a, "lowering's choice instead of the default %d/%d: the consumers' estimate (%d registers) "
                                 "is over %d, so the producer keeps only %d (setmaxnreg's least is 24)",
                              dc, dp, pk->reg_estimate, REG_HEAVY_ESTIMATE, pk->producer_regs);
    else if (!strcmp(pk->split_why, "blocks_per_sm"))
        reason = arena_printf(a, "lowering's for blocks_per_sm = %d: the producer keeps setmaxnreg's least (24) and the "
                                 "consumers share the rest of the block's registers", pk->min_blocks);
    else
        reason = arena_printf(a, "tkc's default for %d consumer %s", c, plural(c, "warpgroup", "warpgroups"));
    const int pool = block_reg_pool(pk->threads, pk->min_blocks);
    para(b, 2, 0, "The split %d/%d (consumer/producer) is %s. setmaxnreg counts in multiples of 8 and moves registers "
                  "only within the block, so the whole block must fit what it is given, %d threads x %d registers "
                  "(__launch_bounds__(%d, %d)): 128 x %d + %d x 128 x %d = %s + %s = %s of %s registers (%s spare).",
         pk->consumer_regs, pk->producer_regs, reason, pk->threads, block_reg_cap(pk->threads, pk->min_blocks),
         pk->threads, pk->min_blocks, pk->producer_regs, c, pk->consumer_regs, fmt_bytes(prod), fmt_bytes(cons),
         fmt_bytes(prod + cons), fmt_bytes(pool), fmt_bytes(pool - prod - cons));
}

/* the consumers' register estimate, term by term, against the `avail` registers a thread has */
static void explain_estimate(StrBuf *b, const PlanKernel *pk, int avail) {
    StrBuf parts;
    sb_init(&parts);
    for (int i = 0; i < pk->regs.n; i++) {
        const PlanReg *r = &pk->regs.v[i];
        if (r->sym->kind == SYM_LET) continue;
        int rw, cols, eb, cx;
        sb_printf(&parts, "%s %d", r->sym->name, r->regs);
        if (reg_tile_arith(pk, r, &rw, &cols, &eb, &cx))
            sb_printf(&parts, " (%s%d rows x %d x %d B per warpgroup / (128 threads x 4 B))", cx == 2 ? "2 x " : "", rw,
                      cols, eb);
        sb_puts(&parts, " + ");
    }
    if (pk->reg_lets) sb_printf(&parts, "temporaries %d (the most live at once) + ", pk->reg_lets);
    sb_printf(&parts, "overhead %d (addresses, loop counters, descriptors)", pk->reg_overhead);
    if (pk->reg_live_peak && pk->reg_live_peak <= avail)
        para(b, 2, 0, "The consumer thread's register values add up to about %d registers: %s = %d, more than the %d it "
             "has, but a step never holds them all: counting the values written and read within a step only while "
             "they are live, it holds at most about %d at once (%d spare); ptxas decides the rest.",
             pk->reg_estimate, parts.s, pk->reg_estimate, avail, pk->reg_live_peak, avail - pk->reg_live_peak);
    else
        para(b, 2, 0, "Each consumer thread needs about %d registers: %s = %d, of the %d it has (%d spare).", pk->reg_estimate,
             parts.s, pk->reg_estimate, avail, avail - pk->reg_estimate);
    sb_free(&parts);
}

/* the tensor-core products each consumer warpgroup issues */
static void explain_mmas(StrBuf *b, Arena *a, const PlanKernel *pk) {
    MmaRefs mm = all_mmas(a, pk);
    if (!mm.n) return;
    para(b, 2, 0, "The tensor-core products, as each consumer warpgroup issues them:");
    for (int i = 0; i < mm.n; i++) {
        const PlanMma *m = mm.v[i].m;
        int inst_n, count;
        plan_mma_shape(m, &inst_n, &count);
        StrBuf d;
        sb_init(&d);
        sb_printf(&d, "%d x wgmma m64n%dk16 %s (m %d x n %d x k %d per warpgroup), ", count, inst_n,
                  !strcmp(mm.v[i].where, "step") ? "every step" : !strcmp(mm.v[i].where, "setup") ? "in setup" : "in finish",
                  m->wg_m, m->n, m->k);
        if (m->a_reg) sb_puts(&d, "A from registers");
        else sb_printf(&d, "A %s from shared memory", plan_major_name(m->a.mn_major, 'A'));
        sb_printf(&d, ", B %s from shared memory (swizzle %s)", plan_major_name(m->b.mn_major, 'B'),
                  swizzle_name(pk->bufs.v[m->b.buf].swz));
        if (m->zero_first) sb_puts(&d, "; the first step sets scale-d = 0, so the zero fill in setup costs nothing");
        if (m->deferred) sb_puts(&d, "; issued one step late (overlap), reading the previous step's stage");
        para(b, 2, 2, "- %s: %s.", stmt_nb(a, mm.v[i].st), d.s);
        sb_free(&d);
    }
}

static void explain_roles(StrBuf *b, Arena *a, const PlanKernel *pk) {
    heading(b, "Warpgroups and registers");
    int c = pk->consumers;
    /* the registers a consumer thread has: setmaxnreg's, or, without a producer, what
     * __launch_bounds__' min_blocks leaves each thread */
    const int avail = pk->no_producer ? block_reg_cap(pk->threads, pk->min_blocks) : pk->consumer_regs;
    if (pk->no_producer) {
        para(b, 2, 0, "A block has %d threads in %d %s of 128, all consumers: the kernel loads nothing through TMA, so "
                      "there is no producer warpgroup and no setmaxnreg. __launch_bounds__ asks for %d %s per SM, so "
                      "ptxas fits each thread into %d registers (65,536 / (%d x %d threads)%s).",
             pk->threads, c, plural(c, "warpgroup", "warpgroups"), pk->min_blocks, plural(pk->min_blocks, "block", "blocks"),
             avail, pk->min_blocks, pk->threads, avail == 255 ? ", at most 255" : ", rounded down to 8");
    } else if (c == 1)
        para(b, 2, 0, "A block has %d threads in 2 warpgroups of 128. Warpgroup 0 is the producer: one of its threads issues "
                      "every TMA load, so it needs few registers and gives them up (setmaxnreg.dec to %d per thread). "
                      "Warpgroup 1 is the consumer: it issues the tensor-core products and runs the epilogue, with %d "
                      "registers per thread (setmaxnreg.inc).",
             pk->threads, pk->producer_regs, pk->consumer_regs);
    else
        para(b, 2, 0, "A block has %d threads in %d warpgroups of 128. Warpgroup 0 is the producer: one of its threads "
                      "issues every TMA load, so it needs few registers and gives them up (setmaxnreg.dec to %d per "
                      "thread). Warpgroups 1 %s %d are the consumers: they issue the tensor-core products and run the "
                      "epilogue, each with %d registers per thread (setmaxnreg.inc); register tiles are split between "
                      "them by rows.",
             pk->threads, c + 1, pk->producer_regs, c == 2 ? "and" : "to", c, pk->consumer_regs);
    if (!pk->no_producer) explain_split(b, a, pk);
    explain_estimate(b, pk, avail);
    explain_mmas(b, a, pk);
}

static void explain_grid(StrBuf *b, Arena *a, const PlanKernel *pk) {
    const SemaKernel *sk = pk->sk;
    heading(b, "Grid");
    if (!sk->axes.n) {
        para(b, 2, 0, "There is one work tile.");
    } else {
        StrBuf ax, names;
        sb_init(&ax);
        sb_init(&names);
        for (int i = 0; i < sk->axes.n; i++) {
            const Axis *x = sk->axes.v[i];
            sb_printf(&ax, "%sblock.%s in 0 .. %s - 1", i == 0 ? "" : i == sk->axes.n - 1 ? " and " : ", ", x->name,
                      ex(a, x->extent));
            sb_printf(&names, "%s%s", i ? " x " : "", ex(a, x->extent));
        }
        para(b, 2, 0, "A work tile is one value of %s: %s work tiles.", ax.s, names.s);
        sb_free(&ax);
        sb_free(&names);
    }
    for (int i = 0; i < sk->axes.n; i++)
        if (sk->axes.v[i]->reversed)
            para(b, 2, 0, "block.%s is reversed: it counts down from its last value, so the tiles with the highest block.%s "
                          "start first.",
                 sk->axes.v[i]->name, sk->axes.v[i]->name);
    for (int i = 0; i < sk->axes.n; i++)
        if (sk->axes.v[i]->folded)
            para(b, 2, 0, "block.%s is folded: it takes its last value, then its first, then the second last, the second, "
                          "and so on, so neighbouring work tiles pair a long tile with its short partner (when a tile's "
                          "cost grows with block.%s, every pair costs about the same).",
                 sk->axes.v[i]->name, sk->axes.v[i]->name);
    if (pk->cluster > 1 && sk->axes.n) {
        StrBuf units;
        sb_init(&units);
        const Axis *ca = sk->axes.v[pk->cluster_axis];
        for (int i = 0; i < sk->axes.n; i++)
            if (i == pk->cluster_axis) sb_printf(&units, "%scdiv(%s, %d)", i ? " x " : "", ex(a, ca->extent), pk->cluster);
            else sb_printf(&units, "%s%s", i ? " x " : "", ex(a, sk->axes.v[i]->extent));
        para(b, 2, 0, "Blocks run in clusters of %d along %s: a cluster takes %d consecutive values of block.%s%s as one "
                      "unit of work (%s units), and loads that do not depend on block.%s are multicast by TMA into "
                      "every block of the cluster.%s",
             pk->cluster, ca->name, pk->cluster, ca->name, ca->folded ? " before the fold (the pair of tiles it puts together)" : "",
             units.s, ca->name,
             ca->folded ? " When the folded axis has an odd number of tiles, both blocks of the last cluster of each row "
                          "compute its middle tile and write the same bytes." : "");
        sb_free(&units);
    }
    const char *unit = pk->cluster > 1 ? "cluster" : "block";
    if (pk->persistent && pk->cluster > 1)
        para(b, 2, 0, "The grid is persistent: the launcher starts as many clusters as fit on the device at once "
                      "(cudaOccupancyMaxActiveClusters), but no more than there are units of work, and each cluster "
                      "walks the units with a stride of the number of clusters, carrying its pipeline's stages and "
                      "phases across them, so the producer prefetches the next unit while the consumers run the "
                      "epilogue.");
    else if (pk->paired)
        para(b, 2, 0, "The grid is persistent: the launcher starts min(ceil(work tiles / 2), SMs) blocks. Each takes "
                      "neighbouring work tiles two at a time (tiles 2p and 2p + 1), in rounds of one pair per block; "
                      "the tiles left after the last whole round are spread one per block where they do not fill a "
                      "round (templates/tkc_sched.cuh). Stages and phases carry across tiles, so the producer "
                      "prefetches the next tile while the consumers run the epilogue.");
    else if (pk->persistent)
        para(b, 2, 0, "The grid is persistent: the launcher starts min(work tiles, SMs) blocks, and each walks the work "
                      "tiles with a stride of the grid size, carrying its pipeline's stages and phases across tiles, so "
                      "the producer prefetches the next tile while the consumers run the epilogue.");
    else
        para(b, 2, 0, "The launcher starts one %s per %s.", unit, pk->cluster > 1 ? "unit of work" : "work tile");
    bool cl = pk->cluster > 1;
    if (pk->order == ORDER_ROW_MAJOR || sk->axes.n < 2) {
        para(b, 2, 0, "%s are numbered in row-major order: the last axis varies fastest.", cl ? "Units of work" : "Work tiles");
    } else {
        bool m = pk->order == ORDER_SUPER_M;
        const char *g = sk->axes.v[m ? 0 : 1]->name, *other = sk->axes.v[m ? 1 : 0]->name;
        para(b, 2, 0, "%s are numbered in %s(%d) order: strips of %d consecutive %s along %s are walked together, %s "
                      "varying fastest within a strip, so consecutive %s share block.%s and reuse each other's loads "
                      "from L2.",
             cl ? "Units of work" : "Work tiles", order_name(pk->order), pk->order_group, pk->order_group,
             cl ? "units" : "tiles", g, g, cl ? "units" : "tiles", other);
    }
}

static void explain_pipeline(StrBuf *b, Arena *a, const PlanKernel *pk) {
    const SemaKernel *sk = pk->sk;
    heading(b, "Pipeline");
    if (sk->pipe) {
        const char *v = sk->loopvar ? sk->loopvar->name : sk->pipe->u.pipe.var;
        const Expr *t = sk->pipe->u.pipe.trips;
        if (t->kind == EX_NAME && t->sym && t->sym->kind == SYM_LET && t->sym->init)
            para(b, 2, 0, "Each work tile runs the steps %s = 0 .. %s - 1, where %s = %s.", v, ex(a, t),
                 ex(a, t), ex(a, t->sym->init));
        else
            para(b, 2, 0, "Each work tile runs the steps %s = 0 .. %s - 1.", v, ex(a, t));
        if (pk->stages > 1)
            para(b, 2, 0, "The ring tiles have %d stages (a copy of each per stage), so the producer can run up to %d "
                          "steps ahead of the consumers. Before it refills a stage it waits on the stage's empty barrier (every "
                          "consumer warpgroup has released it); the consumers wait on its full barrier (the bytes have "
                          "landed) before they read it.",
                 pk->stages, pk->stages);
        else
            para(b, 2, 0, "The ring tiles have one stage: the producer refills it only after every consumer warpgroup "
                          "has released it, so loads and products do not overlap.");
        if (pk->overlap) {
            MmaRefs mm = {0};
            collect_mmas(a, &mm, &pk->compute_ops, "step");
            StrBuf d;
            sb_init(&d);
            for (int i = 0; i < mm.n; i++)
                if (mm.v[i].m->deferred) sb_printf(&d, "%s'%s'", d.len ? ", " : "", stmt_nb(a, mm.v[i].st));
            para(b, 2, 0, "Overlap: %s %s issued one step late, right after the next step's first product, so the work "
                          "between them runs under both products.",
                 d.len ? d.s : "the last product", d.len && strchr(d.s, ',') ? "are" : "is");
            sb_free(&d);
        }
        if (pk->pingpong)
            para(b, 2, 0, "Pingpong: the consumer warpgroups take turns issuing their products (named barriers), so one "
                          "warpgroup's elementwise work runs while the other's products use the tensor cores.");
    } else {
        para(b, 2, 0, "There is no pipeline: the kernel runs its setup and finish once per work tile.");
    }
    for (int g = 0; g < pk->groups.n; g++) {
        const PlanGroup *pg = &pk->groups.v[g];
        para(b, 2, 0, "%s the producer loads group %s onto %s (%s bytes)%s:", pg->once ? "Once per work tile" : "Every step",
             pg->name, pk->bars.v[pg->full].name, fmt_bytes(pg->bytes),
             pg->once && pk->setup_stages > 1
                 ? ", into one of two copies by the tile's parity, so the next tile's load does not wait for this tile's "
                   "last step"
                 : "");
        for (int i = 0; i < pg->loads.n; i++) {
            const PlanLoad *pl = &pg->loads.v[i];
            const PlanMap *m = &pk->maps.v[pl->map];
            int nbox = pk->bufs.v[pl->buf].natoms;
            para(b, 2, 2, "- %s: %d %s of %d x %d through %s%s.", stmt_nb(a, pl->st), nbox, plural(nbox, "box", "boxes"),
                 m->rank > 1 ? m->box[1] : 1, m->box[0], m->name,
                 pl->multicast ? ", multicast: each block of the cluster issues its share and TMA writes into all of them"
                               : "");
        }
    }
}

/* buffers in offset order */
static void sorted_bufs(const PlanKernel *pk, int *idx) {
    for (int i = 0; i < pk->bufs.n; i++) idx[i] = i;
    for (int i = 1; i < pk->bufs.n; i++)
        for (int k = i; k > 0 && pk->bufs.v[idx[k - 1]].offset > pk->bufs.v[idx[k]].offset; k--) {
            int t = idx[k];
            idx[k] = idx[k - 1];
            idx[k - 1] = t;
        }
}

static void explain_smem(StrBuf *b, Arena *a, const PlanKernel *pk) {
    heading(b, "Shared memory");
    para(b, 2, 0, "Offsets count from the dynamic shared-memory base, which the kernel rounds up to 1,024 bytes (the "
                  "period of the 128B swizzle).");
    int *idx = ARENA_NEW_N(a, int, pk->bufs.n + 1);
    sorted_bufs(pk, idx);
    static const char *const kind_text[] = {
        [BUF_RING] = "a ring tile, one copy per stage",
        [BUF_ONCE] = "loaded once per work tile",
        [BUF_SCRATCH] = "written by the consumers",
        [BUF_STAGING] = "store staging: registers -> shared -> TMA store",
    };
    for (int n = 0; n < pk->bufs.n; n++) {
        const PlanBuf *pb = &pk->bufs.v[idx[n]];
        char shape[64];
        if (pb->is_vec) snprintf(shape, sizeof shape, "%s[%d]", dtype_name[pb->dt], pb->cols);
        else snprintf(shape, sizeof shape, "%s[%d, %d]", dtype_name[pb->dt], pb->rows, pb->cols);
        StrBuf d;
        sb_init(&d);
        sb_printf(&d, "- %s, %s (%s", pb->name, shape, kind_text[pb->kind]);
        if (pb->kind == BUF_STAGING)
            sb_printf(&d, ", %d per consumer warpgroup", pk->staging_per_wg);
        if (pb->group >= 0 && pb->group < pk->groups.n) sb_printf(&d, ", group %s", pk->groups.v[pb->group].name);
        sb_printf(&d, "), at offset %s: ", fmt_bytes(pb->offset));
        if (pb->copies > 1) sb_printf(&d, "%d x %s = %s bytes", pb->copies, fmt_bytes(pb->bytes), fmt_bytes((int64_t)pb->bytes * pb->copies));
        else sb_printf(&d, "%s bytes", fmt_bytes(pb->bytes));
        if (pb->swz != SWZ_NONE) {
            int row = pb->atom_cols * dtype_bytes[pb->dt];
            sb_printf(&d, ". Swizzle %s, aligned to %s bytes; stored as %d %s of %d elements (%d-byte rows)", swizzle_name(pb->swz),
                      fmt_bytes(pb->align), pb->natoms, plural(pb->natoms, "atom column", "atom columns"),
                      pb->atom_cols, row);
            if (pb->natoms > 1) sb_puts(&d, " side by side, one TMA box each");
        } else {
            sb_printf(&d, ". No swizzle, aligned to %d bytes", pb->align);
        }
        para(b, 2, 2, "%s.", d.s);
        sb_free(&d);
    }
    int nb = barrier_bytes(pk);
    if (pk->bars.n)
        para(b, 2, 2, "- barriers, at offset %s: %d mbarriers x 8 = %d bytes.", fmt_bytes(pk->bars.v[0].offset), nb / 8, nb);
    StrBuf sum;
    sb_init(&sum);
    for (int n = 0; n < pk->bufs.n; n++) {
        const PlanBuf *pb = &pk->bufs.v[idx[n]];
        sb_printf(&sum, "%s%s", n ? " + " : "", fmt_bytes((int64_t)pb->bytes * pb->copies));
    }
    int pad = pk->smem_used - buffers_bytes(pk) - nb;
    if (pad) sb_printf(&sum, "%s%s (alignment padding)", sum.len ? " + " : "", fmt_bytes(pad));
    if (nb) sb_printf(&sum, "%s%d (barriers)", sum.len ? " + " : "", nb);
    int spare = SMEM_LIMIT - pk->smem_total;
    para(b, 2, 0, "Total: %s = %s bytes used, plus %s bytes of slack for rounding the base up = %s of the %s bytes a "
                  "block may use (%s %s).",
         sum.len ? sum.s : "0", fmt_bytes(pk->smem_used), fmt_bytes(SMEM_SLACK), fmt_bytes(pk->smem_total),
         fmt_bytes(SMEM_LIMIT), fmt_bytes(spare < 0 ? -spare : spare), spare < 0 ? "over" : "to spare");
    sb_free(&sum);
}

static void explain_barriers(StrBuf *b, const PlanKernel *pk) {
    if (!pk->bars.n) return;
    heading(b, "Barriers");
    for (int i = 0; i < pk->bars.n; i++) {
        const PlanBarrier *pb = &pk->bars.v[i];
        bool full = false;
        int g = group_of_barrier(pk, i, &full);
        StrBuf d;
        sb_init(&d);
        if (pb->copies > 1)
            sb_printf(&d, "- %s[%d] (one per %s) at %s: ", pb->name, pb->copies,
                      g >= 0 && pk->groups.v[g].once ? "copy of the setup tiles" : "stage", fmt_bytes(pb->offset));
        else
            sb_printf(&d, "- %s at %s: ", pb->name, fmt_bytes(pb->offset));
        sb_printf(&d, "%d %s per phase", pb->count, plural(pb->count, "arrival", "arrivals"));
        if (g >= 0 && full) {
            const PlanGroup *pg = &pk->groups.v[g];
            sb_printf(&d, ". The producer's thread arrives once with arrive.expect_tx for %s bytes", fmt_bytes(pb->tx_bytes));
            if (pg->bufs.n > 1) {
                sb_puts(&d, " (");
                for (int k = 0; k < pg->bufs.n; k++)
                    sb_printf(&d, "%s%s %s", k ? " + " : "", pk->bufs.v[pg->bufs.v[k]].name,
                              fmt_bytes(pk->bufs.v[pg->bufs.v[k]].bytes));
                sb_puts(&d, ")");
            } else if (pg->bufs.n == 1) {
                sb_printf(&d, " (one copy of %s)", pk->bufs.v[pg->bufs.v[0]].name);
            }
            sb_printf(&d, ", and the phase completes when TMA has delivered them%s. The consumers wait on it before "
                          "reading %s",
                      pg->multicast ? "; with multicast, the other blocks of the cluster deliver part of them" : "",
                      pg->once ? "the setup tiles" : "the stage");
        } else if (g >= 0) {
            const PlanGroup *pg = &pk->groups.v[g];
            const char *what = pg->once ? "the setup tiles of the work tile" : "the stage";
            if (pg->warp_release)
                sb_printf(&d, ". Lane 0 of each of the %d consumer warps%s arrives when its warp is done with %s: the "
                              "warps read %s with their own loads, so one thread cannot know the others are done, and "
                              "each thread first fences its reads (fence.proxy.async) so the TMA refill lands after them",
                          4 * pk->consumers, pg->multicast && pk->cluster > 1 ? " of each block of the cluster" : "", what,
                          pg->once ? "them" : "it");
            else if (pg->multicast && pk->cluster > 1)
                sb_printf(&d, ". One elected thread of each of the %d consumer warpgroups of each of the %d blocks of the "
                              "cluster arrives when it is done with %s (multicast writes into all of them)",
                          pk->consumers, pk->cluster, pg->once ? "the setup tiles" : "the stage");
            else if (pk->consumers == 1)
                sb_printf(&d, ". One elected thread of the consumer warpgroup arrives when it is done with %s",
                          pg->once ? "the setup tiles of the work tile" : "the stage");
            else
                sb_printf(&d, ". One elected thread of each of the %d consumer warpgroups arrives when it is done with %s",
                          pk->consumers, pg->once ? "the setup tiles of the work tile" : "the stage");
            sb_printf(&d, "; the producer waits on it before %s", pg->once ? "loading the next work tile's setup tiles" : "refilling it");
        } else {
            sb_printf(&d, " (%s)", pb->why);
        }
        para(b, 2, 2, "%s.", d.s);
        sb_free(&d);
    }
}

static void explain_store(StrBuf *b, Arena *a, const PlanKernel *pk, const PlanStore *ps) {
    switch (ps->path) {
    case SP_STAGED:
        para(b, 2, 2, "- %s: through %d x %d chunks of staging in shared memory, each sent by a TMA store "
                      "(%s); %s.",
             stmt_nb(a, ps->st), ps->chunk_rows, ps->chunk_cols, pk->maps.v[ps->map].name,
             pk->staging_per_wg == 2 ? "two chunks per consumer warpgroup, so one fills while the other is stored"
                                     : "one chunk per consumer warpgroup, so each waits for the previous store");
        return;
    case SP_DIRECT:
        para(b, 2, 2, "- %s: written by the consumer threads directly from registers, two %s elements per store where the "
                      "strides allow%s.",
             stmt_nb(a, ps->st), dtype_bytes[ps->st->rhs->ty.dt] == 4 ? "fp32" : "16-bit",
             dtype_bytes[ps->st->rhs->ty.dt] == 4 ? "" : " (staging = 0)");
        return;
    case SP_VECTOR:
        para(b, 2, 2, "- %s: written by the consumer threads directly from registers.", stmt_nb(a, ps->st));
        return;
    case SP_ROWS:
        para(b, 2, 2, "- %s: written by the consumer threads from the row layout, each lane its chunks of 8 consecutive "
                      "columns in one 16-byte store where the strides allow.", stmt_nb(a, ps->st));
        return;
    case SP_RED: {
        DType dt = ps->st->rhs->ty.dt;
        const char *k = dt == DT_FP32 ? "f32" : dt == DT_BF16 ? "bf16" : "f16";
        para(b, 2, 2, "- %s: added atomically by the consumer threads from registers, each with red.global.add.%s on "
                      "the elements it holds%s; rows and columns past the tensor's end are skipped.",
             stmt_nb(a, ps->st), k,
             ps->st->rhs->ty.kind != TY_TILE ? ""
             : dt == DT_FP32 ? " (two adjacent columns per red.global.add.v2.f32 where the strides allow)"
                             : arena_printf(a, " (two adjacent columns per red.global.add.noftz.%sx2 where the strides allow)", k));
        return;
    }
    case SP_TMA: case SP_TMA_ADD:
        para(b, 2, 2, "- %s: %s of the shared tile '%s' (%s), issued by the first thread of the first consumer "
                      "warpgroup once every warpgroup has written its part.",
             stmt_nb(a, ps->st), ps->path == SP_TMA ? "a TMA store" : "a TMA reduce-add", pk->bufs.v[ps->buf].name,
             pk->maps.v[ps->map].name);
        return;
    }
}

static void explain_maps_and_stores(StrBuf *b, Arena *a, const PlanKernel *pk) {
    if (pk->maps.n) {
        heading(b, "TMA maps");
        for (int i = 0; i < pk->maps.n; i++) {
            const PlanMap *m = &pk->maps.v[i];
            StrBuf box;
            sb_init(&box);
            for (int d = 0; d < m->rank; d++) sb_printf(&box, "%s%d", d ? ", " : "", m->box[d]);
            para(b, 2, 2, "- %s: %s (%s, rank %d), box {%s} innermost first, swizzle %s, used for %s.", m->name,
                 m->tensor->name, dtype_name[m->tensor->ty.dt], m->rank, box.s, swizzle_name(m->swz),
                 m->store ? "stores" : "loads");
            sb_free(&box);
        }
    }
    bool every_step = false;
    for (int i = 0; i < pk->stores.n; i++) every_step |= pk->stores.v[i].block == BK_STORE;
    if (every_step) {
        heading(b, "Store block (every step, after compute)");
        for (int i = 0; i < pk->stores.n; i++)
            if (pk->stores.v[i].block == BK_STORE) explain_store(b, a, pk, &pk->stores.v[i]);
    }
    bool any = false;
    for (int i = 0; i < pk->finish_ops.n; i++)
        any |= pk->finish_ops.v[i]->kind == POP_STMT || pk->finish_ops.v[i]->kind == POP_STORE ||
               pk->finish_ops.v[i]->kind == POP_MOVE;
    if (!any) return;
    heading(b, "Finish");
    for (int i = 0; i < pk->finish_ops.n; i++) {
        const POp *o = pk->finish_ops.v[i];
        if (o->kind == POP_STORE && o->store >= 0) explain_store(b, a, pk, &pk->stores.v[o->store]);
        else if (o->kind == POP_MOVE)
            para(b, 2, 2, "- %s: moved by the consumer threads (%s).", stmt_nb(a, o->st), movepath_name[o->mv->path]);
        else if (o->kind == POP_STMT && o->st)
            para(b, 2, 2, "- %s: computed by the consumer threads.", stmt_nb(a, o->st));
    }
}

static void explain_kernel(StrBuf *b, Arena *a, const PlanKernel *pk) {
    sb_blank(b);
    char *title = arena_printf(a, "Kernel %s", pk->name);
    sb_printf(b, "%s\n", title);
    for (size_t i = 0; i < strlen(title); i++) sb_putc(b, '=');
    sb_putc(b, '\n');
    explain_launcher(b, a, pk);
    explain_roles(b, a, pk);
    explain_grid(b, a, pk);
    explain_pipeline(b, a, pk);
    explain_smem(b, a, pk);
    explain_barriers(b, pk);
    explain_maps_and_stores(b, a, pk);
    heading(b, "Decisions, in the order lowering made them (a later one can revise an earlier one)");
    for (int i = 0; i < pk->notes.n; i++) para(b, 2, 2, "- %s", pk->notes.v[i]);
}

/* the kernels an entry launches, in order, and under which run-time conditions */
static void explain_steps(StrBuf *b, Arena *a, const PESteps *l, int depth) {
    for (int i = 0; i < l->n; i++) {
        const PEStep *s = l->v[i];
        switch (s->kind) {
        case PE_LET: para(b, depth, depth + 2, "- let %s = %s", s->name, px_str(a, s->value)); break;
        case PE_SCRATCH: {
            StrBuf sh;
            sb_init(&sh);
            for (int d = 0; d < s->rank; d++) sb_printf(&sh, "%s%s", d ? ", " : "", px_str(a, s->dims[d]));
            para(b, depth, depth + 2, "- scratch %s: %s[%s], allocated on the stream, freed on it after the kernels that use it",
                 s->name, dtype_name[s->dt], sh.s);
            sb_free(&sh);
            break;
        }
        case PE_CALL: para(b, depth, depth + 2, "- launch %s (its launcher checks the arguments)", s->name); break;
        case PE_IF:
            if (s->decided) {
                explain_steps(b, a, &s->then_s, depth);
                break;
            }
            para(b, depth, depth + 2, "- if %s:", px_str(a, s->value));
            explain_steps(b, a, &s->then_s, depth + 2);
            if (s->else_s.n) {
                para(b, depth, depth + 2, "- otherwise:");
                explain_steps(b, a, &s->else_s, depth + 2);
            }
            break;
        }
    }
}

static void explain_entry(StrBuf *b, Arena *a, const PlanEntry *pe) {
    sb_printf(b, "\nEntry %s: a host launcher (tkc_%s) that runs kernels of this file in order\n", pe->name, pe->name);
    explain_steps(b, a, &pe->body, 2);
    for (int i = 0; i < pe->notes.n; i++) para(b, 2, 4, "- %s", pe->notes.v[i]);
}

char *emit_explain(Arena *a, const Plan *p, const Program *prog, const EmitOptions *o) {
    StrBuf b;
    sb_init(&b);
    sb_printf(&b, "How tkc %s compiles %s\n", o->tkc_version, path_base(o->source_path));
    if (prog->params.n) {
        para(&b, 0, 2, "Params: %s.", api_params_text(a, prog));
    }
    for (int i = 0; i < p->kernels.n; i++) explain_kernel(&b, a, p->kernels.v[i]);
    for (int i = 0; i < p->entries.n; i++) explain_entry(&b, a, p->entries.v[i]);
    for (int i = 0; i < p->left_out.n; i++)
        para(&b, 0, 2, "\nKernel %s: left out of this build, its condition is false for these params (no code, no "
             "launcher).", p->left_out.v[i]);
    return sb_take(&b);
}
