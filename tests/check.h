/* tests/check.h: the tiny test harness every C test uses.
 *
 *   TEST(name) { CHECK(cond); CHECK_EQ_INT(a, b); CHECK_NEAR(a, b, tol); }
 *   int main(void) { RUN(name); ...; return check_summary(); }
 *
 * A failed CHECK prints file:line and the expression and marks the test
 * failed (the test goes on). check_summary prints "N passed, N failed" and
 * returns the process exit code. */
#ifndef TT_TESTS_CHECK_H
#define TT_TESTS_CHECK_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_passed, check_failed, check_current_failed;
static const char *check_current;

#define TEST(name) static void name(void)

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "%s:%d: %s: CHECK(%s) failed\n", __FILE__, __LINE__, check_current, #cond);                \
            check_current_failed = 1;                                                                                  \
        }                                                                                                              \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                                                             \
    do {                                                                                                               \
        long long va_ = (long long)(a), vb_ = (long long)(b);                                                          \
        if (va_ != vb_) {                                                                                              \
            fprintf(stderr, "%s:%d: %s: %s == %s failed (%lld vs %lld)\n", __FILE__, __LINE__, check_current, #a, #b,  \
                    va_, vb_);                                                                                         \
            check_current_failed = 1;                                                                                  \
        }                                                                                                              \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                                                          \
    do {                                                                                                               \
        double va_ = (double)(a), vb_ = (double)(b);                                                                   \
        if (!(fabs(va_ - vb_) <= (tol))) {                                                                             \
            fprintf(stderr, "%s:%d: %s: %s ~ %s failed (%g vs %g)\n", __FILE__, __LINE__, check_current, #a, #b, va_,  \
                    vb_);                                                                                              \
            check_current_failed = 1;                                                                                  \
        }                                                                                                              \
    } while (0)

#define CHECK_STR(a, b)                                                                                                \
    do {                                                                                                               \
        const char *sa_ = (a), *sb_ = (b);                                                                             \
        if (!sa_ || !sb_ || strcmp(sa_, sb_) != 0) {                                                                   \
            fprintf(stderr, "%s:%d: %s: %s == %s failed (\"%s\" vs \"%s\")\n", __FILE__, __LINE__, check_current, #a,  \
                    #b, sa_ ? sa_ : "(null)", sb_ ? sb_ : "(null)");                                                   \
            check_current_failed = 1;                                                                                  \
        }                                                                                                              \
    } while (0)

/* substring check */
#define CHECK_CONTAINS(hay, needle)                                                                                    \
    do {                                                                                                               \
        const char *h_ = (hay), *n_ = (needle);                                                                        \
        if (!h_ || !strstr(h_, n_)) {                                                                                  \
            fprintf(stderr, "%s:%d: %s: \"%s\" does not contain \"%s\"\n", __FILE__, __LINE__, check_current,          \
                    h_ ? h_ : "(null)", n_);                                                                           \
            check_current_failed = 1;                                                                                  \
        }                                                                                                              \
    } while (0)

#define RUN(name)                                                                                                      \
    do {                                                                                                               \
        check_current = #name;                                                                                         \
        check_current_failed = 0;                                                                                      \
        name();                                                                                                        \
        if (check_current_failed) {                                                                                    \
            check_failed++;                                                                                            \
            fprintf(stderr, "FAIL %s\n", #name);                                                                       \
        } else {                                                                                                       \
            check_passed++;                                                                                            \
        }                                                                                                              \
    } while (0)

/* A test that cannot run here (no device, backend not built in) says why and
 * exits CHECK_SKIP (registered as SKIP_RETURN_CODE in tests/CMakeLists.txt),
 * so CTest reports it as skipped rather than passed. */
#define CHECK_SKIP 77
static inline int check_skip(const char *reason) {
    printf("SKIPPED: %s\n", reason);
    fflush(stdout);
    return CHECK_SKIP;
}

static inline int check_summary(void) {
    printf("%d passed, %d failed\n", check_passed, check_failed);
    return check_failed ? 1 : 0;
}

#endif
