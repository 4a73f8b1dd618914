package dev.ar4j.internal.rendezvous;

import dev.ar4j.rendezvous.LaunchEnvironment;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.net.UnknownHostException;
import java.util.Arrays;

/**
 * Which local address the serving rank of a multi-host group binds: the master address when it is
 * one of this host's interfaces, else all interfaces (see {@link TcpRendezvous#connect}).
 */
final class ServingBindAddress {

    /** Logs under {@link TcpRendezvous}'s name, whose choice this is. */
    private static final System.Logger LOG = System.getLogger(TcpRendezvous.class.getName());

    private ServingBindAddress() {
    }

    static InetAddress choose(LaunchEnvironment environment) {
        InetAddress wildcard = new InetSocketAddress(0).getAddress();
        String master = environment.masterAddr();
        InetAddress[] resolved;
        try {
            resolved = InetAddress.getAllByName(master);
        } catch (UnknownHostException e) {
            LOG.log(System.Logger.Level.WARNING, "master address '" + master + "' does not resolve on rank 0;"
                    + " serving the rendezvous on all interfaces");
            return wildcard;
        }
        if (Arrays.stream(resolved).allMatch(InetAddress::isLoopbackAddress)) {
            if (environment.isSingleHost()) {
                return resolved[0];
            }
            LOG.log(System.Logger.Level.WARNING, "master address '" + master + "' resolves to loopback "
                    + resolved[0].getHostAddress() + " on rank 0, but the ranks span hosts;"
                    + " serving the rendezvous on all interfaces");
            return wildcard;
        }
        for (InetAddress address : resolved) {
            try {
                if (NetworkInterface.getByInetAddress(address) != null) {
                    return address;
                }
            } catch (SocketException e) {
                LOG.log(System.Logger.Level.DEBUG, () -> "cannot tell whether " + address + " is local: " + e);
            }
        }
        LOG.log(System.Logger.Level.INFO, "master address '" + master + "' is not an address of rank 0's"
                + " interfaces; serving the rendezvous on all interfaces");
        return wildcard;
    }
}
