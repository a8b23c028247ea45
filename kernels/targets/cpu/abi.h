/* kernels/targets/cpu/abi.h: the contract between CPU templates (which generate C)
 * and the cpu target (which compiles it to a shared object and measures it in
 * the worker process).
 *
 * A generated CPU kernel is one C11 translation unit, compiled with
 * `cc -O3 -march=native -fPIC -shared -fopenmp`, that exports:
 *
 *   int  tt_setup(float **args, void **state);
 *       Allocates scratch and packs constant operands (weights) into the
 *       layout the kernel wants; like pre-packed weights in a deployed model
 *       this is not timed. args follow Workload_args (inputs, output last) and
 *       stay valid until tt_teardown. Returns 0, or non-zero on failure.
 *   void tt_pack(void *state);
 *       Transforms the data input into a blocked layout if the template needs
 *       one (no-op otherwise). Timed apart and reported as pack_s.
 *   void tt_run(void *state);
 *       The timed computation. May read packed data and write a blocked output.
 *   void tt_finish(void *state);
 *       Writes the canonical output into args[last] (unpacks a blocked
 *       output; no-op otherwise). Timed apart together with tt_pack.
 *   void tt_teardown(void *state);
 *
 * Threads: kernels parallelise with OpenMP; the worker fixes the thread count
 * (OMP_NUM_THREADS) before loading the kernel.
 */
#ifndef TT_KERNELS_CPU_ABI_H
#define TT_KERNELS_CPU_ABI_H

typedef int (*tt_setup_fn)(float **args, void **state);
typedef void (*tt_state_fn)(void *state);

#define TT_CPU_ENTRY "tt_run"
/* -fno-math-errno: a kernel never reads errno, and with it set the compiler guards every sqrtf with a branch
 * to the library (for errno on a negative argument), which keeps the loop around it scalar. */
/* Under ThreadSanitizer the candidates are built without OpenMP (their
 * pragmas are then ignored and they run on one thread): libgomp is not
 * instrumented, so TSan cannot see its barriers and would report races in
 * every parallel region; a report is then always a race in tunetop. */
#if defined(__SANITIZE_THREAD__)
#define TT_CPU_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TT_CPU_TSAN 1
#endif
#endif
#ifdef TT_CPU_TSAN
#define TT_CPU_CFLAGS "-O3 -march=native -fno-math-errno -fPIC -shared -std=gnu11 -w"
#else
#define TT_CPU_CFLAGS "-O3 -march=native -fno-math-errno -fPIC -shared -fopenmp -std=gnu11 -w"
#endif

#endif
