/**
 * The code of the class OddNames defines again under a name with control
 * characters in it (tests/tests/odd_names.rs): javac cannot write such a
 * name, so OddNames patches this class's bytes.
 */
public class OddTemplate {
    public static long spin(long x) {
        for (int i = 0; i < 2_000; i++) {
            x ^= x << 13; x ^= x >>> 7; x ^= x << 17;
        }
        return x;
    }
}
