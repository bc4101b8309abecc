// What the sampler's system calls cost on this machine: reading another
// thread's CPU clock, signalling a busy thread on another CPU (tgkill: an
// inter-processor interrupt, expensive on a VM), and one absolute 1 ms
// sleep-and-wake. Build and run: benches/micro/run.sh
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static volatile int stop;
static volatile pid_t busy_tid, idle_tid;
static volatile long handled;

static void on_signal(int s, siginfo_t *i, void *u) { handled++; }
static void *busy(void *a) { busy_tid = syscall(SYS_gettid); while (!stop) {} return 0; }
static void *idle(void *a) { idle_tid = syscall(SYS_gettid); while (!stop) usleep(100000); return 0; }
static long now(clockid_t c) { struct timespec t; clock_gettime(c, &t); return t.tv_sec * 1000000000L + t.tv_nsec; }

int main(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGPROF, &sa, 0);
    pthread_t a, b;
    pthread_create(&a, 0, busy, 0);
    pthread_create(&b, 0, idle, 0);
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGPROF);
    pthread_sigmask(SIG_BLOCK, &mask, 0);
    usleep(200000);
    clockid_t busy_clock = ((~busy_tid) << 3) | 6, idle_clock = ((~idle_tid) << 3) | 6;
    struct timespec t;
    const int n = 200000;
    long s = now(CLOCK_MONOTONIC);
    for (int i = 0; i < n; i++) clock_gettime(idle_clock, &t);
    printf("read an idle thread's CPU clock:   %6.0f ns\n", (double)(now(CLOCK_MONOTONIC) - s) / n);
    s = now(CLOCK_MONOTONIC);
    for (int i = 0; i < n; i++) clock_gettime(busy_clock, &t);
    printf("read a running thread's CPU clock: %6.0f ns\n", (double)(now(CLOCK_MONOTONIC) - s) / n);
    s = now(CLOCK_MONOTONIC);
    for (int i = 0; i < n; i++) syscall(SYS_gettid);
    printf("gettid:                            %6.0f ns\n", (double)(now(CLOCK_MONOTONIC) - s) / n);
    const int signals = 20000;
    long total = 0;
    for (int i = 0; i < signals; i++) {
        long start = now(CLOCK_MONOTONIC);
        syscall(SYS_tgkill, getpid(), busy_tid, SIGPROF);
        total += now(CLOCK_MONOTONIC) - start;
        struct timespec gap = {0, 100000};
        nanosleep(&gap, 0);
    }
    printf("tgkill a busy thread (sender):     %6.0f ns  (%ld handled)\n", (double)total / signals, handled);
    const int sleeps = 2000;
    long cpu_before = now(CLOCK_THREAD_CPUTIME_ID), late = 0;
    for (int i = 0; i < sleeps; i++) {
        struct timespec deadline;
        clock_gettime(CLOCK_MONOTONIC, &deadline);
        deadline.tv_nsec += 1000000;
        if (deadline.tv_nsec >= 1000000000) { deadline.tv_sec++; deadline.tv_nsec -= 1000000000; }
        long target = deadline.tv_sec * 1000000000L + deadline.tv_nsec;
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, 0);
        late += now(CLOCK_MONOTONIC) - target;
    }
    printf("1 ms absolute sleep: CPU per wake  %6.0f ns, lateness %6.0f ns\n",
           (double)(now(CLOCK_THREAD_CPUTIME_ID) - cpu_before) / sleeps, (double)late / sleeps);
    stop = 1;
    return 0;
}
