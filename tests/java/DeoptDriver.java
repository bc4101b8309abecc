/**
 * ExceptionStorm's hot loop, defined in each throwaway loader with its own
 * DeoptBase: run() calls DeoptBase.value in a loop that C2 compiles with
 * the call devirtualised (one implementation loaded), until stop().
 */
public class DeoptDriver {
    static volatile boolean stop;
    static volatile long iterations;
    static volatile DeoptBase offered;

    public static long run(Object first, long max) {
        DeoptBase b = (DeoptBase) first;
        long x = 0;
        for (long i = 0; i < max; i++) {
            x += b.value(i);
            if ((i & 0xFFFF) == 0) {
                iterations = i;
                if (stop) {
                    break;
                }
                DeoptBase next = offered;
                if (next != null) {
                    b = next;
                }
            }
        }
        return x;
    }

    /** Whether the loop ran long enough to be compiled by C2. */
    public static boolean warm() {
        return iterations > 3_000_000L;
    }

    public static void offer(Object next) {
        offered = (DeoptBase) next;
    }

    public static void stop() {
        stop = true;
    }
}
