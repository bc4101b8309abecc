//! Names method ids with JVMTI, on the sampler thread (which is attached to
//! the VM). Each lookup runs inside its own JNI local frame, so the class
//! references it creates never pile up on the long-lived sampler thread.

#![forbid(unsafe_code)]

use std::ffi::c_void;

use pcct_sampler::resolve::{MethodDesc, MethodResolver, ResolveError};

use crate::jvmti::{Jni, Jvmti};
use crate::jvmti_sys::{jclass, jmethodID, jvmtiError};

pub struct JvmtiResolver {
    jvmti: Jvmti,
    jni: Jni,
}

impl JvmtiResolver {
    /// `jni` must be the JNIEnv of the thread that will call `resolve`.
    pub fn new(jvmti: Jvmti, jni: Jni) -> JvmtiResolver {
        JvmtiResolver { jvmti, jni }
    }
}

/// `Ljava/util/HashMap;` -> `java.util.HashMap`; `[I` stays as it is.
pub fn class_name_from_signature(signature: &str) -> String {
    match signature.strip_prefix('L').and_then(|rest| rest.strip_suffix(';')) {
        Some(name) => name.replace('/', "."),
        None => signature.to_string(),
    }
}

/// A class signature as Java writes the type, arrays by their element
/// type: `[B` -> `byte[]`, `[[Ljava/lang/String;` -> `java.lang.String[][]`,
/// `Ljava/util/HashMap;` -> `java.util.HashMap`. A signature it cannot
/// read is kept as it is.
pub fn java_type_name(signature: &str) -> String {
    let element = signature.trim_start_matches('[');
    let dimensions = signature.len() - element.len();
    let name = match element {
        "Z" => "boolean".to_string(),
        "B" => "byte".to_string(),
        "C" => "char".to_string(),
        "S" => "short".to_string(),
        "I" => "int".to_string(),
        "J" => "long".to_string(),
        "F" => "float".to_string(),
        "D" => "double".to_string(),
        _ if element.starts_with('L') && element.ends_with(';') => class_name_from_signature(element),
        _ => return signature.to_string(),
    };
    format!("{name}{}", "[]".repeat(dimensions))
}

fn error_of(code: u32) -> ResolveError {
    if code == jvmtiError::JVMTI_ERROR_INVALID_METHODID.0 {
        ResolveError::Unloaded
    } else {
        ResolveError::Failed(code)
    }
}

/// `method`'s class (in source form), name and signature, as the profile
/// names them. The class is a local reference of the calling thread: call
/// inside a JNI local frame, or a JVMTI callback (whose local references
/// are freed when it returns).
pub fn names_of(jvmti: Jvmti, method: jmethodID) -> Result<(String, String, String), ResolveError> {
    let class = jvmti.declaring_class(method).map_err(|e| error_of(e.code))?;
    names_in(jvmti, class, method)
}

/// [`names_of`] `method`, whose declaring class is `class`.
fn names_in(jvmti: Jvmti, class: jclass, method: jmethodID) -> Result<(String, String, String), ResolveError> {
    let signature = jvmti.class_signature(class).map_err(|e| error_of(e.code))?;
    let (name, method_signature) = jvmti.method_name(method).map_err(|e| error_of(e.code))?;
    Ok((class_name_from_signature(&signature), name, method_signature))
}

impl MethodResolver for JvmtiResolver {
    fn resolve(&mut self, method_id: *mut c_void) -> Result<MethodDesc, ResolveError> {
        let method = method_id as jmethodID;
        if !self.jni.push_local_frame(8) {
            self.jni.clear_exception();
            return Err(ResolveError::Failed(0));
        }
        let result = (|| {
            let class = self.jvmti.declaring_class(method).map_err(|e| error_of(e.code))?;
            let (class_name, name, signature) = names_in(self.jvmti, class, method)?;
            Ok(MethodDesc {
                class: class_name,
                name,
                signature,
                lines: self.jvmti.line_numbers(method),
                file: self.jvmti.source_file(class),
            })
        })();
        self.jni.pop_local_frame();
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_signatures_become_source_names() {
        assert_eq!(class_name_from_signature("Ljava/util/HashMap;"), "java.util.HashMap");
        assert_eq!(
            class_name_from_signature("LFoo$$Lambda$14.0x0000000800c03000;"),
            "Foo$$Lambda$14.0x0000000800c03000"
        );
        assert_eq!(class_name_from_signature("[I"), "[I");
    }

    #[test]
    fn types_are_named_as_java_writes_them_arrays_by_element() {
        assert_eq!(java_type_name("[B"), "byte[]");
        assert_eq!(java_type_name("[J"), "long[]");
        assert_eq!(java_type_name("[[I"), "int[][]");
        assert_eq!(java_type_name("[Ljava/lang/String;"), "java.lang.String[]");
        assert_eq!(java_type_name("Ljava/lang/Object;"), "java.lang.Object");
        assert_eq!(java_type_name("LFoo$$Lambda.0x01;"), "Foo$$Lambda.0x01");
        assert_eq!(java_type_name("Q"), "Q");
        assert_eq!(java_type_name(""), "");
    }
}
