package dev.ar4j.nccl;

import dev.ar4j.Ar4jException;

/**
 * A call needs NCCL but the communicator was built without it ({@code nccl(false)}, or
 * {@code AR4J_NCCL=0}): an all-reduce the custom kernels do not take (its size, alignment or
 * registration; the message names them and the dispatcher's reason), or the NCCL collectives.
 * Nothing was enqueued and the communicator stays usable. Use a call the custom kernels take
 * ({@code Communicator.explain} says which), or build the group with NCCL.
 */
public class NcclDisabledException extends Ar4jException {
    private static final long serialVersionUID = 1L;

    /**
     * The refusal of one call.
     *
     * @param message the call, why it needs NCCL, and what to do
     */
    public NcclDisabledException(String message) {
        super(message);
    }
}
