package dev.ar4j.internal.rendezvous;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;

/**
 * The challenge–response of the rendezvous handshake and the per-frame MAC, over the JDK's
 * HMAC-SHA256. Proofs are compared in constant time.
 */
final class RendezvousAuth {
    private static final String ALGORITHM = "HmacSHA256";
    private static final SecureRandom RANDOM = new SecureRandom();

    private RendezvousAuth() {
    }

    static byte[] nonce() {
        byte[] nonce = new byte[RendezvousProtocol.NONCE_BYTES];
        RANDOM.nextBytes(nonce);
        return nonce;
    }

    /** A fresh random incarnation for one join of a rank. */
    static long incarnation() {
        return RANDOM.nextLong();
    }

    static byte[] clientProof(byte[] tokenKey, byte[] hello, byte[] serverNonce) {
        return hmac(tokenKey, label("client"), hello, serverNonce);
    }

    static byte[] serverProof(byte[] tokenKey, byte[] hello, byte[] serverNonce) {
        return hmac(tokenKey, label("server"), hello, serverNonce);
    }

    static byte[] sessionKey(byte[] tokenKey, byte[] hello, byte[] serverNonce) {
        return hmac(tokenKey, label("session"), hello, serverNonce);
    }

    static boolean matches(byte[] expected, byte[] actual) {
        return MessageDigest.isEqual(expected, actual);
    }

    /** A MAC engine keyed once; not thread-safe (each direction of a channel has its own). */
    static Mac mac(byte[] key) {
        try {
            Mac mac = Mac.getInstance(ALGORITHM);
            mac.init(new SecretKeySpec(key, ALGORITHM));
            return mac;
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("this JDK has no " + ALGORITHM + ", which every Java SE runtime must provide", e);
        }
    }

    private static byte[] hmac(byte[] key, byte[]... parts) {
        Mac mac = mac(key);
        for (byte[] part : parts) {
            mac.update(part);
        }
        return mac.doFinal();
    }

    private static byte[] label(String role) {
        return ("ar4j-rdzv-v2-" + role).getBytes(StandardCharsets.US_ASCII);
    }
}
