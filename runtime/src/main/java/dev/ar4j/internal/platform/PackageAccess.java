package dev.ar4j.internal.platform;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;

/**
 * The engine's way into a package-private helper of an API package (the exceptions' factories,
 * which live beside the exceptions): a private lookup within this module, so that the API
 * packages name nothing of the engine and grow no public type the user would not name.
 */
public final class PackageAccess {
    private PackageAccess() {
    }

    /**
     * A static method of a class of this module, whatever its access.
     *
     * @param owner the class
     * @param name the method's name
     * @param type the method's type
     * @return the method's handle
     * @throws ExceptionInInitializerError if there is no such method (a build error)
     */
    public static MethodHandle staticMethod(Class<?> owner, String name, MethodType type) {
        try {
            return MethodHandles.privateLookupIn(owner, MethodHandles.lookup()).findStatic(owner, name, type);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /**
     * A class of this module by name, for a package-private one.
     *
     * @param name the class's binary name
     * @return the class
     * @throws ExceptionInInitializerError if there is no such class (a build error)
     */
    public static Class<?> type(String name) {
        try {
            return Class.forName(name, false, PackageAccess.class.getClassLoader());
        } catch (ClassNotFoundException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /**
     * Rethrows what a handle threw: an unchecked exception or an error as it is.
     *
     * @param t what the handle threw
     * @return never
     */
    public static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) {
            throw r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        throw new IllegalStateException(t);
    }
}
