/**
 * Ground truth for allocation sampling (tests/tests/alloc_truth.rs).
 *
 * One thread allocates a known split of bytes, in rounds of 104,000
 * bytes (100 units of 1,040 bytes, one byte[1024] with its 16-byte
 * header):
 *
 *   bigArrays                  60 units: 60 x byte[1024]       (1,040 bytes each)
 *   smallObjects               30 units: 1,950 x Small         (16 bytes each: header and an int)
 *   viaA -> longArrays          5 units: 10 x long[63]         (520 bytes each)
 *   viaB -> longArrays          5 units: 10 x long[63]
 *
 * so by construction 60 % of the bytes are byte[] allocated in
 * bigArrays, 30 % AllocTruth$Small in smallObjects and 10 % long[] in
 * longArrays, half of them called from viaA and half from viaB. (Sizes
 * as HotSpot lays objects out on 64-bit with compressed class pointers,
 * its default.) Every object is stored into a ring, so none is
 * optimised away; the program runs until it allocated the bytes asked
 * for, however long that takes on a loaded machine.
 *
 * Usage: java AllocTruth <megabytes>. Prints rounds=<n> at the end.
 */
public class AllocTruth {
    static final class Small {
        int value;

        Small(int value) {
            this.value = value;
        }
    }

    static final int ROUND_BYTES = 104_000;
    static final Object[] RING = new Object[1 << 12];
    static int next;

    static void keep(Object object) {
        RING[next++ & (RING.length - 1)] = object;
    }

    static void bigArrays() {
        for (int i = 0; i < 60; i++) {
            keep(new byte[1024]);
        }
    }

    static void smallObjects() {
        for (int i = 0; i < 1950; i++) {
            keep(new Small(i));
        }
    }

    static void longArrays() {
        for (int i = 0; i < 10; i++) {
            keep(new long[63]);
        }
    }

    static void viaA() {
        longArrays();
    }

    static void viaB() {
        longArrays();
    }

    public static void main(String[] args) {
        long bytes = Long.parseLong(args[0]) << 20;
        long rounds = bytes / ROUND_BYTES;
        for (long round = 0; round < rounds; round++) {
            bigArrays();
            smallObjects();
            viaA();
            viaB();
        }
        System.out.println("rounds=" + rounds);
    }
}
