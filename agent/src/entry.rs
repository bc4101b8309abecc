//! The library's exported entry points.

use std::ffi::{c_char, c_void, CStr};

use crate::agent::{self, Arrival};
use crate::console::{complain, guard};
use crate::jvmti::Jni;
use crate::jvmti_sys::{jint, JavaVM, JNI_ERR, JNI_OK};

fn options_text(options: *const c_char) -> String {
    if options.is_null() {
        String::new()
    } else {
        // SAFETY: the VM passes a NUL-terminated string (or null).
        unsafe { CStr::from_ptr(options) }.to_string_lossy().into_owned()
    }
}

/// `-agentpath:libpcct_agent.so=<options>` at startup.
///
/// # Safety
/// Called by the VM with its JavaVM pointer.
#[no_mangle]
pub unsafe extern "C" fn Agent_OnLoad(vm: *mut JavaVM, options: *mut c_char, _reserved: *mut c_void) -> jint {
    guard("Agent_OnLoad", JNI_ERR, || {
        // SAFETY: `vm` comes from the VM.
        match unsafe { agent::setup(vm, &options_text(options), Arrival::Startup) } {
            Ok(_) => JNI_OK,
            Err(error) => {
                complain(&error.to_string());
                JNI_ERR
            }
        }
    })
}

/// `jcmd <pid> JVMTI.agent_load /path/libpcct_agent.so "<options>"`.
///
/// # Safety
/// Called by the VM (on its attach listener thread) with its JavaVM pointer.
#[no_mangle]
pub unsafe extern "C" fn Agent_OnAttach(vm: *mut JavaVM, options: *mut c_char, _reserved: *mut c_void) -> jint {
    guard("Agent_OnAttach", JNI_ERR, || {
        // SAFETY: `vm` comes from the VM.
        let agent = match unsafe { agent::setup(vm, &options_text(options), Arrival::Attach) } {
            Ok(agent) => agent,
            Err(error) => {
                complain(&error.to_string());
                return JNI_ERR;
            }
        };
        // SAFETY: the attach listener is a Java thread of this VM.
        match unsafe { Jni::of_current_thread(vm) } {
            Some(jni) => {
                agent.start(jni);
                JNI_OK
            }
            None => {
                complain("attach: the attaching thread has no JNI environment");
                JNI_ERR
            }
        }
    })
}

/// Called when the VM unloads the library (after VMDeath).
///
/// # Safety
/// Called by the VM.
#[no_mangle]
pub unsafe extern "C" fn Agent_OnUnload(_vm: *mut JavaVM) {
    guard("Agent_OnUnload", (), || {
        if let Some(agent) = agent::get() {
            agent.shut_down();
        }
    })
}
