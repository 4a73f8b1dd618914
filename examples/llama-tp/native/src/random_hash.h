// The counter-based generator behind ar4j_llama_fill_random_bf16 (its exact definition; the
// header states it so that any implementation can reproduce the weights):
//   mix(z)  = splitmix64's finalizer of z + 0x9E3779B97F4A7C15
//   h       = mix(mix(seed) ^ index)
//   u       = (h >> 40) * 2^-24                    in [0, 1), 24 bits
//   value   = fp32(2u - 1) * amplitude             amplitude = fp32(std * sqrt(3))
#pragma once

#include <stdint.h>

#if defined(__CUDACC__)
#define AR4J_LLAMA_HD __host__ __device__ __forceinline__
#else
#define AR4J_LLAMA_HD inline
#endif

namespace ar4j_llama {

AR4J_LLAMA_HD uint64_t splitmix64(uint64_t z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// std * sqrt(3) in fp32: a uniform in [-amplitude, amplitude) has standard deviation std.
inline float random_amplitude(float std) { return std * 1.7320508075688772f; }

AR4J_LLAMA_HD float random_value(uint64_t seed, uint64_t index, float amplitude) {
    const uint64_t h = splitmix64(splitmix64(seed) ^ index);
    const float u = static_cast<float>(h >> 40) * (1.0f / 16777216.0f);
    return (2.0f * u - 1.0f) * amplitude;
}

}  // namespace ar4j_llama
