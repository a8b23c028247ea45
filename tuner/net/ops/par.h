/* tuner/net/ops/par.h: the op library's threads (OpenMP), in one place.
 *
 * The model runtime that `run --model` links (libtunetop_modelrt.a) and the
 * one an exported library compiles from text are built with OpenMP; there
 * Par_range splits a loop of an op over the threads the kernels get
 * (OMP_NUM_THREADS, which `run --model --threads N` sets for its program).
 * tunetop's own copy of the ops (tt_net: the reference executor, constant
 * folding, the conformance test) is built without OpenMP: there every range
 * runs on the calling thread, as one piece. On purpose: that copy is the
 * reference `run --model` checks the threaded program against; the
 * conformance test forks a child per model, and with GCC's libgomp a forked
 * child hangs in its first parallel region once the parent's pool has
 * started; tunetop runs under ThreadSanitizer, which cannot see libgomp's
 * synchronisation; and a pool's spinning threads would take a core from the
 * kernels tunetop measures beside it.
 *
 * The contract an op keeps: the items it hands to Par_range are independent
 * (output elements, rows, planes: no item reads what another writes, no two
 * write the same element), and each item is computed exactly as the one-thread
 * run computes it, whatever piece it falls in. A reduction is never split
 * across items. So an op's result is bit for bit the same on any number of
 * threads (tests/unit/test_onnx_threads.c checks 1 against 2). */
#ifndef TT_NET_OPS_PAR_H
#define TT_NET_OPS_PAR_H

#include <stdint.h>

/* The least work worth a second thread, in element operations (a float32 Add
 * is 1 per element, Erf about 10, a copy 1): each thread gets at least this
 * much, so an Add of float32 splits from 64Ki elements (256 KiB per operand)
 * on. Below it, waking the team (a few us when its threads still spin, tens
 * of us when they sleep) would cost more than a second core saves. */
#define PAR_MIN_WORK 32768.0

/* Calls body(arg, lo, hi) over [0, n) in contiguous pieces, one per thread, in
 * parallel; on one thread (few items, work below 2 x PAR_MIN_WORK, no
 * OpenMP, already inside a parallel region) body(arg, 0, n) once. work: the
 * whole loop's cost in element operations. Returns when every piece is done. */
typedef void (*ParBody)(void *arg, int64_t lo, int64_t hi);
void Par_range(int64_t n, double work, ParBody body, void *arg);

/* How many threads Par_range(n, work, ...) would use here and now. */
int Par_threads(int64_t n, double work);

/* How many Par_range calls have run on more than one thread in this process
 * (for tests: proof that the threaded path ran). */
long Par_teams(void);

#endif
