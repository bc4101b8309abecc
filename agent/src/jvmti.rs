//! Thin wrappers over the JVMTI and JNI function tables of the generated
//! bindings (`jvmti_sys`): each call checks that the slot exists and turns
//! the error code into a `Result`. Error codes stay integers
//! ([`jvmtiError`] is a newtype), so a code this crate does not know is just
//! a number, never undefined behaviour.

use std::ffi::{c_char, c_void, CStr, CString};
use std::ptr;

use pcct::LineEntry;

use crate::jvmti_sys::*;

/// A JVMTI error code with the call that returned it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("JVMTI {call} failed with error {code}")]
pub struct JvmtiError {
    pub call: &'static str,
    pub code: u32,
}

pub type JvmtiResult<T> = Result<T, JvmtiError>;

fn check(call: &'static str, error: jvmtiError) -> JvmtiResult<()> {
    if error == jvmtiError::JVMTI_ERROR_NONE {
        Ok(())
    } else {
        Err(JvmtiError { call, code: error.0 })
    }
}

/// Calls slot `$name` of a function table, or yields `$missing` when the
/// VM's table does not have it.
macro_rules! call {
    ($env:expr, $name:ident, $missing:expr $(, $arg:expr)* $(,)?) => {{
        let env = $env;
        // SAFETY: `env` is a live environment handed out by the VM; its
        // function table outlives it.
        match unsafe { (**env).$name } {
            // SAFETY: the arguments match the slot's C signature (checked by
            // the generated types) and the callers document the rest.
            Some(function) => unsafe { function(env $(, $arg)*) },
            None => $missing,
        }
    }};
}

/// A JVMTI environment. The pointer is valid from any thread attached to the
/// VM until the VM dies.
#[derive(Clone, Copy, Debug)]
pub struct Jvmti(*mut jvmtiEnv);

// SAFETY: a jvmtiEnv may be used from any thread (the JVMTI specification
// lets any attached thread call its functions).
unsafe impl Send for Jvmti {}
// SAFETY: as above; the environment has no thread affinity.
unsafe impl Sync for Jvmti {}

const MISSING: jvmtiError = jvmtiError::JVMTI_ERROR_NOT_AVAILABLE;

impl Jvmti {
    /// The environment a JVMTI callback received.
    ///
    /// # Safety
    /// `env` must be a live JVMTI environment of this VM.
    pub unsafe fn from_raw(env: *mut jvmtiEnv) -> Jvmti {
        Jvmti(env)
    }

    /// Gets a JVMTI 1.2 environment from `vm`.
    ///
    /// # Safety
    /// `vm` must be the JavaVM passed to Agent_OnLoad / Agent_OnAttach.
    pub unsafe fn from_vm(vm: *mut JavaVM) -> JvmtiResult<Jvmti> {
        let mut env: *mut c_void = ptr::null_mut();
        let rc = call!(vm, GetEnv, JNI_ERR, &mut env, JVMTI_VERSION_1_2 as jint);
        if rc != JNI_OK || env.is_null() {
            return Err(JvmtiError { call: "GetEnv", code: rc as u32 });
        }
        Ok(Jvmti(env as *mut jvmtiEnv))
    }

    pub fn add_capabilities(&self, capabilities: &jvmtiCapabilities) -> JvmtiResult<()> {
        check("AddCapabilities", call!(self.0, AddCapabilities, MISSING, capabilities))
    }

    pub fn potential_capabilities(&self) -> JvmtiResult<jvmtiCapabilities> {
        let mut capabilities = jvmtiCapabilities::default();
        check("GetPotentialCapabilities", call!(self.0, GetPotentialCapabilities, MISSING, &mut capabilities))?;
        Ok(capabilities)
    }

    pub fn set_callbacks(&self, callbacks: &jvmtiEventCallbacks) -> JvmtiResult<()> {
        let size = std::mem::size_of::<jvmtiEventCallbacks>() as jint;
        check("SetEventCallbacks", call!(self.0, SetEventCallbacks, MISSING, callbacks, size))
    }

    pub fn enable(&self, event: jvmtiEvent) -> JvmtiResult<()> {
        check(
            "SetEventNotificationMode",
            call!(self.0, SetEventNotificationMode, MISSING, jvmtiEventMode::JVMTI_ENABLE, event, ptr::null_mut()),
        )
    }

    pub fn disable(&self, event: jvmtiEvent) -> JvmtiResult<()> {
        check(
            "SetEventNotificationMode",
            call!(self.0, SetEventNotificationMode, MISSING, jvmtiEventMode::JVMTI_DISABLE, event, ptr::null_mut()),
        )
    }

    /// Asks the VM to send `event` for what already happened (compiled
    /// methods, on attach).
    pub fn generate_events(&self, event: jvmtiEvent) -> JvmtiResult<()> {
        check("GenerateEvents", call!(self.0, GenerateEvents, MISSING, event))
    }

    /// Frees memory JVMTI allocated.
    ///
    /// # Safety
    /// `memory` is null or was allocated by this environment (returned by
    /// one of its calls) and is not used afterwards.
    unsafe fn deallocate<T>(&self, memory: *mut T) {
        if !memory.is_null() {
            let _ = call!(self.0, Deallocate, MISSING, memory as *mut u8);
        }
    }

    /// Takes a JVMTI-allocated C string, converting and freeing it.
    ///
    /// # Safety
    /// `raw` is null or a NUL-terminated string this environment returned,
    /// not used afterwards.
    unsafe fn take_string(&self, raw: *mut c_char) -> String {
        if raw.is_null() {
            return String::new();
        }
        // SAFETY: the caller passes a NUL-terminated string from JVMTI.
        // JVMTI's strings are modified UTF-8: decoded without loss (issue 16).
        let text = pcct::names::from_modified_utf8(unsafe { CStr::from_ptr(raw) }.to_bytes()).into_owned();
        // SAFETY: JVMTI allocated it; it is not used after this.
        unsafe { self.deallocate(raw) };
        text
    }

    /// The loaded classes, as local references of the calling thread's frame.
    pub fn loaded_classes(&self) -> JvmtiResult<Vec<jclass>> {
        let mut count: jint = 0;
        let mut classes: *mut jclass = ptr::null_mut();
        check("GetLoadedClasses", call!(self.0, GetLoadedClasses, MISSING, &mut count, &mut classes))?;
        let list = if classes.is_null() || count <= 0 {
            Vec::new()
        } else {
            // SAFETY: JVMTI wrote `count` class references at `classes`.
            unsafe { std::slice::from_raw_parts(classes, count as usize) }.to_vec()
        };
        // SAFETY: JVMTI allocated the array; its contents were copied out.
        unsafe { self.deallocate(classes) };
        Ok(list)
    }

    /// Makes the VM create a jmethodID for every method of `class` (which
    /// AsyncGetCallTrace needs and cannot create itself). Returns how many.
    pub fn create_method_ids(&self, class: jclass) -> JvmtiResult<usize> {
        let mut count: jint = 0;
        let mut methods: *mut jmethodID = ptr::null_mut();
        check("GetClassMethods", call!(self.0, GetClassMethods, MISSING, class, &mut count, &mut methods))?;
        // SAFETY: JVMTI allocated the array; only its length is used.
        unsafe { self.deallocate(methods) };
        Ok(count.max(0) as usize)
    }

    pub fn method_name(&self, method: jmethodID) -> JvmtiResult<(String, String)> {
        let mut name: *mut c_char = ptr::null_mut();
        let mut signature: *mut c_char = ptr::null_mut();
        check(
            "GetMethodName",
            call!(self.0, GetMethodName, MISSING, method, &mut name, &mut signature, ptr::null_mut()),
        )?;
        // SAFETY: GetMethodName succeeded: both are JVMTI's strings (or null).
        Ok(unsafe { (self.take_string(name), self.take_string(signature)) })
    }

    /// The declaring class of `method`, a local reference.
    pub fn declaring_class(&self, method: jmethodID) -> JvmtiResult<jclass> {
        let mut class: jclass = ptr::null_mut();
        check("GetMethodDeclaringClass", call!(self.0, GetMethodDeclaringClass, MISSING, method, &mut class))?;
        Ok(class)
    }

    /// The JVM signature of `class` (`Ljava/util/HashMap;`).
    pub fn class_signature(&self, class: jclass) -> JvmtiResult<String> {
        let mut signature: *mut c_char = ptr::null_mut();
        check("GetClassSignature", call!(self.0, GetClassSignature, MISSING, class, &mut signature, ptr::null_mut()))?;
        // SAFETY: GetClassSignature succeeded: JVMTI's string (or null).
        Ok(unsafe { self.take_string(signature) })
    }

    /// The JNI function table the VM's threads use, as a copy JVMTI
    /// allocated: free it with [`Jvmti::free_jni_table`].
    pub fn jni_table(&self) -> JvmtiResult<*mut jniNativeInterface> {
        let mut table: *mut jniNativeInterface = ptr::null_mut();
        check("GetJNIFunctionTable", call!(self.0, GetJNIFunctionTable, MISSING, &mut table))?;
        Ok(table)
    }

    /// Makes `table` the JNI function table of every thread, from now on.
    pub fn set_jni_table(&self, table: *const jniNativeInterface) -> JvmtiResult<()> {
        check("SetJNIFunctionTable", call!(self.0, SetJNIFunctionTable, MISSING, table))
    }

    /// Frees a table [`Jvmti::jni_table`] returned.
    ///
    /// # Safety
    /// `table` came from [`Jvmti::jni_table`] and is not used afterwards.
    pub unsafe fn free_jni_table(&self, table: *mut jniNativeInterface) {
        // SAFETY: as the caller promises.
        unsafe { self.deallocate(table) }
    }

    /// The source file `class`'s class file names (`HashMap.java`), if it
    /// names one (JVMTI_ERROR_ABSENT_INFORMATION otherwise) and the
    /// capability was granted.
    pub fn source_file(&self, class: jclass) -> Option<String> {
        let mut name: *mut c_char = ptr::null_mut();
        let error = call!(self.0, GetSourceFileName, MISSING, class, &mut name);
        // SAFETY: GetSourceFileName succeeded: JVMTI's string (or null).
        let name = (error == jvmtiError::JVMTI_ERROR_NONE).then(|| unsafe { self.take_string(name) })?;
        (!name.is_empty()).then_some(name)
    }

    /// Line number table of `method` (empty for native methods or without debug information).
    pub fn line_numbers(&self, method: jmethodID) -> Vec<LineEntry> {
        let mut count: jint = 0;
        let mut table: *mut jvmtiLineNumberEntry = ptr::null_mut();
        let error = call!(self.0, GetLineNumberTable, MISSING, method, &mut count, &mut table);
        if error != jvmtiError::JVMTI_ERROR_NONE || table.is_null() {
            return Vec::new();
        }
        // SAFETY: JVMTI wrote `count` entries at `table`.
        let entries = unsafe { std::slice::from_raw_parts(table, count.max(0) as usize) };
        let lines = entries
            .iter()
            .filter(|entry| entry.start_location >= 0 && entry.line_number >= 0)
            .map(|entry| LineEntry { start_bci: entry.start_location as u32, line: entry.line_number as u32 })
            .collect();
        // SAFETY: JVMTI allocated the array; its contents were copied out.
        unsafe { self.deallocate(table) };
        lines
    }

    /// Size of `method`'s bytecode (none for native and abstract methods).
    pub fn bytecode_size(&self, method: jmethodID) -> Option<u32> {
        let (mut start, mut end): (jlocation, jlocation) = (0, 0);
        let error = call!(self.0, GetMethodLocation, MISSING, method, &mut start, &mut end);
        // Native methods answer -1 -1 (or an error).
        (error == jvmtiError::JVMTI_ERROR_NONE && start >= 0 && end >= start)
            .then(|| u32::try_from(end - start + 1).ok())
            .flatten()
    }

    /// Whether `class` can be retransformed (not an array, a primitive or a hidden class).
    pub fn is_modifiable_class(&self, class: jclass) -> bool {
        let mut modifiable: jboolean = 0;
        let error = call!(self.0, IsModifiableClass, MISSING, class, &mut modifiable);
        error == jvmtiError::JVMTI_ERROR_NONE && modifiable != 0
    }

    /// Retransforms `classes` (local references of the calling thread):
    /// HotSpot redefines them with their own bytes and deoptimises the
    /// compiled code that depends on them.
    pub fn retransform_classes(&self, classes: &[jclass]) -> JvmtiResult<()> {
        let count = jint::try_from(classes.len()).unwrap_or(jint::MAX);
        check("RetransformClasses", call!(self.0, RetransformClasses, MISSING, count, classes.as_ptr()))
    }

    pub fn system_property(&self, name: &str) -> Option<String> {
        let name = CString::new(name).ok()?;
        let mut value: *mut c_char = ptr::null_mut();
        let error = call!(self.0, GetSystemProperty, MISSING, name.as_ptr(), &mut value);
        // SAFETY: GetSystemProperty succeeded: JVMTI's string.
        (error == jvmtiError::JVMTI_ERROR_NONE).then(|| unsafe { self.take_string(value) })
    }

    /// The calling thread's `java.lang.Thread`, as a local reference.
    pub fn current_thread(&self) -> JvmtiResult<jthread> {
        let mut thread: jthread = ptr::null_mut();
        check("GetCurrentThread", call!(self.0, GetCurrentThread, MISSING, &mut thread))?;
        Ok(thread)
    }

    /// The live threads (of the Java language: no compiler or GC thread),
    /// as local references of the calling thread's frame.
    pub fn all_threads(&self) -> JvmtiResult<Vec<jthread>> {
        let mut count: jint = 0;
        let mut threads: *mut jthread = ptr::null_mut();
        check("GetAllThreads", call!(self.0, GetAllThreads, MISSING, &mut count, &mut threads))?;
        let list = if threads.is_null() || count <= 0 {
            Vec::new()
        } else {
            // SAFETY: JVMTI wrote `count` thread references at `threads`.
            unsafe { std::slice::from_raw_parts(threads, count as usize) }.to_vec()
        };
        // SAFETY: JVMTI allocated the array; its contents were copied out.
        unsafe { self.deallocate(threads) };
        Ok(list)
    }

    /// The name of `thread` (`java.lang.Thread.getName()` as JVMTI's
    /// GetThreadInfo reads it, running no Java code); the references the
    /// call returns besides are deleted in `jni`, the calling thread's.
    pub fn thread_name(&self, jni: Jni, thread: jthread) -> Option<String> {
        let mut info = jvmtiThreadInfo {
            name: ptr::null_mut(),
            priority: 0,
            is_daemon: 0,
            thread_group: ptr::null_mut(),
            context_class_loader: ptr::null_mut(),
        };
        let error = call!(self.0, GetThreadInfo, MISSING, thread, &mut info);
        if error != jvmtiError::JVMTI_ERROR_NONE {
            return None;
        }
        jni.delete_local_ref(info.thread_group);
        jni.delete_local_ref(info.context_class_loader);
        // SAFETY: GetThreadInfo succeeded: `name` is JVMTI's string (or null).
        Some(unsafe { self.take_string(info.name) })
    }

    /// Whether `thread` has started and not yet terminated (false if its
    /// state cannot be read).
    pub fn is_alive(&self, thread: jthread) -> bool {
        let mut state: jint = 0;
        let error = call!(self.0, GetThreadState, MISSING, thread, &mut state);
        error == jvmtiError::JVMTI_ERROR_NONE && state as u32 & JVMTI_THREAD_STATE_ALIVE != 0
    }

    /// The calling thread's stack, leaf first: at most `max` frames as
    /// (jmethodID, bytecode index; -1 in native code), and whether the
    /// stack had more. Safe in a JVMTI callback on that thread (it walks
    /// only its own stack); allocates its buffer on the heap, not on the
    /// thread's stack.
    pub fn own_stack_trace(&self, max: usize) -> JvmtiResult<(Vec<(usize, i32)>, bool)> {
        let asked = max.saturating_add(1).min(i32::MAX as usize);
        let mut buffer = vec![jvmtiFrameInfo { method: ptr::null_mut(), location: -1 }; asked];
        let mut count: jint = 0;
        check(
            "GetStackTrace",
            call!(self.0, GetStackTrace, MISSING, ptr::null_mut(), 0, asked as jint, buffer.as_mut_ptr(), &mut count),
        )?;
        let count = (count.max(0) as usize).min(asked);
        let frames = buffer[..count.min(max)]
            .iter()
            .map(|frame| (frame.method as usize, i32::try_from(frame.location).unwrap_or(-1)))
            .collect();
        Ok((frames, count > max))
    }

    /// Samples allocations every `bytes` on average (SampledObjectAlloc);
    /// needs the capability `can_generate_sampled_object_alloc_events`.
    pub fn set_heap_sampling_interval(&self, bytes: jint) -> JvmtiResult<()> {
        check("SetHeapSamplingInterval", call!(self.0, SetHeapSamplingInterval, MISSING, bytes))
    }

    /// The calling thread's agent-local value (JVMTI thread-local
    /// storage: a virtual thread has its own, wherever it is mounted); 0
    /// when none was set.
    pub fn own_thread_value(&self) -> u64 {
        let mut data: *mut c_void = ptr::null_mut();
        let error = call!(self.0, GetThreadLocalStorage, MISSING, ptr::null_mut(), &mut data);
        if error == jvmtiError::JVMTI_ERROR_NONE {
            data as u64
        } else {
            0
        }
    }

    /// Sets the calling thread's agent-local value.
    pub fn set_own_thread_value(&self, value: u64) -> JvmtiResult<()> {
        check(
            "SetThreadLocalStorage",
            call!(self.0, SetThreadLocalStorage, MISSING, ptr::null_mut(), value as usize as *const c_void),
        )
    }

    /// Starts `function(arg)` on a new agent thread backed by `thread`.
    pub fn run_agent_thread(
        &self,
        thread: jthread,
        function: jvmtiStartFunction,
        arg: *const c_void,
        priority: jint,
    ) -> JvmtiResult<()> {
        check("RunAgentThread", call!(self.0, RunAgentThread, MISSING, thread, function, arg, priority))
    }
}

/// A JNI environment: valid only on the thread it belongs to.
#[derive(Clone, Copy, Debug)]
pub struct Jni(*mut JNIEnv);

impl Jni {
    /// The JNIEnv a JVMTI callback received, used on the thread it belongs to.
    ///
    /// # Safety
    /// `env` must be the calling thread's live JNIEnv, and the `Jni` must
    /// not be used on another thread.
    pub unsafe fn from_raw(env: *mut JNIEnv) -> Jni {
        Jni(env)
    }

    /// The raw pointer (for the sampler's registry and the walker).
    pub fn raw(self) -> *mut JNIEnv {
        self.0
    }

    /// The calling thread's JNIEnv, if it is attached to `vm`.
    ///
    /// # Safety
    /// `vm` must be the VM's JavaVM pointer.
    pub unsafe fn of_current_thread(vm: *mut JavaVM) -> Option<Jni> {
        let mut env: *mut c_void = ptr::null_mut();
        let rc = call!(vm, GetEnv, JNI_ERR, &mut env, JNI_VERSION_1_8);
        (rc == JNI_OK && !env.is_null()).then_some(Jni(env as *mut JNIEnv))
    }

    pub fn push_local_frame(&self, capacity: i32) -> bool {
        call!(self.0, PushLocalFrame, JNI_ERR, capacity) == JNI_OK
    }

    pub fn pop_local_frame(&self) {
        let _ = call!(self.0, PopLocalFrame, ptr::null_mut(), ptr::null_mut());
    }

    pub fn delete_local_ref(&self, object: jobject) {
        if !object.is_null() {
            call!(self.0, DeleteLocalRef, (), object);
        }
    }

    /// Clears a pending exception; returns whether there was one.
    pub fn clear_exception(&self) -> bool {
        let pending = call!(self.0, ExceptionCheck, 0,) != 0;
        if pending {
            call!(self.0, ExceptionClear, (),);
        }
        pending
    }

    /// The class of `object`, as a local reference (null if it has none).
    pub fn object_class(&self, object: jobject) -> jclass {
        if object.is_null() {
            return ptr::null_mut();
        }
        call!(self.0, GetObjectClass, ptr::null_mut(), object)
    }

    pub fn new_global_ref(&self, object: jobject) -> jobject {
        call!(self.0, NewGlobalRef, ptr::null_mut(), object)
    }

    /// The class named `name` (`java/lang/Thread`) as a local reference,
    /// found from the caller's class loader; `None` (exception cleared)
    /// when it cannot be found.
    pub fn find_class(&self, name: &CStr) -> Option<jclass> {
        let class = call!(self.0, FindClass, ptr::null_mut(), name.as_ptr());
        if class.is_null() {
            self.clear_exception();
            return None;
        }
        Some(class)
    }

    /// A static method of `class`; `None` (exception cleared) if it has none.
    pub fn static_method(&self, class: jclass, name: &CStr, signature: &CStr) -> Option<jmethodID> {
        let method = call!(self.0, GetStaticMethodID, ptr::null_mut(), class, name.as_ptr(), signature.as_ptr());
        if method.is_null() {
            self.clear_exception();
            return None;
        }
        Some(method)
    }

    /// An instance field of `class`; `None` (exception cleared) if it has none.
    pub fn field(&self, class: jclass, name: &CStr, signature: &CStr) -> Option<jfieldID> {
        let field = call!(self.0, GetFieldID, ptr::null_mut(), class, name.as_ptr(), signature.as_ptr());
        if field.is_null() {
            self.clear_exception();
            return None;
        }
        Some(field)
    }

    /// The reference in `object`'s field `field`, as a local reference.
    pub fn object_field(&self, object: jobject, field: jfieldID) -> jobject {
        call!(self.0, GetObjectField, ptr::null_mut(), object, field)
    }

    /// Calls the static void method `method` of `class` with `arguments`;
    /// false (exception cleared) if it threw.
    pub fn call_static_void(&self, class: jclass, method: jmethodID, arguments: &[jvalue]) -> bool {
        call!(self.0, CallStaticVoidMethodA, (), class, method, arguments.as_ptr());
        !self.clear_exception()
    }

    /// Defines the class `name` from `bytes` in the boot class loader;
    /// `None` (exception cleared) if the VM refuses it (defined already).
    pub fn define_boot_class(&self, name: &CStr, bytes: &[u8]) -> Option<jclass> {
        let length = jsize::try_from(bytes.len()).ok()?;
        let class = call!(
            self.0,
            DefineClass,
            ptr::null_mut(),
            name.as_ptr(),
            ptr::null_mut(),
            bytes.as_ptr() as *const jbyte,
            length
        );
        if class.is_null() {
            self.clear_exception();
            return None;
        }
        Some(class)
    }

    /// Binds the native methods `methods` of `class`; false (exception
    /// cleared) if the VM refused.
    ///
    /// # Safety
    /// Each method's name and signature are NUL-terminated strings, and
    /// its function has the C signature its Java signature implies.
    pub unsafe fn register_natives(&self, class: jclass, methods: &[JNINativeMethod]) -> bool {
        let count = methods.len() as jint;
        let bound = call!(self.0, RegisterNatives, JNI_ERR, class, methods.as_ptr(), count) == JNI_OK;
        if !bound {
            self.clear_exception();
        }
        bound
    }

    /// A weak global reference to `object` (null if the VM had no room):
    /// it does not keep the object alive, and can be checked from any
    /// thread attached to the VM.
    pub fn new_weak_global_ref(&self, object: jobject) -> jobject {
        if object.is_null() {
            return ptr::null_mut();
        }
        call!(self.0, NewWeakGlobalRef, ptr::null_mut(), object)
    }

    pub fn delete_weak_global_ref(&self, weak: jobject) {
        if !weak.is_null() {
            call!(self.0, DeleteWeakGlobalRef, (), weak);
        }
    }

    /// Whether the object behind the weak reference `weak` was collected.
    pub fn is_collected(&self, weak: jobject) -> bool {
        self.is_same_object(weak, ptr::null_mut())
    }

    pub fn is_same_object(&self, a: jobject, b: jobject) -> bool {
        call!(self.0, IsSameObject, 0, a, b) != 0
    }

    /// The `JavaThread*` behind a `java.lang.Thread` (HotSpot keeps it in
    /// the thread's `eetop` field); `None` if the field is missing (not HotSpot).
    pub fn java_thread_of(&self, thread: jthread) -> Option<usize> {
        let class = self.find_class(c"java/lang/Thread")?;
        let field = self.field(class, c"eetop", c"J");
        self.delete_local_ref(class);
        let value = call!(self.0, GetLongField, 0, thread, field?);
        (value != 0).then_some(value as usize)
    }

    /// `new Thread(name)`, as a local reference.
    pub fn new_thread(&self, name: &str) -> Option<jthread> {
        let class = self.find_class(c"java/lang/Thread")?;
        let constructor =
            call!(self.0, GetMethodID, ptr::null_mut(), class, c"<init>".as_ptr(), c"(Ljava/lang/String;)V".as_ptr());
        let name = CString::new(name).ok()?;
        let text = call!(self.0, NewStringUTF, ptr::null_mut(), name.as_ptr());
        if constructor.is_null() || text.is_null() {
            self.clear_exception();
            return None;
        }
        let args = [jvalue { l: text }];
        let thread = call!(self.0, NewObjectA, ptr::null_mut(), class, constructor, args.as_ptr());
        if self.clear_exception() || thread.is_null() {
            return None;
        }
        Some(thread)
    }
}
