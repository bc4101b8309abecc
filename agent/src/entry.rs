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
        pin_library();
        // Everything that can fail is checked before `setup` installs the
        // callbacks (and `setup` takes them back if it fails after): a
        // failed attach leaves no callback armed.
        // SAFETY: the attach listener is a Java thread of this VM.
        let Some(jni) = (unsafe { Jni::of_current_thread(vm) }) else {
            complain("attach: the attaching thread has no JNI environment");
            return JNI_ERR;
        };
        // SAFETY: `vm` comes from the VM.
        match unsafe { agent::setup(vm, &options_text(options), Arrival::Attach) } {
            Ok(agent) => {
                agent.start(jni);
                JNI_OK
            }
            Err(error) => {
                complain(&error.to_string());
                JNI_ERR
            }
        }
    })
}

/// Keeps this library loaded for the life of the process. JDK 21+ unload
/// an agent library whose Agent_OnAttach fails; a JVMTI callback already
/// running on another thread (or a late signal reaching the handler) would
/// then execute unmapped code. Pinning costs the library's mapping, which
/// a successful attach keeps anyway.
fn pin_library() {
    let mut info = std::mem::MaybeUninit::<libc::Dl_info>::zeroed();
    // SAFETY: dladdr only reads the address (a function of this library)
    // and fills `info`.
    let found = unsafe { libc::dladdr(Agent_OnAttach as *const c_void, info.as_mut_ptr()) } != 0;
    if !found {
        return;
    }
    // SAFETY: dladdr succeeded; `dli_fname` is the library's path, a
    // NUL-terminated string owned by the loader. RTLD_NOLOAD takes a new
    // reference to the already loaded library (never loads another) and
    // RTLD_NODELETE makes the loader keep it at every dlclose.
    unsafe {
        let path = info.assume_init().dli_fname;
        if !path.is_null() {
            libc::dlopen(path, libc::RTLD_NOW | libc::RTLD_NOLOAD | libc::RTLD_NODELETE);
        }
    }
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
