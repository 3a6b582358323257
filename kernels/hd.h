// SLUICE_HD marks functions compiled for both the host (g++) and the device (nvcc).
#ifndef SLUICE_KERNELS_HD_H_
#define SLUICE_KERNELS_HD_H_

#if defined(__CUDACC__)
#define SLUICE_HD __host__ __device__
#define SLUICE_DEVICE_CODE 1
#else
#define SLUICE_HD
#endif

#endif  // SLUICE_KERNELS_HD_H_
