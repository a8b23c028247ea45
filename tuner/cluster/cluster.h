/* tuner/cluster/cluster.h: a session over MPI ranks (`mpirun -np K tunetop tune ...`).
 *
 * Rank 0 is the session (engine, scheduler, strategies, UI or headless, the
 * only writer of the log). Ranks >= 1 are measure servers: each builds
 * candidates with its own builder pool and measures them in its own isolated
 * worker process, exactly as a local session does, and sends the results
 * back. Work is pulled: a server asks for jobs when it has free slots; rank 0
 * hands out jobs from one queue; results are recorded in completion order.
 *
 * Threads: on rank 0 one communication thread makes every MPI call (MPI is
 * initialised with MPI_THREAD_SERIALIZED and that is checked); the engine
 * sees the cluster only through a MeasureBackend (tuner/backend.h). On a
 * server the main thread makes the MPI calls and one work thread builds and
 * measures.
 *
 * Failures: a server that sends nothing (no heartbeat, every 0.5 s) for
 * `lost_after_s` is lost: its jobs in flight go back to the front of the
 * queue and its later messages are ignored, so nothing is recorded twice.
 * Whether a dead rank reaches this point is up to the launcher: Open MPI's
 * mpirun ends the whole job when a rank dies unless it runs with
 * --enable-recovery (see the README).
 *
 * Devices: a session whose ranks have different devices (by name) measures
 * each task on one kind: the kind of the rank that takes its first job; its
 * later jobs go to ranks of that kind only (unless none of them is left).
 *
 * cpu target, node rule: ranks of one node share a lock file (node-local
 * temp directory): builds hold it shared, a measurement holds it alone, so no
 * rank times a kernel while another rank of its node compiles.
 *
 * Library code: nothing here prints or exits.
 */
#ifndef TT_TUNER_CLUSTER_H
#define TT_TUNER_CLUSTER_H

#include <stdbool.h>

#include "base/status.h"
#include "kernels/target.h"
#include "tuner/backend.h"

/* True when MPI support is built in. */
bool Cluster_available(void);
/* True when this process was started by an MPI launcher (mpirun, srun). */
bool Cluster_launched(void);
/* Initialises MPI; *rank and *size receive this process's rank and the
 * world's size. TT_ERR when MPI is not built in or not thread-safe enough. */
Status Cluster_init(int *argc, char ***argv, int *rank, int *size, char *err);
/* This rank's place among the ranks of its node (MPI_COMM_TYPE_SHARED, found
 * by Cluster_init; 0 and 1 without MPI). */
void Cluster_node(int *local_rank, int *local_size);
/* Rank 0 of a session that ends before its host started: every server quits. */
void Cluster_quitServers(int size);
/* Ends MPI (after the host or server is done). */
void Cluster_finalize(void);

/* ---- ranks >= 1 ---- */
typedef struct ServerConfig {
    const Target *target;
    DeviceInfo dev; /* the device this rank measures on */
    MeasureOptions measure;
    int builders;             /* builder threads (0 = cores) */
    const char *device_error; /* non-NULL: this rank could not open its device (it tells rank 0, measures nothing) */
} ServerConfig;

/* Serves rank 0 until it says quit (or it is gone). TT_ERR with a line. */
Status ClusterServer_run(const ServerConfig *cfg, char *err);

/* ---- rank 0 ---- */
typedef struct ClusterHost ClusterHost;

/* Starts the communication thread for a world of `size` ranks. Every rank
 * sets tasks up with space_dev's limits (rank 0's device, or the --arch
 * limits when it has none), so a config's index means the same config on
 * every rank; each builds and measures on its own device. `local`
 * (NULL = none): rank 0 builds and measures too, on this device, as one more
 * server fed from the same queue (--local-measure). */
ClusterHost *ClusterHost_new(int size, double lost_after_s, const DeviceInfo *space_dev, const ServerConfig *local,
                             char *err);
/* True once nothing could be measured any more (every server lost or
 * without a device): the session stopped for it. */
bool ClusterHost_failed(ClusterHost *this);
const MeasureBackend *ClusterHost_backend(ClusterHost *this);
/* Tells every server to quit and stops the communication thread. */
void ClusterHost_finish(ClusterHost *this);
void ClusterHost_delete(ClusterHost *this);

#endif
