// A program whose methods run as known kinds of code, for
// tests/tests/frame_kinds.rs and benches/jvm/frame_kinds.py. Run it with
//
//   -XX:CompileCommand=quiet
//   -XX:CompileCommand=exclude,FrameKinds::drive
//   -XX:CompileCommand=exclude,FrameKinds::interpreted
//   -XX:+UnlockDiagnosticVMOptions -XX:CompilerDirectivesFile=<file with
//       [{ match: "FrameKinds::c1Only", c2: { Exclude: true } }]>
//
// and its methods are, once warm:
//
//   drive        interpreted (excluded), calls the three below in turn: _[0]
//   interpreted  interpreted (excluded), loops: _[0]
//   c1Only       C1 code (C2 may not compile it), loops: _[1]
//   optimized    C2 code, loops calling inlinedLeaf: _[j]
//   inlinedLeaf  inlined into optimized's C2 code: _[i]
//
// drive is interpreted, so it inlines nothing and nothing is inlined into
// it. Usage: java FrameKinds <seconds>

public class FrameKinds {
    static final long M = 6364136223846793005L;
    static volatile long sink;

    static long interpreted(long x) {
        for (int i = 0; i < 20_000; i++) {
            x = x * M + i;
        }
        return x;
    }

    static long c1Only(long x) {
        for (int i = 0; i < 400_000; i++) {
            x = x * M + (x >>> 17) + i;
        }
        return x;
    }

    static long inlinedLeaf(long x, int i) {
        return x * M + (x >>> 13) + i;
    }

    static long optimized(long x) {
        for (int i = 0; i < 600_000; i++) {
            x = inlinedLeaf(x, i);
        }
        return x;
    }

    static long drive(long deadline) {
        long x = 1;
        while (System.nanoTime() < deadline) {
            x = interpreted(x);
            x = c1Only(x);
            x = optimized(x);
        }
        return x;
    }

    public static void main(String[] args) {
        long seconds = Long.parseLong(args[0]);
        sink = drive(System.nanoTime() + seconds * 1_000_000_000L);
    }
}
