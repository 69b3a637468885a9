/* dispatch.c - the dispatch table: its parser and its checks against the compiled variants (see
 * dispatch.h for the format). */
#include "dispatch.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"

const char *const dispatch_op_text[] = {"<", "<=", ">", ">=", "==", "!="};

typedef struct Lx {
    Arena *a;
    Diag *d;
    int file;
    const char *s;      /* the whole text */
    uint32_t p, eol;    /* position, end of the current line */
} Lx;

static Span sp(const Lx *x, uint32_t b, uint32_t e) { return (Span){x->file, b, e}; }

static void skip_blanks(Lx *x) {
    while (x->p < x->eol && (x->s[x->p] == ' ' || x->s[x->p] == '\t' || x->s[x->p] == '\r')) x->p++;
}

static bool at_end(Lx *x) {
    skip_blanks(x);
    return x->p >= x->eol || x->s[x->p] == '#';
}

static bool is_id0(char c) { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static bool is_id(char c) { return is_id0(c) || (c >= '0' && c <= '9'); }

/* a name at the position, or NULL (nothing consumed) */
static const char *name(Lx *x, uint32_t *b) {
    skip_blanks(x);
    *b = x->p;
    if (x->p >= x->eol || !is_id0(x->s[x->p])) return NULL;
    while (x->p < x->eol && is_id(x->s[x->p])) x->p++;
    return arena_strndup(x->a, x->s + *b, x->p - *b);
}

static bool lit(Lx *x, const char *t) {
    skip_blanks(x);
    size_t n = strlen(t);
    if (x->p + n > x->eol || strncmp(x->s + x->p, t, n)) return false;
    x->p += (uint32_t)n;
    return true;
}

static bool error_here(Lx *x, const char *what) {
    skip_blanks(x);
    uint32_t e = x->p;
    while (e < x->eol && x->s[e] != ' ' && x->s[e] != '\t' && x->s[e] != '\r') e++;
    diag_error(x->d, sp(x, x->p, e > x->p ? e : x->p + (x->p < x->eol)), "%s", what);
    return false;
}

static int find_variant(const Dispatch *ds, const char *n) {
    for (int i = 0; i < ds->variants.n; i++)
        if (!strcmp(ds->variants.v[i].name, n)) return i;
    return -1;
}

/* variant NAME (NAME=VALUE)* */
static bool variant_line(Lx *x, Dispatch *ds) {
    uint32_t b;
    const char *n = name(x, &b);
    if (!n) return error_here(x, "expected the variant's name after 'variant'");
    if (find_variant(ds, n) >= 0) {
        diag_error(x->d, sp(x, b, x->p), "variant '%s' is defined twice", n);
        return false;
    }
    DispatchVariant v = {.name = n, .span = sp(x, b, x->p)};
    int cap = 0;
    while (!at_end(x)) {
        uint32_t db = x->p;
        while (x->p < x->eol && x->s[x->p] != ' ' && x->s[x->p] != '\t' && x->s[x->p] != '\r' && x->s[x->p] != '#') x->p++;
        char *text = arena_strndup(x->a, x->s + db, x->p - db);
        Define df;
        if (!define_parse(x->a, text, &df)) {
            diag_error(x->d, sp(x, db, x->p), "bad define '%s' (expected NAME=INTEGER, or NAME=DTYPE for a type)", text);
            return false;
        }
        for (int k = 0; k < v.ndefines; k++)
            if (!strcmp(v.defines[k].name, df.name)) {
                diag_error(x->d, sp(x, db, x->p), "variant '%s' sets %s twice", n, df.name);
                return false;
            }
        if (v.ndefines == cap) {
            int nc = cap ? 2 * cap : 4;
            Define *nd = arena_alloc(x->a, sizeof(Define) * (size_t)nc);
            if (v.ndefines) memcpy(nd, v.defines, sizeof(Define) * (size_t)v.ndefines);
            v.defines = nd;
            cap = nc;
        }
        v.defines[v.ndefines++] = df;
    }
    vec_push(x->a, &ds->variants, v);
    return true;
}

/* DIM (* DIM)* OP INTEGER */
static bool cond(Lx *x, DispatchCond *c) {
    skip_blanks(x);
    uint32_t b0 = x->p, b;
    for (;;) {
        const char *n = name(x, &b);
        if (!n) return error_here(x, "expected a run-time dimension (a name)");
        vec_push(x->a, &c->dims, n);
        if (!lit(x, "*")) break;
        if (c->dims.n == 3) return error_here(x, "a product of at most three dimensions (the launcher compares it in 128 bits)");
    }
    static const struct { const char *t; DispatchOp op; } ops[] = {
        {"<=", DOP_LE}, {">=", DOP_GE}, {"==", DOP_EQ}, {"!=", DOP_NE}, {"<", DOP_LT}, {">", DOP_GT}};
    bool found = false;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0] && !found; i++)
        if (lit(x, ops[i].t)) {
            c->op = ops[i].op;
            found = true;
        }
    if (!found) return error_here(x, "expected a comparison (<, <=, >, >=, == or !=)");
    skip_blanks(x);
    uint32_t vb = x->p;
    while (x->p < x->eol && x->s[x->p] >= '0' && x->s[x->p] <= '9') x->p++;
    if (x->p == vb) return error_here(x, "expected a non-negative integer");
    char *digits = arena_strndup(x->a, x->s + vb, x->p - vb);
    errno = 0;
    long long v = strtoll(digits, NULL, 10);
    if (errno || v > 2147483647LL * 2147483647LL) {
        diag_error(x->d, sp(x, vb, x->p), "'%s' is too large", digits);
        return false;
    }
    c->value = v;
    c->span = sp(x, b0, x->p);
    return true;
}

/* when COND (&& COND)* : NAME  |  otherwise : NAME */
static bool rule_line(Lx *x, Dispatch *ds, bool otherwise, uint32_t b0) {
    DispatchRule r = {0};
    if (!otherwise)
        for (;;) {
            DispatchCond c = {0};
            if (!cond(x, &c)) return false;
            vec_push(x->a, &r.conds, c);
            if (!lit(x, "&&")) break;
        }
    if (!lit(x, ":")) return error_here(x, otherwise ? "expected ':' after 'otherwise'" : "expected '&&' or ':'");
    uint32_t b;
    const char *n = name(x, &b);
    if (!n) return error_here(x, "expected the name of a variant after ':'");
    r.variant = find_variant(ds, n);
    r.span = sp(x, b0, x->p);
    if (r.variant < 0) {
        diag_error(x->d, sp(x, b, x->p), "no variant named '%s' (define it with a 'variant' line before the rules)", n);
        return false;
    }
    if (ds->rules.n && !ds->rules.v[ds->rules.n - 1].conds.n) {
        diag_error(x->d, r.span, "a rule after 'otherwise' is never used");
        return false;
    }
    vec_push(x->a, &ds->rules, r);
    return true;
}

int dispatch_parse(Arena *a, Diag *d, const char *path, Dispatch *out) {
    memset(out, 0, sizeof *out);
    out->path = arena_strdup(a, path);
    size_t len;
    const char *why;
    char *text = read_source(path, &len, &why);
    if (!text) {
        fprintf(d->out, "tkc: error: cannot read dispatch table '%s': %s\n", path, why);
        return 2;
    }
    char *kept = arena_strndup(a, text, len);
    free(text);
    Lx x = {.a = a, .d = d, .s = kept, .file = diag_add_file(d, out->path, kept, (uint32_t)len)};
    int errors0 = d->nerrors;
    for (uint32_t p = 0; p < len;) {
        uint32_t eol = p;
        while (eol < len && kept[eol] != '\n') eol++;
        x.p = p;
        x.eol = eol;
        if (!at_end(&x)) {
            uint32_t b;
            const char *kw = name(&x, &b);
            bool ok;
            if (kw && !strcmp(kw, "variant")) {
                ok = variant_line(&x, out);
                if (ok && out->rules.n) {
                    diag_error(d, out->variants.v[out->variants.n - 1].span, "variants come before the rules");
                    ok = false;
                }
            } else if (kw && !strcmp(kw, "kernel")) {
                ok = true;
                while (ok && !at_end(&x)) {
                    uint32_t kb;
                    const char *k = name(&x, &kb);
                    if (!k) ok = error_here(&x, "expected a kernel's name");
                    else {
                        vec_push(a, &out->kernels, k);
                        vec_push(a, &out->kernel_spans, sp(&x, kb, x.p));
                    }
                }
            } else if (kw && (!strcmp(kw, "when") || !strcmp(kw, "otherwise"))) {
                ok = rule_line(&x, out, !strcmp(kw, "otherwise"), b);
            } else {
                x.p = b;
                ok = error_here(&x, "expected 'variant', 'kernel', 'when' or 'otherwise' at the start of a line");
            }
            if (ok && !at_end(&x)) ok = error_here(&x, "unexpected text at the end of the line");
        }
        p = eol + 1;
    }
    Span whole = {x.file, 0, 0};
    if (d->nerrors == errors0 && !out->variants.n) diag_error(d, whole, "the dispatch table defines no variant");
    else if (d->nerrors == errors0 && (!out->rules.n || out->rules.v[out->rules.n - 1].conds.n))
        diag_error(d, whole, "the dispatch table needs a last rule 'otherwise: VARIANT' (the choice when no condition holds)");
    if (d->nerrors != errors0) return 1;
    for (int i = 0; i < out->variants.n; i++) {
        bool used = false;
        for (int r = 0; r < out->rules.n; r++) used |= out->rules.v[r].variant == i;
        if (!used) diag_warning(d, out->variants.v[i].span, "variant '%s' is never chosen by a rule", out->variants.v[i].name);
    }
    return 0;
}

bool dispatch_covers(const Dispatch *ds, const char *name) {
    if (!ds->kernels.n) return true;
    for (int i = 0; i < ds->kernels.n; i++)
        if (!strcmp(ds->kernels.v[i], name)) return true;
    return false;
}

/* the launcher's C signature and what the arguments mean: each tensor's element type and shape
 * (a variant may not take a [B, H, N, 64] where another takes [B, H, N, 128] behind one signature) */
static void api_text(StrBuf *b, const KernelApi *k) {
    api_c_params(b, k);
    for (int i = 0; i < k->params.n; i++) {
        const ApiParam *p = &k->params.v[i];
        if (p->kind != API_TENSOR) continue;
        sb_printf(b, "; %s: %s[", p->name, dtype_name[p->dt]);
        for (int d = 0; d < p->rank; d++) {
            if (d) sb_puts(b, ", ");
            if (p->dims[d].name) sb_puts(b, p->dims[d].name);
            else sb_printf(b, "%lld", (long long)p->dims[d].value);
        }
        sb_putc(b, ']');
    }
}

/* the launcher of kernel or entry `name` in plan p, or NULL */
static const KernelApi *launcher_of(Arena *a, const Plan *p, const char *name) {
    for (int i = 0; i < p->kernels.n; i++)
        if (!strcmp(p->kernels.v[i]->name, name)) return api_of(a, p->kernels.v[i]);
    for (int i = 0; i < p->entries.n; i++)
        if (!strcmp(p->entries.v[i]->name, name)) return api_of_entry(a, p->entries.v[i]);
    return NULL;
}

/* the value of param `name` in a program, or false when it has none */
static bool param_value(const Program *prog, const char *name, int64_t *v) {
    for (int i = 0; i < prog->params.n; i++)
        if (!strcmp(prog->params.v[i]->name, name) && prog->params.v[i]->sym) {
            *v = prog->params.v[i]->sym->cval;
            return true;
        }
    return false;
}

static bool compare(int64_t x, DispatchOp op, int64_t v) {
    switch (op) {
    case DOP_LT: return x < v;
    case DOP_LE: return x <= v;
    case DOP_GT: return x > v;
    case DOP_GE: return x >= v;
    case DOP_EQ: return x == v;
    default: return x != v;
    }
}

/* conditions on params: decided now, with the value every variant agrees on */
static void decide_params(Diag *d, Dispatch *ds) {
    for (int r = 0; r < ds->rules.n; r++) {
        DispatchRule *ru = &ds->rules.v[r];
        for (int c = 0; c < ru->conds.n; c++) {
            DispatchCond *dc = &ru->conds.v[c];
            int64_t v0;
            int nparams = 0;
            for (int j = 0; j < dc->dims.n; j++) nparams += param_value(ds->variants.v[0].prog, dc->dims.v[j], &v0);
            if (!nparams) continue;
            if (nparams != dc->dims.n) {
                diag_error(d, dc->span, "a product of a param and a run-time dimension: test each on its own");
                continue;
            }
            int64_t prod = 1;
            for (int j = 0; j < dc->dims.n; j++) {
                param_value(ds->variants.v[0].prog, dc->dims.v[j], &v0);
                for (int v = 1; v < ds->variants.n; v++) {
                    int64_t vv;
                    if (param_value(ds->variants.v[v].prog, dc->dims.v[j], &vv) && vv != v0)
                        diag_error(d, dc->span, "param '%s' is %lld in variant '%s' and %lld in variant '%s': a rule can test "
                                   "only a param every variant agrees on (one the command line sets)",
                                   dc->dims.v[j], (long long)v0, ds->variants.v[0].name, (long long)vv, ds->variants.v[v].name);
                }
                if (__builtin_mul_overflow(prod, v0, &prod)) {
                    diag_error(d, dc->span, "the product of these params does not fit in 64 bits");
                    prod = 0;
                    break;
                }
            }
            dc->is_static = true;
            dc->holds = compare(prod, dc->op, dc->value);
            if (!dc->holds) ru->left_out = "a param test fails";
        }
    }
    /* after a rule with no run-time test left, none is reached */
    bool always = false;
    for (int r = 0; r < ds->rules.n; r++) {
        DispatchRule *ru = &ds->rules.v[r];
        if (always) {
            if (!ru->left_out) ru->left_out = "an earlier rule always holds";
            continue;
        }
        bool runtime = false;
        for (int c = 0; c < ru->conds.n; c++) runtime |= !ru->conds.v[c].is_static;
        always = !ru->left_out && !runtime;
    }
    for (int v = 0; v < ds->variants.n; v++) {
        bool used = false;
        for (int r = 0; r < ds->rules.n; r++) used |= !ds->rules.v[r].left_out && ds->rules.v[r].variant == v;
        ds->variants.v[v].unused = !used;
    }
}

int dispatch_variants_used(const Dispatch *ds) {
    int n = 0;
    for (int v = 0; v < ds->variants.n; v++) n += !ds->variants.v[v].unused;
    return n;
}

/* every kernel variant `has` compiles, variant `other` compiles too */
static void same_kernels(Arena *a, Diag *d, const DispatchVariant *has, const DispatchVariant *other) {
    for (int k = 0; k < has->plan->kernels.n; k++)
        if (!launcher_of(a, other->plan, has->plan->kernels.v[k]->name))
            diag_error(d, has->span, "variant '%s' compiles kernel '%s', which variant '%s' leaves out (its condition is "
                       "false there): the variants of a dispatched program compile the same kernels", has->name,
                       has->plan->kernels.v[k]->name, other->name);
}

bool dispatch_check(Arena *a, Diag *d, Dispatch *ds) {
    int errors0 = d->nerrors;
    decide_params(d, ds);
    const Plan *p0 = ds->variants.v[0].plan;
    for (int i = 0; i < ds->kernels.n; i++)
        if (!launcher_of(a, p0, ds->kernels.v[i]))
            diag_error(d, ds->kernel_spans.v[i], "the program has no kernel or entry named '%s'", ds->kernels.v[i]);
    /* a kernel some variants leave out (kernel NAME(...) if (COND)) would be in the C file but not
     * in every variant's header and namespace: the variants compile the same kernels */
    for (int v = 1; v < ds->variants.n; v++) {
        same_kernels(a, d, &ds->variants.v[0], &ds->variants.v[v]);
        same_kernels(a, d, &ds->variants.v[v], &ds->variants.v[0]);
    }
    for (int k = 0; k < p0->kernels.n + p0->entries.n; k++) {
        const KernelApi *api0 = k < p0->kernels.n ? api_of(a, p0->kernels.v[k]) : api_of_entry(a, p0->entries.v[k - p0->kernels.n]);
        if (!dispatch_covers(ds, api0->kernel)) continue;
        StrBuf s0;
        sb_init(&s0);
        api_text(&s0, api0);
        for (int v = 1; v < ds->variants.n; v++) {
            const KernelApi *kv = launcher_of(a, ds->variants.v[v].plan, api0->kernel);
            StrBuf sv;
            sb_init(&sv);
            if (kv) api_text(&sv, kv);
            if (!kv || strcmp(s0.s, sv.s))
                diag_error(d, ds->variants.v[v].span,
                           "variant '%s' changes the launcher of kernel '%s' (%s instead of %s): every variant of a dispatched "
                           "kernel must take the same arguments, of the same types and shapes",
                           ds->variants.v[v].name, api0->kernel, kv ? sv.s : "no such kernel", s0.s);
            sb_free(&sv);
        }
        sb_free(&s0);
        for (int r = 0; r < ds->rules.n; r++)
            for (int c = 0; c < ds->rules.v[r].conds.n; c++) {
                const DispatchCond *dc = &ds->rules.v[r].conds.v[c];
                if (dc->is_static) continue;
                for (int j = 0; j < dc->dims.n; j++) {
                    bool found = false;
                    for (int q = 0; q < api0->params.n; q++)
                        found |= api0->params.v[q].kind == API_DIM && !strcmp(api0->params.v[q].name, dc->dims.v[j]);
                    if (!found)
                        diag_error(d, dc->span, "'%s' is neither a run-time dimension of kernel '%s' nor a param%s", dc->dims.v[j], api0->kernel,
                                   ds->kernels.n ? "" : " (a 'kernel' line names the kernels a table dispatches)");
                }
            }
    }
    return d->nerrors == errors0;
}

char *dispatch_rule_text(Arena *a, const DispatchRule *r, bool c_code) {
    if (!r->conds.n && !c_code) return arena_strdup(a, "otherwise");
    StrBuf b;
    sb_init(&b);
    for (int c = 0; c < r->conds.n; c++) {
        const DispatchCond *dc = &r->conds.v[c];
        if (c_code && dc->is_static) continue; /* decided by tkc: it holds, or the rule is left out */
        if (b.len) sb_puts(&b, " && ");
        /* dimensions are 1 .. 2^31 - 1 at run time: a product of three is computed in 128 bits */
        if (c_code && dc->dims.n > 2) sb_puts(&b, "(__int128)");
        for (int j = 0; j < dc->dims.n; j++) sb_printf(&b, "%s%s", j ? " * " : "", dc->dims.v[j]);
        sb_printf(&b, " %s %lld%s", dispatch_op_text[dc->op], (long long)dc->value, c_code ? "LL" : "");
    }
    char *t = arena_strdup(a, b.s ? b.s : "");
    sb_free(&b);
    return t;
}

void dispatch_rules_lines(StrBuf *b, Arena *a, const Dispatch *ds, const char *prefix) {
    for (int r = 0; r < ds->rules.n; r++) {
        const DispatchRule *ru = &ds->rules.v[r];
        const DispatchVariant *v = &ds->variants.v[ru->variant];
        const char *cond = dispatch_rule_text(a, ru, false);
        const char *rest = arena_printf(a, "-> %s (%s)%s%s", v->name, dispatch_variant_text(a, v),
                                        ru->left_out ? ": left out, " : "", ru->left_out ? ru->left_out : "");
        /* a line that would pass 100 columns puts the variant under its condition */
        if (strlen(prefix) + 2 + (strlen(cond) > 40 ? strlen(cond) : 40) + 1 + strlen(rest) > 100)
            sb_printf(b, "%s  %s\n%s      %s\n", prefix, cond, prefix, rest);
        else
            sb_printf(b, "%s  %-40s %s\n", prefix, cond, rest);
    }
}

char *dispatch_variant_text(Arena *a, const DispatchVariant *v) {
    StrBuf b;
    sb_init(&b);
    for (int i = 0; i < v->ndefines; i++) {
        const Define *df = &v->defines[i];
        if (df->is_dtype) sb_printf(&b, "%s%s=%s", i ? ", " : "", df->name, dtype_name[df->dtype]);
        else sb_printf(&b, "%s%s=%lld", i ? ", " : "", df->name, (long long)df->value);
    }
    char *t = arena_strdup(a, b.s ? b.s : "the params as written");
    sb_free(&b);
    return t;
}
