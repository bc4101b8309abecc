//! Waits on `java.util.concurrent` locks: `ReentrantLock`,
//! `ReentrantReadWriteLock` and `Semaphore` park their waiting threads in
//! `LockSupport.park(blocker)`, which JVMTI has no event for. The agent
//! binds the native `jdk.internal.misc.Unsafe.park(ZJ)V` to [`park_hook`],
//! which reads the thread's `parkBlocker`, calls the VM's own entry, and
//! when the blocker is one of those locks records the park's wall time as
//! a lock wait (`lock_wait_ns`, one `lock_enters`) under the blocker's
//! class (`java.util.concurrent.locks.ReentrantLock$NonfairSync`), as the
//! monitor events are recorded. Other parks (a condition's await, a pool's
//! idle worker, a `CountDownLatch`) are waits for work, not contention,
//! and pass through untouched (async-profiler draws the same line).
//!
//! Binding it without a warning on every JVM from 11 on:
//!
//! 1. The VM's entry is found by replaying Unsafe's own registration: the
//!    JNI function table's `RegisterNatives` is swapped for
//!    [`register_natives_hook`] while `Unsafe.registerNatives()` runs; the
//!    hook keeps the address given for `park` and binds nothing.
//!    (NativeMethodBind cannot name the method: Unsafe binds its natives
//!    in the primordial phase, where JVMTI answers WRONG_PHASE.)
//! 2. The new entry is bound by `RegisterNatives` called from Java frames
//!    of the boot class loader (`pcct.ParkEntry`, defined from the bytes
//!    of `agent/java/pcct/ParkEntry.class`): HotSpot 15 and later print
//!    "Re-registering of platform native method" on the application's
//!    standard output when any other caller rebinds a native of the
//!    platform (JDK-8238460).
//!
//! The hook stays bound until the VM exits; after VMDeath, or with
//! sampling paused, it only calls the VM's entry. Rebinding the original
//! is avoided on purpose (async-profiler found a VM crash there,
//! JDK-8369219). Not covered: virtual threads park through
//! `VirtualThread.park`, which unmounts them instead of calling
//! `Unsafe.park`; and on attach the helper class may be defined already
//! by an earlier attach (then it is found and reused).

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};

use pcct_sampler::hotspot::classes::{class_symbol_here, MAX_NAME};

use crate::console::guard;
use crate::jvmti::{Jni, Jvmti};
use crate::jvmti_sys::*;

/// The VM's own `Unsafe.park` entry (0: not found).
static ORIGINAL_PARK: AtomicUsize = AtomicUsize::new(0);
/// The VM's `RegisterNatives`, while [`register_natives_hook`] stands in.
static ORIGINAL_REGISTER: AtomicUsize = AtomicUsize::new(0);
/// `jdk.internal.misc.Unsafe` (a global reference).
static UNSAFE_CLASS: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
/// `java.lang.Thread.parkBlocker`.
static PARK_BLOCKER: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
/// Whether the hook records (it always calls the VM's entry).
static RECORDING: AtomicBool = AtomicBool::new(false);

type ParkFn = unsafe extern "C" fn(*mut JNIEnv, jobject, jboolean, jlong);
type RegisterNativesFn = unsafe extern "C" fn(*mut JNIEnv, jclass, *const JNINativeMethod, jint) -> jint;

/// The helper class, as `javac --release 8` compiles `agent/java/pcct/ParkEntry.java`.
pub const PARK_ENTRY_CLASS: &[u8] = include_bytes!("../java/pcct/ParkEntry.class");

/// The blocker classes whose parks are lock waits (prefixes of their
/// internal names).
const LOCKS: [&[u8]; 2] = [b"java/util/concurrent/locks/Reentrant", b"java/util/concurrent/Semaphore"];

/// Whether a park on a blocker of this class (internal name,
/// `java/util/concurrent/Semaphore$NonfairSync`) is a lock wait.
pub fn is_lock_name(name: &[u8]) -> bool {
    LOCKS.iter().any(|prefix| name.starts_with(prefix))
}

/// Whether a park on a blocker of this class (JVM signature) is a lock wait.
pub fn is_lock(signature: &str) -> bool {
    signature.strip_prefix('L').is_some_and(|name| is_lock_name(name.as_bytes()))
}

/// Binds the hook (once, on a thread attached to the VM, in the live
/// phase); says why not when it cannot.
pub fn install(jvmti: Jvmti, jni: Jni) -> Result<(), String> {
    if ORIGINAL_PARK.load(Ordering::Acquire) != 0 {
        RECORDING.store(true, Ordering::Release);
        return Ok(());
    }
    let unsafe_class = jni.find_class(c"jdk/internal/misc/Unsafe").ok_or("no jdk.internal.misc.Unsafe")?;
    UNSAFE_CLASS.store(jni.new_global_ref(unsafe_class) as *mut c_void, Ordering::Release);
    jni.delete_local_ref(unsafe_class);
    find_original_park(jvmti, jni)?;
    let thread = jni.find_class(c"java/lang/Thread").ok_or("no java.lang.Thread")?;
    let blocker = jni.field(thread, c"parkBlocker", c"Ljava/lang/Object;");
    jni.delete_local_ref(thread);
    PARK_BLOCKER.store(blocker.ok_or("no Thread.parkBlocker")? as *mut c_void, Ordering::Release);
    bind(jni, park_hook as *const () as usize)?;
    RECORDING.store(true, Ordering::Release);
    Ok(())
}

/// From VMDeath on, the hook only calls the VM's entry.
pub fn stop() {
    RECORDING.store(false, Ordering::Release);
}

/// Step 1 of the module documentation.
fn find_original_park(jvmti: Jvmti, jni: Jni) -> Result<(), String> {
    let unsafe_class = UNSAFE_CLASS.load(Ordering::Acquire) as jclass;
    let register = jni
        .static_method(unsafe_class, c"registerNatives", c"()V")
        .ok_or("Unsafe has no registerNatives() on this JVM")?;
    let table = jvmti.jni_table().map_err(|error| error.to_string())?;
    // SAFETY: `table` is JVMTI's copy of the function table, valid until
    // freed below; swapping one slot and installing the copy is what
    // SetJNIFunctionTable is for. The original is put back before the
    // copy is freed, whatever the call did.
    unsafe {
        let original = (*table).RegisterNatives;
        ORIGINAL_REGISTER.store(original.map_or(0, |function| function as usize), Ordering::Release);
        (*table).RegisterNatives = Some(register_natives_hook);
        let swapped = jvmti.set_jni_table(table);
        if swapped.is_ok() {
            jni.call_static_void(unsafe_class, register, &[]);
        }
        (*table).RegisterNatives = original;
        let restored = jvmti.set_jni_table(table);
        jvmti.free_jni_table(table);
        swapped.and(restored).map_err(|error| error.to_string())?;
    }
    if ORIGINAL_PARK.load(Ordering::Acquire) == 0 {
        return Err("Unsafe.registerNatives() gave no park(ZJ)V".to_string());
    }
    Ok(())
}

/// Step 2 of the module documentation: `Unsafe.park` bound to `entry`.
fn bind(jni: Jni, entry: usize) -> Result<(), String> {
    let helper = match jni.define_boot_class(c"pcct/ParkEntry", PARK_ENTRY_CLASS) {
        Some(class) => class,
        None => jni.find_class(c"pcct/ParkEntry").ok_or("the helper class pcct.ParkEntry could not be defined")?,
    };
    let method = [JNINativeMethod {
        name: c"setEntry0".as_ptr() as *mut _,
        signature: c"(J)V".as_ptr() as *mut _,
        fnPtr: set_entry0 as *mut c_void,
    }];
    // SAFETY: the strings are static C strings and `set_entry0` has the C
    // signature of a static native `(J)V`.
    if !unsafe { jni.register_natives(helper, &method) } {
        return Err("could not bind pcct.ParkEntry.setEntry0".to_string());
    }
    let set_entry = jni.static_method(helper, c"setEntry", c"(J)V").ok_or("pcct.ParkEntry has no setEntry")?;
    let called = jni.call_static_void(helper, set_entry, &[jvalue { j: entry as jlong }]);
    jni.delete_local_ref(helper);
    if !called {
        return Err("pcct.ParkEntry.setEntry threw".to_string());
    }
    Ok(())
}

/// `pcct.ParkEntry.setEntry0(long)`: binds `Unsafe.park` to `entry`
/// (called from `setEntry`, so that the VM sees boot-loader frames).
unsafe extern "C" fn set_entry0(env: *mut JNIEnv, _class: jclass, entry: jlong) {
    guard("pcct.ParkEntry.setEntry0", (), || {
        let unsafe_class = UNSAFE_CLASS.load(Ordering::Acquire) as jclass;
        let method = [JNINativeMethod {
            name: c"park".as_ptr() as *mut _,
            signature: c"(ZJ)V".as_ptr() as *mut _,
            fnPtr: entry as usize as *mut c_void,
        }];
        // SAFETY: a native method's JNIEnv, used on its own thread; the
        // entry is `park_hook` or the VM's own, both `(ZJ)V` natives.
        unsafe {
            Jni::from_raw(env).register_natives(unsafe_class, &method);
        }
    })
}

/// Stands in for JNI's `RegisterNatives` during step 1: keeps Unsafe's
/// `park` entry and binds nothing of Unsafe's; passes any other class on.
unsafe extern "C" fn register_natives_hook(
    env: *mut JNIEnv,
    class: jclass,
    methods: *const JNINativeMethod,
    count: jint,
) -> jint {
    // SAFETY: the VM's JNIEnv of the calling thread and its arguments.
    let jni = unsafe { Jni::from_raw(env) };
    let unsafe_class = UNSAFE_CLASS.load(Ordering::Acquire) as jobject;
    if !jni.is_same_object(class, unsafe_class) {
        let original = ORIGINAL_REGISTER.load(Ordering::Acquire);
        if original == 0 {
            return JNI_ERR;
        }
        // SAFETY: the VM's RegisterNatives, kept before the swap.
        let original: RegisterNativesFn = unsafe { std::mem::transmute::<usize, RegisterNativesFn>(original) };
        // SAFETY: the caller's arguments, passed on unchanged.
        return unsafe { original(env, class, methods, count) };
    }
    // SAFETY: the VM passes `count` valid methods with C strings.
    let methods = unsafe { std::slice::from_raw_parts(methods, count.max(0) as usize) };
    for method in methods {
        // SAFETY: NUL-terminated strings of the VM's method table.
        let (name, signature) = unsafe {
            (std::ffi::CStr::from_ptr(method.name).to_bytes(), std::ffi::CStr::from_ptr(method.signature).to_bytes())
        };
        if name == b"park" && signature == b"(ZJ)V" {
            ORIGINAL_PARK.store(method.fnPtr as usize, Ordering::Release);
        }
    }
    JNI_OK
}

/// `Unsafe.park(boolean, long)`, bound by [`install`]: the VM's entry,
/// timed when the blocker is a lock (see the module documentation).
unsafe extern "C" fn park_hook(env: *mut JNIEnv, receiver: jobject, absolute: jboolean, time: jlong) {
    let original = ORIGINAL_PARK.load(Ordering::Acquire);
    // SAFETY: bound only after the VM's entry was found (never 0 here);
    // it is the VM's `Unsafe_Park`, of this very signature.
    let original: ParkFn = unsafe { std::mem::transmute::<usize, ParkFn>(original) };
    let lock = if RECORDING.load(Ordering::Acquire) {
        // SAFETY: this native call's JNIEnv, used on its own thread.
        guard("Unsafe.park", None, || lock_blocker(unsafe { Jni::from_raw(env) }))
    } else {
        None
    };
    let started = pcct_sampler::timer::now_ns();
    // SAFETY: the arguments this native call received, passed on.
    unsafe { original(env, receiver, absolute, time) };
    if let Some(class) = lock {
        let waited = pcct_sampler::timer::now_ns().saturating_sub(started);
        guard("Unsafe.park", (), || {
            // SAFETY: this native call's JNIEnv, used on its own thread.
            let jni = unsafe { Jni::from_raw(env) };
            if let Some(agent) = crate::agent::live() {
                agent.lock_parked(jni, class, waited);
            }
            jni.delete_local_ref(class);
        });
    }
}

/// The class of the current thread's park blocker (a local reference),
/// when it is one of the locks; `None` for any other park.
fn lock_blocker(jni: Jni) -> Option<jclass> {
    let agent = crate::agent::live()?;
    let started = pcct_sampler::timer::now_ns();
    let lock = blocker_if_lock(agent, jni);
    agent.park_checked(pcct_sampler::timer::now_ns().saturating_sub(started));
    lock
}

/// [`lock_blocker`]'s reading of the blocker and its class.
fn blocker_if_lock(agent: &crate::agent::Agent, jni: Jni) -> Option<jclass> {
    let field = PARK_BLOCKER.load(Ordering::Acquire) as jfieldID;
    let thread = agent.jvmti().current_thread().ok()?;
    let blocker = jni.object_field(thread, field);
    jni.delete_local_ref(thread);
    if blocker.is_null() {
        return None;
    }
    let class = jni.object_class(blocker);
    jni.delete_local_ref(blocker);
    // The class's name from HotSpot's structures, else from JVMTI: most
    // parks are not on locks, and this runs for each of them.
    let mut buffer = [0u8; MAX_NAME];
    let lock = match class_symbol_here(class as usize, &mut buffer) {
        Some(symbol) => is_lock_name(symbol.bytes),
        None => is_lock(&agent.jvmti().class_signature(class).unwrap_or_default()),
    };
    if lock {
        return Some(class);
    }
    jni.delete_local_ref(class);
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_locks_parks_are_lock_waits() {
        for lock in [
            "Ljava/util/concurrent/locks/ReentrantLock$NonfairSync;",
            "Ljava/util/concurrent/locks/ReentrantLock$FairSync;",
            "Ljava/util/concurrent/locks/ReentrantReadWriteLock$NonfairSync;",
            "Ljava/util/concurrent/Semaphore$NonfairSync;",
        ] {
            assert!(is_lock(lock), "{lock}");
            let name = lock.trim_start_matches('L').trim_end_matches(';');
            assert!(is_lock_name(name.as_bytes()), "{name}");
        }
        for other in [
            "Ljava/util/concurrent/locks/AbstractQueuedSynchronizer$ConditionObject;",
            "Ljava/util/concurrent/CountDownLatch$Sync;",
            "Ljava/util/concurrent/ForkJoinPool;",
            "Ljava/util/concurrent/SynchronousQueue$TransferStack;",
        ] {
            assert!(!is_lock(other), "{other}");
            let name = other.trim_start_matches('L').trim_end_matches(';');
            assert!(!is_lock_name(name.as_bytes()), "{name}");
        }
    }

    #[test]
    fn the_helper_class_is_a_class_file_of_the_boot_helper() {
        assert_eq!(&PARK_ENTRY_CLASS[..4], &[0xca, 0xfe, 0xba, 0xbe]);
        let text = String::from_utf8_lossy(PARK_ENTRY_CLASS);
        assert!(text.contains("pcct/ParkEntry") && text.contains("setEntry0"));
    }
}
