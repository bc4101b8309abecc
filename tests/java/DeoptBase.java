/** The root of ExceptionStorm's throwaway class hierarchy: one abstract call. */
public abstract class DeoptBase {
    public abstract long value(long i);
}
