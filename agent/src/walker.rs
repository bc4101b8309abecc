//! Choosing the stack walker: pcct's own HotSpot walker
//! (`pcct_sampler::hotspot`) with AsyncGetCallTrace as its fallback, or
//! AsyncGetCallTrace alone (`walker=agct`, or a VM the walker cannot read).

#![forbid(unsafe_code)]

use crate::jvmti::{Jni, Jvmti};
use crate::options::StackWalker;

/// Prepares pcct's walker on the calling thread, a Java thread whose JNIEnv
/// and `JavaThread` name every other thread's (the sampler thread). Returns
/// which walker walks, as /api/status says it, and whether that is a
/// fallback the user should hear about.
pub fn prepare(choice: StackWalker, jvmti: Jvmti, jni: Jni) -> (String, bool) {
    if choice == StackWalker::Agct {
        return ("AsyncGetCallTrace alone (walker=agct)".to_string(), false);
    }
    let java_thread = jvmti.current_thread().ok().and_then(|thread| {
        let address = jni.java_thread_of(thread);
        jni.delete_local_ref(thread);
        address
    });
    match pcct_sampler::hotspot::init(jni.raw() as usize, java_thread.unwrap_or(0)) {
        Ok(vm) => {
            let pages =
                if pcct_sampler::hotspot::frame_cache_huge_page() { "a huge page (advised)" } else { "small pages" };
            let walker = format!("pcct's own (HotSpot {}), AsyncGetCallTrace as the fallback", vm.layout.major);
            (format!("{walker}; frame cache on {pages}"), false)
        }
        Err(error) => (format!("AsyncGetCallTrace only ({error})"), true),
    }
}
