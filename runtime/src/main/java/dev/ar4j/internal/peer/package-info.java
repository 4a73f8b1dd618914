/**
 * Internals of {@link dev.ar4j.Communicator}: sharing device memory between ranks (CUDA IPC or
 * peer access), the peer-info record and the registered-range table. Not API.
 */
package dev.ar4j.internal.peer;
