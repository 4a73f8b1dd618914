// The one launch tail of the library's kernels (launch.cu and residual_rmsnorm.cu):
// kernel<<<blocks, threads>>>(args...) on a stream, with programmatic stream serialization (PDL)
// when asked; the kernels call griddepcontrol.wait before their first dependent access.
#pragma once

#include <cuda_runtime.h>

namespace ar4j {

template <typename Kernel, typename... Args>
cudaError_t launch_kernel(Kernel kernel, unsigned blocks, unsigned threads, cudaStream_t stream, bool pdl,
                          Args... args) {
    if (!pdl) {
        kernel<<<blocks, threads, 0, stream>>>(args...);
        return cudaGetLastError();
    }
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(blocks);
    config.blockDim = dim3(threads);
    config.dynamicSmemBytes = 0;
    config.stream = stream;
    cudaLaunchAttribute attribute[1];
    attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute[0].val.programmaticStreamSerializationAllowed = 1;
    config.attrs = attribute;
    config.numAttrs = 1;
    return cudaLaunchKernelEx(&config, kernel, args...);
}

}  // namespace ar4j
