package dev.ar4j;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.InputStream;
import java.lang.module.ModuleDescriptor;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The API fence: the public types of the packages {@code dev.ar4j.runtime} exports, with their
 * public and protected members, must match the reviewed list in {@code api/exported-api.txt}. A
 * change to the exported surface fails here until the list is updated on purpose: review the
 * difference the failure prints, then run this test with {@code -Dar4j.api.accept=true} (it rewrites
 * the file) and commit the file with the change.
 */
class ExportedApiTest {
    private static final Path CLASSES = Path.of("target", "classes");
    private static final Path REVIEWED = Path.of("api", "exported-api.txt");

    @Test
    void theExportedSurfaceIsTheReviewedOne() throws Exception {
        List<String> actual = describe();
        if (Boolean.getBoolean("ar4j.api.accept")) {
            Files.createDirectories(REVIEWED.getParent());
            Files.write(REVIEWED, actual, StandardCharsets.UTF_8);
            return;
        }
        assertTrue(Files.exists(REVIEWED), "run from the runtime module directory; " + REVIEWED + " is missing");
        List<String> reviewed = Files.readAllLines(REVIEWED, StandardCharsets.UTF_8);
        if (!reviewed.equals(actual)) {
            List<String> added = new ArrayList<>(actual);
            added.removeAll(reviewed);
            List<String> removed = new ArrayList<>(reviewed);
            removed.removeAll(actual);
            StringBuilder message = new StringBuilder("the exported API differs from the reviewed list " + REVIEWED
                    + "; review it, then rerun with -Dar4j.api.accept=true and commit the list:");
            added.forEach(line -> message.append("\n  + ").append(line));
            removed.forEach(line -> message.append("\n  - ").append(line));
            fail(message.toString());
        }
    }

    /** The exported surface, one line a type or member, types sorted by name: the file's format. */
    static List<String> describe() throws IOException, ClassNotFoundException {
        ModuleDescriptor module;
        try (InputStream in = Files.newInputStream(CLASSES.resolve("module-info.class"))) {
            module = ModuleDescriptor.read(in);
        }
        TreeSet<String> packages = new TreeSet<>();
        for (ModuleDescriptor.Exports export : module.exports()) {
            if (!export.isQualified()) {
                packages.add(export.source());
            }
        }
        TreeSet<String> typeNames = new TreeSet<>();
        for (String pkg : packages) {
            try (Stream<Path> files = Files.list(CLASSES.resolve(pkg.replace('.', '/')))) {
                files.map(p -> p.getFileName().toString())
                        .filter(n -> n.endsWith(".class") && !n.equals("package-info.class"))
                        .forEach(n -> typeNames.add(pkg + "." + n.substring(0, n.length() - ".class".length())));
            }
        }
        List<Class<?>> types = new ArrayList<>();
        for (String name : typeNames) {
            Class<?> type = Class.forName(name, false, ExportedApiTest.class.getClassLoader());
            if (isExported(type)) {
                types.add(type);
            }
        }
        List<String> lines = new ArrayList<>();
        lines.add("# The exported API of dev.ar4j.runtime: " + types.size() + " public types in "
                + String.join(", ", packages) + ".");
        lines.add("# Checked by ExportedApiTest; regenerate after review with -Dar4j.api.accept=true.");
        for (Class<?> type : types) {
            lines.add(typeLine(type));
            TreeSet<String> members = new TreeSet<>();
            for (Constructor<?> c : type.getDeclaredConstructors()) {
                if (visible(c.getModifiers()) && !c.isSynthetic()) {
                    members.add("  " + c.toGenericString());
                }
            }
            for (Method m : type.getDeclaredMethods()) {
                if (visible(m.getModifiers()) && !m.isSynthetic() && !m.isBridge()) {
                    members.add("  " + m.toGenericString());
                }
            }
            for (Field f : type.getDeclaredFields()) {
                if (visible(f.getModifiers()) && !f.isSynthetic()) {
                    members.add("  " + f.toGenericString());
                }
            }
            lines.addAll(members);
        }
        return lines;
    }

    private static boolean isExported(Class<?> type) {
        if (type.isAnonymousClass() || type.isLocalClass() || type.isSynthetic()) {
            return false;
        }
        for (Class<?> t = type; t != null; t = t.getEnclosingClass()) {
            if (!Modifier.isPublic(t.getModifiers())) {
                return false;
            }
        }
        return true;
    }

    private static boolean visible(int modifiers) {
        return Modifier.isPublic(modifiers) || Modifier.isProtected(modifiers);
    }

    private static String typeLine(Class<?> type) {
        String kind = type.isAnnotation() ? "@interface" : type.isInterface() ? "interface" : type.isEnum() ? "enum"
                : type.isRecord() ? "record" : "class";
        int modifiers = type.getModifiers() & (Modifier.ABSTRACT | Modifier.FINAL | Modifier.STATIC);
        if (type.isInterface() || type.isEnum() || type.isRecord()) {
            modifiers = 0;
        }
        StringBuilder line = new StringBuilder((Modifier.toString(modifiers) + " " + kind).trim())
                .append(type.isSealed() ? " sealed " : " ").append(type.getName());
        if (type.getGenericSuperclass() != null && !type.isEnum() && !type.isRecord()
                && type.getSuperclass() != Object.class) {
            line.append(" extends ").append(type.getGenericSuperclass().getTypeName());
        }
        if (type.getGenericInterfaces().length > 0) {
            line.append(type.isInterface() ? " extends " : " implements ");
            line.append(String.join(", ", Stream.of(type.getGenericInterfaces()).map(t -> t.getTypeName()).toList()));
        }
        return line.toString();
    }
}
