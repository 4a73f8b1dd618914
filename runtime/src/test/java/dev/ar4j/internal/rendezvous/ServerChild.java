package dev.ar4j.internal.rendezvous;

import dev.ar4j.rendezvous.*;

import dev.ar4j.rendezvous.RendezvousSettings;
import java.net.InetAddress;
import java.net.InetSocketAddress;

/**
 * A rendezvous server in a JVM of its own, for {@link TcpRendezvousFdExhaustionTest}: serves
 * {@code worldSize} ranks on an ephemeral loopback port with the token of {@code AR4J_RDZV_TOKEN}
 * and the settings of the system properties, prints {@code PORT <port>}, and exits when its
 * standard input ends (or after 60 s), printing {@code ACCEPT_FAILURES <n>} first. It prints
 * {@code FIRST_ACCEPT_FAILURE} as soon as accepting a connection has failed once, whatever the
 * logging level.
 *
 * <p>Arguments: {@code worldSize}.
 */
public final class ServerChild {

    private ServerChild() {
    }

    public static void main(String[] args) throws Exception {
        int worldSize = Integer.parseInt(args[0]);
        try (TcpRendezvousServer server = TcpRendezvousServer.start(
                new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), worldSize, JobToken.fromSystem(),
                RendezvousSettings.resolve())) {
            System.out.println("PORT " + server.port());
            System.out.flush();
            Thread.ofPlatform().daemon().start(() -> {
                try {
                    while (server.acceptFailures() == 0) {
                        Thread.sleep(10);
                    }
                    System.out.println("FIRST_ACCEPT_FAILURE");
                    System.out.flush();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            Thread stdin = Thread.ofPlatform().daemon().start(() -> {
                try {
                    System.in.transferTo(java.io.OutputStream.nullOutputStream());
                } catch (java.io.IOException e) {
                    System.out.println("stdin failed: " + e);
                }
            });
            stdin.join(60_000);
            System.out.println("ACCEPT_FAILURES " + server.acceptFailures());
            System.out.flush();
        }
        System.exit(0);
    }
}
