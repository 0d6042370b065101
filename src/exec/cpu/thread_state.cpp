// The per-OS-thread state of CPU-backend kernels: threadIdx, blockIdx,
// blockDim, gridDim, the running block's shared memory and fibers (struct
// lizard_cpu_thread_state in cuda_cpu_thread.h, which checks that it
// fits in these bytes).  It is defined in the executable rather than in each
// kernel library so that the libraries, loaded with dlopen, reach it with
// initial-exec TLS (one load relative to %fs) instead of a __tls_get_addr
// call per access.  lizard_core's link options keep the symbol in every
// executable and export it (see CMakeLists.txt).
extern "C" {
struct lizard_cpu_thread_storage {
  alignas(16) unsigned char bytes[128];
};
__attribute__((visibility("default"))) __thread lizard_cpu_thread_storage lizard_cpu_thread;
}
