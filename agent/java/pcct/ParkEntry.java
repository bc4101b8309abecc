package pcct;

/**
 * The agent defines this class in the boot class loader (its bytes are in
 * agent/src/parks.rs) to rebind the native entry of
 * jdk.internal.misc.Unsafe.park from Java frames of the boot loader:
 * HotSpot warns of a platform native method rebound from any other caller
 * (JDK-8238460), and two such frames are what it looks at. The agent
 * calls setEntry, whose native setEntry0 (the agent's) calls
 * RegisterNatives.
 *
 * Compiled with: javac --release 8 -d <dir> agent/java/pcct/ParkEntry.java
 * (tests/tests/parks.rs checks that the bytes in the agent are these).
 */
final class ParkEntry {
    private ParkEntry() {
    }

    static void setEntry(long entry) {
        setEntry0(entry);
    }

    private static native void setEntry0(long entry);
}
