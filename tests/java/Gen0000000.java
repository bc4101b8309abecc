import java.util.function.LongUnaryOperator;

/**
 * The template of the classes BranchyContexts generates
 * (tests/tests/stress_memory.rs): each copy has the digits in its name and
 * in its method's name replaced by a counter, and is defined in a
 * throwaway class loader. Public, so a copy in another loader can be made.
 */
public class Gen0000000 implements LongUnaryOperator {
    public long applyAsLong(long x) {
        return work0000000(x);
    }

    static long work0000000(long x) {
        for (int i = 0; i < 200; i++) {
            x ^= x << 13; x ^= x >>> 7; x ^= x << 17;
        }
        return x;
    }
}
