//! jmethodIDs for every loaded class. AsyncGetCallTrace reports frames by
//! jmethodID but cannot create one; HotSpot creates them lazily when asked.
//! ClassPrepare events cover classes prepared after the agent started; this
//! sweep covers the ones before (at VMInit, or at attach).

#![forbid(unsafe_code)]

use crate::jvmti::{Jni, Jvmti};

/// Creates the method ids of every loaded, prepared class. Runs on the
/// sampler thread; each class's local reference is deleted as soon as its
/// ids exist, so the sweep holds one local reference at a time beyond the
/// array JVMTI returned. Returns the number of classes swept.
pub fn create_all_method_ids(jvmti: Jvmti, jni: Jni) -> usize {
    let Ok(classes) = jvmti.loaded_classes() else { return 0 };
    let mut prepared = 0;
    for class in &classes {
        // Classes not prepared yet fail here and get their ids at ClassPrepare.
        if jvmti.create_method_ids(*class).is_ok() {
            prepared += 1;
        }
        jni.delete_local_ref(*class);
    }
    prepared
}
