/* bench/mpi_latency_bench.c: one-way MPI message latency between rank 0 and
 * rank 1 for the sizes a tuning session sends (a job, about 300 bytes; a
 * result with a short message, about 400 bytes; a result with a long
 * compiler message, about 4.3 KB), by ping-pong, median of 9 runs of 500
 * round trips. Run: mpirun -np 2 build/bench/mpi_latency_bench (bench/mpi_bench.sh). */
#include <stdio.h>

#ifndef TT_HAVE_MPI
int main(void) {
    fprintf(stderr, "mpi_latency_bench: tunetop was built without MPI\n");
    return 77;
}
#else
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        if (rank == 0) fprintf(stderr, "mpi_latency_bench: run with mpirun -np 2\n");
        MPI_Finalize();
        return 2;
    }
    static char buf[8192];
    const int sizes[] = {300, 400, 4300};
    const char *what[] = {"job", "result", "result+log"};
    if (rank == 0) printf("message\tbytes\tone_way_us\n");
    for (int s = 0; s < 3; s++) {
        double runs[9];
        for (int k = 0; k < 9; k++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (int i = 0; i < 500; i++) {
                if (rank == 0) {
                    MPI_Send(buf, sizes[s], MPI_BYTE, 1, 1, MPI_COMM_WORLD);
                    MPI_Recv(buf, sizes[s], MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else if (rank == 1) {
                    MPI_Recv(buf, sizes[s], MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(buf, sizes[s], MPI_BYTE, 0, 1, MPI_COMM_WORLD);
                }
            }
            runs[k] = (MPI_Wtime() - t0) / 500 / 2;
        }
        qsort(runs, 9, sizeof *runs, cmp);
        if (rank == 0) printf("%s\t%d\t%.2f\n", what[s], sizes[s], runs[4] * 1e6);
    }
    MPI_Finalize();
    return 0;
}
#endif
