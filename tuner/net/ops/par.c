/* tuner/net/ops/par.c: Par_range (see par.h). The only OpenMP region of the op
 * library: without -fopenmp the pragma is left out, so no unknown-pragma
 * warning appears where tunetop compiles the ops with -Wall -Werror. */
#include <stdatomic.h>

#include "tuner/net/ops/par.h"

#ifdef _OPENMP
#include <omp.h>
#endif

static atomic_long par_teams;

int Par_threads(int64_t n, double work) {
#ifdef _OPENMP
    if (n < 2 || omp_in_parallel()) return 1;
    int nt = omp_get_max_threads();
    double by_work = work / PAR_MIN_WORK;
    if (by_work < nt) nt = (int)by_work;
    if (nt > n) nt = (int)n;
    return nt < 1 ? 1 : nt;
#else
    (void)n;
    (void)work;
    return 1;
#endif
}

long Par_teams(void) { return atomic_load_explicit(&par_teams, memory_order_relaxed); }

void Par_range(int64_t n, double work, ParBody body, void *arg) {
    if (n <= 0) return;
    int nt = Par_threads(n, work);
    if (nt <= 1) {
        body(arg, 0, n);
        return;
    }
#ifdef _OPENMP
#pragma omp parallel num_threads(nt)
    {
        int64_t t = omp_get_thread_num(), k = omp_get_num_threads(), q = n / k, r = n % k;
        int64_t lo = t * q + (t < r ? t : r), hi = lo + q + (t < r);
        if (t == 0 && k > 1) atomic_fetch_add_explicit(&par_teams, 1, memory_order_relaxed);
        if (lo < hi) body(arg, lo, hi);
    }
#endif
}
