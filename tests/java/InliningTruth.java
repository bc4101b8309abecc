// Programs with a known split of their CPU between small methods the JIT
// inlines, for benches/jvm/inlining.py and tests/tests/inlined_truth.rs.
// The truth of each is the same program with those methods not inlined
// (-XX:CompileCommand=dontinline); a profiler run without that option shows
// how HotSpot's debug information attributes the merged code.
//
//   loops      three leaves with counted loops of 600, 300 and 100 iterations (60/30/10)
//   straight   three leaves of 60, 30 and 10 straight-line multiply-adds (60/30/10)
//   callout    a leaf of 400 loop iterations, then one that calls out and loops 100 (80/20;
//              long enough that the calls around them weigh under a point)
//
// Usage: java InliningTruth <program> <seconds of CPU>

public class InliningTruth {
    static final long M = 6364136223846793005L;
    static volatile long sink;
    static long calls;

    static long loopsA(long x) { for (int i = 0; i < 600; i++) x = x * M + i; return x; }
    static long loopsB(long x) { for (int i = 0; i < 300; i++) x = x * M + i; return x; }
    static long loopsC(long x) { for (int i = 0; i < 100; i++) x = x * M + i; return x; }

    static long straightA(long x) {
        x = x * M + 1L;
        x = x * M + 3L;
        x = x * M + 5L;
        x = x * M + 7L;
        x = x * M + 9L;
        x = x * M + 11L;
        x = x * M + 13L;
        x = x * M + 15L;
        x = x * M + 17L;
        x = x * M + 19L;
        x = x * M + 21L;
        x = x * M + 23L;
        x = x * M + 25L;
        x = x * M + 27L;
        x = x * M + 29L;
        x = x * M + 31L;
        x = x * M + 33L;
        x = x * M + 35L;
        x = x * M + 37L;
        x = x * M + 39L;
        x = x * M + 41L;
        x = x * M + 43L;
        x = x * M + 45L;
        x = x * M + 47L;
        x = x * M + 49L;
        x = x * M + 51L;
        x = x * M + 53L;
        x = x * M + 55L;
        x = x * M + 57L;
        x = x * M + 59L;
        x = x * M + 61L;
        x = x * M + 63L;
        x = x * M + 65L;
        x = x * M + 67L;
        x = x * M + 69L;
        x = x * M + 71L;
        x = x * M + 73L;
        x = x * M + 75L;
        x = x * M + 77L;
        x = x * M + 79L;
        x = x * M + 81L;
        x = x * M + 83L;
        x = x * M + 85L;
        x = x * M + 87L;
        x = x * M + 89L;
        x = x * M + 91L;
        x = x * M + 93L;
        x = x * M + 95L;
        x = x * M + 97L;
        x = x * M + 99L;
        x = x * M + 101L;
        x = x * M + 103L;
        x = x * M + 105L;
        x = x * M + 107L;
        x = x * M + 109L;
        x = x * M + 111L;
        x = x * M + 113L;
        x = x * M + 115L;
        x = x * M + 117L;
        x = x * M + 119L;
        return x;
    }

    static long straightB(long x) {
        x = x * M + 1L;
        x = x * M + 3L;
        x = x * M + 5L;
        x = x * M + 7L;
        x = x * M + 9L;
        x = x * M + 11L;
        x = x * M + 13L;
        x = x * M + 15L;
        x = x * M + 17L;
        x = x * M + 19L;
        x = x * M + 21L;
        x = x * M + 23L;
        x = x * M + 25L;
        x = x * M + 27L;
        x = x * M + 29L;
        x = x * M + 31L;
        x = x * M + 33L;
        x = x * M + 35L;
        x = x * M + 37L;
        x = x * M + 39L;
        x = x * M + 41L;
        x = x * M + 43L;
        x = x * M + 45L;
        x = x * M + 47L;
        x = x * M + 49L;
        x = x * M + 51L;
        x = x * M + 53L;
        x = x * M + 55L;
        x = x * M + 57L;
        x = x * M + 59L;
        return x;
    }

    static long straightC(long x) {
        x = x * M + 1L;
        x = x * M + 3L;
        x = x * M + 5L;
        x = x * M + 7L;
        x = x * M + 9L;
        x = x * M + 11L;
        x = x * M + 13L;
        x = x * M + 15L;
        x = x * M + 17L;
        x = x * M + 19L;
        return x;
    }

    static void count() { calls++; }
    static long calloutA(long x) { for (int i = 0; i < 400; i++) x = (x ^ (x >>> 7)) * M + i; return x; }
    static long calloutB(long x) { count(); for (int i = 0; i < 100; i++) x = (x ^ (x >>> 7)) * M + i; return x; }

    static long loops(long x) { return loopsC(loopsB(loopsA(x))); }
    static long straight(long x) { return straightC(straightB(straightA(x))); }
    static long callout(long x) { return calloutB(calloutA(x)); }

    public static void main(String[] args) {
        String program = args[0];
        // Seconds of this thread's CPU, not of wall time: a loaded machine
        // makes the run longer, not the profile smaller. The CPU clock (a
        // system call) is read once per 10 ms of wall time, not per batch:
        // read per batch it took 7-10 % of the samples, a share that moved
        // by 3 points between two runs and moved the leaves' with it.
        java.lang.management.ThreadMXBean clock = java.lang.management.ManagementFactory.getThreadMXBean();
        long end = clock.getCurrentThreadCpuTime() + Long.parseLong(args[1]) * 1_000_000_000L;
        long x = 1;
        long nextRead = System.nanoTime();
        while (true) {
            long now = System.nanoTime();
            if (now - nextRead >= 0) {
                if (clock.getCurrentThreadCpuTime() >= end) {
                    break;
                }
                nextRead = now + 10_000_000L;
            }
            for (int k = 0; k < 1000; k++) {
                switch (program) {
                    case "loops": x = loops(x); break;
                    case "straight": x = straight(x); break;
                    case "callout": x = callout(x); break;
                    default: throw new IllegalArgumentException("program: loops, straight or callout");
                }
            }
        }
        sink = x + calls;
    }
}
