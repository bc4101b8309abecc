/*
 * The native half of NativeSplit.java: per round, seventy() runs 7 units
 * of one loop and thirty() 3 units of the same loop, so the two take about
 * 70 % and 30 % of the CPU the library uses (tests/tests/native_frames.rs).
 * Each call is timed by the thread's CPU clock, and Java_NativeSplit_cpu
 * returns the two functions' CPU: the truth the profile is held against
 * (the nominal split moves by a few points on a loaded machine).
 * A unit is about half a millisecond: each call spans several sampling
 * intervals of 1 ms, so the split does not hang on where in a round the
 * samples fall. Both are kept out of line, and the loop's state is kept
 * in a register the compiler must assume is used, so neither is folded
 * away.
 */
#include <jni.h>
#include <time.h>

#define UNIT 400000

static volatile unsigned long sink;
static long long seventy_ns, thirty_ns;

/* One unit of work, the same in both callers. */
static inline __attribute__((always_inline)) unsigned long spin(unsigned long x, long units) {
    for (long i = 0; i < units * UNIT; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        __asm__ volatile("" : "+r"(x));
    }
    return x;
}

__attribute__((noinline)) unsigned long seventy(unsigned long x) {
    return spin(x, 7);
}

__attribute__((noinline)) unsigned long thirty(unsigned long x) {
    return spin(x, 3);
}

static long long cpu_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return (long long) now.tv_sec * 1000000000LL + now.tv_nsec;
}

JNIEXPORT jlong JNICALL Java_NativeSplit_work(JNIEnv *env, jclass class, jlong rounds) {
    (void) env;
    (void) class;
    unsigned long x = sink | 1;
    for (jlong round = 0; round < rounds; round++) {
        long long start = cpu_ns();
        x = seventy(x);
        long long middle = cpu_ns();
        x = thirty(x);
        long long end = cpu_ns();
        seventy_ns += middle - start;
        thirty_ns += end - middle;
    }
    sink = x;
    return (jlong) (x & 0xff);
}

/* seventy()'s CPU (which = 0) or thirty()'s (1) so far, in nanoseconds. */
JNIEXPORT jlong JNICALL Java_NativeSplit_cpu(JNIEnv *env, jclass class, jint which) {
    (void) env;
    (void) class;
    return which == 0 ? seventy_ns : thirty_ns;
}
