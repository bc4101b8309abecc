/** Loaded late: invalidates code that devirtualised DeoptBase.value to DeoptImplA. */
public class DeoptImplB extends DeoptBase {
    @Override
    public long value(long i) {
        return (i ^ 0x5DEECE66DL) >>> 3;
    }
}
