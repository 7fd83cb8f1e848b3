// RF_HOST_DEVICE: marks a function that the host and the GPU both run (__host__ __device__ where
// nvcc compiles it, nothing where a plain C++ compiler does), so one definition serves both:
// core/augment.h's transforms, decode/'s per-element decode.
#pragma once

#if defined(__CUDACC__)
#define RF_HOST_DEVICE __host__ __device__
#else
#define RF_HOST_DEVICE
#endif
