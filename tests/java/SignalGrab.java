import sun.misc.Signal;

/**
 * Takes over SIGPROF at run time (tests/tests/stress_signals.rs), as an
 * application or library may: a busy thread runs for <seconds>; after
 * <grab seconds> the main thread installs a Java handler for SIGPROF with
 * sun.misc.Signal, which replaces whatever handler was there (pcct's).
 *
 * Usage: java SignalGrab <seconds> <grab seconds>. Prints "grabbed" after
 * taking the signal, "settled=<n>" (SIGPROFs its handler saw by half-way
 * from the grab to the end), "prof=<n>" (all it saw) and "done".
 */
public class SignalGrab {
    static volatile long sink;
    static volatile long received;

    static long spin(long durationNs) {
        long start = System.nanoTime();
        long x = 1;
        while (System.nanoTime() - start < durationNs) {
            for (int i = 0; i < 10_000; i++) {
                x ^= x << 13; x ^= x >>> 7; x ^= x << 17;
            }
        }
        return x;
    }

    public static void main(String[] args) throws Exception {
        double seconds = Double.parseDouble(args[0]);
        double grabAfter = Double.parseDouble(args[1]);
        Thread busy = new Thread(() -> sink = spin((long) (seconds * 1e9)), "busy");
        busy.start();
        Thread.sleep((long) (grabAfter * 1000));
        Signal.handle(new Signal("PROF"), signal -> received++);
        System.out.println("grabbed");
        System.out.flush();
        Thread.sleep((long) ((seconds - grabAfter) * 500));
        System.out.println("settled=" + received);
        busy.join();
        System.out.println("prof=" + received);
        System.out.println("done");
    }
}
