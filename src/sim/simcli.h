/* SPDX-License-Identifier: Apache-2.0 */
/*
 * simcli.h - the `gpu-extender simulate` subcommand: reads the trace files
 * and the config, runs the seeds on worker threads (gx_sim_run is pure and
 * shares nothing between runs), prints per-seed and mean results, writes
 * --json and --svg. The one file of the sim layer that does I/O and owns
 * threads.
 */
#ifndef GX_SIMCLI_H
#define GX_SIMCLI_H

/** Run `simulate` with the arguments after the subcommand; returns the exit status. */
int gx_simcli_main(int argc, char **argv);

#endif
