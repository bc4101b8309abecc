/** The first (and for a while only) implementation of DeoptBase. */
public class DeoptImplA extends DeoptBase {
    @Override
    public long value(long i) {
        return i * 3 + 1;
    }
}
