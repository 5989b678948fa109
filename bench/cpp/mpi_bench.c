/* The C++ core benchmark's cases (bench/cpp/core_bench.cpp) in C over MPI, for the C column of
 * bench/run.py: what the best C MPI on this machine (Open MPI's osc/sm, MPICH's ch4 shared
 * memory) costs without Python. Build with that MPI's mpicc; run 2 ranks with its mpiexec.
 * Prints the same JSON lines as bench/cases.py; rank 0 reports medians. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNT 2000

static double samples[COUNT];

static int by_value(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static double median(void) {
  qsort(samples, COUNT, sizeof samples[0], by_value);
  return samples[COUNT / 2];
}

static void report(int rank, const char* name, int size, double seconds) {
  if (rank == 0) printf("{\"case\": \"%s\", \"size\": %d, \"value\": %.9g}\n", name, size, seconds);
}

/* Times COUNT runs of the statement into samples[], then reports the median. */
#define TIMED(rank, name, size, statement) \
  do {                                     \
    for (int i_ = 0; i_ < COUNT; ++i_) {   \
      double began_ = MPI_Wtime();         \
      statement;                           \
      samples[i_] = MPI_Wtime() - began_;  \
    }                                      \
    report(rank, name, size, median());    \
  } while (0)

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  char* base;
  MPI_Win win;
  MPI_Win_allocate(1 << 16, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
  char data[4096];
  memset(data, 1, sizeof data);
  long one = 1, zero = 0, fetched = 0;
  MPI_Group world_group, peer_group;
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  int peer = 1 - rank;
  MPI_Group_incl(world_group, 1, &peer, &peer_group);

  if (rank == 0) {
    MPI_Win_lock_all(0, win);
    int sizes[] = {8, 64, 512, 4096};
    for (int s = 0; s < 4; ++s) {
      int size = sizes[s];
      TIMED(rank, "put", size, (MPI_Put(data, size, MPI_BYTE, 1, 0, size, MPI_BYTE, win), MPI_Win_flush(1, win)));
      TIMED(rank, "get", size, (MPI_Get(data, size, MPI_BYTE, 1, 0, size, MPI_BYTE, win), MPI_Win_flush(1, win)));
      TIMED(rank, "accumulate", size,
            (MPI_Accumulate(data, size / 8, MPI_LONG, 1, 0, size / 8, MPI_LONG, MPI_SUM, win), MPI_Win_flush(1, win)));
    }
    TIMED(rank, "fetch_and_op", 8,
          (MPI_Fetch_and_op(&one, &fetched, MPI_LONG, 1, 0, MPI_SUM, win), MPI_Win_flush(1, win)));
    TIMED(rank, "compare_and_swap", 8,
          (MPI_Compare_and_swap(&one, &zero, &fetched, MPI_LONG, 1, 0, win), MPI_Win_flush(1, win)));
    MPI_Win_unlock_all(win);
    TIMED(rank, "lock_put_unlock", 8,
          (MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win), MPI_Put(data, 8, MPI_BYTE, 1, 0, 8, MPI_BYTE, win),
           MPI_Win_unlock(1, win)));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Win_fence(0, win);
  TIMED(rank, "fence_empty", 8, MPI_Win_fence(0, win));
  TIMED(rank, "fence_put", 8,
        ((rank == 0 ? MPI_Put(data, 8, MPI_BYTE, 1, 0, 8, MPI_BYTE, win) : 0), MPI_Win_fence(0, win)));
  MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
  if (rank == 0) {
    TIMED(
        rank, "pscw_put", 8,
        (MPI_Win_start(peer_group, 0, win), MPI_Put(data, 8, MPI_BYTE, 1, 0, 8, MPI_BYTE, win), MPI_Win_complete(win)));
  } else {
    TIMED(rank, "pscw_put", 8, (MPI_Win_post(peer_group, 0, win), MPI_Win_wait(win)));
  }
  TIMED(rank, "barrier", 8, MPI_Barrier(MPI_COMM_WORLD));
  /* The communicator's sendrecv between the two ranks (the Python case pickles an int). */
  char in[8];
  TIMED(rank, "comm_sendrecv@2", 8,
        MPI_Sendrecv(data, 8, MPI_BYTE, 1 - rank, 0, in, 8, MPI_BYTE, 1 - rank, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  fflush(stdout);
  MPI_Group_free(&peer_group);
  MPI_Group_free(&world_group);
  MPI_Win_free(&win);
  MPI_Finalize();
  return 0;
}
