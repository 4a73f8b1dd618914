package dev.ar4j.internal.rendezvous;

import dev.ar4j.rendezvous.*;

import dev.ar4j.rendezvous.Rendezvous;
import dev.ar4j.rendezvous.RendezvousTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * One rank of {@link TcpRendezvousProcessTest}, run as its own JVM. It joins a TcpRendezvous on
 * loopback (rank 0 serves), runs a scenario and prints one line per result, which the test reads:
 * {@code GATHER ...}, {@code BROADCAST ...}, {@code BARRIER passed}, {@code HOSTS ...},
 * {@code DONE}, or {@code TIMEOUT key=... missing=[...] | message} / {@code ERROR message}.
 *
 * <p>Arguments: {@code port rank worldSize scenario timeoutMillis}; scenarios {@code collectives}
 * (all-gather, broadcast from rank 1, barrier, the all-gather again with the same key, host
 * exchange), {@code gather} (one all-gather) and {@code barrier} (one barrier).
 */
public final class RendezvousChild {

    private RendezvousChild() {
    }

    public static void main(String[] args) {
        int port = Integer.parseInt(args[0]);
        int rank = Integer.parseInt(args[1]);
        int worldSize = Integer.parseInt(args[2]);
        String scenario = args[3];
        Duration timeout = Duration.ofMillis(Long.parseLong(args[4]));
        int exitCode = 0;
        try (TcpRendezvous rendezvous = TcpRendezvous.builder().rank(rank).worldSize(worldSize)
                .serverHost("127.0.0.1").serverPort(port)
                .connectTimeout(Duration.ofSeconds(20)).closeLinger(timeout).connect()) {
            switch (scenario) {
                case "collectives" -> collectives(rendezvous, timeout);
                case "gather" -> print("GATHER " + join(rendezvous.allGather("ids", utf8("id" + rank), timeout)));
                case "barrier" -> {
                    rendezvous.barrier("start", timeout);
                    print("BARRIER passed");
                }
                default -> throw new IllegalArgumentException("unknown scenario " + scenario);
            }
            print("DONE");
        } catch (RendezvousTimeoutException e) {
            print("TIMEOUT key=" + e.key() + " missing=" + e.missingRanks() + " | " + e.getMessage());
            exitCode = 3;
        } catch (RuntimeException e) {
            print("ERROR " + e.getMessage());
            exitCode = 4;
        }
        System.exit(exitCode);
    }

    private static void collectives(Rendezvous rendezvous, Duration timeout) {
        int rank = rendezvous.rank();
        print("GATHER " + join(rendezvous.allGather("ids", utf8("id" + rank), timeout)));
        byte[] fromRoot = rendezvous.broadcast("config", 1, rank == 1 ? utf8("config-of-rank-1") : null, timeout);
        print("BROADCAST " + new String(fromRoot, StandardCharsets.UTF_8));
        rendezvous.barrier("ready", timeout);
        print("BARRIER passed");
        print("GATHER " + join(rendezvous.allGather("ids", utf8("again" + rank), timeout)));
        HostLayout hosts = HostLayout.exchange(rendezvous, "hosts", timeout);
        print("HOSTS " + hosts.hostCount() + " " + hosts.ranksSharingHostWith(rank));
    }

    private static byte[] utf8(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    private static String join(byte[][] values) {
        List<String> parts = new ArrayList<>();
        for (byte[] value : values) {
            parts.add(new String(value, StandardCharsets.UTF_8));
        }
        return String.join(",", parts);
    }

    private static void print(String line) {
        System.out.println(line);
        System.out.flush();
    }
}
