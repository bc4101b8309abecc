/*
 * The native half of NativeSplit.java: per round, seventy() runs 7 units
 * of one loop and thirty() 3 units of the same loop, so the two take 70 %
 * and 30 % of the CPU the library uses (tests/tests/native_frames.rs).
 * A unit is about a millisecond: each call spans several sampling
 * intervals of 1 ms, so the split does not hang on where in a round the
 * samples fall. Both are kept out of line, and the loop's state is kept
 * in a register the compiler must assume is used, so neither is folded
 * away.
 */
#include <jni.h>

#define UNIT 400000

static volatile unsigned long sink;

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

JNIEXPORT jlong JNICALL Java_NativeSplit_work(JNIEnv *env, jclass class, jlong rounds) {
    (void) env;
    (void) class;
    unsigned long x = sink | 1;
    for (jlong round = 0; round < rounds; round++) {
        x = seventy(x);
        x = thirty(x);
    }
    sink = x;
    return (jlong) (x & 0xff);
}
