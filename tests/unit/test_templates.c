/* test_templates.c - unit tests of src/templates.c: template_fill (regions replaced with their
 * marker lines, other lines copied, every malformed template refused with a message), and the
 * embedded files: template_text finds the binding and the Python runtime of --emit=torch, whose
 * regions are the ones emit_torch.c fills, and template_fragment finds the CUDA fragments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "templates.h"

/* fills text with regions; returns the result (or NULL, with the message in err) */
static char *fill(const char *text, const TemplateRegion *r, int n, char *err, size_t errsize) {
    StrBuf b;
    sb_init(&b);
    err[0] = 0;
    if (template_fill(&b, text, strlen(text), "#", r, n, err, errsize)) {
        sb_free(&b);
        return NULL;
    }
    char *s = sb_take(&b);
    return s ? s : xstrdup("");
}

static void test_fill_regions(void **state) {
    (void)state;
    const TemplateRegion r[] = {{"head", "H1\nH2\n"}, {"empty", ""}, {"null", NULL}, {"tail", "T\n"}};
    char err[128];
    char *s = fill("# @tkc begin head\nstand-in\n# @tkc end head\n"
                   "a\n"
                   "  # @tkc begin head\n"          /* indented: not a marker */
                   "# @tkc begin empty\n# @tkc end empty\n"
                   "#@tkc begin x\n"                /* no space: not a marker */
                   "# @tkc begin null\nx\ny\n# @tkc end null\n"
                   "b\n"
                   "# @tkc begin tail\n# @tkc end tail",  /* the last line without a newline */
                   r, 4, err, sizeof err);
    assert_non_null(s);
    assert_string_equal(s, "H1\nH2\na\n  # @tkc begin head\n#@tkc begin x\nb\nT\n");
    free(s);
    /* no regions: a copy */
    s = fill("x\n\ny", NULL, 0, err, sizeof err);
    assert_non_null(s);
    assert_string_equal(s, "x\n\ny");
    free(s);
}

static void test_fill_errors(void **state) {
    (void)state;
    const TemplateRegion r[] = {{"a", "A\n"}, {"b", "B\n"}};
    static const struct {
        const char *text, *msg;
    } cases[] = {
        {"# @tkc begin a\n# @tkc end a\n", "no region 'b'"},
        {"# @tkc begin a\n# @tkc end a\n# @tkc begin c\n# @tkc end c\n", "line 3: tkc fills no region 'c'"},
        {"# @tkc begin a\n# @tkc end a\n# @tkc begin a\n# @tkc end a\n", "line 3: a second region 'a'"},
        {"# @tkc begin b\nx\n# @tkc begin a\n", "line 3: a region begins inside the region 'b' of line 1"},
        {"# @tkc begin a\n# @tkc end b\n", "line 2: the end of a region 'b' that did not begin"},
        {"x\n# @tkc end a\n", "line 2: the end of a region 'a' that did not begin"},
        {"# @tkc begin a\n# @tkc end a\n# @tkc begin b\nx\n", "line 3: the region 'b' has no end"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char err[128];
        char *s = fill(cases[i].text, r, 2, err, sizeof err);
        assert_null(s);
        assert_string_equal(err, cases[i].msg);
    }
}

static void test_embedded_files(void **state) {
    (void)state;
    size_t len = 0;
    const char *py = template_text("tkc_torch_runtime.py", &len);
    assert_non_null(py);
    assert_int_equal(len, strlen(py));
    assert_null(template_text("no_such_file.py", &len));
    /* the regions emit_torch.c fills, each exactly once */
    const TemplateRegion r[] = {{"docstring", "D\n"}, {"all", ""},        {"params", ""},
                                {"status", ""},       {"extension", ""}, {"kernels", "K\n"}};
    StrBuf b;
    sb_init(&b);
    char err[128] = "";
    assert_int_equal(template_fill(&b, py, len, "#", r, 6, err, sizeof err), 0);
    assert_string_equal(err, "");
    assert_true(!strncmp(b.s, "D\n", 2));
    /* the kernels come last but for the call that registers them with torch.library */
    assert_non_null(strstr(b.s, "K\n\n# every kernel above as a torch.library op"));
    assert_string_equal(b.s + b.len - strlen("_tkc_register_all(globals())\n"), "_tkc_register_all(globals())\n");
    assert_null(strstr(b.s, "@tkc"));
    assert_non_null(strstr(b.s, "\ndef tkc_build("));
    sb_free(&b);
    /* the binding's: the regions emit_torch.c fills, with "//" markers */
    const char *cpp = template_text("tkc_torch_binding.cpp", &len);
    assert_non_null(cpp);
    const TemplateRegion rc[] = {
        {"header", "// H\n"}, {"stream", ""}, {"launchers", ""}, {"kernels", ""}, {"module", "// M\n"},
    };
    sb_init(&b);
    assert_int_equal(template_fill(&b, cpp, len, "//", rc, 5, err, sizeof err), 0);
    static const char head[] = "// H\n#include <torch/extension.h>\n";
    assert_true(!strncmp(b.s, head, sizeof head - 1));
    assert_string_equal(b.s + b.len - 5, "// M\n");
    assert_null(strstr(b.s, "@tkc"));
    assert_non_null(strstr(b.s, "\nvoid tkc_tensor("));
    sb_free(&b);
    /* "#" markers are not "//" ones: the Python template's regions are not found */
    sb_init(&b);
    assert_int_equal(template_fill(&b, py, len = strlen(py), "//", r, 6, err, sizeof err), -1);
    assert_string_equal(err, "no region 'docstring'");
    sb_free(&b);
    size_t flen = 0;
    const char *frag = template_fragment("tkc_ptx.cuh", "prelude", &flen);
    assert_non_null(frag);
    assert_true(flen > 0 && flen < strlen(frag));
    assert_null(template_fragment("tkc_ptx.cuh", "no_such_fragment", &flen));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fill_regions),
        cmocka_unit_test(test_fill_errors),
        cmocka_unit_test(test_embedded_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
