package dev.ar4j.internal.engine;

import dev.ar4j.Communicator;
import dev.ar4j.CommunicatorInternals;
import dev.ar4j.internal.rendezvous.InProcessRendezvous;
import org.junit.jupiter.api.Test;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.lang.reflect.RecordComponent;
import java.time.Duration;
import java.util.Map;
import java.util.Properties;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * What a sub-communicator inherits from its parent's settings: every setting, except the parent's
 * place in its own group; a builder field added later must be copied or listed as not inherited.
 */
class ChildSettingsTest {

    /** A value unlike the default for each field type of {@link Settings.Draft}. */
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
        if (t == dev.ar4j.dispatch.Algorithm.class) {
            return dev.ar4j.dispatch.Algorithm.PUSH;
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
        if (t == dev.ar4j.rendezvous.Rendezvous.class) {
            return InProcessRendezvous.create(1).forRank(0);
        }
        throw new AssertionError("Settings has a field of a type this test does not know: " + f
                + "; teach the test and decide whether ChildSettings copies it");
    }

    @Test
    void everySettingIsInheritedExceptThePlaceInTheParentGroup() throws Exception {
        Settings.Draft draft = new Settings.Draft();
        for (Field f : Settings.Draft.class.getDeclaredFields()) {
            if (Modifier.isStatic(f.getModifiers())) {
                continue;
            }
            f.set(draft, unusual(f));
        }
        Settings parent = draft.freeze();
        Settings child = ChildSettings.copy(parent);
        Settings fresh = new Settings.Draft().freeze();
        RecordComponent[] components = Settings.class.getRecordComponents();
        assertEquals(components.length, Settings.Draft.class.getDeclaredFields().length,
                "Settings.Draft has one field per Settings component");
        for (RecordComponent c : components) {
            Object theirs = c.getAccessor().invoke(parent);
            Object mine = c.getAccessor().invoke(child);
            assertEquals(Settings.Draft.class.getDeclaredField(c.getName()).get(draft), theirs,
                    c.getName() + " is not frozen from the draft");
            if (ChildSettings.NOT_INHERITED.contains(c.getName())) {
                assertEquals(c.getAccessor().invoke(fresh), mine, c.getName() + " must not be inherited");
            } else if (!c.getType().isPrimitive()) {
                assertSame(theirs, mine, c.getName() + " is not inherited: copy it in ChildSettings.copy, or list "
                        + "it in ChildSettings.NOT_INHERITED");
            } else {
                assertEquals(theirs, mine, c.getName() + " is not inherited: copy it in ChildSettings.copy, or "
                        + "list it in ChildSettings.NOT_INHERITED");
            }
        }
        for (String name : ChildSettings.NOT_INHERITED) {
            try {
                Settings.class.getDeclaredMethod(name);
            } catch (NoSuchMethodException e) {
                fail("ChildSettings.NOT_INHERITED names '" + name + "', which Settings no longer has");
            }
        }
    }

    @Test
    void theSnapshotResolvesPropertiesAndTheDeviceAndIsNotChangedByTheParentsBuilderLater() {
        Properties props = new Properties();
        props.setProperty(BuilderChecks.NCCL_PROPERTY, "false");
        props.setProperty(BuilderChecks.PDL_PROPERTY, "off");
        props.setProperty(BuilderChecks.WATCHDOG_PROPERTY, "250");
        Communicator.Builder parentBuilder = Communicator.builder().systemProperties(props).environment(Map.of())
                .stagingBytes(1 << 20).rank(3).worldSize(4).rendezvous(InProcessRendezvous.create(4).forRank(3));
        Settings parent = CommunicatorInternals.settings(parentBuilder);
        Settings snap = ChildSettings.snapshot(parent, 5, 3);
        assertEquals(5, snap.device());
        assertEquals(3, snap.ranksPerGpuAtLeast(), "a child sizes its grid for all of its parent's ranks on a GPU");
        assertEquals(3, ChildSettings.snapshot(snap, 5, 1).ranksPerGpuAtLeast(), "a grandchild keeps the largest");
        assertEquals(Boolean.FALSE, snap.ncclEnabled());
        assertEquals(Boolean.FALSE, snap.pdlEnabled());
        assertEquals(Duration.ofMillis(250), snap.watchdogInterval());
        assertEquals(-1, snap.rank());
        assertEquals(-1, snap.worldSize());
        assertNull(snap.rendezvous());
        parentBuilder.stagingBytes(2 << 20);
        props.setProperty(BuilderChecks.NCCL_PROPERTY, "true");
        Settings child = ChildSettings.copy(snap);
        assertEquals(1 << 20, child.stagingBytes(), "the parent's builder changed after the build changes no child");
        assertEquals(Boolean.FALSE, child.ncclEnabled(), "resolved at the parent's build, not read again");
        assertEquals(snap, child, "a copy of the snapshot holds exactly its values (settings are immutable: no copy can leak a change)");
        BuilderChecks.validate(child);  // a child's settings pass the build's checks
        assertTrue(child.rendezvousTimeout().equals(Communicator.DEFAULT_RENDEZVOUS_TIMEOUT));
    }
}
