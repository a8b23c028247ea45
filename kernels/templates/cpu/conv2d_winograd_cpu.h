/* kernels/templates/cpu/conv2d_winograd_cpu.h: what the Winograd conv2d template
 * (conv2d_winograd_cpu.c) shares with its tests. */
#ifndef TT_KERNELS_CPU_CONV2D_WINOGRAD_CPU_H
#define TT_KERNELS_CPU_CONV2D_WINOGRAD_CPU_H

#include <stdbool.h>

#include "kernels/workload.h"

#define WG_MAX_A 8 /* a = m + 2 for the largest tile, m = 6 */

/* The template handles the workload: conv2d 3x3, stride 1, no dilation. */
bool WinogradCpu_applies(const Workload *wl);
/* The fewest FLOPs a config executes: the a^2 GEMMs' multiply-adds (2 FLOPs
 * each) of the tile size m that needs the fewest, over every tile, with the
 * transforms left out. Its roofline's compute ceiling (template.h min_flops). */
double WinogradCpu_minFlops(const Workload *wl);
/* The transform matrices of F(m x m, 3 x 3), m in {2, 4, 6}, in double:
 * at[m][m + 2], g[m + 2][3], bt[m + 2][m + 2]. */
void WinogradCpu_matrices(int m, double at[][WG_MAX_A], double g[][3], double bt[][WG_MAX_A]);

#endif
