/* tests/check.h: the tiny test harness every C test uses.
 *
 *   TEST(name) { CHECK(cond); CHECK_EQ_INT(a, b); CHECK_NEAR(a, b, tol); }
 *   int main(void) { RUN(name); ...; return check_summary(); }
 *
 * A failed CHECK prints file:line and the expression and marks the test
 * failed (the test goes on). A test that ran no CHECK at all fails too (it
 * proved nothing), and so does a binary that ran no test. check_summary
 * prints "N passed, N failed" and returns the process exit code.
 *
 * A test that cannot run here returns check_skip(DEP, reason) from main: exit
 * 77 (CTest's SKIP_RETURN_CODE), unless TUNETOP_REQUIRE (comma-separated,
 * e.g. "opencl,xgboost,mpi,nvrtc") names DEP: then the machine was meant to
 * have it, and the binary fails naming the requirement. */
#ifndef TT_TESTS_CHECK_H
#define TT_TESTS_CHECK_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_passed, check_failed, check_current_failed, check_current_checks;
static const char *check_current;

#define TEST(name) static void name(void)

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        check_current_checks++;                                                                                        \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "%s:%d: %s: CHECK(%s) failed\n", __FILE__, __LINE__, check_current, #cond);                \
            check_current_failed = 1;                                                                                  \
        }                                                                                                              \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                                                             \
    do {                                                                                                               \
        check_current_checks++;                                                                                        \
        long long va_ = (long long)(a), vb_ = (long long)(b);                                                          \
        if (va_ != vb_) {                                                                                              \
            fprintf(stderr, "%s:%d: %s: %s == %s failed (%lld vs %lld)\n", __FILE__, __LINE__, check_current, #a, #b,  \
                    va_, vb_);                                                                                         \
            check_current_failed = 1;                                                                                  \
        }                                                                                                              \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                                                          \
    do {                                                                                                               \
        check_current_checks++;                                                                                        \
        double va_ = (double)(a), vb_ = (double)(b);                                                                   \
        if (!(fabs(va_ - vb_) <= (tol))) {                                                                             \
            fprintf(stderr, "%s:%d: %s: %s ~ %s failed (%g vs %g)\n", __FILE__, __LINE__, check_current, #a, #b, va_,  \
                    vb_);                                                                                              \
            check_current_failed = 1;                                                                                  \
        }                                                                                                              \
    } while (0)

#define CHECK_STR(a, b)                                                                                                \
    do {                                                                                                               \
        check_current_checks++;                                                                                        \
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
        check_current_checks++;                                                                                        \
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
        check_current_checks = 0;                                                                                      \
        name();                                                                                                        \
        if (check_current_checks == 0 && !check_current_failed) {                                                      \
            fprintf(stderr, "%s: ran no check\n", #name);                                                              \
            check_current_failed = 1;                                                                                  \
        }                                                                                                              \
        if (check_current_failed) {                                                                                    \
            check_failed++;                                                                                            \
            fprintf(stderr, "FAIL %s\n", #name);                                                                       \
        } else {                                                                                                       \
            check_passed++;                                                                                            \
        }                                                                                                              \
    } while (0)

#define CHECK_SKIP 77

/* check_required(DEP): TUNETOP_REQUIRE lists DEP */
static inline int check_required(const char *dep) {
    const char *req = getenv("TUNETOP_REQUIRE");
    size_t n = strlen(dep);
    for (const char *p = req; p && *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, dep, n) == 0) return 1;
        p = end ? end + 1 : p + len;
    }
    return 0;
}

/* check_skip(DEP, reason): what main returns when it cannot run its tests
 * here because DEP (opencl, xgboost, nvrtc, cuda-device...) is missing. Tests
 * that did run must have passed: a failure among them still fails. */
static inline int check_skip(const char *dep, const char *reason) {
    if (check_failed) {
        printf("%d passed, %d failed (and the rest not run: %s)\n", check_passed, check_failed, reason);
        return 1;
    }
    if (check_required(dep)) {
        printf("FAIL: TUNETOP_REQUIRE names %s, but %s\n", dep, reason);
        fflush(stdout);
        return 1;
    }
    printf("SKIPPED: %s (needs %s; %d tests ran first and passed)\n", reason, dep, check_passed);
    fflush(stdout);
    return CHECK_SKIP;
}

static inline int check_summary(void) {
    printf("%d passed, %d failed\n", check_passed, check_failed);
    if (check_passed + check_failed == 0) {
        printf("FAIL: no test ran\n");
        return 1;
    }
    return check_failed ? 1 : 0;
}

#endif
