/* test_diag.c - unit tests of src/diag.c: line/column of spans in files of several lines, the exact
 * rendered text of diagnostics (caret and tildes under the span), error limits, and edit_distance. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "diag.h"

static Span sp(int file, uint32_t b, uint32_t e) { return (Span){file, b, e}; }

/* ---- line and column ------------------------------------------------------------------------- */

static void test_linecol(void **state) {
    (void)state;
    Arena a = {0};
    Diag d;
    diag_init(&d, &a, stderr);
    const char *text = "ab\ncde\n\nf";
    int f = diag_add_file(&d, "x.tk", text, (uint32_t)strlen(text));
    assert_int_equal(f, 0);
    assert_int_equal(d.files.v[0].nlines, 4);
    static const struct { uint32_t off; int line, col; } cases[] = {
        {0, 1, 1}, {1, 1, 2}, {2, 1, 3}, /* the newline itself ends line 1 */
        {3, 2, 1}, {5, 2, 3}, {6, 2, 4}, {7, 3, 1}, /* an empty line */
        {8, 4, 1}, {9, 4, 2},            /* end of file, after the last character */
        {500, 4, 2},                     /* past the end: clamped */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int line = -1, col = -1;
        diag_linecol(&d, sp(f, cases[i].off, cases[i].off), &line, &col);
        assert_int_equal(line, cases[i].line);
        assert_int_equal(col, cases[i].col);
    }
    /* a second file has its own line table; spans without a file give 0:0 */
    const char *t2 = "\n\n\nxyz\n";
    int g = diag_add_file(&d, "y.tk", t2, (uint32_t)strlen(t2));
    assert_int_equal(g, 1);
    int line, col;
    diag_linecol(&d, sp(g, 4, 5), &line, &col);
    assert_int_equal(line, 4);
    assert_int_equal(col, 2);
    diag_linecol(&d, SPAN_NONE, &line, &col);
    assert_int_equal(line, 0);
    assert_int_equal(col, 0);
    diag_linecol(&d, sp(7, 0, 0), &line, &col);
    assert_int_equal(line, 0);
    /* many lines: the binary search finds each one */
    char big[4000];
    size_t n = 0;
    for (int i = 0; i < 500; i++) n += (size_t)snprintf(big + n, sizeof big - n, "l%d\n", i);
    int h = diag_add_file(&d, "z.tk", big, (uint32_t)n);
    uint32_t off = 0;
    for (int i = 0; i < 500; i++) {
        diag_linecol(&d, sp(h, off + 1, off + 2), &line, &col);
        assert_int_equal(line, i + 1);
        assert_int_equal(col, 2);
        off = (uint32_t)(strchr(big + off, '\n') - big) + 1;
    }
    arena_free(&a);
}

static void test_span_join(void **state) {
    (void)state;
    Span j = span_join(sp(0, 10, 12), sp(0, 3, 5));
    assert_int_equal(j.begin, 3);
    assert_int_equal(j.end, 12);
    j = span_join(SPAN_NONE, sp(1, 4, 6));
    assert_int_equal(j.file, 1);
    assert_int_equal(j.begin, 4);
    j = span_join(sp(0, 4, 6), sp(1, 0, 100)); /* other file: keeps the first */
    assert_int_equal(j.file, 0);
    assert_int_equal(j.end, 6);
}

/* ---- rendering ---------------------------------------------------------------------------------- */

/* Diag.out is an fmemopen stream over buf; cap_text() returns what was written so far. */
typedef struct Capture {
    Arena arena;
    Diag d;
    char buf[16384];
    FILE *f;
} Capture;

static void cap_open(Capture *c) {
    memset(c, 0, sizeof *c);
    c->f = fmemopen(c->buf, sizeof c->buf, "w");
    assert_non_null(c->f);
    diag_init(&c->d, &c->arena, c->f);
}

static const char *cap_text(Capture *c) {
    fflush(c->f);
    long n = ftell(c->f);
    assert_true(n >= 0 && (size_t)n < sizeof c->buf);
    c->buf[n] = 0;
    return c->buf;
}

static void cap_close(Capture *c) {
    fclose(c->f);
    arena_free(&c->arena);
}

static void test_render_error(void **state) {
    (void)state;
    static Capture c;
    cap_open(&c);
    const char *text = "param BM = 128;\nlet x = foo + 1;\n";
    int f = diag_add_file(&c.d, "dir/t.tk", text, (uint32_t)strlen(text));
    diag_error(&c.d, sp(f, 24, 27), "unknown name '%s'", "foo");
    assert_string_equal(cap_text(&c), "dir/t.tk:2:9: error: unknown name 'foo'\n"
                                      "let x = foo + 1;\n"
                                      "        ^~~\n");
    assert_int_equal(c.d.nerrors, 1);
    cap_close(&c);
}

static void test_render_levels_and_shapes(void **state) {
    (void)state;
    static Capture c;
    cap_open(&c);
    const char *text = "a = b;\n\tx <- y;\nlong line here\r\nz\n";
    int f = diag_add_file(&c.d, "t.tk", text, (uint32_t)strlen(text));
    diag_warning(&c.d, sp(f, 4, 4), "empty span");           /* one caret */
    diag_note(&c.d, sp(f, 0, 1), "first character");
    diag_error(&c.d, sp(f, 10, 12), "a tab before the span"); /* the tab is repeated */
    diag_error(&c.d, sp(f, 20, 40), "runs past the line");    /* tildes stop at the line end (and \r) */
    diag_error(&c.d, SPAN_NONE, "no place: %d", 42);
    diag_error(&c.d, sp(f, 32, 33), "last line");
    diag_error(&c.d, sp(f, 38, 39), "past the end");
    assert_string_equal(cap_text(&c), "t.tk:1:5: warning: empty span\n"
                                      "a = b;\n"
                                      "    ^\n"
                                      "t.tk:1:1: note: first character\n"
                                      "a = b;\n"
                                      "^\n"
                                      "t.tk:2:4: error: a tab before the span\n"
                                      "\tx <- y;\n"
                                      "\t  ^~\n"
                                      "t.tk:3:5: error: runs past the line\n"
                                      "long line here\n"
                                      "    ^~~~~~~~~~\n"
                                      "tkc: error: no place: 42\n"
                                      "t.tk:4:1: error: last line\n"
                                      "z\n"
                                      "^\n"
                                      "t.tk:5:1: error: past the end\n"
                                      "\n"
                                      "^\n");
    assert_int_equal(c.d.nerrors, 5);
    assert_int_equal(c.d.nwarnings, 1);
    cap_close(&c);
}

static void test_render_at_end_of_file(void **state) {
    (void)state;
    static Capture c;
    cap_open(&c);
    const char *text = "kernel k {\n  grid (m: 1)"; /* no final newline */
    int f = diag_add_file(&c.d, "e.tk", text, (uint32_t)strlen(text));
    uint32_t n = (uint32_t)strlen(text);
    diag_error(&c.d, sp(f, n, n), "unexpected end of file");
    diag_note(&c.d, sp(f, 9, 10), "the block opened here is not closed");
    assert_string_equal(cap_text(&c), "e.tk:2:14: error: unexpected end of file\n"
                                      "  grid (m: 1)\n"
                                      "             ^\n"
                                      "e.tk:1:10: note: the block opened here is not closed\n"
                                      "kernel k {\n"
                                      "         ^\n");
    cap_close(&c);
}

static void test_error_limit(void **state) {
    (void)state;
    static Capture c;
    cap_open(&c);
    c.d.max_errors = 2;
    const char *text = "x\n";
    int f = diag_add_file(&c.d, "m.tk", text, 2);
    diag_error(&c.d, sp(f, 0, 1), "one");
    diag_note(&c.d, sp(f, 0, 1), "a note still shows");
    diag_error(&c.d, sp(f, 0, 1), "two");
    diag_error(&c.d, sp(f, 0, 1), "three");
    diag_error(&c.d, sp(f, 0, 1), "four");
    diag_note(&c.d, sp(f, 0, 1), "suppressed note");
    assert_string_equal(cap_text(&c), "m.tk:1:1: error: one\nx\n^\n"
                                      "m.tk:1:1: note: a note still shows\nx\n^\n"
                                      "m.tk:1:1: error: two\nx\n^\n"
                                      "tkc: too many errors (2); stopping\n");
    assert_int_equal(c.d.nerrors, 4); /* still counted, so the run fails */
    assert_true(c.d.suppressed);
    cap_close(&c);
    /* the default limit is 50 */
    Arena a = {0};
    Diag d;
    diag_init(&d, &a, stderr);
    assert_int_equal(d.max_errors, 50);
    assert_int_equal(d.nerrors, 0);
    assert_false(d.suppressed);
    arena_free(&a);
}

/* ---- edit distance ------------------------------------------------------------------------------ */

static void test_edit_distance(void **state) {
    (void)state;
    assert_int_equal(edit_distance("", ""), 0);
    assert_int_equal(edit_distance("abc", "abc"), 0);
    assert_int_equal(edit_distance("", "abc"), 3);
    assert_int_equal(edit_distance("abc", ""), 3);
    assert_int_equal(edit_distance("kitten", "sitting"), 3);
    assert_int_equal(edit_distance("sitting", "kitten"), 3);
    assert_int_equal(edit_distance("b", "bb"), 1);
    assert_int_equal(edit_distance("stage", "stages"), 1);
    assert_int_equal(edit_distance("bf61", "bf16"), 2);
    assert_int_equal(edit_distance("rowmax", "colmax"), 2);
    assert_int_equal(edit_distance("flaw", "lawn"), 2);
    /* strings over 64 characters are "far" */
    char long_a[80];
    memset(long_a, 'a', sizeof long_a - 1);
    long_a[sizeof long_a - 1] = 0;
    assert_int_equal(edit_distance(long_a, "a"), 99);
    long_a[64] = 0;
    assert_int_equal(edit_distance(long_a, long_a), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_linecol),
        cmocka_unit_test(test_span_join),
        cmocka_unit_test(test_render_error),
        cmocka_unit_test(test_render_levels_and_shapes),
        cmocka_unit_test(test_render_at_end_of_file),
        cmocka_unit_test(test_error_limit),
        cmocka_unit_test(test_edit_distance),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
