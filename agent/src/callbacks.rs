//! JVMTI event callbacks and the sampler thread's entry point. Every
//! function here is called by the VM through a C ABI, wraps its body in
//! [`guard`] (so a panic becomes one line on stderr, never an unwind into
//! the VM) and hands the event to the agent (`agent.rs`).

use std::ffi::c_void;

use pcct_sampler::slots::{current_tid, ThreadOrigin};

use crate::agent::{self, live};
use crate::console::guard;
use crate::events::Reported;
use crate::jvmti::{Jni, Jvmti, JvmtiResult};
use crate::jvmti_sys::*;

/// The events the agent enables here (allocation and monitor events only
/// when reported). CompiledMethodLoad and CompiledMethodUnload (with
/// `compiled=on`) are enabled later by the agent's JIT thread (`jit.rs`),
/// which then generates the events of code compiled before.
fn events(reported: Reported) -> impl Iterator<Item = jvmtiEvent> {
    let always = [
        jvmtiEvent::JVMTI_EVENT_VM_INIT,
        jvmtiEvent::JVMTI_EVENT_VM_DEATH,
        jvmtiEvent::JVMTI_EVENT_THREAD_START,
        jvmtiEvent::JVMTI_EVENT_THREAD_END,
        // AsyncGetCallTrace returns ticks_no_class_load (-1) unless an agent
        // enabled ClassLoad events.
        jvmtiEvent::JVMTI_EVENT_CLASS_LOAD,
        jvmtiEvent::JVMTI_EVENT_CLASS_PREPARE,
    ];
    let allocations = reported.alloc_interval.map(|_| jvmtiEvent::JVMTI_EVENT_SAMPLED_OBJECT_ALLOC);
    let monitors = [jvmtiEvent::JVMTI_EVENT_MONITOR_CONTENDED_ENTER, jvmtiEvent::JVMTI_EVENT_MONITOR_CONTENDED_ENTERED];
    let collections = reported.gc_events.then_some(jvmtiEvent::JVMTI_EVENT_GARBAGE_COLLECTION_FINISH);
    always.into_iter().chain(allocations).chain(monitors.into_iter().filter(move |_| reported.locks)).chain(collections)
}

/// Sets the callbacks and enables the events the agent needs. If an event
/// cannot be enabled, takes everything back before returning the error, so
/// a failed Agent_OnAttach leaves no callback armed.
pub fn install(jvmti: Jvmti, reported: Reported) -> JvmtiResult<()> {
    let installed = set_and_enable(jvmti, reported);
    if installed.is_err() {
        for event in events(reported) {
            let _ = jvmti.disable(event);
        }
        let _ = jvmti.set_callbacks(&jvmtiEventCallbacks::default());
    }
    installed
}

fn set_and_enable(jvmti: Jvmti, reported: Reported) -> JvmtiResult<()> {
    let callbacks = jvmtiEventCallbacks {
        VMInit: Some(on_vm_init),
        VMDeath: Some(on_vm_death),
        ThreadStart: Some(on_thread_start),
        ThreadEnd: Some(on_thread_end),
        ClassLoad: Some(on_class_load),
        ClassPrepare: Some(on_class_prepare),
        CompiledMethodLoad: Some(on_compiled_method_load),
        CompiledMethodUnload: Some(on_compiled_method_unload),
        SampledObjectAlloc: Some(on_sampled_object_alloc),
        MonitorContendedEnter: Some(on_monitor_contended_enter),
        MonitorContendedEntered: Some(on_monitor_contended_entered),
        GarbageCollectionFinish: Some(on_garbage_collection_finish),
        ..Default::default()
    };
    jvmti.set_callbacks(&callbacks)?;
    events(reported).try_for_each(|event| jvmti.enable(event))
}

unsafe extern "C" fn on_sampled_object_alloc(
    _jvmti: *mut jvmtiEnv,
    jni: *mut JNIEnv,
    _thread: jthread,
    object: jobject,
    class: jclass,
    size: jlong,
) {
    guard("SampledObjectAlloc", (), || {
        if let Some(agent) = live() {
            // SAFETY: the JNIEnv of this callback's thread, used on it.
            agent.allocation_sampled(unsafe { Jni::from_raw(jni) }, object, class, size);
        }
    })
}

/// At the end of a garbage collection, in the VM's own thread while the
/// world may still be stopped: JVMTI allows almost nothing here, so it
/// only counts the collection (an atomic add); the heap thread does the
/// rest.
unsafe extern "C" fn on_garbage_collection_finish(_jvmti: *mut jvmtiEnv) {
    guard("GarbageCollectionFinish", (), || {
        if let Some(agent) = agent::get() {
            agent.gc_finished();
        }
    })
}

unsafe extern "C" fn on_monitor_contended_enter(
    _jvmti: *mut jvmtiEnv,
    _jni: *mut JNIEnv,
    _thread: jthread,
    _object: jobject,
) {
    guard("MonitorContendedEnter", (), || {
        if let Some(agent) = live() {
            agent.monitor_waiting();
        }
    })
}

unsafe extern "C" fn on_monitor_contended_entered(
    _jvmti: *mut jvmtiEnv,
    jni: *mut JNIEnv,
    _thread: jthread,
    object: jobject,
) {
    guard("MonitorContendedEntered", (), || {
        if let Some(agent) = live() {
            // SAFETY: the event's JNIEnv is this (the waiting) thread's.
            agent.monitor_entered(unsafe { Jni::from_raw(jni) }, object);
        }
    })
}

unsafe extern "C" fn on_vm_init(_jvmti: *mut jvmtiEnv, jni: *mut JNIEnv, thread: jthread) {
    guard("VMInit", (), || {
        let Some(agent) = live() else { return };
        // The main thread gets no ThreadStart event: register it here.
        // SAFETY: VMInit's JNIEnv is this thread's.
        agent.name_thread(unsafe { Jni::from_raw(jni) }, thread, current_tid());
        agent.register_thread(current_tid(), jni, ThreadOrigin::Started);
        // SAFETY: VMInit's JNIEnv is this thread's.
        agent.start(unsafe { Jni::from_raw(jni) });
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
        if let Some(agent) = live() {
            // SAFETY: ThreadStart's JNIEnv is this (the starting) thread's.
            agent.thread_started(unsafe { Jni::from_raw(jni) }, thread);
        }
    })
}

unsafe extern "C" fn on_thread_end(_jvmti: *mut jvmtiEnv, _jni: *mut JNIEnv, _thread: jthread) {
    guard("ThreadEnd", (), || {
        if let Some(agent) = agent::get() {
            agent.thread_ended();
        }
    })
}

unsafe extern "C" fn on_compiled_method_load(
    _jvmti: *mut jvmtiEnv,
    method: jmethodID,
    code_size: jint,
    code_addr: *const c_void,
    _map_length: jint,
    _map: *const jvmtiAddrLocationMap,
    compile_info: *const c_void,
) {
    guard("CompiledMethodLoad", (), || {
        let Some(agent) = live() else { return };
        let max_nodes = pcct_jit::table::Limits::default().max_tree_nodes;
        let mut tree = pcct_jit::tree::TreeBuilder::new(method as usize as u64, max_nodes);
        // SAFETY: `compile_info` is what the VM passed to this callback,
        // read before it returns.
        let read = unsafe { crate::cmlr::read_inline_record(compile_info, &mut tree) }.map(|_| tree);
        agent.code_loaded(method as usize, code_addr as usize, u32::try_from(code_size).ok(), read);
    })
}

unsafe extern "C" fn on_compiled_method_unload(_jvmti: *mut jvmtiEnv, method: jmethodID, code_addr: *const c_void) {
    guard("CompiledMethodUnload", (), || {
        if let Some(agent) = live() {
            agent.code_unloaded(method as usize, code_addr as usize);
        }
    })
}

unsafe extern "C" fn on_class_load(_jvmti: *mut jvmtiEnv, _jni: *mut JNIEnv, _thread: jthread, _class: jclass) {}

unsafe extern "C" fn on_class_prepare(jvmti: *mut jvmtiEnv, _jni: *mut JNIEnv, _thread: jthread, class: jclass) {
    guard("ClassPrepare", (), || {
        // AsyncGetCallTrace can only report methods whose jmethodID exists.
        // SAFETY: the VM passes its live JVMTI environment.
        if unsafe { Jvmti::from_raw(jvmti) }.create_method_ids(class).is_ok() {
            if let Some(agent) = agent::get() {
                agent.classes_given_method_ids(1);
            }
        }
    })
}

/// The JIT agent thread (`Agent::run_jit`).
pub unsafe extern "C" fn jit_main(_jvmti: *mut jvmtiEnv, jni: *mut JNIEnv, _arg: *mut c_void) {
    guard("the JIT thread", (), || {
        if let Some(agent) = agent::get() {
            // SAFETY: an agent thread's start function gets its own JNIEnv.
            agent.run_jit(unsafe { Jni::from_raw(jni) });
        }
    })
}

/// The heap agent thread (`Agent::run_heap`).
pub unsafe extern "C" fn heap_main(_jvmti: *mut jvmtiEnv, jni: *mut JNIEnv, _arg: *mut c_void) {
    guard("the heap thread", (), || {
        if let Some(agent) = agent::get() {
            // SAFETY: an agent thread's start function gets its own JNIEnv.
            agent.run_heap(unsafe { Jni::from_raw(jni) });
        }
    })
}

/// The sampler agent thread (`Agent::run_sampler`).
pub unsafe extern "C" fn sampler_main(_jvmti: *mut jvmtiEnv, jni: *mut JNIEnv, _arg: *mut c_void) {
    guard("the sampler thread", (), || {
        if let Some(agent) = agent::get() {
            // SAFETY: an agent thread's start function gets its own JNIEnv.
            agent.run_sampler(unsafe { Jni::from_raw(jni) });
        }
    })
}
