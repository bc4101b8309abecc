import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;

/**
 * Names that a plain UTF-8 decoder and line-oriented reports got wrong
 * (tests/tests/odd_names.rs):
 * - a method named with letters above U+FFFF, which class files write in
 *   modified UTF-8 as surrogate pairs (decoded as UTF-8, replacement
 *   characters);
 * - a class whose name holds a newline, a tab, U+0001 and a carriage return,
 *   all legal in class files: OddTemplate's bytes with its name replaced by
 *   one of the same length, defined by a class loader of its own.
 * Both run in turns for the given time.
 *
 * Usage: java OddNames <seconds>. Prints "done" at the end.
 */
public class OddNames {
    static final String TEMPLATE = "OddTemplate";
    static final String ODD = "Odd\n\t\u0001\rxate";
    static volatile long sink;

    static long 𝔤𝔬(long x) {
        for (int i = 0; i < 2_000; i++) {
            x ^= x << 13; x ^= x >>> 7; x ^= x << 17;
        }
        return x;
    }

    static final class Definer extends ClassLoader {
        Definer() {
            super(OddNames.class.getClassLoader());
        }

        Class<?> define(byte[] bytes) {
            return defineClass(null, bytes, 0, bytes.length);
        }
    }

    /** `bytes` with every `from` replaced by `to` (same length). */
    static byte[] replaced(byte[] bytes, byte[] from, byte[] to) {
        byte[] out = bytes.clone();
        for (int at = 0; at + from.length <= out.length; at++) {
            boolean match = true;
            for (int i = 0; i < from.length && match; i++) {
                match = out[at + i] == from[i];
            }
            if (match) {
                System.arraycopy(to, 0, out, at, to.length);
            }
        }
        return out;
    }

    public static void main(String[] args) throws Exception {
        long seconds = Long.parseLong(args[0]);
        byte[] template;
        try (var in = OddNames.class.getResourceAsStream("/" + TEMPLATE + ".class")) {
            template = in.readAllBytes();
        }
        byte[] bytes = replaced(template, TEMPLATE.getBytes(StandardCharsets.US_ASCII),
                ODD.getBytes(StandardCharsets.US_ASCII));
        Class<?> odd = new Definer().define(bytes);
        if (!odd.getName().equals(ODD)) {
            throw new AssertionError("defined " + odd.getName());
        }
        Method spin = odd.getMethod("spin", long.class);
        long end = System.nanoTime() + seconds * 1_000_000_000L;
        long x = 1;
        while (System.nanoTime() < end) {
            x = 𝔤𝔬(x);
            x = (long) spin.invoke(null, x);
        }
        sink = x;
        System.out.println("done");
    }
}
