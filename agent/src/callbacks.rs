//! JVMTI event callbacks and the sampler thread's entry point. Every
//! function here is called by the VM through a C ABI and wraps its body in
//! [`guard`], so a panic becomes one line on stderr, never an unwind into
//! the VM.

use std::ffi::c_void;
use std::sync::atomic::Ordering;

use pcct_sampler::slots::{current_tid, ThreadOrigin};

use crate::agent::{self, complain, Arrival};
use crate::jvmti::{Jni, Jvmti, JvmtiResult};
use crate::jvmti_sys::*;

/// Runs `body`, turning a panic into a message and `fallback`.
pub fn guard<T>(what: &str, fallback: T, body: impl FnOnce() -> T) -> T {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
        Ok(value) => value,
        Err(panic) => {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string());
            complain(&format!("internal error in {what}: {message} (the JVM continues)"));
            fallback
        }
    }
}

fn live() -> Option<&'static agent::Agent> {
    agent::get().filter(|agent| !agent.dying.load(Ordering::Acquire))
}

/// Sets the callbacks and enables the events the agent needs (and
/// CompiledMethodLoad with `compiled`).
pub fn install(jvmti: Jvmti, compiled: bool) -> JvmtiResult<()> {
    let callbacks = jvmtiEventCallbacks {
        VMInit: Some(on_vm_init),
        VMDeath: Some(on_vm_death),
        ThreadStart: Some(on_thread_start),
        ThreadEnd: Some(on_thread_end),
        ClassLoad: Some(on_class_load),
        ClassPrepare: Some(on_class_prepare),
        CompiledMethodLoad: Some(on_compiled_method_load),
        ..Default::default()
    };
    jvmti.set_callbacks(&callbacks)?;
    for event in [
        jvmtiEvent::JVMTI_EVENT_VM_INIT,
        jvmtiEvent::JVMTI_EVENT_VM_DEATH,
        jvmtiEvent::JVMTI_EVENT_THREAD_START,
        jvmtiEvent::JVMTI_EVENT_THREAD_END,
        // AsyncGetCallTrace returns ticks_no_class_load (-1) unless an agent
        // enabled ClassLoad events.
        jvmtiEvent::JVMTI_EVENT_CLASS_LOAD,
        jvmtiEvent::JVMTI_EVENT_CLASS_PREPARE,
    ] {
        jvmti.enable(event)?;
    }
    if compiled {
        jvmti.enable(jvmtiEvent::JVMTI_EVENT_COMPILED_METHOD_LOAD)?;
    }
    Ok(())
}

unsafe extern "C" fn on_vm_init(_jvmti: *mut jvmtiEnv, jni: *mut JNIEnv, _thread: jthread) {
    guard("VMInit", (), || {
        let Some(agent) = live() else { return };
        // The main thread gets no ThreadStart event: register it here.
        agent.register_thread(current_tid(), jni, ThreadOrigin::Started);
        agent.start(Jni(jni));
    })
}

unsafe extern "C" fn on_vm_death(_jvmti: *mut jvmtiEnv, _jni: *mut JNIEnv) {
    guard("VMDeath", (), || {
        if let Some(agent) = agent::get() {
            agent.shut_down();
        }
    })
}

unsafe extern "C" fn on_thread_start(_jvmti: *mut jvmtiEnv, jni: *mut JNIEnv, thread: jthread) {
    guard("ThreadStart", (), || {
        let Some(agent) = live() else { return };
        let sampler = agent.sampler_thread.load(Ordering::Acquire);
        if !sampler.is_null() && Jni(jni).is_same_object(thread, sampler as jobject) {
            return;
        }
        agent.register_thread(current_tid(), jni, ThreadOrigin::Started);
    })
}

unsafe extern "C" fn on_thread_end(_jvmti: *mut jvmtiEnv, _jni: *mut JNIEnv, _thread: jthread) {
    guard("ThreadEnd", (), || {
        if let Some(agent) = agent::get() {
            agent.registry.retire(current_tid());
        }
    })
}

unsafe extern "C" fn on_compiled_method_load(
    _jvmti: *mut jvmtiEnv,
    _method: jmethodID,
    _code_size: jint,
    _code_addr: *const c_void,
    _map_length: jint,
    _map: *const jvmtiAddrLocationMap,
    _compile_info: *const c_void,
) {
    guard("CompiledMethodLoad", (), || {
        if let Some(agent) = live() {
            pcct_sampler::counters::Counters::add(&agent.shared.counters.methods_compiled, 1);
        }
    })
}

unsafe extern "C" fn on_class_load(_jvmti: *mut jvmtiEnv, _jni: *mut JNIEnv, _thread: jthread, _class: jclass) {}

unsafe extern "C" fn on_class_prepare(jvmti: *mut jvmtiEnv, _jni: *mut JNIEnv, _thread: jthread, class: jclass) {
    guard("ClassPrepare", (), || {
        // AsyncGetCallTrace can only report methods whose jmethodID exists.
        let _ = Jvmti(jvmti).create_method_ids(class);
    })
}

/// Prepares pcct's own HotSpot stack walker on the sampler thread (a Java
/// thread: its JNIEnv and `JavaThread` name every other thread's). Without
/// it (not HotSpot, an unknown layout) AsyncGetCallTrace walks alone.
fn prepare_walker(agent: &agent::Agent, jni: Jni) {
    if agent.options.walker == crate::options::StackWalker::Agct {
        agent.shared.vm.lock().walker = "AsyncGetCallTrace alone (walker=agct)".to_string();
        return;
    }
    let java_thread = agent.jvmti.current_thread().ok().and_then(|thread| {
        let address = jni.java_thread_of(thread);
        jni.delete_local_ref(thread);
        address
    });
    match pcct_sampler::hotspot::init(jni.0 as usize, java_thread.unwrap_or(0)) {
        Ok(vm) => agent::say(&format!(
            "stack walker: pcct's own (HotSpot {}), AsyncGetCallTrace as the fallback",
            vm.layout.major
        )),
        Err(error) => complain(&format!("stack walker: AsyncGetCallTrace only ({error})")),
    }
}

/// The sampler agent thread: prepares what sampling needs (jmethodIDs of
/// classes loaded so far, threads already running when attaching, the
/// signal handler), then runs the sampler loop until VMDeath.
pub unsafe extern "C" fn sampler_main(_jvmti: *mut jvmtiEnv, jni: *mut JNIEnv, _arg: *mut c_void) {
    guard("the sampler thread", (), || {
        let Some(agent) = agent::get() else { return };
        let signal = agent.options.signal;
        pcct_sampler::signal::block_in_current_thread(signal);
        let own = current_tid();
        agent.own_tids.lock().push(own);
        agent.registry.retire(own);
        let jni = Jni(jni);

        let classes = crate::classes::create_all_method_ids(agent.jvmti, jni);
        if agent.arrival == Arrival::Attach && agent.options.compiled {
            // Code compiled before the attach: its CompiledMethodLoad events.
            if let Err(error) = agent.jvmti.generate_events(jvmtiEvent::JVMTI_EVENT_COMPILED_METHOD_LOAD) {
                complain(&format!("compiled=on: {error}"));
            }
        }
        if agent.arrival == Arrival::Attach {
            let version = agent.shared.vm.lock().jvm_version.clone();
            if crate::threads::agct_finds_its_own_thread(&version) {
                let found = crate::threads::discover(agent, jni);
                agent::say(&format!("attached: {classes} classes prepared, {found} running threads found"));
            } else {
                agent::say(&format!(
                    "attached: {classes} classes prepared; threads already running are not sampled on this JVM ({version}: AsyncGetCallTrace needs each thread's own JNIEnv before JDK 17.0.6 and 19), threads started from now on are"
                ));
            }
        }
        if pcct_sampler::agct::locate().is_none() {
            agent.disable("this JVM does not export AsyncGetCallTrace".to_string());
            return;
        }
        prepare_walker(agent, jni);
        if let Err(error) = pcct_sampler::signal::install(signal) {
            agent.disable(error.to_string());
            return;
        }
        let mut resolver = crate::resolver::JvmtiResolver::new(agent.jvmti, jni);
        pcct_sampler::Sampler::new(agent.shared.clone(), agent.registry.clone(), &mut resolver).run();
    })
}
