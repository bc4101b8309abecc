/**
 * Ground truth for allocation profiles at the default options
 * (tests/tests/alloc_split.rs): AllocTruth's rounds, with its byte[]
 * allocated at the bottom of a 121-frame recursion.
 *
 * One thread allocates in rounds of 104,000 bytes (AllocTruth.java):
 *
 *   deep (121 frames) -> AllocTruth.bigArrays   60 % of the bytes: byte[1024]
 *   AllocTruth.smallObjects                     30 %: AllocTruth$Small
 *   AllocTruth.viaA -> AllocTruth.longArrays     5 %: long[63]
 *   AllocTruth.viaB -> AllocTruth.longArrays     5 %: long[63]
 *
 * It runs for <seconds> and at least until it allocated <megabytes> (a
 * loaded machine runs it slower: the bytes keep the number of samples).
 *
 * Usage: java AllocSplit <seconds> <megabytes>. Prints rounds=<n> and
 * seconds=<s> at the end.
 */
public class AllocSplit {
    static final int DEPTH = 120;

    static int deep(int depth) {
        if (depth == 0) {
            AllocTruth.bigArrays();
            return 0;
        }
        return deep(depth - 1) + 1;
    }

    public static void main(String[] args) {
        long durationNs = (long) (Double.parseDouble(args[0]) * 1e9);
        long minRounds = (Long.parseLong(args[1]) << 20) / AllocTruth.ROUND_BYTES;
        long start = System.nanoTime();
        long rounds = 0;
        int sink = 0;
        while (rounds < minRounds || System.nanoTime() - start < durationNs) {
            for (int i = 0; i < 16; i++) {
                sink += deep(DEPTH);
                AllocTruth.smallObjects();
                AllocTruth.viaA();
                AllocTruth.viaB();
            }
            rounds += 16;
        }
        System.out.println("rounds=" + rounds);
        System.out.println("seconds=" + (System.nanoTime() - start) / 1e9);
        System.out.println("sink=" + sink);
    }
}
