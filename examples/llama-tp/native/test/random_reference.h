// ar4j_llama_fill_random_bf16's formula as kernels.h states it, written again for the test
// (not shared with the library, so that a change of either shows).
#pragma once

#include <stdint.h>

namespace test {

inline uint64_t reference_mix(uint64_t z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// The fp32 value before the final rounding to bf16.
inline float reference_random_value(uint64_t seed, uint64_t index, float std_dev) {
    const uint64_t h = reference_mix(reference_mix(seed) ^ index);
    const float u = float(h >> 40) * (1.0f / 16777216.0f);
    const float amplitude = std_dev * 1.7320508f;
    return (2.0f * u - 1.0f) * amplitude;
}

}  // namespace test
