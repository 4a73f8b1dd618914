package dev.ar4j.dispatch;

import dev.ar4j.DType;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Predicate;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Enumerates every combination of topology, policy, PCIe gate override, staging size, thresholds,
 * byte count, dtype, alignment and registration, and compares {@link AllReduceDispatcher#decide} with an oracle written as an
 * ordered rule table (first matching row wins), independently of the dispatcher's code.
 */
class DispatchMatrixTest {

    private static final long KIB = 1024;
    private static final long MIB = 1024 * KIB;

    /** One call and the configuration around it. */
    private record Case(int worldSize, boolean fullNvlink, boolean p2p, boolean singleHost,
                        Algorithm policy, boolean gateLifted, long staging, long pushUpTo, long upTo4, long upTo8,
                        long bytes, DType dtype, boolean aligned, boolean registered) {
        boolean auto() {
            return policy == Algorithm.AUTO;
        }

        boolean forcedCustom() {
            return policy == Algorithm.ONE_STAGE || policy == Algorithm.TWO_STAGE
                    || policy == Algorithm.PUSH;
        }
    }

    /** What the oracle expects: an exception, or an algorithm with a fall-back flag and a reason keyword. */
    private record Expected(boolean rejected, Algorithm algorithm, boolean fellBack, String reasonMentions) {
        static Expected rejectedCall() {
            return new Expected(true, null, false, null);
        }

        static Expected run(Algorithm algorithm, String reasonMentions) {
            return new Expected(false, algorithm, false, reasonMentions);
        }

        static Expected ncclOrFallback(Case c, String reasonMentions) {
            return new Expected(false, Algorithm.NCCL, c.forcedCustom(), reasonMentions);
        }
    }

    private interface Outcome {
        Expected of(Case c);
    }

    private record Rule(String name, Predicate<Case> when, Outcome then) {
    }

    private static final Set<Integer> KERNEL_WORLD_SIZES = Set.of(2, 4, 6, 8);

    /** The C ABI's AR4J_PUSH_MAX_BYTES, written out here rather than read from the code under test. */
    private static final long PUSH_LIMIT = 524288;

    /** The specification, one row per rule, in priority order. */
    private static final List<Rule> RULES = List.of(
            new Rule("bytes not whole elements", c -> c.bytes % c.dtype.byteSize() != 0,
                    c -> Expected.rejectedCall()),
            new Rule("world size 1", c -> c.worldSize == 1,
                    c -> Expected.run(Algorithm.LOCAL, "world size 1 → local copy: no communication")),
            new Rule("forced nccl", c -> c.policy == Algorithm.NCCL,
                    c -> Expected.run(Algorithm.NCCL, "forced nccl")),
            new Rule("world size outside 2/4/6/8", c -> !KERNEL_WORLD_SIZES.contains(c.worldSize),
                    c -> Expected.ncclOrFallback(c, "world size " + c.worldSize)),
            new Rule("several hosts", c -> !c.singleHost,
                    c -> Expected.ncclOrFallback(c, "several hosts")),
            new Rule("no P2P", c -> !c.p2p,
                    c -> Expected.ncclOrFallback(c, "P2P")),
            new Rule("PCIe gate", c -> c.auto() && !c.fullNvlink && c.worldSize > 2 && !c.gateLifted,
                    c -> Expected.run(Algorithm.NCCL, "AR4J_FORCE_CUSTOM_AR_PCIE=1")),
            new Rule("size not a multiple of 16", c -> c.bytes % 16 != 0,
                    c -> Expected.ncclOrFallback(c, "multiple of 16")),
            new Rule("misaligned pointers", c -> !c.aligned,
                    c -> Expected.ncclOrFallback(c, "aligned")),
            new Rule("forced push beyond its 512 KiB limit", c -> c.policy == Algorithm.PUSH && c.bytes > PUSH_LIMIT,
                    c -> Expected.ncclOrFallback(c, "512 KiB push limit")),
            new Rule("forced push", c -> c.policy == Algorithm.PUSH,
                    c -> Expected.run(Algorithm.PUSH, "forced push")),
            new Rule("auto, up to the push threshold", c -> c.auto() && c.bytes <= c.pushUpTo,
                    c -> Expected.run(Algorithm.PUSH, "up to")),
            new Rule("unregistered beyond staging", c -> !c.registered && c.bytes > c.staging,
                    c -> Expected.ncclOrFallback(c, "staging")),
            new Rule("forced one-stage", c -> c.policy == Algorithm.ONE_STAGE,
                    c -> Expected.run(Algorithm.ONE_STAGE, "forced 1stage")),
            new Rule("forced two-stage beyond scratch", c -> c.policy == Algorithm.TWO_STAGE && c.bytes > c.staging,
                    c -> Expected.ncclOrFallback(c, "scratch")),
            new Rule("forced two-stage", c -> c.policy == Algorithm.TWO_STAGE,
                    c -> Expected.run(Algorithm.TWO_STAGE, "forced 2stage")),
            new Rule("auto, two ranks", c -> c.worldSize == 2,
                    c -> Expected.run(Algorithm.ONE_STAGE, "world size 2")),
            new Rule("auto, up to 4 ranks, small", c -> c.worldSize <= 4 && c.bytes < c.upTo4,
                    c -> Expected.run(Algorithm.ONE_STAGE, "under")),
            new Rule("auto, up to 8 ranks, small", c -> c.worldSize <= 8 && c.bytes < c.upTo8,
                    c -> Expected.run(Algorithm.ONE_STAGE, "under")),
            new Rule("auto, large beyond scratch", c -> c.bytes > c.staging,
                    c -> Expected.run(Algorithm.NCCL, "scratch")),
            new Rule("auto, large", c -> true,
                    c -> Expected.run(Algorithm.TWO_STAGE, "ranks on")));

    private static Rule firstMatchingRule(Case c) {
        for (Rule rule : RULES) {
            if (rule.when().test(c)) {
                return rule;
            }
        }
        throw new AssertionError("the last rule matches everything");
    }

    private record Tuning(long staging, long pushUpTo, long upTo4, long upTo8) {
    }

    @Test
    void everyCombinationMatchesTheRuleTable() {
        List<Tuning> tunings = List.of(
                new Tuning(8 * MIB, 256 * KIB, 512 * KIB, 256 * KIB),   // the defaults, generous staging
                new Tuning(256 * KIB, 256 * KIB, 512 * KIB, 256 * KIB), // staging smaller than the thresholds
                new Tuning(64 * KIB, 256 * KIB, 512 * KIB, 256 * KIB),  // staging smaller than the push threshold
                new Tuning(2 * MIB, 0, 64 * KIB, 128 * KIB),            // no automatic push; inverted thresholds
                new Tuning(MIB, 512 * KIB, MIB, 128 * KIB));            // push up to its limit, above the ws 8 split
        List<String> failures = new ArrayList<>();
        Set<String> rulesReached = new LinkedHashSet<>();
        long cases = 0;
        for (Tuning tuning : tunings) {
            AlgorithmThresholds thresholds = new AlgorithmThresholds(tuning.pushUpTo(), tuning.upTo4(), tuning.upTo8());
            Set<Long> sizes = new LinkedHashSet<>(List.of(16L, KIB, 43008L, 43010L, 64 * KIB, 64 * KIB + 16,
                    256 * KIB - 16, 256 * KIB, 256 * KIB + 16, 512 * KIB - 16, 512 * KIB, 512 * KIB + 16,
                    tuning.staging(), tuning.staging() + 16, 64 * MIB));
            if (tuning.pushUpTo() > 0) {
                sizes.add(tuning.pushUpTo());
                sizes.add(tuning.pushUpTo() + 16);
            }
            for (int worldSize = 1; worldSize <= 9; worldSize++) {
                for (boolean nvlink : new boolean[] {false, true}) {
                    for (boolean p2p : new boolean[] {false, true}) {
                        for (boolean host : new boolean[] {false, true}) {
                            for (Algorithm policy : Algorithm.values()) {
                                if (!policy.isPolicy()) {
                                    continue;  // LOCAL: DispatchConfig refuses it (DispatchTypesTest)
                                }
                                for (boolean gate : new boolean[] {false, true}) {
                                    DispatchConfig config = new DispatchConfig(policy, new SettingSource.BuilderValue(),
                                            gate, new SettingSource.BuilderValue());
                                    AllReduceDispatcher dispatcher = AllReduceDispatcher.of(
                                            new Topology(worldSize, nvlink, p2p, host), config, tuning.staging(),
                                            thresholds);
                                    for (long bytes : sizes) {
                                        for (DType dtype : DType.values()) {
                                            for (boolean aligned : new boolean[] {false, true}) {
                                                for (boolean registered : new boolean[] {false, true}) {
                                                    Case c = new Case(worldSize, nvlink, p2p, host, policy, gate,
                                                            tuning.staging(), tuning.pushUpTo(), tuning.upTo4(),
                                                            tuning.upTo8(),
                                                            bytes, dtype, aligned, registered);
                                                    cases++;
                                                    Rule rule = firstMatchingRule(c);
                                                    rulesReached.add(rule.name());
                                                    check(dispatcher, c, rule.then().of(c), failures);
                                                }
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        // 9 world sizes x 8 topologies x 5 policies x 2 gates x 3 dtypes x 4 flags x 72 sizes over 5 tunings
        assertTrue(cases > 600_000, "the matrix ran " + cases + " cases");
        assertEquals(RULES.stream().map(Rule::name).collect(Collectors.toSet()), rulesReached,
                "every row of the rule table is exercised");
        assertTrue(failures.isEmpty(), failures.size() + " of " + cases + " cases differ from the rule table, e.g.:\n"
                + String.join("\n", failures.subList(0, Math.min(20, failures.size()))));
    }

    private static void check(AllReduceDispatcher dispatcher, Case c, Expected expected, List<String> failures) {
        Decision actual;
        try {
            actual = dispatcher.decide(c.bytes, c.dtype, c.aligned, c.registered);
        } catch (IllegalArgumentException e) {
            if (!expected.rejected()) {
                failures.add(c + ": threw " + e.getMessage() + ", expected " + expected);
            } else if (!e.getMessage().contains(c.dtype.toString())) {
                failures.add(c + ": rejection does not name the dtype: " + e.getMessage());
            }
            return;
        }
        if (expected.rejected()) {
            failures.add(c + ": expected a rejection, got " + actual);
            return;
        }
        if (actual == null) {
            failures.add(c + ": null decision");
            return;
        }
        if (actual.reason() == null || actual.reason().isBlank()) {
            failures.add(c + ": empty reason");
            return;
        }
        if (actual.algorithm() != expected.algorithm() || actual.fellBack() != expected.fellBack()) {
            failures.add(c + ": got " + actual + ", expected " + expected);
            return;
        }
        if (!actual.reason().contains(expected.reasonMentions())) {
            failures.add(c + ": reason '" + actual.reason() + "' does not mention '" + expected.reasonMentions() + "'");
            return;
        }
        String arrow = "→ " + actual.algorithm().displayName();
        if (!actual.reason().contains(arrow)) {
            failures.add(c + ": reason '" + actual.reason() + "' does not say '" + arrow + "'");
            return;
        }
        String prefix = c.auto() ? "auto" : "forced " + c.policy.configName();
        if (!actual.reason().startsWith(prefix)) {
            failures.add(c + ": reason '" + actual.reason() + "' does not start with '" + prefix + "'");
        }
    }
}
