/**
 * The dispatch rule: which algorithm runs one all-reduce, decided in Java.
 *
 * <p>{@link dev.ar4j.dispatch.AllReduceDispatcher} is a pure, total function of the group's
 * {@link dev.ar4j.dispatch.Topology}, the {@link dev.ar4j.dispatch.DispatchConfig} (policy and
 * gates, from builder, system property or environment, see
 * {@link dev.ar4j.dispatch.SettingSource}), the {@link dev.ar4j.dispatch.AlgorithmThresholds}
 * and the call's size, dtype, alignment and registration. Every input maps to a
 * {@link dev.ar4j.dispatch.Decision}: the {@link dev.ar4j.dispatch.Algorithm} to launch (a custom
 * kernel or NCCL), always with its reason; "nothing launched" cannot be expressed. The same
 * {@link dev.ar4j.dispatch.Algorithm} is what a user asks for: {@code AUTO}, or one to force.
 */
package dev.ar4j.dispatch;
