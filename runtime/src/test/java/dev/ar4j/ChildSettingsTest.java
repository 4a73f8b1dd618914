package dev.ar4j;

import dev.ar4j.rendezvous.InProcessRendezvous;
import org.junit.jupiter.api.Test;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.time.Duration;
import java.util.Map;
import java.util.Properties;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * What a sub-communicator inherits from its parent's builder: every setting, except the parent's
 * place in its own group; a builder field added later must be copied or listed as not inherited.
 */
class ChildSettingsTest {

    /** A value unlike the default for each field type of {@link BuilderSettings}. */
    private static Object unusual(Field f) {
        Class<?> t = f.getType();
        if (t == int.class) {
            return 7;
        }
        if (t == long.class) {
            return 4096L;
        }
        if (t == boolean.class) {
            return true;
        }
        if (t == Boolean.class) {
            return Boolean.FALSE;
        }
        if (t == String.class) {
            return "push";
        }
        if (t == Duration.class) {
            return Duration.ofMillis(1234);
        }
        if (t == Map.class) {
            return Map.of("A", "B");
        }
        if (t == Properties.class) {
            return new Properties();
        }
        if (t == FailureListener.class) {
            return (FailureListener) (c, e) -> { };
        }
        if (t == dev.ar4j.rendezvous.Rendezvous.class) {
            return InProcessRendezvous.create(1).forRank(0);
        }
        throw new AssertionError("BuilderSettings has a field of a type this test does not know: " + f
                + "; teach the test and decide whether ChildSettings copies it");
    }

    @Test
    void everySettingIsInheritedExceptThePlaceInTheParentGroup() throws Exception {
        Communicator.Builder parent = Communicator.builder();
        for (Field f : BuilderSettings.class.getDeclaredFields()) {
            if (Modifier.isStatic(f.getModifiers())) {
                continue;
            }
            f.setAccessible(true);
            f.set(parent, unusual(f));
        }
        Communicator.Builder child = ChildSettings.copy(parent);
        Communicator.Builder fresh = Communicator.builder();
        for (Field f : BuilderSettings.class.getDeclaredFields()) {
            if (Modifier.isStatic(f.getModifiers())) {
                continue;
            }
            Object theirs = f.get(parent);
            Object mine = f.get(child);
            if (ChildSettings.NOT_INHERITED.contains(f.getName())) {
                assertEquals(f.get(fresh), mine, f.getName() + " must not be inherited");
            } else if (!f.getType().isPrimitive()) {
                assertSame(theirs, mine, f.getName() + " is not inherited: copy it in ChildSettings.copy, or list "
                        + "it in ChildSettings.NOT_INHERITED");
            } else {
                assertEquals(theirs, mine, f.getName() + " is not inherited: copy it in ChildSettings.copy, or "
                        + "list it in ChildSettings.NOT_INHERITED");
            }
        }
        for (String name : ChildSettings.NOT_INHERITED) {
            try {
                BuilderSettings.class.getDeclaredField(name);
            } catch (NoSuchFieldException e) {
                fail("ChildSettings.NOT_INHERITED names '" + name + "', which BuilderSettings no longer has");
            }
        }
    }

    @Test
    void theSnapshotResolvesPropertiesAndTheDeviceAndIsNotChangedByTheParentsBuilderLater() {
        Properties props = new Properties();
        props.setProperty(BuilderChecks.NCCL_PROPERTY, "false");
        props.setProperty(BuilderChecks.PDL_PROPERTY, "off");
        props.setProperty(BuilderChecks.WATCHDOG_PROPERTY, "250");
        Communicator.Builder parent = Communicator.builder().systemProperties(props).environment(Map.of())
                .stagingBytes(1 << 20).rank(3).worldSize(4).rendezvous(InProcessRendezvous.create(4).forRank(3));
        Communicator.Builder snap = ChildSettings.snapshot(parent, 5, 3);
        assertEquals(5, snap.device);
        assertEquals(3, snap.ranksPerGpuAtLeast, "a child sizes its grid for all of its parent's ranks on a GPU");
        assertEquals(3, ChildSettings.snapshot(snap, 5, 1).ranksPerGpuAtLeast, "a grandchild keeps the largest");
        assertEquals(Boolean.FALSE, snap.ncclEnabled);
        assertEquals(Boolean.FALSE, snap.pdlEnabled);
        assertEquals(Duration.ofMillis(250), snap.watchdogInterval);
        assertEquals(-1, snap.rank);
        assertEquals(-1, snap.worldSize);
        assertNull(snap.rendezvous);
        parent.stagingBytes(2 << 20);
        props.setProperty(BuilderChecks.NCCL_PROPERTY, "true");
        Communicator.Builder child = ChildSettings.copy(snap);
        assertEquals(1 << 20, child.stagingBytes, "the parent's builder changed after the build changes no child");
        assertEquals(Boolean.FALSE, child.ncclEnabled, "resolved at the parent's build, not read again");
        assertNotEquals(snap, child);
        BuilderChecks.validate(child);  // a child's builder passes the build's checks
        assertTrue(child.rendezvousTimeout.equals(Communicator.DEFAULT_RENDEZVOUS_TIMEOUT));
    }
}
