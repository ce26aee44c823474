// emu_rt.h: the runtime the CPU emulator gives kernels compiled with
// -DTANDEM_EMU (see ../kernels/compat.h): per-thread indices, the block
// barrier and lane-group sums. One block runs at a time; its threads are
// fibers on the calling OS thread, switched only at barriers.
#ifndef TANDEM_EMU_RT_H
#define TANDEM_EMU_RT_H

struct tandem_dim3 {
  unsigned x, y, z;
};

struct tandem_emu_thread {
  tandem_dim3 thread_idx, block_idx, block_dim, grid_dim;
  int linear;  // thread index within the block
};

// tandem_emu_self is the running thread (fiber).
tandem_emu_thread* tandem_emu_self();
// tandem_emu_sync is __syncthreads: it returns when every live thread of
// the block has reached a barrier.
void tandem_emu_sync();
// tandem_emu_group_sum is the shuffle butterfly of compat.h's
// lane_group_sum, with the same association order: every thread of the
// block must call it.
void tandem_emu_group_sum(float* v, int n, int width);

#endif
