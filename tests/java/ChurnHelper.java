import java.util.function.LongUnaryOperator;

/**
 * The class ClassChurn defines again and again in throwaway class loaders
 * (its bytes are read from the classpath). Its methods do a little work so
 * that samples land in them.
 */
public class ChurnHelper implements LongUnaryOperator {
    public long applyAsLong(long x) {
        return churnWork(x);
    }

    static long churnWork(long x) {
        for (int i = 0; i < 20_000; i++) {
            x ^= x << 13; x ^= x >>> 7; x ^= x << 17;
        }
        return x;
    }
}
