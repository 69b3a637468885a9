/* test_protocol.c - the barrier protocol check (src/verify_protocol.c): the suite's kernels pass it,
 * and each kind of violation injected into a real plan is caught and named: arrival counts, byte
 * counts, a stage released or refilled while it is still read, phases that do not alternate, a
 * role that waits forever. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "plan.h"
#include "sema.h"
#include "parse.h"

typedef struct Fix {
    Arena a;
    Diag d;
    Program prog;
    SemaResult sr;
    Plan plan;
    FILE *sink;
} Fix;

/* parses, checks and lowers ROOT/path (with -D defines "NAME=VALUE"), without the verifier */
static PlanKernel *lower(Fix *f, const char *path, const char *define) {
    memset(f, 0, sizeof *f);
    f->sink = fopen("/dev/null", "w");
    diag_init(&f->d, &f->a, f->sink);
    char *full = arena_printf(&f->a, "%s/%s", TKC_SOURCE_DIR, path);
    Define defs[1] = {{0}};          /* every field, is_dtype too: sema reads it for each define */
    int ndefs = 0;
    if (define) {
        const char *eq = strchr(define, '=');
        defs[0].name = arena_strndup(&f->a, define, (size_t)(eq - define));
        defs[0].value = atoll(eq + 1);
        ndefs = 1;
    }
    assert_true(parse_file(&f->a, &f->d, &f->prog, full, SPAN_NONE, 0));
    assert_true(sema_run(&f->a, &f->d, &f->prog, defs, ndefs, &f->sr));
    assert_true(lower_program(&f->a, &f->d, &f->prog, &f->sr, &f->plan));
    assert_int_equal(f->d.nerrors, 0);
    return f->plan.kernels.v[0];
}

static void done(Fix *f) {
    arena_free(&f->a);
    fclose(f->sink);
}

static const char *check(Fix *f, const PlanKernel *pk, ProtocolStats *st) { return plan_check_protocol(&f->a, pk, st); }

/* the violation names rule */
static void expect_rule(Fix *f, const PlanKernel *pk, const char *rule) {
    const char *why = check(f, pk, NULL);
    if (!why || !strstr(why, rule)) print_message("expected rule %s, got: %s\n", rule, why ? why : "(none)");
    assert_non_null(why);
    assert_non_null(strstr(why, rule));
}

static void suite_kernels_pass(void **state) {
    (void)state;
    static const struct { const char *path, *define; } ks[] = {
        {"kernels.tk/gemm.tk", NULL},      {"kernels.tk/attn_fwd.tk", NULL},   {"kernels.tk/attn_fwd.tk", "CAUSAL=1"},
        {"kernels.tk/attn_fwd.tk", "D=64"}, {"kernels.tk/attn_bwd.tk", NULL},   {"kernels.tk/layernorm.tk", NULL},
        {"kernels.tk/softmax.tk", NULL},    {"kernels.tk/rotary.tk", NULL},     {"tests/golden/plan/many_groups.tk", NULL},
        {"tests/golden/plan/lazy_sums_add.tk", NULL}, {"tests/golden/plan/wg_private_tiles.tk", NULL},
        {"bench/experiments/fftconv/fft2.tk", NULL},
    };
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
        Fix f;
        lower(&f, ks[i].path, ks[i].define);
        for (int k = 0; k < f.plan.kernels.n; k++) {
            ProtocolStats st = {0};
            const char *why = check(&f, f.plan.kernels.v[k], &st);
            if (why) print_message("%s: %s\n", ks[i].path, why);
            assert_null(why);
            assert_true(st.configs > 0 && st.states > 0);
            assert_false(st.truncated);
            print_message("%s%s%s kernel %s: %ld configurations, %ld states\n", ks[i].path, ks[i].define ? " -D" : "",
                          ks[i].define ? ks[i].define : "", f.plan.kernels.v[k]->name, st.configs, st.states);
        }
        done(&f);
    }
}

static int find_op(const POpList *ops, POpKind kind, int from) {
    for (int i = from; i < ops->n; i++)
        if (ops->v[i]->kind == kind) return i;
    return -1;
}

static void delete_op(POpList *ops, int at) {
    for (int i = at; i + 1 < ops->n; i++) ops->v[i] = ops->v[i + 1];
    ops->n--;
}

/* an empty barrier that counts one arrival more than the consumers give: its phase never
 * completes (with one step the kernel ends so; with a full ring the producer waits forever) */
static void arrivals_count_too_high(void **state) {
    (void)state;
    Fix f;
    PlanKernel *pk = lower(&f, "kernels.tk/gemm.tk", NULL);
    pk->bars.v[pk->groups.v[0].empty].count++;
    expect_rule(&f, pk, "rule 'arrivals'");
    done(&f);
}

/* a release done twice: its role arrives twice in one phase */
static void arrivals_twice(void **state) {
    (void)state;
    Fix f;
    PlanKernel *pk = lower(&f, "kernels.tk/gemm.tk", NULL);
    int i = find_op(&pk->compute_ops, POP_RELEASE, 0);
    assert_true(i >= 0);
    POp *dup = arena_alloc(&f.a, sizeof *dup);
    *dup = *pk->compute_ops.v[i];
    vec_push(&f.a, &pk->compute_ops, dup);
    expect_rule(&f, pk, "rule 'release'");  /* the walk sees it first: a release of a stage it no longer holds */
    done(&f);
}

/* a named barrier whose thread count is not that of the warpgroups that meet on it: two
 * consumer warpgroups on a barrier of 384 threads */
static void arrivals_named_barrier(void **state) {
    (void)state;
    Fix f;
    PlanKernel *pk = lower(&f, "kernels.tk/attn_fwd.tk", NULL);
    assert_int_equal(pk->consumers, 2);
    vec_push(&f.a, &pk->nbars, ((PlanNamedBar){.name = "injected", .id = 15, .ids = 1, .threads = 384, .why = "test"}));
    POp *o = arena_alloc(&f.a, sizeof *o);
    o->kind = POP_BAR;
    o->bar = pk->nbars.n - 1;
    vec_push(&f.a, &pk->finish_ops, o);
    expect_rule(&f, pk, "rule 'arrivals'");
    done(&f);
}

/* a group that expects more bytes than its loads deliver, and a box that delivers fewer */
static void bytes_expected(void **state) {
    (void)state;
    Fix f;
    PlanKernel *pk = lower(&f, "kernels.tk/gemm.tk", NULL);
    pk->bars.v[pk->groups.v[0].full].tx_bytes += 16;
    expect_rule(&f, pk, "rule 'bytes'");
    done(&f);
    pk = lower(&f, "kernels.tk/gemm.tk", NULL);
    pk->maps.v[pk->groups.v[0].loads.v[0].map].box[1] /= 2;
    expect_rule(&f, pk, "rule 'bytes'");
    done(&f);
}

/* one ring tile loaded in the two branches of an if (tests/golden/plan/load_alternatives.tk): the
 * group counts it once; a load marked an alternative outside an if, or a group that counts the
 * tile twice, is rejected */
static void bytes_alternatives(void **state) {
    (void)state;
    Fix f;
    PlanKernel *pk = lower(&f, "tests/golden/plan/load_alternatives.tk", NULL);
    const PlanGroup *g = NULL;
    for (int i = 0; i < pk->groups.n; i++)
        if (!pk->groups.v[i].once) g = &pk->groups.v[i];
    assert_non_null(g);
    assert_int_equal(g->loads.n, 2);
    assert_true(g->loads.v[0].cond && g->loads.v[1].cond && !g->loads.v[0].alternative && g->loads.v[1].alternative);
    assert_int_equal(pk->bars.v[g->full].tx_bytes, plan_buf_tx_bytes(&pk->bufs.v[g->loads.v[0].buf]));
    FILE *sink = fopen("/dev/null", "w");
    Diag d;
    diag_init(&d, &f.a, sink);
    assert_true(plan_verify(&f.plan, &d));
    fclose(sink);
    g->loads.v[1].alternative = false; /* both counted: the barrier expects half of what they deliver */
    expect_rule(&f, pk, "rule 'bytes'");
    done(&f);
    pk = lower(&f, "tests/golden/plan/load_alternatives.tk", NULL);
    for (int i = 0; i < pk->groups.n; i++)
        if (!pk->groups.v[i].once) pk->groups.v[i].loads.v[0].cond = NULL; /* the first always runs */
    expect_rule(&f, pk, "rule 'bytes'");
    done(&f);
}

/* a release before the product that reads the stage completed */
static void release_before_product(void **state) {
    (void)state;
    Fix f;
    PlanKernel *pk = lower(&f, "kernels.tk/gemm.tk", NULL);
    POpList *ops = &pk->compute_ops;
    int w = find_op(ops, POP_WAIT_MMA, 0), r = find_op(ops, POP_RELEASE, 0);
    assert_true(w >= 0 && r > w);
    POp *rel = ops->v[r];
    delete_op(ops, r);
    vec_push(&f.a, ops, NULL);
    for (int i = ops->n - 1; i > w; i--) ops->v[i] = ops->v[i - 1];
    ops->v[w] = rel;  /* now before the wait */
    expect_rule(&f, pk, "rule 'release'");
    done(&f);
}

/* an empty barrier that completes on one consumer's release of two: the producer refills a stage
 * the other consumer still reads */
static void release_refilled(void **state) {
    (void)state;
    Fix f;
    PlanKernel *pk = lower(&f, "kernels.tk/attn_fwd.tk", "PERSISTENT=0");
    assert_true(pk->consumers == 2);
    int g = 0;
    while (g < pk->groups.n && pk->groups.v[g].once) g++;
    assert_true(g < pk->groups.n);
    pk->bars.v[pk->groups.v[g].empty].count /= 2;
    expect_rule(&f, pk, "rule 'release'");
    done(&f);
}

/* an empty barrier that completes on either of two consumers' releases: two of its phases pass
 * each round, so the producer waits for a phase its barrier has gone past */
static void phases_skipped(void **state) {
    (void)state;
    Fix f;
    PlanKernel *pk = lower(&f, "kernels.tk/attn_fwd.tk", "CLUSTER=1");
    int g = 0;
    while (pk->groups.v[g].once) g++;
    assert_int_equal(pk->bars.v[pk->groups.v[g].empty].count, 2);
    pk->bars.v[pk->groups.v[g].empty].count = 1;
    expect_rule(&f, pk, "rule 'phases'");
    done(&f);
}

/* a barrier of both consumer warpgroups that only warpgroup 1 reaches (under `if (wg == 1)`, which
 * the check evaluates per warpgroup): one warpgroup meets on a barrier of 256 threads */
static void arrivals_barrier_under_wg(void **state) {
    (void)state;
    Fix f;
    PlanKernel *pk = lower(&f, "kernels.tk/attn_fwd.tk", "CLUSTER=1");
    assert_int_equal(pk->consumers, 2);
    vec_push(&f.a, &pk->nbars, ((PlanNamedBar){.name = "injected", .id = 15, .ids = 1, .threads = 256, .why = "test"}));
    Symbol *wg = arena_alloc(&f.a, sizeof *wg);
    wg->kind = SYM_BUILTIN;
    wg->builtin = BI_WG;
    wg->name = "wg";
    PExpr *l = arena_alloc(&f.a, sizeof *l), *r = arena_alloc(&f.a, sizeof *r), *eq = arena_alloc(&f.a, sizeof *eq);
    l->kind = PX_NAME;
    l->sym = wg;
    r->kind = PX_INT;
    r->ival = r->cval = 1;
    r->is_const = true;
    eq->kind = PX_BINARY;
    eq->bop = BIN_EQ;
    eq->l = l;
    eq->r = r;
    POp *bar = arena_alloc(&f.a, sizeof *bar), *iff = arena_alloc(&f.a, sizeof *iff);
    bar->kind = POP_BAR;
    bar->bar = pk->nbars.n - 1;
    iff->kind = POP_IF;
    iff->cond = eq;
    vec_push(&f.a, &iff->then_ops, bar);
    vec_push(&f.a, &pk->finish_ops, iff);
    expect_rule(&f, pk, "rule 'arrivals'");
    done(&f);
}

/* a release deleted: the producer waits forever for the stage */
static void progress_missing_release(void **state) {
    (void)state;
    Fix f;
    PlanKernel *pk = lower(&f, "kernels.tk/gemm.tk", NULL);
    int r = find_op(&pk->compute_ops, POP_RELEASE, 0);
    assert_true(r >= 0);
    delete_op(&pk->compute_ops, r);
    if (pk->peel_first) {
        r = find_op(&pk->first_ops, POP_RELEASE, 0);
        if (r >= 0) delete_op(&pk->first_ops, r);
    }
    expect_rule(&f, pk, "rule 'progress'");
    done(&f);
}

/* the row-reduction scratch with one copy: successive reductions would write the copy the last
 * one's readers may still read (they skip the barrier before their writes), so the verifier
 * rejects the plan (src/verify.c) */
static void rowred_one_copy(void **state) {
    (void)state;
    Fix f;
    lower(&f, "kernels.tk/layernorm.tk", "D=8192");
    PlanKernel *pk = f.plan.kernels.v[0];
    assert_true(pk->rowred_buf >= 0);
    assert_int_equal(pk->bufs.v[pk->rowred_buf].copies, 2);
    FILE *sink = fopen("/dev/null", "w");
    Diag d;
    diag_init(&d, &f.a, sink);
    assert_true(plan_verify(&f.plan, &d));
    pk->bufs.v[pk->rowred_buf].copies = 1;
    Diag d1;
    diag_init(&d1, &f.a, sink);
    assert_false(plan_verify(&f.plan, &d1));
    fclose(sink);
    done(&f);
}

/* the first call of an entry's steps (depth first) launched programmatically, or NULL */
static PEStep *pdl_step(PESteps *l) {
    for (int i = 0; i < l->n; i++) {
        if (l->v[i]->kind == PE_CALL && l->v[i]->pdl) return l->v[i];
        PEStep *s = l->v[i]->kind == PE_IF ? pdl_step(&l->v[i]->then_s) : NULL;
        if (s) return s;
    }
    return NULL;
}

/* attn_bwd_main with DETERMINISTIC = 1 launches attn_bwd_dq programmatically right after attn_bwd (src/pass_pdl.c):
 * attn_bwd lets it start, attn_bwd_dq waits for attn_bwd's grid; attn_bwd's own launcher launches it
 * programmatically after clearing dK and dV. A plan whose programmatically launched kernel does not
 * wait would race with the kernel before it, so the verifier rejects it, in both cases */
static void pdl_without_wait(void **state) {
    (void)state;
    Fix f;
    lower(&f, "kernels.tk/attn_bwd.tk", "DETERMINISTIC=1");
    assert_int_equal(f.plan.entries.n, 1);
    PEStep *s = pdl_step(&f.plan.entries.v[0]->body);
    assert_non_null(s);
    assert_string_equal(s->name, "attn_bwd_dq");
    PlanKernel *dq = NULL, *main_k = NULL;
    for (int i = 0; i < f.plan.kernels.n; i++) {
        if (!strcmp(f.plan.kernels.v[i]->name, "attn_bwd_dq")) dq = f.plan.kernels.v[i];
        if (!strcmp(f.plan.kernels.v[i]->name, "attn_bwd")) main_k = f.plan.kernels.v[i];
    }
    assert_true(dq && main_k && dq->pdl_wait && dq->pdl_entry && !dq->pdl_trigger && main_k->pdl_trigger);
    /* attn_bwd's launcher clears dK and dV with a kernel, then launches it programmatically */
    assert_true(main_k->zeroed.n == 2 && main_k->pdl_wait && !main_k->pdl_entry);
    FILE *sink = fopen("/dev/null", "w");
    Diag d;
    diag_init(&d, &f.a, sink);
    assert_true(plan_verify(&f.plan, &d));
    dq->pdl_wait = false;
    Diag d1;
    diag_init(&d1, &f.a, sink);
    assert_false(plan_verify(&f.plan, &d1));
    dq->pdl_wait = true;
    main_k->pdl_wait = false;
    Diag d2;
    diag_init(&d2, &f.a, sink);
    assert_false(plan_verify(&f.plan, &d2));
    fclose(sink);
    done(&f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(suite_kernels_pass),       cmocka_unit_test(arrivals_count_too_high),
        cmocka_unit_test(arrivals_twice),           cmocka_unit_test(arrivals_named_barrier),
        cmocka_unit_test(bytes_expected),           cmocka_unit_test(release_before_product),
        cmocka_unit_test(release_refilled),         cmocka_unit_test(phases_skipped),
        cmocka_unit_test(progress_missing_release), cmocka_unit_test(arrivals_barrier_under_wg),
        cmocka_unit_test(rowred_one_copy),          cmocka_unit_test(pdl_without_wait),
        cmocka_unit_test(bytes_alternatives),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
