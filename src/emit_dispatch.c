/* emit_dispatch.c - emit_cuda(), and the .cu of a dispatched program (`--dispatch TABLE`): the shared opening once,
 * every variant's kernels and launchers in a namespace of its own (tkc_v_NAME), then one extern "C"
 * launcher per kernel that evaluates the table's rules on its run-time dimensions and calls the
 * chosen variant's launcher. The table decided everything; this file only writes it out. */
#include <string.h>

#include "api.h"
#include "dispatch.h"
#include "emit_int.h"

static void put_launcher(Arena *a, StrBuf *out, const Dispatch *ds, const KernelApi *api) {
    StrBuf sig, args;
    sb_init(&sig);
    sb_init(&args);
    api_c_params(&sig, api);
    api_call_args(&args, api);
    const char *k = api->kernel;
    const DispatchVariant *last = &ds->variants.v[ds->rules.v[ds->rules.n - 1].variant];
    if (!dispatch_covers(ds, k)) {
        sb_printf(out, "// %s is not dispatched (the table's 'kernel' lines): variant %s, the last rule's\n", k, last->name);
        sb_printf(out, "extern \"C\" const char *tkc_%s_error(void) { return tkc_v_%s::tkc_%s_error(); }\n", k, last->name, k);
        sb_printf(out, "extern \"C\" int tkc_%s(%s) {\n    return tkc_v_%s::tkc_%s(%s);\n}\n\n", k, sig.s, last->name, k, args.s);
        sb_free(&sig);
        sb_free(&args);
        return;
    }
    sb_printf(out, "// %s: the first rule that holds picks the variant\n", k);
    sb_printf(out, "static thread_local int tkc_%s_variant = %d;  // the variant of this thread's last launch\n", k,
              ds->rules.v[ds->rules.n - 1].variant);
    sb_printf(out, "extern \"C\" const char *tkc_%s_error(void) {\n    switch (tkc_%s_variant) {\n", k, k);
    for (int v = 0; v < ds->variants.n; v++)
        if (!ds->variants.v[v].unused)
            sb_printf(out, "    case %d: return tkc_v_%s::tkc_%s_error();\n", v, ds->variants.v[v].name, k);
    sb_puts(out, "    default: return \"no launch yet\";\n    }\n}\n");
    sb_printf(out, "extern \"C\" int tkc_%s(%s) {\n", k, sig.s);
    /* the dimensions the rules read, checked as every variant's launcher checks them, so that the
     * products below cannot overflow */
    Vec(const char *) seen = {0};
    for (int r = 0; r < ds->rules.n; r++) {
        if (ds->rules.v[r].left_out) continue;
        for (int c = 0; c < ds->rules.v[r].conds.n; c++) {
            const DispatchCond *dc = &ds->rules.v[r].conds.v[c];
            if (dc->is_static) continue;
            for (int j = 0; j < dc->dims.n; j++) {
                bool dup = false;
                for (int q = 0; q < seen.n; q++) dup |= !strcmp(seen.v[q], dc->dims.v[j]);
                if (dup) continue;
                vec_push(a, &seen, dc->dims.v[j]);
                sb_printf(out, "    if (%s < 1 || %s > 2147483647LL) return TKC_ERR_DIM;\n", dc->dims.v[j], dc->dims.v[j]);
            }
        }
    }
    /* the rules the table keeps (dispatch_check left out the others), in order */
    for (int r = 0; r < ds->rules.n; r++) {
        const DispatchRule *ru = &ds->rules.v[r];
        if (ru->left_out) continue;
        const DispatchVariant *v = &ds->variants.v[ru->variant];
        const char *why = arena_printf(a, "%s: %s (%s)", ru->conds.n ? arena_printf(a, "when %s", dispatch_rule_text(a, ru, false)) : "otherwise",
                                       v->name, dispatch_variant_text(a, v));
        const char *cond = dispatch_rule_text(a, ru, true);
        if (*cond) {
            sb_printf(out, "    if (%s) {  // %s\n", cond, why);
            sb_printf(out, "        tkc_%s_variant = %d;\n        return tkc_v_%s::tkc_%s(%s);\n    }\n", k, ru->variant, v->name, k, args.s);
        } else {
            sb_printf(out, "    tkc_%s_variant = %d;  // %s\n    return tkc_v_%s::tkc_%s(%s);\n", k, ru->variant, why, v->name, k, args.s);
        }
    }
    sb_puts(out, "}\n\n");
    sb_free(&sig);
    sb_free(&args);
}

static char *emit_dispatch_cuda(Arena *a, const EmitOptions *o) {
    const Dispatch *ds = o->dispatch;
    const DispatchVariant *v0 = &ds->variants.v[0];
    StrBuf note;
    sb_init(&note);
    sb_printf(&note, "// Dispatched by %s: %d variants of the program, each in a namespace of its own; the extern \"C\"\n",
              path_base(ds->path), dispatch_variants_used(ds));
    sb_puts(&note, "// launchers at the end pick one at every launch, by the first of these rules that holds:\n");
    dispatch_rules_lines(&note, a, ds, "// ");
    StrBuf out;
    sb_init(&out);
    emit_cuda_head(&out, v0->plan, o, note.s);
    sb_free(&note);
    /* each variant's kernels and launchers, then the fragments and helpers they use, written once */
    FragVec frags = {0};
    StrBuf *bodies = ARENA_NEW_N(a, StrBuf, ds->variants.n);
    for (int v = 0; v < ds->variants.n; v++) {
        sb_init(&bodies[v]);
        if (ds->variants.v[v].unused) continue; /* no rule of this build picks it */
        emit_cuda_body(a, &bodies[v], ds->variants.v[v].plan, ds->variants.v[v].prog, o, &frags,
                       arena_printf(a, "tkc_v_%s", ds->variants.v[v].name));
    }
    sb_puts(&out, "// the template fragments and host helpers every variant below uses\nnamespace {\n\n");
    emit_cuda_shared(a, &out, &frags);
    sb_puts(&out, "}  // namespace\n\n");
    for (int v = 0; v < ds->variants.n; v++) {
        const DispatchVariant *dv = &ds->variants.v[v];
        if (dv->unused) continue;
        sb_printf(&out, "// ---- variant %s: %s ----\nnamespace tkc_v_%s {\n\n", dv->name, dispatch_variant_text(a, dv), dv->name);
        sb_puts(&out, bodies[v].s ? bodies[v].s : "");
        sb_printf(&out, "\n}  // namespace tkc_v_%s\n\n", dv->name);
        sb_free(&bodies[v]);
    }
    sb_printf(&out, "// ---- the launchers (%s) ----\n", path_base(ds->path));
    for (int k = 0; k < v0->plan->kernels.n; k++) put_launcher(a, &out, ds, api_of(a, v0->plan->kernels.v[k]));
    for (int k = 0; k < v0->plan->entries.n; k++) put_launcher(a, &out, ds, api_of_entry(a, v0->plan->entries.v[k]));
    char *text = sb_take(&out);
    return o->line_directives ? emit_cuda_lines(text) : text;
}

/* the .cu: a dispatched program's, or one compiled once */
char *emit_cuda(Arena *a, const Plan *p, const Program *prog, const EmitOptions *o) {
    return o->dispatch ? emit_dispatch_cuda(a, o) : emit_cuda_single(a, p, prog, o);
}
