// Small kernels the CUDA device tests launch: they observe the hardware (which SM a block ran
// on, whether two kernels were on the card at the same time), they compute nothing.
#pragma once

namespace mirrorlab::testing {

// One single-thread kernel: raises flags[which], then polls flags[1 - which] for at most
// `max_cycles` GPU clock cycles and writes 1 to *saw_other if it went up. Two of them on two
// streams both see the other only if they ran at the same time. All pointers: device memory.
void launch_handshake(void* stream, int* flags, int which, int* saw_other, long long max_cycles);

// `blocks` blocks; block b writes the id of the SM it ran on to sm_ids[b], after spinning for
// `spin_cycles` so that the blocks spread over every SM they may use.
void launch_record_sm_ids(void* stream, unsigned* sm_ids, int blocks, long long spin_cycles);

// One thread spinning for `cycles` GPU clock cycles: work an event pair can time.
void launch_spin(void* stream, long long cycles);

}  // namespace mirrorlab::testing
