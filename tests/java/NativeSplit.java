/**
 * A JNI program with a known split between two C functions
 * (tests/tests/native_frames.rs, tests/c/native_split.c).
 *
 * NativeSplit.work calls the library's Java_NativeSplit_work, which calls
 * seventy() and thirty() in turn: the same loop, 7 and 3 units of it per
 * round (about 7 and 3 ms), so 70 % and 30 % of the CPU spent in the two.
 * A fixed number of rounds, not a duration: the same CPU on a busy machine.
 * The library times each call by the thread's CPU clock: the truth.
 *
 * Usage: java NativeSplit <library path> <rounds>. Prints "rounds=N",
 * "seventy_ns=N", "thirty_ns=N" and "done" at the end.
 */
public class NativeSplit {
    static native long work(long rounds);

    /** seventy()'s CPU so far (which = 0) or thirty()'s (1), in ns. */
    static native long cpu(int which);

    public static void main(String[] args) {
        System.load(args[0]);
        long rounds = Long.parseLong(args[1]);
        long sink = 0;
        for (long round = 0; round < rounds; round++) {
            sink += work(1);
        }
        System.out.println("rounds=" + rounds + " sink=" + (sink & 1));
        System.out.println("seventy_ns=" + cpu(0));
        System.out.println("thirty_ns=" + cpu(1));
        System.out.println("done");
    }
}
