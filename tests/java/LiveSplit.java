import java.util.ArrayList;
import java.util.List;

/**
 * Ground truth for the live heap (tests/tests/live_heap.rs).
 *
 * One thread allocates in units of 11,192 bytes (with the arrays' 16-byte
 * headers) and keeps 1,032 of them:
 *
 *   LiveSplit.keepA     byte[600], kept       59.7 % of the bytes still live
 *   LiveSplit.keepB     byte[400], kept       40.3 %
 *   LiveSplit.garbage   10 x byte[1000]       ten times the kept bytes, none kept
 *
 * The arrays are small beside the sampling interval the test uses (64 KiB):
 * with arrays of 6,000 and 4,000 bytes, HotSpot's samples of them (and so
 * the allocation profile as well as the live heap) split 57/43.
 *
 * It runs until it kept about <megabytes> (the arrays without their
 * headers), then asks for three collections (so
 * that the garbage is found collected) and exits with everything it kept
 * still reachable from its static lists.
 *
 * Usage: java LiveSplit <megabytes> [--until-eof]. Prints kept=<objects>,
 * then done; with --until-eof it then waits for the end of stdin before it
 * exits (a test asks the agent's views meanwhile).
 */
public class LiveSplit {
    static final List<byte[]> keptA = new ArrayList<>();
    static final List<byte[]> keptB = new ArrayList<>();
    static volatile byte[] sink;

    static void keepA() {
        keptA.add(new byte[600]);
    }

    static void keepB() {
        keptB.add(new byte[400]);
    }

    static void garbage() {
        for (int i = 0; i < 10; i++) {
            sink = new byte[1000];
        }
    }

    public static void main(String[] args) throws Exception {
        long units = (Long.parseLong(args[0]) << 20) / 1000;
        for (long unit = 0; unit < units; unit++) {
            keepA();
            keepB();
            garbage();
        }
        System.out.println("kept=" + (keptA.size() + keptB.size()));
        for (int i = 0; i < 3; i++) {
            System.gc();
            Thread.sleep(300);
        }
        System.out.println("done");
        if (args.length > 1 && args[1].equals("--until-eof")) {
            while (System.in.read() >= 0) {
                // the test reads the views meanwhile
            }
        }
        System.out.println("kept at the end=" + (keptA.size() + keptB.size()));
    }
}
