package dev.ar4j.internal.rendezvous;

import dev.ar4j.rendezvous.*;

import dev.ar4j.PeerLostException;
import java.time.Duration;

/**
 * One rank of {@link TcpRendezvousLivenessProcessTest}, run as its own JVM: joins the group at
 * {@code 127.0.0.1:port} (token from {@code AR4J_RDZV_TOKEN}, heartbeat from the system
 * properties), prints {@code JOINED}, then either waits in an all-gather ({@code gather}: prints
 * {@code WAITING}, then {@code LOST rank=<r> at=<epoch ms> | message} or {@code ERROR ...}) or
 * holds its connection without contributing ({@code hold}), to be killed or stopped by the test.
 *
 * <p>Arguments: {@code port rank worldSize mode}.
 */
public final class LivenessChild {

    private LivenessChild() {
    }

    public static void main(String[] args) throws InterruptedException {
        int port = Integer.parseInt(args[0]);
        int rank = Integer.parseInt(args[1]);
        int worldSize = Integer.parseInt(args[2]);
        String mode = args[3];
        int exitCode = 0;
        try (TcpRendezvous rendezvous = TcpRendezvous.builder().rank(rank).worldSize(worldSize).serve(false)
                .serverHost("127.0.0.1").serverPort(port).connectTimeout(Duration.ofSeconds(20))
                .closeLinger(Duration.ZERO).connect()) {
            print("JOINED");
            if (mode.equals("hold")) {
                Thread.sleep(Duration.ofSeconds(60));
            } else {
                print("WAITING");
                rendezvous.allGather("x", new byte[] {(byte) rank}, Duration.ofSeconds(30));
                print("GATHERED");
            }
        } catch (PeerLostException e) {
            print("LOST rank=" + e.peer() + " at=" + System.currentTimeMillis() + " | " + e.getMessage());
            exitCode = 5;
        } catch (RuntimeException e) {
            print("ERROR " + e);
            exitCode = 4;
        }
        System.exit(exitCode);
    }

    private static void print(String line) {
        System.out.println(line);
        System.out.flush();
    }
}
