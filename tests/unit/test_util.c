/* test_util.c - unit tests of src/util.c: the arena (alignment, zeroing, many and large blocks, free
 * and reuse), vec_push growth, StrBuf indentation, blank lines and wrapping, fmt_bytes, and the file helpers. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "util.h"

/* ---- arena ------------------------------------------------------------------------------------ */

static void test_arena_alignment_and_zeroing(void **state) {
    (void)state;
    Arena a = {0};
    static const size_t sizes[] = {1, 3, 15, 16, 17, 31, 100, 4095, 1, 7};
    size_t expect_total = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        unsigned char *p = arena_alloc(&a, sizes[i]);
        assert_non_null(p);
        assert_int_equal((uintptr_t)p % 16, 0);
        for (size_t j = 0; j < sizes[i]; j++) assert_int_equal(p[j], 0);
        memset(p, 0xAB, sizes[i]); /* dirty it: the next block must still come back zeroed */
        expect_total += (sizes[i] + 15) / 16 * 16;
    }
    assert_int_equal(a.used_total, expect_total);
    /* a zero-byte request still returns a usable, aligned pointer */
    void *z = arena_alloc(&a, 0);
    assert_non_null(z);
    assert_int_equal((uintptr_t)z % 16, 0);
    arena_free(&a);
    assert_null(a.head);
    assert_int_equal(a.used_total, 0);
}

static void test_arena_many_allocations(void **state) {
    (void)state;
    Arena a = {0};
    enum { N = 20000 };
    uint32_t **blocks = malloc(sizeof(uint32_t *) * N);
    assert_non_null(blocks);
    for (uint32_t i = 0; i < N; i++) {
        size_t words = 1 + i % 9;
        blocks[i] = arena_alloc(&a, words * sizeof(uint32_t));
        for (size_t w = 0; w < words; w++) blocks[i][w] = i * 16 + (uint32_t)w;
    }
    /* no block overlaps another: every value survives the later allocations */
    for (uint32_t i = 0; i < N; i++)
        for (size_t w = 0; w < 1 + i % 9; w++) assert_int_equal(blocks[i][w], i * 16 + (uint32_t)w);
    free(blocks);
    /* blocks larger than a chunk (64 KiB) get their own chunk */
    unsigned char *big = arena_alloc(&a, 300000);
    assert_int_equal((uintptr_t)big % 16, 0);
    for (size_t i = 0; i < 300000; i += 4096) assert_int_equal(big[i], 0);
    big[299999] = 1;
    unsigned char *after = arena_alloc(&a, 32);
    assert_true(after + 32 <= big || after >= big + 300000);
    arena_free(&a);
    /* the arena is reusable after arena_free */
    int *p = ARENA_NEW_N(&a, int, 10);
    for (int i = 0; i < 10; i++) assert_int_equal(p[i], 0);
    assert_int_equal(a.used_total, 48);
    arena_free(&a);
}

static void test_arena_strings(void **state) {
    (void)state;
    Arena a = {0};
    const char *src = "tile language";
    char *d = arena_strdup(&a, src);
    assert_string_equal(d, src);
    assert_ptr_not_equal(d, src);
    assert_string_equal(arena_strndup(&a, src, 4), "tile");
    assert_string_equal(arena_strndup(&a, src, 0), "");
    char *p = arena_printf(&a, "%s[%d, %d] %s", "bf16", 128, 64, "tile");
    assert_string_equal(p, "bf16[128, 64] tile");
    char long_text[1000];
    memset(long_text, 'x', sizeof long_text - 1);
    long_text[sizeof long_text - 1] = 0;
    assert_string_equal(arena_printf(&a, "<%s>", long_text) + 1 + 998, "x>");
    arena_free(&a);
}

/* ---- vec_push ----------------------------------------------------------------------------------- */

static void test_vec_push_growth(void **state) {
    (void)state;
    Arena a = {0};
    Vec(int) v = {0};
    assert_int_equal(v.n, 0);
    vec_push(&a, &v, 7);
    assert_int_equal(v.n, 1);
    assert_int_equal(v.cap, 8);
    assert_int_equal(v.v[0], 7);
    for (int i = 1; i < 1000; i++) {
        vec_push(&a, &v, 7 + i * 3);
        assert_true(v.cap >= v.n);
        assert_int_equal(v.cap & (v.cap - 1), 0); /* doubling from 8 */
    }
    assert_int_equal(v.n, 1000);
    assert_int_equal(v.cap, 1024);
    for (int i = 0; i < 1000; i++) assert_int_equal(v.v[i], 7 + i * 3);
    /* elements larger than a pointer keep their contents across growth */
    typedef struct { double x; char name[40]; } Big;
    Vec(Big) b = {0};
    for (int i = 0; i < 100; i++) {
        Big e = {.x = i * 0.5};
        snprintf(e.name, sizeof e.name, "element %d", i);
        vec_push(&a, &b, e);
    }
    assert_int_equal(b.n, 100);
    assert_int_equal(b.cap, 128);
    for (int i = 0; i < 100; i++) {
        char want[40];
        snprintf(want, sizeof want, "element %d", i);
        assert_string_equal(b.v[i].name, want);
        assert_true(b.v[i].x == i * 0.5);
    }
    arena_free(&a);
}

static void test_vec_grow_to_need(void **state) {
    (void)state;
    Arena a = {0};
    int *v = NULL, cap = 0;
    vec_grow_(&a, (void **)&v, &cap, sizeof(int), 100);
    assert_int_equal(cap, 128);
    v[99] = 5;
    vec_grow_(&a, (void **)&v, &cap, sizeof(int), 129);
    assert_int_equal(cap, 256);
    assert_int_equal(v[99], 5);
    arena_free(&a);
}

/* ---- StrBuf ------------------------------------------------------------------------------------- */

static void test_strbuf_lines_and_indent(void **state) {
    (void)state;
    StrBuf b;
    sb_init(&b);
    sb_line(&b, "kernel %s {", "gemm");
    b.indent++;
    sb_line(&b, "int x = %d;", 1);
    b.indent++;
    sb_line(&b, "y();");
    const char *empty = "";
    sb_line(&b, empty); /* an empty line gets no indentation */
    b.indent -= 2;
    sb_line(&b, "}");
    assert_string_equal(b.s, "kernel gemm {\n    int x = 1;\n        y();\n\n}\n");
    assert_int_equal(b.len, strlen(b.s));
    char *t = sb_take(&b);
    assert_string_equal(t, "kernel gemm {\n    int x = 1;\n        y();\n\n}\n");
    assert_null(b.s);
    assert_int_equal(b.len, 0);
    free(t);
    /* sb_take of an untouched buffer gives an empty, freeable string */
    t = sb_take(&b);
    assert_string_equal(t, "");
    free(t);
}

static void test_strbuf_blank(void **state) {
    (void)state;
    StrBuf b;
    sb_init(&b);
    sb_blank(&b); /* nothing before it: no blank line at the top */
    assert_int_equal(b.len, 0);
    sb_line(&b, "a");
    sb_blank(&b);
    sb_blank(&b); /* never two blank lines in a row */
    sb_line(&b, "b");
    sb_blank(&b);
    assert_string_equal(b.s, "a\n\nb\n\n");
    sb_puts(&b, "c");
    sb_blank(&b); /* after text without a newline: only ends the line */
    assert_string_equal(b.s, "a\n\nb\n\nc\n");
    sb_free(&b);
    assert_null(b.s);
}

static void test_strbuf_growth(void **state) {
    (void)state;
    StrBuf b;
    sb_init(&b);
    for (int i = 0; i < 5000; i++) sb_printf(&b, "%d,", i % 10);
    assert_int_equal(b.len, 10000);
    assert_int_equal(strlen(b.s), 10000);
    assert_memory_equal(b.s + 9980, "0,1,2,3,4,5,6,7,8,9,", 20);
    sb_putc(&b, '!');
    sb_putn(&b, "abcdef", 3);
    assert_string_equal(b.s + 10000, "!abc");
    sb_free(&b);
}

/* ---- numbers -------------------------------------------------------------------------------------- */

static void test_sb_wrap(void **state) {
    (void)state;
    StrBuf b;
    sb_init(&b);
    /* one space between words, breaks before a word that would pass column 12 */
    sb_wrap(&b, "", 2, 2, 12, false, "  aaa   bbb ccc dddd");
    assert_string_equal(b.s, "  aaa bbb\n    ccc dddd\n");
    b.len = 0;
    /* a prefix on every line, gaps kept, '\x01' never breaks */
    sb_wrap(&b, " * ", 0, 1, 12, true, "ab  cd e\x01" "f");
    assert_string_equal(b.s, " * ab  cd\n *  e f\n");
    b.len = 0;
    sb_wrap(&b, "", 0, 0, 10, false, "");
    assert_string_equal(b.s, "\n");
    sb_free(&b);
}

static void test_fmt_bytes(void **state) {
    (void)state;
    assert_string_equal(fmt_bytes(232448), "232,448");
    assert_string_equal(fmt_bytes(0), "0");
    assert_string_equal(fmt_bytes(999), "999");
    assert_string_equal(fmt_bytes(1000), "1,000");
    assert_string_equal(fmt_bytes(65536), "65,536");
    assert_string_equal(fmt_bytes(1048575), "1,048,575");
    assert_string_equal(fmt_bytes(-1024), "-1,024");
    assert_string_equal(fmt_bytes(-999), "-999");
    assert_string_equal(fmt_bytes(INT64_MAX), "9,223,372,036,854,775,807");
    /* a ring of buffers: several results can be used in one printf */
    const char *r[8];
    for (int i = 0; i < 8; i++) r[i] = fmt_bytes(1000 * (i + 1));
    for (int i = 0; i < 8; i++) {
        char want[16];
        snprintf(want, sizeof want, "%d,000", i + 1);
        assert_string_equal(r[i], want);
    }
}

static void test_int_helpers(void **state) {
    (void)state;
    assert_int_equal(cdiv64(0, 64), 0);
    assert_int_equal(cdiv64(1, 64), 1);
    assert_int_equal(cdiv64(64, 64), 1);
    assert_int_equal(cdiv64(65, 64), 2);
    assert_int_equal(cdiv64(8192, 128), 64);
    assert_true(is_pow2(1));
    assert_true(is_pow2(1024));
    assert_true(is_pow2(INT64_C(1) << 40));
    assert_false(is_pow2(0));
    assert_false(is_pow2(-4));
    assert_false(is_pow2(96));
}

/* ---- files ---------------------------------------------------------------------------------------- */

static void test_files(void **state) {
    (void)state;
    char dir[] = "/tmp/tkc_test_util_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/out.cu", dir);
    const char text[] = "line 1\nline 2\0with a NUL";
    assert_int_equal(write_file(path, text, sizeof text - 1), 0);
    size_t len = 0;
    char *back = read_file(path, &len);
    assert_non_null(back);
    assert_int_equal(len, sizeof text - 1);
    assert_memory_equal(back, text, len);
    assert_int_equal(back[len], 0);
    free(back);
    /* write_file leaves no temporary behind */
    char tmp[300];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    assert_int_equal(access(tmp, F_OK), -1);
    /* an empty file reads as "" */
    assert_int_equal(write_file(path, "", 0), 0);
    back = read_file(path, &len);
    assert_non_null(back);
    assert_int_equal(len, 0);
    assert_string_equal(back, "");
    free(back);
    remove(path);
    /* failures */
    errno = 0;
    assert_null(read_file(path, &len));
    assert_int_equal(errno, ENOENT);
    snprintf(path, sizeof path, "%s/no/such/dir/out.cu", dir);
    assert_int_equal(write_file(path, "x", 1), -1);
    assert_int_equal(rmdir(dir), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_arena_alignment_and_zeroing),
        cmocka_unit_test(test_arena_many_allocations),
        cmocka_unit_test(test_arena_strings),
        cmocka_unit_test(test_vec_push_growth),
        cmocka_unit_test(test_vec_grow_to_need),
        cmocka_unit_test(test_strbuf_lines_and_indent),
        cmocka_unit_test(test_strbuf_blank),
        cmocka_unit_test(test_strbuf_growth),
        cmocka_unit_test(test_sb_wrap),
        cmocka_unit_test(test_fmt_bytes),
        cmocka_unit_test(test_int_helpers),
        cmocka_unit_test(test_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
